package strategy

import (
	"context"
	"math"
	"time"
)

// BackoffAndRetry retries after an exponentially growing delay:
// BaseDelay * Multiplier^(attempt-1), capped at MaxDelay. Jitter (0..1)
// shortens each delay by a random fraction up to Jitter; it is off by
// default so that decisions are reproducible.
type BackoffAndRetry struct {
	Max        int           // attempts before exhausted; default 5
	BaseDelay  time.Duration // default 1s
	MaxDelay   time.Duration // default 60s
	Multiplier float64       // default 2
	Jitter     float64       // 0 (default) .. 1
	Hint       string
}

func (s BackoffAndRetry) Kind() string     { return "backoff_and_retry" }
func (s BackoffAndRetry) MaxAttempts() int { return orDefault(s.Max, 5) }

// Delay returns the delay before the attempt-th retry, without jitter.
func (s BackoffAndRetry) Delay(attempt int) time.Duration {
	base, maxDelay, mult := s.BaseDelay, s.MaxDelay, s.Multiplier
	if base <= 0 {
		base = time.Second
	}
	if maxDelay <= 0 {
		maxDelay = 60 * time.Second
	}
	if maxDelay < base {
		maxDelay = base
	}
	if mult < 1 {
		mult = 2
	}
	if attempt < 1 {
		attempt = 1
	}
	d := float64(base) * math.Pow(mult, float64(attempt-1))
	if math.IsInf(d, 0) || math.IsNaN(d) || d > float64(maxDelay) {
		return maxDelay
	}
	return time.Duration(d)
}

func (s BackoffAndRetry) Decide(_ context.Context, env *Env, path string, attempt int) (Result, error) {
	d := s.Delay(attempt)
	if s.Jitter > 0 && env.rand != nil {
		j := math.Min(s.Jitter, 1)
		d -= time.Duration(float64(d) * j * env.rand())
	}
	l := leaf{kind: s.Kind(), max: s.MaxAttempts()}
	return l.result(path, attempt, Action{Kind: ActionRetry, DelayMS: d.Milliseconds(), Hint: s.Hint}), nil
}
