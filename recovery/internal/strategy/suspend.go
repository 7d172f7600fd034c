package strategy

import "context"

// Suspend pauses the run until a human decides (human in the loop).
type Suspend struct {
	Max    int // default 1
	Reason string
}

func (s Suspend) Kind() string     { return "suspend" }
func (s Suspend) MaxAttempts() int { return orDefault(s.Max, 1) }

func (s Suspend) Decide(_ context.Context, env *Env, path string, attempt int) (Result, error) {
	reason := s.Reason
	if reason == "" {
		reason = env.Reason
	}
	l := leaf{kind: s.Kind(), max: s.MaxAttempts()}
	return l.result(path, attempt, Action{Kind: ActionSuspend, Reason: reason}), nil
}
