package strategy

import "context"

// Fallback switches to another model, tool, service or cache (Target), the
// answer of an SDK to a degraded dependency. An empty Target means "your
// configured fallback".
type Fallback struct {
	Max    int // default 1
	Target string
	Hint   string
}

func (s Fallback) Kind() string     { return "fallback" }
func (s Fallback) MaxAttempts() int { return orDefault(s.Max, 1) }

func (s Fallback) Decide(_ context.Context, env *Env, path string, attempt int) (Result, error) {
	l := leaf{kind: s.Kind(), max: s.MaxAttempts()}
	return l.result(path, attempt, Action{Kind: ActionFallback, Target: s.Target, Hint: s.Hint}), nil
}
