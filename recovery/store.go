package recovery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Store keeps the attempt history of sessions and the state of circuit
// breakers. Every method is atomic with respect to every other user of the
// same store, including other collectors sharing a Redis store.
type Store interface {
	// Attempt records one more failure of failureType in session and
	// returns its number in the session (1 for the first), refreshing the
	// session's TTL.
	Attempt(ctx context.Context, session, failureType string) (int, error)
	// ResetSession forgets the session's history.
	ResetSession(ctx context.Context, session string) error
	// UpdateBreaker applies update to the state of breaker key atomically
	// and stores the result when update reports a change. update may run
	// more than once (optimistic retries) and must depend only on its input.
	UpdateBreaker(ctx context.Context, key string, update func(*BreakerState) bool) error
	Close() error
}

// Clock tells the time; tests use a fake one.
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// maxKeyLen bounds session and breaker keys; longer (untrusted) values are
// replaced by their hash so a huge attribute cannot bloat the store.
const maxKeyLen = 200

func boundKey(s string) string {
	if len(s) <= maxKeyLen {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}
