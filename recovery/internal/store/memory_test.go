package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/triage-otel/triage/recovery/internal/breaker"
	"github.com/triage-otel/triage/recovery/internal/fakeclock"
)

func TestMemoryStoreTTL(t *testing.T) {
	clock := fakeclock.New()
	m := NewMemory(MemoryOptions{SessionTTL: time.Minute, Clock: clock})
	ctx := context.Background()
	for want := 1; want <= 3; want++ {
		if n, _ := typeAttempt(ctx, m, "s", "timeout"); n != want {
			t.Fatalf("attempt %d, want %d", n, want)
		}
		// Each failure refreshes the TTL.
		clock.Advance(50 * time.Second)
	}
	clock.Advance(10 * time.Second)
	if n, _ := typeAttempt(ctx, m, "s", "timeout"); n != 1 {
		t.Fatalf("after the TTL the session starts over: attempt %d", n)
	}
	if st := m.Stats(); st.SessionsExpired != 1 || st.SessionsEvicted != 0 {
		t.Fatalf("stats %+v, want one expiry", st)
	}
}

func TestMemoryStoreBoundEvictsLeastRecentlyUsed(t *testing.T) {
	clock := fakeclock.New()
	m := NewMemory(MemoryOptions{MaxSessions: 3, Clock: clock})
	ctx := context.Background()
	for _, s := range []string{"a", "b", "c"} {
		_, _ = typeAttempt(ctx, m, s, "timeout")
	}
	_, _ = typeAttempt(ctx, m, "a", "timeout") // a is now the most recent
	_, _ = typeAttempt(ctx, m, "d", "timeout") // evicts b
	if st := m.Stats(); st.Sessions != 3 || st.SessionsEvicted != 1 {
		t.Fatalf("stats %+v, want 3 held, 1 evicted", st)
	}
	if n, _ := typeAttempt(ctx, m, "a", "timeout"); n != 3 {
		t.Errorf("a kept its history: attempt %d, want 3", n)
	}
	if n, _ := typeAttempt(ctx, m, "b", "timeout"); n != 1 {
		t.Errorf("b was evicted: attempt %d, want 1", n)
	}
	for i := range 100 {
		_, _ = typeAttempt(ctx, m, fmt.Sprintf("flood-%d", i), "timeout")
	}
	if st := m.Stats(); st.Sessions != 3 || st.SessionsEvicted != 102 {
		t.Fatalf("after a flood: %+v", st)
	}
}

func TestMemoryStoreBoundsBreakersAndKeys(t *testing.T) {
	m := NewMemory(MemoryOptions{MaxBreakers: 2})
	ctx := context.Background()
	for _, k := range []string{"x", "y", "z"} {
		_ = m.UpdateBreaker(ctx, k, func(s *breaker.State) bool { s.Phase = breaker.Open; return true })
	}
	if st := m.Stats(); st.Breakers != 2 || st.BreakersEvicted != 1 {
		t.Fatalf("stats %+v", st)
	}
	// An update that reports no change stores nothing.
	_ = m.UpdateBreaker(ctx, "w", func(s *breaker.State) bool { return false })
	if st := m.Stats(); st.Breakers != 2 {
		t.Fatalf("unchanged breaker stored: %+v", st)
	}
	// A huge session id is keyed by its hash.
	huge := strings.Repeat("s", 1<<20)
	if n, _ := typeAttempt(ctx, m, huge, "timeout"); n != 1 {
		t.Fatal(n)
	}
	if n, _ := typeAttempt(ctx, m, huge, "timeout"); n != 2 {
		t.Fatal(n)
	}
	if k := boundKey(huge); len(k) > maxKeyLen {
		t.Fatalf("key length %d", len(k))
	}
}

func TestMemoryUsage(t *testing.T) {
	m := NewMemory(MemoryOptions{MaxSessions: 2})
	ctx := context.Background()
	for _, s := range []string{"a", "b", "c"} {
		_, _ = m.AddUsage(ctx, s, Usage{Tokens: 10})
	}
	if got, _ := m.AddUsage(ctx, "c", Usage{Tokens: 5, Cost: 1}); got != (Usage{Tokens: 15, Cost: 1}) {
		t.Fatalf("c: %+v", got)
	}
	if got, _ := m.AddUsage(ctx, "a", Usage{}); got.Tokens != 0 {
		t.Fatalf("a was evicted by the bound: %+v", got)
	}
	if st := m.Stats(); st.UsageEvicted < 1 {
		t.Fatalf("eviction not counted: %+v", st)
	}
}

// typeAttempt records a failure now and returns its number among its type.
func typeAttempt(ctx context.Context, s Store, session, failureType string) (int, error) {
	a, err := s.Attempt(ctx, session, failureType, time.Now())
	return a.Type, err
}
