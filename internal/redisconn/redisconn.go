// Package redisconn opens the Redis connections that everything sharing
// state through Redis uses (the recovery history, the model-answer cache):
// bounded timeouts, no retries, RESP2.
package redisconn

import (
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Options locate a Redis and bound its calls.
type Options struct {
	Endpoint string // host:port
	Username string
	Password string
	DB       int
	Timeout  time.Duration // dial, read, write and pool waits; default 100ms
}

// New returns a client for the Redis at o.Endpoint, set up as
// everything sharing state through Redis expects: bounded by o.Timeout
// (default 100ms) on dial, read, write and pool waits, no retries (the
// caller degrades instead), RESP2. It does not connect until first used.
func New(o Options) *redis.Client {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 100 * time.Millisecond
	}
	return redis.NewClient(&redis.Options{
		Addr:                  o.Endpoint,
		Username:              o.Username,
		Password:              o.Password,
		DB:                    o.DB,
		Protocol:              2,
		DialTimeout:           timeout,
		DialerRetries:         1,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		PoolTimeout:           timeout,
		ContextTimeoutEnabled: true,
		// The caller degrades to memory on error; retrying here would only
		// hold the pipeline longer.
		MaxRetries:               -1,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
}
