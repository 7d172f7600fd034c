// Package wire is the contract between the triage components and whatever
// reads their output: the names written on telemetry (span attributes, the
// decision log event, metric names) and the codec of the recovery decision
// that travels with them.
//
// Every triage.* name is defined here and nowhere else. The processor writes
// them, the connector and the delivery exporters read them; a new name is
// added here first.
//
// A decision travels as a JSON document (the body) with its routing fields
// flattened beside it as attributes. Consumers read the attributes and pass
// the body on byte for byte; they never re-marshal it, and parse it only to
// fill a routing field a foreign producer left out (see ReadDecision).
//
// Exported API: the triage.* span attribute names (Attr*), the decision
// event's names and the metric names (constants), and the decision codec:
// ReadDecision (the routing fields of a decision record, from its
// attributes or, failing that, its body) → Decision, with ReadOptions, and
// the Problem values it reports through a Reporter.
package wire // import "github.com/triage-otel/triage/wire"

// Span attributes the triage processor writes on a run's root span (and on
// the stand-ins of a root that never arrived).
const (
	// AttrVerdict is the run's verdict: ok, recovered or failed.
	AttrVerdict = "triage.verdict"
	// AttrFailureType is the failure class of a failed run, or of an
	// incident on an incident span.
	AttrFailureType = "triage.failure_type"
	// AttrSignal is the kind of evidence the answer rests on.
	AttrSignal = "triage.signal"
	// AttrRule names the text or OTTL rule behind the answer, when one.
	AttrRule = "triage.rule"
	// AttrConfidence is the answer's confidence, 0..1.
	AttrConfidence = "triage.confidence"
	// AttrEvidenceSpanID is the span that shows the failure (hex).
	AttrEvidenceSpanID = "triage.evidence.span_id"
	// AttrReason says why an unknown is not retryable (auth, ...).
	AttrReason = "triage.reason"
	// AttrRuleError carries the error that stopped OTTL rule evaluation
	// (error_mode: propagate).
	AttrRuleError = "triage.rule_error"
	// AttrRootMissing marks the stand-ins of a root span that never arrived.
	AttrRootMissing = "triage.root_missing"
	// AttrIncompleteReason says why a run's evidence is partial (verdict
	// VerdictIncomplete): the trigger that took its trace out of the
	// buffer early or the per-trace limit that cut it.
	AttrIncompleteReason = "triage.incomplete.reason"
	// AttrLate marks a span annotated after its trace was decided: the
	// run annotations it carries repeat those of spans already forwarded,
	// so consumers neither count the run nor emit its decision again.
	AttrLate = "triage.late"
	// AttrAgent is the run's agent name (redacted).
	AttrAgent = "triage.agent"
	// AttrService is the run's service.name (redacted): consumers take the
	// service of a run from here, not from the span's resource.
	AttrService = "triage.service"
	// AttrTool is the tool of a failed run's terminal incident (redacted).
	AttrTool = "triage.tool"
	// AttrSessionID is the session the decision was taken in.
	AttrSessionID = "triage.session.id"
)

// VerdictIncomplete is the AttrVerdict of a run decided from a partial
// buffer whose evidence does not settle it (the other verdicts are the
// classifier's outcomes: ok, recovered, failed).
const VerdictIncomplete = "incomplete"

// Span attributes on incident spans (failing steps).
const (
	// AttrRecovered says whether the run recovered from the incident.
	AttrRecovered = "triage.recovered"
)

// Span attributes of the recovery decision of a failed run, on its root.
// AttrDecision holds the document; the others flatten it for consumers.
const (
	AttrDecision      = "triage.decision"
	AttrDecisionID    = "triage.decision.id"
	AttrActionKind    = "triage.action.kind"
	AttrActionDelayMS = "triage.action.delay_ms"
	AttrActionHint    = "triage.action.hint"
	AttrActionTarget  = "triage.action.target"
	AttrAttempt       = "triage.attempt"
	AttrMaxAttempts   = "triage.max_attempts"
	AttrPolicy        = "triage.policy"
	// AttrPhase is the decision's phase: "final" on a run's root,
	// "in_flight" on the processor's in-flight decision span (a guard
	// tripped while the run was still going).
	AttrPhase = "triage.phase"
	// AttrGuard names the guard of an in-flight decision.
	AttrGuard = "triage.guard"
	// AttrInFlightDecisionID, on a run's root, is the in-flight decision
	// its final decision references.
	AttrInFlightDecisionID = "triage.decision.in_flight_id"
)

// SpanInFlightDecision names the span that carries an in-flight decision
// (in the processor's scope, a child of the span that tripped the guard).
const SpanInFlightDecision = "triage.in_flight_decision"

// Decision phases (AttrPhase, the document's phase).
const (
	PhaseInFlight = "in_flight"
	PhaseFinal    = "final"
)

// EventDecision is the event name of the log record the connector emits per
// decision. Its body is the decision document; its attributes are the
// routing fields under the span attribute names (AttrDecisionID,
// AttrFailureType, AttrActionKind, AttrAgent, AttrSessionID, AttrPhase,
// AttrGuard).
const EventDecision = "triage.decision"

// Metrics the connector derives from annotated spans.
const (
	MetricRuns        = "triage.runs"
	MetricFailures    = "triage.failures"
	MetricIncidents   = "triage.incidents"
	MetricDecisions   = "triage.decisions"
	MetricRunDuration = "triage.run.duration"
	// MetricInFlightDecisions counts in-flight decisions by guard and action.
	MetricInFlightDecisions = "triage.in_flight_decisions"
)
