package recovery

import (
	"github.com/triage-otel/triage/recovery/internal/store"
	"github.com/triage-otel/triage/recovery/internal/strategy"
)

// The extension point. A Strategy answers a failure with an Action; it
// declares intent only (it never sleeps, calls the agent or restores state:
// the runtime that consumes the decision does) and is stateless: the engine
// numbers the failures of one type in one session (1, 2, 3, ... across runs
// and collectors) and passes that number down. The built-in strategies
// (retry_with_tool_manifest, backoff_and_retry, replan, resume_from_subgoal,
// rollback_to_checkpoint, fallback, suspend, escalate, abort, sequence,
// chain, circuit_breaker) are built from the policy in Options; a Strategy
// written in Go replaces a policy entry with WithStrategy.
type (
	// Strategy answers the attempt-th failure it handles (see
	// recovery/internal/strategy for the built-in ones).
	Strategy = strategy.Strategy
	// Env is what a strategy may read while deciding: the failure (its
	// free text already redacted) and the time.
	Env = strategy.Env
	// Result is a strategy's answer: the action and the strategy that
	// produced it.
	Result = strategy.Result
	// Action is what the agent runtime should do next.
	Action = strategy.Action
	// ActionKind is the kind of an Action.
	ActionKind = strategy.ActionKind
	// BreakerReport is the state of a circuit breaker as one decision saw it.
	BreakerReport = strategy.BreakerReport
	// Usage is what runs spent: tokens and cost.
	Usage = store.Usage
	// Clock tells the engine the time (WithClock; tests use a fake one).
	Clock = store.Clock
)

// Action kinds.
const (
	ActionRetry    = strategy.ActionRetry
	ActionReplan   = strategy.ActionReplan
	ActionResume   = strategy.ActionResume
	ActionRollback = strategy.ActionRollback
	ActionFallback = strategy.ActionFallback
	ActionSuspend  = strategy.ActionSuspend
	ActionEscalate = strategy.ActionEscalate
	ActionAbort    = strategy.ActionAbort
)

// ActionKinds lists every ActionKind (the decision schema's enum).
var ActionKinds = strategy.ActionKinds

// Unlimited is the MaxAttempts of strategies that never exhaust (escalate,
// abort): answering the same failure the same way forever is their point.
const Unlimited = strategy.Unlimited
