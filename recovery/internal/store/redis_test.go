package store

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/triage-otel/triage/internal/redistest"
	"github.com/triage-otel/triage/recovery/internal/breaker"
)

func TestRedisStoreHistory(t *testing.T) {
	addr := redistest.Start(t)
	r := NewRedis(RedisOptions{Endpoint: addr, KeyPrefix: "t1:", SessionTTL: time.Hour})
	defer r.Close()
	ctx := context.Background()
	for want := 1; want <= 3; want++ {
		n, err := typeAttempt(ctx, r, "conv-1", "timeout")
		if err != nil || n != want {
			t.Fatalf("attempt %d (%v), want %d", n, err, want)
		}
	}
	if n, _ := typeAttempt(ctx, r, "conv-1", "loop_detected"); n != 1 {
		t.Fatalf("other type: %d", n)
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if ttl := c.PTTL(ctx, "t1:h:conv-1").Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("session key TTL %v", ttl)
	}
	if err := r.ResetSession(ctx, "conv-1"); err != nil {
		t.Fatal(err)
	}
	if n, _ := typeAttempt(ctx, r, "conv-1", "timeout"); n != 1 {
		t.Fatalf("after reset: %d", n)
	}
	// A corrupt breaker value reads as a fresh breaker.
	c.Set(ctx, "t1:b:cb", "{garbage", 0)
	var got breaker.State
	if err := r.UpdateBreaker(ctx, "cb", func(s *breaker.State) bool { got = *s; return false }); err != nil {
		t.Fatal(err)
	}
	if got.Current() != breaker.Closed {
		t.Fatalf("corrupt state: %+v", got)
	}
}
