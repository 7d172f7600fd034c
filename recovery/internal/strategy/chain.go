package strategy

import "context"

// Chain answers with Primary until Primary is exhausted, then with
// Fallback. Unlike a two-step sequence it also falls back early when Primary
// is unavailable, i.e. when a circuit breaker inside it is open: "retry while
// the service is healthy, switch to the fallback model when it is not".
type Chain struct {
	Primary  Strategy
	Fallback Strategy
}

func (s Chain) Kind() string { return "chain" }

func (s Chain) MaxAttempts() int {
	return addBudgets(s.Primary.MaxAttempts(), s.Fallback.MaxAttempts())
}

func (s Chain) Decide(ctx context.Context, env *Env, path string, attempt int) (Result, error) {
	pm := s.Primary.MaxAttempts()
	if attempt > pm {
		return s.Fallback.Decide(ctx, env, path+".fallback", attempt-pm)
	}
	r, err := s.Primary.Decide(ctx, env, path+".primary", attempt)
	if err != nil || !r.Unavailable {
		return r, err
	}
	fr, err := s.Fallback.Decide(ctx, env, path+".fallback", 1)
	if err != nil {
		return fr, err
	}
	if fr.Action.Reason == "" {
		fr.Action.Reason = r.Action.Reason
	}
	if fr.Breaker == nil {
		fr.Breaker = r.Breaker
	}
	return fr, nil
}
