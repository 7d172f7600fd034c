package strategy

import (
	"context"
	"fmt"

	"github.com/triage-otel/triage/recovery/internal/breaker"
)

// CircuitBreaker guards Inner with a failure-rate breaker shared by every
// session (and, with Redis, every collector): CLOSED until Threshold failures
// fall within Window, then OPEN (failures get the open-path answer, OpenAction,
// and are marked unavailable so that an enclosing chain falls back) until
// Cooldown has elapsed, then HALF_OPEN with exactly one probe admitted to
// Inner, then CLOSED again when a run succeeds (Engine.RecordSuccess).
type CircuitBreaker struct {
	// Name identifies the shared state; breakers with one name share it.
	Name     string
	Settings breaker.Settings
	// Scope splits the state by service, agent or tool ("" or global: one state).
	Scope string
	// OpenAction is escalate (default), abort or suspend.
	OpenAction ActionKind
	Inner      Strategy
}

func (s CircuitBreaker) Kind() string     { return "circuit_breaker" }
func (s CircuitBreaker) MaxAttempts() int { return s.Inner.MaxAttempts() }

func (s CircuitBreaker) Decide(ctx context.Context, env *Env, path string, attempt int) (Result, error) {
	key := breaker.Key(s.Name, s.Scope, breaker.ScopeValue(s.Scope, env.Service, env.Agent, env.Tool))
	if env.breakers == nil {
		return Result{}, fmt.Errorf("circuit breaker %s: no breaker store in the environment", s.Name)
	}
	var verdict breaker.Verdict
	var phase breaker.Phase
	err := env.breakers.UpdateBreaker(ctx, key, func(st *breaker.State) bool {
		verdict = st.OnFailure(s.Settings, env.Now, env.SessionID)
		phase = st.Current()
		return true
	})
	if err != nil {
		return Result{}, fmt.Errorf("circuit breaker %s: %w", s.Name, err)
	}
	report := &BreakerReport{Name: s.Name, Key: key, State: string(phase), Probe: verdict == breaker.Probe}
	if verdict == breaker.Deny {
		kind := s.OpenAction
		if kind == "" {
			kind = ActionEscalate
		}
		return Result{
			Action:      Action{Kind: kind, Reason: fmt.Sprintf("circuit breaker %s is %s", key, phase)},
			Path:        path,
			Leaf:        s.Kind(),
			Attempt:     attempt,
			MaxAttempts: s.MaxAttempts(),
			Unavailable: true,
			Breaker:     report,
		}, nil
	}
	r, err := s.Inner.Decide(ctx, env, path+".inner", attempt)
	if err != nil {
		return r, err
	}
	if r.Breaker == nil {
		r.Breaker = report
	}
	return r, nil
}
