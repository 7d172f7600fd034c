package strategy

import (
	"context"

	"github.com/triage-otel/triage/classifier"
)

// Replan abandons the current plan and asks for a new one, with a hint that
// fits the failure (a loop, an overflowing context, an ignored constraint).
type Replan struct {
	Max  int // replans before exhausted; default 3
	Hint string
}

func (s Replan) Kind() string     { return "replan" }
func (s Replan) MaxAttempts() int { return orDefault(s.Max, 3) }

func (s Replan) Decide(_ context.Context, env *Env, path string, attempt int) (Result, error) {
	hint := s.Hint
	if hint == "" {
		hint = replanHint(env.FailureType)
	}
	l := leaf{kind: s.Kind(), max: s.MaxAttempts()}
	return l.result(path, attempt, Action{Kind: ActionReplan, Hint: hint}), nil
}

func replanHint(failureType classifier.FailureType) string {
	switch failureType {
	case classifier.LoopDetected:
		return "You repeated the same tool call with the same arguments without progress. Make a different plan; do not repeat a call whose result you already have."
	case classifier.ContextOverflow:
		return "The context window overflowed. Summarise what is known so far, drop raw tool outputs that are no longer needed, and plan the remaining work with the compressed context."
	case classifier.ConstraintIgnored:
		return "The previous answer violated a task constraint. Re-read every constraint of the task and make a plan that respects all of them."
	default:
		return "The previous plan failed. Make a new plan that takes the failure into account."
	}
}
