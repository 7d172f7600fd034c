package recovery

import (
	"fmt"
	"strings"
)

// Breaker scopes: one breaker state per (name, scope value).
const (
	ScopeGlobal  = "global"
	ScopeService = "service"
	ScopeAgent   = "agent"
	ScopeTool    = "tool"
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
	Settings BreakerSettings
	// Scope splits the state by service, agent or tool ("" or global: one state).
	Scope string
	// OpenAction is escalate (default), abort or suspend.
	OpenAction ActionKind
	Inner      Strategy
}

func (s CircuitBreaker) Kind() string     { return "circuit_breaker" }
func (s CircuitBreaker) MaxAttempts() int { return s.Inner.MaxAttempts() }

// key is the state key of the breaker for one run.
func (s CircuitBreaker) key(in Input) string {
	return breakerKey(s.Name, s.Scope, scopeValue(s.Scope, in.Service, in.Agent, in.Tool))
}

func scopeValue(scope, service, agent, tool string) string {
	switch scope {
	case ScopeService:
		return service
	case ScopeAgent:
		return agent
	case ScopeTool:
		return tool
	}
	return ""
}

func breakerKey(name, scope, value string) string {
	if scope == "" || scope == ScopeGlobal {
		return name
	}
	if value == "" {
		value = "-"
	}
	return name + "|" + scope + "=" + strings.ReplaceAll(value, "|", "_")
}

func (s CircuitBreaker) Decide(env *Env, path string, attempt int) (Result, error) {
	key := s.key(env.Input)
	var verdict breakerVerdict
	var phase BreakerPhase
	err := env.store.UpdateBreaker(env.Ctx, key, func(st *BreakerState) bool {
		verdict = st.onFailure(s.Settings, env.Now, env.Input.SessionID)
		phase = st.phase()
		return true
	})
	if err != nil {
		return Result{}, fmt.Errorf("circuit breaker %s: %w", s.Name, err)
	}
	report := &BreakerReport{Name: s.Name, Key: key, State: phase, Probe: verdict == breakerProbe}
	if verdict == breakerDeny {
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
	r, err := s.Inner.Decide(env, path+".inner", attempt)
	if err != nil {
		return r, err
	}
	if r.Breaker == nil {
		r.Breaker = report
	}
	return r, nil
}
