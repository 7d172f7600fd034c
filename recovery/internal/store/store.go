// Package store keeps what recovery remembers between decisions: the
// attempt history and usage of each session and the state of each circuit
// breaker, in memory (Memory, bounded and counted), in Redis (Redis, shared
// by collectors) or in Redis degrading to memory (Failover).
package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/triage-otel/triage/recovery/internal/breaker"
)

// Store keeps the attempt history of sessions and the state of circuit
// breakers. Every method is atomic with respect to every other user of the
// same store, including other collectors sharing a Redis store.
type Store interface {
	// Attempt records one more failure of failureType in session, at now,
	// and returns the session's counts with it (its number among the
	// failures of its type, 1 for the first; among all failures; the time
	// of the session's first recorded failure), refreshing the session's
	// TTL.
	Attempt(ctx context.Context, session, failureType string, now time.Time) (Attempts, error)
	// ResetSession forgets the session's history (not its usage).
	ResetSession(ctx context.Context, session string) error
	// AddUsage adds u to the session's usage (tokens and cost of its runs)
	// and returns the session's total. Usage is kept apart from the
	// attempt history: a successful run resets attempts, never usage. It
	// expires with the session's TTL after its last update.
	AddUsage(ctx context.Context, session string, u Usage) (Usage, error)
	// UpdateBreaker applies update to the state of breaker key atomically
	// and stores the result when update reports a change. update may run
	// more than once (optimistic retries) and must depend only on its input.
	UpdateBreaker(ctx context.Context, key string, update func(*breaker.State) bool) error
	Close() error
}

// Attempts are a session's failure counts after one more failure.
type Attempts struct {
	Type  int       // failures of this type, this one included
	Total int       // failures of every type, this one included
	First time.Time // when the first failure still in the history was recorded
}

// Usage is what runs spent: tokens (input and output) and cost (in the
// unit of the price table or of gen_ai.usage.cost, usually USD).
type Usage struct {
	Tokens int64
	Cost   float64
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage { return Usage{Tokens: u.Tokens + v.Tokens, Cost: u.Cost + v.Cost} }

// IsZero reports whether nothing was spent.
func (u Usage) IsZero() bool { return u.Tokens == 0 && u.Cost == 0 }

// Clock tells the time; tests use a fake one.
type Clock interface{ Now() time.Time }

// SystemClock is the wall clock.
type SystemClock struct{}

func (SystemClock) Now() time.Time { return time.Now() }

// maxKeyLen bounds session and breaker keys; longer (untrusted) values are
// replaced by their hash so a huge attribute cannot bloat the store.
const maxKeyLen = 200

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

func orDefaultDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func boundKey(s string) string {
	if len(s) <= maxKeyLen {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}
