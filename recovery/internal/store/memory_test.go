package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
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

// lruModel is what ttlLRU does, kept as a slice in use order (most
// recently used first).
type lruModel struct {
	ttl     time.Duration
	size    int
	entries []modelEntry
	dropped []bool
}

type modelEntry struct {
	key     string
	val     int
	expires time.Time
}

func (m *lruModel) find(key string) int {
	for i := range m.entries {
		if m.entries[i].key == key {
			return i
		}
	}
	return -1
}

func (m *lruModel) get(key string, now time.Time) (int, bool) {
	i := m.find(key)
	if i < 0 {
		return 0, false
	}
	e := m.entries[i]
	m.entries = append(m.entries[:i], m.entries[i+1:]...)
	if !now.Before(e.expires) {
		m.dropped = append(m.dropped, true)
		return 0, false
	}
	m.entries = append([]modelEntry{e}, m.entries...)
	return e.val, true
}

func (m *lruModel) put(key string, val int, now time.Time) {
	if i := m.find(key); i >= 0 {
		m.entries = append(m.entries[:i], m.entries[i+1:]...)
	}
	m.entries = append([]modelEntry{{key: key, val: val, expires: now.Add(m.ttl)}}, m.entries...)
	for len(m.entries) > m.size {
		oldest := m.entries[len(m.entries)-1]
		m.entries = m.entries[:len(m.entries)-1]
		m.dropped = append(m.dropped, !now.Before(oldest.expires))
	}
}

func (m *lruModel) remove(key string) {
	if i := m.find(key); i >= 0 {
		m.entries = append(m.entries[:i], m.entries[i+1:]...)
	}
}

// ttlLRU answers, orders, evicts and expires as its model does.
func TestTTLLRUMatchesModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		size := 1 + rng.IntN(5)
		var dropped []bool
		c := newTTLLRU[int](10*time.Second, size, func(expired bool) { dropped = append(dropped, expired) })
		m := &lruModel{ttl: 10 * time.Second, size: size}
		now := time.Unix(1_800_000_000, 0)
		for step := range 2000 {
			key := string(rune('a' + rng.IntN(8)))
			now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
			switch rng.IntN(3) {
			case 0:
				got, gok := c.get(key, now)
				want, wok := m.get(key, now)
				if got != want || gok != wok {
					t.Fatalf("seed %d step %d: get(%s) = %d %v, model %d %v", seed, step, key, got, gok, want, wok)
				}
			case 1:
				c.put(key, step, now)
				m.put(key, step, now)
			default:
				c.remove(key)
				m.remove(key)
			}
			order := c.entries.Keys() // oldest first
			slices.Reverse(order)
			var want []string
			for _, e := range m.entries {
				want = append(want, e.key)
			}
			if !slices.Equal(order, want) || c.len() != len(want) || !slices.Equal(dropped, m.dropped) {
				t.Fatalf("seed %d step %d: order %v (len %d), model %v; dropped %v, model %v", seed, step, order, c.len(), want, dropped, m.dropped)
			}
		}
	}
}

// A session's counts by failure type are those of a map.
func TestSessionHistoryCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	h := &sessionHistory{}
	want := map[string]int{}
	for range 500 {
		ft := string(rune('a' + rng.IntN(6)))
		want[ft]++
		if got := h.add(ft); got != want[ft] {
			t.Fatalf("add(%s) = %d, want %d", ft, got, want[ft])
		}
	}
}
