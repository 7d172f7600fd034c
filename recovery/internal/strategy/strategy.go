// Package strategy holds the recovery strategies, one file per kind, and
// the types they share with the engine: Strategy, Env, Result, Action,
// BreakerReport. Package recovery re-exports those types as its extension
// point (a Strategy written outside plugs into the engine with
// recovery.WithStrategy); the strategies themselves are built from the
// policy options by recovery and are not exported from it.
package strategy

import (
	"context"
	"math"
	"time"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/recovery/internal/breaker"
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
	Decide(ctx context.Context, env *Env, path string, attempt int) (Result, error)
}

// Env is what a strategy may read while deciding: the failure it answers
// (its free text already redacted by the engine) and the time.
type Env struct {
	FailureType classifier.FailureType
	// Reason is the classifier's reason for the failure, if any.
	Reason    string
	SessionID string
	Service   string
	Agent     string
	Tool      string // the failing tool, if known
	// Subgoal and CheckpointID are the run's, if it named them.
	Subgoal      string
	CheckpointID string
	Now          time.Time

	breakers BreakerStore
	// rand returns a number in [0, 1); used for jitter only.
	rand func() float64
}

// BreakerStore holds the circuit breakers' state (every recovery store
// does).
type BreakerStore interface {
	UpdateBreaker(ctx context.Context, key string, update func(*breaker.State) bool) error
}

// WithRuntime returns env with the breaker state and the jitter source
// (a function returning [0, 1)) the engine's strategies use.
func WithRuntime(env Env, breakers BreakerStore, rand func() float64) *Env {
	return SetRuntime(new(Env), env, breakers, rand)
}

// SetRuntime is WithRuntime written into *dst, room the caller reuses
// from decision to decision (a strategy keeps no reference to its env).
func SetRuntime(dst *Env, env Env, breakers BreakerStore, rand func() float64) *Env {
	*dst = env
	dst.breakers, dst.rand = breakers, rand
	return dst
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
	Name  string `json:"name"`
	Key   string `json:"key"`
	State string `json:"state"` // closed, open or half_open
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

// orDefault turns an unset attempt budget into the strategy's default.
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
