package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triage-otel/triage/recovery/internal/breaker"
)

// Failover uses Primary (Redis) and, when it fails or does not answer
// within Timeout, serves the call from Fallback (memory) instead: the
// pipeline is never held longer than Timeout. After a failure Primary is left
// alone for RecheckInterval, so a dead Redis costs one timeout per interval,
// not one per decision. While degraded, history and breakers are local to the
// collector (and start from whatever the memory store last held).
type Failover struct {
	Primary         Store
	Fallback        Store
	Timeout         time.Duration // per call; default 100ms
	RecheckInterval time.Duration // default 5s
	Clock           Clock
	// OnDegraded, when set, is called for every call served by Fallback
	// (err is the primary's error, or nil while it is being left alone).
	OnDegraded func(op string, err error)

	mu        sync.Mutex
	downUntil time.Time

	degraded     atomic.Int64
	primaryFails atomic.Int64
}

// FailoverStats counts degraded calls.
type FailoverStats struct {
	Degraded       int64 // calls served by the fallback store
	PrimaryFailure int64 // calls on which the primary failed or timed out
	PrimaryDown    bool  // the primary is currently being left alone
}

// Stats returns the store's counters.
func (f *Failover) Stats() FailoverStats {
	f.mu.Lock()
	down := f.clock().Now().Before(f.downUntil)
	f.mu.Unlock()
	return FailoverStats{Degraded: f.degraded.Load(), PrimaryFailure: f.primaryFails.Load(), PrimaryDown: down}
}

func (f *Failover) clock() Clock {
	if f.Clock == nil {
		return SystemClock{}
	}
	return f.Clock
}

// do runs op on the primary when it is usable, else (or on its failure) on
// the fallback.
func (f *Failover) do(ctx context.Context, name string, op func(context.Context, Store) error) error {
	f.mu.Lock()
	usable := !f.clock().Now().Before(f.downUntil)
	f.mu.Unlock()
	var perr error
	if usable {
		cctx, cancel := context.WithTimeout(ctx, orDefaultDuration(f.Timeout, 100*time.Millisecond))
		perr = op(cctx, f.Primary)
		cancel()
		if perr == nil {
			return nil
		}
		if ctx.Err() != nil {
			// The caller gave up: not the primary's fault.
			return ctx.Err()
		}
		f.primaryFails.Add(1)
		f.mu.Lock()
		f.downUntil = f.clock().Now().Add(orDefaultDuration(f.RecheckInterval, 5*time.Second))
		f.mu.Unlock()
	}
	f.degraded.Add(1)
	if f.OnDegraded != nil {
		f.OnDegraded(name, perr)
	}
	if err := op(ctx, f.Fallback); err != nil {
		return errors.Join(perr, err)
	}
	return nil
}

func (f *Failover) Attempt(ctx context.Context, session, failureType string, now time.Time) (Attempts, error) {
	var n Attempts
	err := f.do(ctx, "attempt", func(ctx context.Context, s Store) error {
		var err error
		n, err = s.Attempt(ctx, session, failureType, now)
		return err
	})
	return n, err
}

func (f *Failover) AddUsage(ctx context.Context, session string, u Usage) (Usage, error) {
	var total Usage
	err := f.do(ctx, "add_usage", func(ctx context.Context, s Store) error {
		var err error
		total, err = s.AddUsage(ctx, session, u)
		return err
	})
	return total, err
}

func (f *Failover) ResetSession(ctx context.Context, session string) error {
	return f.do(ctx, "reset_session", func(ctx context.Context, s Store) error {
		return s.ResetSession(ctx, session)
	})
}

func (f *Failover) UpdateBreaker(ctx context.Context, key string, update func(*breaker.State) bool) error {
	return f.do(ctx, "update_breaker", func(ctx context.Context, s Store) error {
		return s.UpdateBreaker(ctx, key, update)
	})
}

func (f *Failover) Close() error {
	return errors.Join(f.Primary.Close(), f.Fallback.Close())
}
