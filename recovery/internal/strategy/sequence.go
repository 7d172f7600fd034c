package strategy

import (
	"context"
	"fmt"
	"strconv"

	"github.com/triage-otel/triage/classifier"
)

// Sequence steps through its strategies across successive failures of the
// same type in the same session: the first step answers its MaxAttempts
// failures, then the second step, and so on. After the last step the
// sequence is exhausted (and the engine escalates).
type Sequence struct {
	Steps []Strategy
}

func (s Sequence) Kind() string { return "sequence" }

func (s Sequence) MaxAttempts() int {
	n := 0
	for _, st := range s.Steps {
		n = addBudgets(n, st.MaxAttempts())
	}
	return n
}

func (s Sequence) Decide(ctx context.Context, env *Env, path string, attempt int) (Result, error) {
	rest := attempt
	for i, st := range s.Steps {
		m := st.MaxAttempts()
		if rest <= m {
			return st.Decide(ctx, env, stepPath(path, i), rest)
		}
		rest -= m
	}
	return Exhausted(path, attempt, s.MaxAttempts(), env.FailureType), nil
}

// Exhausted is the escalation that ends every budget.
func Exhausted(path string, attempt, maxAttempts int, failureType classifier.FailureType) Result {
	return Result{
		Action: Action{Kind: ActionEscalate,
			Reason: fmt.Sprintf("recovery budget exhausted: %d attempts for %s in this session", maxAttempts, failureType)},
		Path: path, Leaf: "exhausted", Attempt: attempt, MaxAttempts: maxAttempts,
	}
}

// stepPath is fmt.Sprintf("%s.steps[%d]", path, i) without fmt's
// boxing of its arguments.
func stepPath(path string, i int) string {
	return path + ".steps[" + strconv.Itoa(i) + "]"
}
