package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/triage-otel/triage/recovery/internal/breaker"
)

// Memory is the in-process Store: sessions expire TTL after their last
// failure, and at most MaxSessions (MaxBreakers) are held, the least recently
// used being evicted first. Expiry is lazy (no background goroutine), so a
// Memory needs no shutdown.
type Memory struct {
	mu       sync.Mutex
	clock    Clock
	sessions *ttlLRU[*sessionHistory]
	usage    *ttlLRU[Usage]
	breakers *ttlLRU[breaker.State]

	sessionsEvicted atomic.Int64
	sessionsExpired atomic.Int64
	usageEvicted    atomic.Int64
	breakersEvicted atomic.Int64
}

// sessionHistory is one session's attempt history.
type sessionHistory struct {
	// counts are the failures by type, in the order the types first
	// failed (a session sees a handful of types: looked through, not
	// hashed); room holds the first two, allocated with the history.
	counts []typeCount
	room   [2]typeCount
	total  int
	first  time.Time
}

type typeCount struct {
	failureType string
	n           int
}

// add counts one more failure of failureType and returns its count.
func (h *sessionHistory) add(failureType string) int {
	for i := range h.counts {
		if c := &h.counts[i]; c.failureType == failureType {
			c.n++
			return c.n
		}
	}
	if h.counts == nil {
		h.counts = h.room[:0]
	}
	h.counts = append(h.counts, typeCount{failureType: failureType, n: 1})
	return 1
}

// MemoryOptions bound a Memory.
type MemoryOptions struct {
	SessionTTL  time.Duration // default 1h
	MaxSessions int           // default 10000
	BreakerTTL  time.Duration // idle breaker state is dropped after this; default 24h
	MaxBreakers int           // default 1000
	Clock       Clock
}

// NewMemory returns an empty Memory.
func NewMemory(o MemoryOptions) *Memory {
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	m := &Memory{clock: o.Clock}
	sessionTTL, maxSessions := orDefaultDuration(o.SessionTTL, time.Hour), orDefault(o.MaxSessions, 10000)
	m.sessions = newTTLLRU[*sessionHistory](sessionTTL, maxSessions,
		func(expired bool) {
			if expired {
				m.sessionsExpired.Add(1)
			} else {
				m.sessionsEvicted.Add(1)
			}
		})
	m.usage = newTTLLRU[Usage](sessionTTL, maxSessions, func(expired bool) {
		if !expired {
			m.usageEvicted.Add(1)
		}
	})
	m.breakers = newTTLLRU[breaker.State](orDefaultDuration(o.BreakerTTL, 24*time.Hour), orDefault(o.MaxBreakers, 1000),
		func(expired bool) {
			if !expired {
				m.breakersEvicted.Add(1)
			}
		})
	return m
}

// MemoryStats counts what the bounds of a Memory dropped.
type MemoryStats struct {
	Sessions        int   // sessions held now
	SessionsEvicted int64 // dropped by the MaxSessions bound (LRU)
	SessionsExpired int64 // dropped by the TTL
	UsageEvicted    int64 // session usage dropped by the MaxSessions bound
	Breakers        int
	BreakersEvicted int64
}

// Stats returns the store's counters.
func (m *Memory) Stats() MemoryStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return MemoryStats{
		Sessions:        m.sessions.len(),
		SessionsEvicted: m.sessionsEvicted.Load(),
		SessionsExpired: m.sessionsExpired.Load(),
		UsageEvicted:    m.usageEvicted.Load(),
		Breakers:        m.breakers.len(),
		BreakersEvicted: m.breakersEvicted.Load(),
	}
}

func (m *Memory) Attempt(_ context.Context, session, failureType string, now time.Time) (Attempts, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := boundKey(session)
	h, ok := m.sessions.get(key, m.clock.Now())
	if !ok {
		h = &sessionHistory{first: now}
	}
	n := h.add(failureType)
	h.total++
	m.sessions.put(key, h, m.clock.Now())
	return Attempts{Type: n, Total: h.total, First: h.first}, nil
}

func (m *Memory) AddUsage(_ context.Context, session string, u Usage) (Usage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := boundKey(session)
	now := m.clock.Now()
	total, _ := m.usage.get(key, now)
	total = total.Add(u)
	m.usage.put(key, total, now)
	return total, nil
}

func (m *Memory) ResetSession(_ context.Context, session string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions.remove(boundKey(session))
	return nil
}

func (m *Memory) UpdateBreaker(_ context.Context, key string, update func(*breaker.State) bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	k := boundKey(key)
	st, _ := m.breakers.get(k, now)
	st.Failures = append([]int64(nil), st.Failures...)
	if update(&st) {
		m.breakers.put(k, st, now)
	}
	return nil
}

func (m *Memory) Close() error { return nil }

// ttlLRU is a map bounded by size (least recently used evicted first) whose
// entries expire ttl after their last put. Not safe for concurrent use.
type ttlLRU[V any] struct {
	ttl  time.Duration
	size int
	// entries never evict by themselves (their bound is one above size):
	// put evicts, because only it knows whether the oldest entry had
	// expired.
	entries *simplelru.LRU[string, ttlValue[V]]
	dropped func(expired bool)
}

type ttlValue[V any] struct {
	val     V
	expires time.Time
}

func newTTLLRU[V any](ttl time.Duration, size int, dropped func(expired bool)) *ttlLRU[V] {
	entries, err := simplelru.NewLRU[string, ttlValue[V]](size+1, nil)
	if err != nil {
		panic(err) // size+1 > 0 for every size MemoryOptions allows
	}
	return &ttlLRU[V]{ttl: ttl, size: size, entries: entries, dropped: dropped}
}

func (c *ttlLRU[V]) len() int { return c.entries.Len() }

func (c *ttlLRU[V]) get(key string, now time.Time) (V, bool) {
	var zero V
	e, ok := c.entries.Get(key)
	if !ok {
		return zero, false
	}
	if !now.Before(e.expires) {
		c.entries.Remove(key)
		c.dropped(true)
		return zero, false
	}
	return e.val, true
}

func (c *ttlLRU[V]) put(key string, val V, now time.Time) {
	c.entries.Add(key, ttlValue[V]{val: val, expires: now.Add(c.ttl)})
	for c.entries.Len() > c.size {
		_, oldest, _ := c.entries.RemoveOldest()
		// An entry that had already expired is counted as expired, not evicted.
		c.dropped(!now.Before(oldest.expires))
	}
}

func (c *ttlLRU[V]) remove(key string) { c.entries.Remove(key) }
