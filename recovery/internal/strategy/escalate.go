package strategy

import (
	"context"
	"fmt"
)

// Escalate hands the failure to a human or an operator. It never exhausts.
type Escalate struct {
	Reason string
}

func (s Escalate) Kind() string     { return "escalate" }
func (s Escalate) MaxAttempts() int { return Unlimited }

func (s Escalate) Decide(_ context.Context, env *Env, path string, attempt int) (Result, error) {
	reason := s.Reason
	if reason == "" {
		reason = env.Reason
	}
	if reason == "" {
		reason = fmt.Sprintf("no automatic recovery for failure type %s", env.FailureType)
	}
	l := leaf{kind: s.Kind(), max: Unlimited}
	return l.result(path, attempt, Action{Kind: ActionEscalate, Reason: reason}), nil
}
