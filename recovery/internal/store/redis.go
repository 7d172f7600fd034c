package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/triage-otel/triage/internal/redisconn"
	"github.com/triage-otel/triage/recovery/internal/breaker"
)

// Redis keeps history and breakers in Redis so that several collectors
// share them. History: one hash per session ({prefix}h:{session}, a field per
// failure type plus _total and _first (unix ms of the first failure), HINCRBY
// + HSETNX + PEXPIRE in one MULTI). Usage: one hash per session
// ({prefix}u:{session}, tokens and cost, HINCRBY/HINCRBYFLOAT + PEXPIRE in
// one MULTI). Breakers: one JSON value per
// breaker key ({prefix}b:{key}), updated with WATCH/MULTI so that concurrent
// collectors never both take the half-open probe.
type Redis struct {
	client     redis.UniversalClient
	prefix     string
	sessionTTL time.Duration
	breakerTTL time.Duration
}

// RedisOptions configure a Redis.
type RedisOptions struct {
	Endpoint   string // host:port
	Username   string
	Password   string
	DB         int
	KeyPrefix  string        // default "triage:"
	Timeout    time.Duration // dial/read/write timeout; default 100ms
	SessionTTL time.Duration // default 1h
	BreakerTTL time.Duration // default 24h
}

// NewRedis returns a store backed by the Redis at o.Endpoint. It does
// not connect until first used.
func NewRedis(o RedisOptions) *Redis {
	client := redisconn.New(redisconn.Options{
		Endpoint: o.Endpoint, Username: o.Username, Password: o.Password, DB: o.DB, Timeout: o.Timeout,
	})
	prefix := o.KeyPrefix
	if prefix == "" {
		prefix = "triage:"
	}
	return &Redis{
		client:     client,
		prefix:     prefix,
		sessionTTL: orDefaultDuration(o.SessionTTL, time.Hour),
		breakerTTL: orDefaultDuration(o.BreakerTTL, 24*time.Hour),
	}
}

func (r *Redis) sessionKey(session string) string { return r.prefix + "h:" + boundKey(session) }
func (r *Redis) usageKey(session string) string   { return r.prefix + "u:" + boundKey(session) }
func (r *Redis) breakerKey(key string) string     { return r.prefix + "b:" + boundKey(key) }

// Fields of the session hash beside the failure types (which never start
// with an underscore).
const (
	fieldTotal = "_total"
	fieldFirst = "_first"
)

func (r *Redis) Attempt(ctx context.Context, session, failureType string, now time.Time) (Attempts, error) {
	key := r.sessionKey(session)
	var incr, total *redis.IntCmd
	var first *redis.StringCmd
	_, err := r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		incr = p.HIncrBy(ctx, key, failureType, 1)
		total = p.HIncrBy(ctx, key, fieldTotal, 1)
		p.HSetNX(ctx, key, fieldFirst, now.UnixMilli())
		first = p.HGet(ctx, key, fieldFirst)
		p.PExpire(ctx, key, r.sessionTTL)
		return nil
	})
	if err != nil {
		return Attempts{}, fmt.Errorf("redis attempt: %w", err)
	}
	a := Attempts{Type: int(incr.Val()), Total: int(total.Val()), First: now}
	if ms, err := strconv.ParseInt(first.Val(), 10, 64); err == nil {
		a.First = time.UnixMilli(ms)
	}
	return a, nil
}

func (r *Redis) AddUsage(ctx context.Context, session string, u Usage) (Usage, error) {
	key := r.usageKey(session)
	var tokens *redis.IntCmd
	var cost *redis.FloatCmd
	_, err := r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		tokens = p.HIncrBy(ctx, key, "tokens", u.Tokens)
		cost = p.HIncrByFloat(ctx, key, "cost", u.Cost)
		p.PExpire(ctx, key, r.sessionTTL)
		return nil
	})
	if err != nil {
		return Usage{}, fmt.Errorf("redis usage: %w", err)
	}
	return Usage{Tokens: tokens.Val(), Cost: cost.Val()}, nil
}

func (r *Redis) ResetSession(ctx context.Context, session string) error {
	if err := r.client.Del(ctx, r.sessionKey(session)).Err(); err != nil {
		return fmt.Errorf("redis reset: %w", err)
	}
	return nil
}

// maxWatchRetries bounds optimistic retries under contention; each retry
// is one round trip and the whole call is bounded by the caller's timeout.
const maxWatchRetries = 64

func (r *Redis) UpdateBreaker(ctx context.Context, key string, update func(*breaker.State) bool) error {
	rkey := r.breakerKey(key)
	txf := func(tx *redis.Tx) error {
		var st breaker.State
		raw, err := tx.Get(ctx, rkey).Bytes()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return err
		default:
			if err := json.Unmarshal(raw, &st); err != nil {
				// A corrupt value reads as a fresh breaker rather than
				// wedging every decision that passes through it.
				st = breaker.State{}
			}
		}
		if !update(&st) {
			return nil
		}
		val, err := json.Marshal(&st)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, rkey, val, r.breakerTTL)
			return nil
		})
		return err
	}
	for range maxWatchRetries {
		err := r.client.Watch(ctx, txf, rkey)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err != nil {
			return fmt.Errorf("redis breaker: %w", err)
		}
		return nil
	}
	return fmt.Errorf("redis breaker %s: too much contention", key)
}

// Ping checks that Redis answers.
func (r *Redis) Ping(ctx context.Context) error { return r.client.Ping(ctx).Err() }

func (r *Redis) Close() error { return r.client.Close() }
