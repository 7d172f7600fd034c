package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/internal/redisconn"
)

// Answers are cached by error signature: one new error shape costs one
// model call, and with a shared cache one call for every collector. The
// model's answer is cached whatever the gates said; the gates run again on
// every use, against the run at hand (its structure may differ).

// cachedAnswer is the cached form of an answer.
type cachedAnswer struct {
	Answer
	Model string `json:"model"`
}

// memoryCache is a bounded LRU of answers.
type memoryCache struct {
	lru *lru.Cache[string, cachedAnswer]
}

func newMemoryCache(size int) (*memoryCache, error) {
	c, err := lru.New[string, cachedAnswer](size)
	if err != nil {
		return nil, err
	}
	return &memoryCache{lru: c}, nil
}

func (m *memoryCache) get(sig string) (cachedAnswer, bool) { return m.lru.Get(sig) }
func (m *memoryCache) add(sig string, a cachedAnswer)      { m.lru.Add(sig, a) }

// SharedCache holds answers several collectors share. A miss is
// (zero, false, nil); errors are counted and the answer is asked for.
type SharedCache interface {
	Get(ctx context.Context, model, sig string) (Answer, bool, error)
	Set(ctx context.Context, model, sig string, a Answer) error
	Close() error
}

// RedisCache is a SharedCache in Redis: one string per model and
// signature ({prefix}llm:{model}:{signature}), JSON, with a TTL.
type RedisCache struct {
	client *redis.Client
	prefix string
	ttl    time.Duration
}

// RedisCacheOptions configure a RedisCache; the processor passes the
// recovery history's connection settings.
type RedisCacheOptions struct {
	Endpoint  string // host:port
	Username  string
	Password  string
	DB        int
	KeyPrefix string        // default "triage:"
	Timeout   time.Duration // every call; default 100ms
	TTL       time.Duration // default 7 days
}

// DefaultCacheTTL is how long a shared answer is kept.
const DefaultCacheTTL = 7 * 24 * time.Hour

// NewRedisCache returns a cache at o.Endpoint; it does not connect until
// first used.
func NewRedisCache(o RedisCacheOptions) *RedisCache {
	prefix := o.KeyPrefix
	if prefix == "" {
		prefix = "triage:"
	}
	ttl := o.TTL
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	return &RedisCache{client: redisconn.New(redisconn.Options{
		Endpoint: o.Endpoint, Username: o.Username, Password: o.Password, DB: o.DB, Timeout: o.Timeout,
	}), prefix: prefix, ttl: ttl}
}

func (r *RedisCache) key(model, sig string) string {
	return r.prefix + "llm:" + model + ":" + sig
}

func (r *RedisCache) Get(ctx context.Context, model, sig string) (Answer, bool, error) {
	raw, err := r.client.Get(ctx, r.key(model, sig)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Answer{}, false, nil
	}
	if err != nil {
		return Answer{}, false, err
	}
	var a Answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return Answer{}, false, fmt.Errorf("cached answer %s: %w", sig, err)
	}
	if _, ok := classifier.ParseFailureType(string(a.FailureType)); !ok || a.Confidence < 0 || a.Confidence > 1 {
		return Answer{}, false, fmt.Errorf("cached answer %s: invalid %+v", sig, a)
	}
	return a, true, nil
}

func (r *RedisCache) Set(ctx context.Context, model, sig string, a Answer) error {
	raw, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return r.client.Set(ctx, r.key(model, sig), raw, r.ttl).Err()
}

func (r *RedisCache) Close() error { return r.client.Close() }
