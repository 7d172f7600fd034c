package strategy

import "context"

// Abort stops the run for good (permanent failures). It never exhausts.
type Abort struct {
	Reason string
}

func (s Abort) Kind() string     { return "abort" }
func (s Abort) MaxAttempts() int { return Unlimited }

func (s Abort) Decide(_ context.Context, env *Env, path string, attempt int) (Result, error) {
	reason := s.Reason
	if reason == "" {
		reason = env.Reason
	}
	l := leaf{kind: s.Kind(), max: Unlimited}
	return l.result(path, attempt, Action{Kind: ActionAbort, Reason: reason}), nil
}
