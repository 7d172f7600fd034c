// Package recovery chooses what an agent runtime should do after a failed
// run: retry with a hint, back off, replan, resume, roll back, fall back to
// another model or tool, suspend for a human, escalate or abort.
//
// A Policy maps each failure type of the classifier to a Strategy. Strategies
// are declarative (they never sleep or call anything) and are composed with
// sequence, chain and circuit_breaker. The Engine consults the attempt history
// of the session (so "three attempts" counts across the runs of one session,
// and across collectors when the history lives in Redis), feeds the circuit
// breakers, and returns a Decision document.
//
// The package is plain Go: it imports no collector package. See README.md in
// this directory for the policy YAML, the history semantics and the decision
// document, whose JSON Schema is decision.schema.json (embedded as
// DecisionSchema).
package recovery
