// Package recovery chooses what an agent runtime should do after a failed
// run: retry with a hint, back off, replan, resume, roll back, fall back to
// another model or tool, suspend for a human, escalate or abort.
//
// A policy maps each failure type of the classifier to a strategy.
// Strategies are declarative (they never sleep or call anything) and are
// composed with sequence, chain and circuit_breaker. The Engine consults the
// attempt history of the session (so "three attempts" counts across the runs
// of one session, and across collectors when the history lives in Redis),
// feeds the circuit breakers, and returns a Decision document.
//
// Exported API:
//
//   - the engine: New, Engine (Decide, RecordSuccess, AddUsage, Stats,
//     Close), its options (Option: WithClock, WithOnDegraded, WithRand,
//     WithRedactor, WithStrategy) and its plain options (Options,
//     HistoryOptions, RedisOptions, StrategySpec, DefaultOptions,
//     DefaultPolicy, DefaultEntry, NonIdempotentEntry; the collector
//     component owns the YAML);
//   - its input: Input, Evidence, InputFromVerdict, SessionKey,
//     DefaultSessionAttributes, SuccessInput, Usage, PhaseInFlight,
//     PhaseFinal;
//   - its output: Decision (JSON, DecisionVersion, DecisionSchema,
//     ValidateDecisionJSON), Action, ActionKind and its values, ActionKinds,
//     BreakerReport, Stats;
//   - the redactor every outbound text passes: Redactor, RedactorOptions,
//     NewRedactor, NewRedactorChecked, Redacted;
//   - the strategy extension point: Strategy, Env, Result, Unlimited, Clock.
//
// The strategies (one file per kind) are in internal/strategy, the history
// and breaker stores (memory, Redis, Redis degrading to memory) in
// internal/store, the breaker state machine in internal/breaker.
//
// The package imports no collector package except pdata (for trace and span
// IDs). See README.md in this directory for the policy YAML, the history
// semantics and the decision document, whose JSON Schema is
// decision.schema.json (embedded as DecisionSchema).
package recovery
