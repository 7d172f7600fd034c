package recovery

import (
	"context"
	"math"
	"time"
)

// Unlimited is the MaxAttempts of strategies that never exhaust (escalate,
// abort): answering the same failure the same way forever is their point.
const Unlimited = math.MaxInt32

// Strategy answers a failure with an action. A strategy declares intent only:
// it never sleeps, calls the agent or restores state; the runtime that
// consumes the decision does.
//
// Strategies are stateless. The engine numbers the failures of one type in
// one session (1, 2, 3, ... across runs and collectors) and passes that number
// down; composite strategies route it to their children, which is what lets
// two collectors that share a history walk one sequence together.
type Strategy interface {
	// Kind is the strategy's config kind, e.g. "backoff_and_retry".
	Kind() string
	// MaxAttempts is how many successive failures the strategy answers
	// before it is exhausted (Unlimited for escalate and abort).
	MaxAttempts() int
	// Decide answers the attempt-th failure (1 <= attempt <= MaxAttempts)
	// handled by this strategy. path is the strategy's place in the policy,
	// e.g. "external_fault.steps[1]".
	Decide(env *Env, path string, attempt int) (Result, error)
}

// Env is what a strategy may read while deciding.
type Env struct {
	Ctx   context.Context
	Input Input
	Now   time.Time
	store Store
	// rand returns a number in [0, 1); used for jitter only.
	rand func() float64
}

// Result is a strategy's answer.
type Result struct {
	Action Action
	// Path and Leaf name the strategy that produced the action.
	Path string
	Leaf string
	// Attempt and MaxAttempts are the leaf's own counters.
	Attempt     int
	MaxAttempts int
	// Unavailable is set by an open circuit breaker: the action is the
	// breaker's open-path answer and a chain may fall back instead.
	Unavailable bool
	// Breaker reports the breaker the answer passed through, if any.
	Breaker *BreakerReport
}

// BreakerReport is the state of a circuit breaker as seen by one decision.
type BreakerReport struct {
	Name  string       `json:"name"`
	Key   string       `json:"key"`
	State BreakerPhase `json:"state"`
	// Probe is true when this decision is the single probe admitted while
	// the breaker is half-open.
	Probe bool `json:"probe"`
}

// leaf is the part shared by the strategies that produce an action themselves.
type leaf struct {
	kind string
	max  int
}

func (l leaf) Kind() string     { return l.kind }
func (l leaf) MaxAttempts() int { return l.max }

func (l leaf) result(path string, attempt int, a Action) Result {
	return Result{Action: a, Path: path, Leaf: l.kind, Attempt: attempt, MaxAttempts: l.max}
}

// atLeastOne turns an unset attempt budget into the strategy's default.
func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// addBudgets adds attempt budgets without overflowing past Unlimited.
func addBudgets(a, b int) int {
	if a >= Unlimited-b {
		return Unlimited
	}
	return a + b
}
