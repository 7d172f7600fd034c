// Package classifier says, with evidence, whether an agent run failed and
// why. It reads a trajectory.Run and answers with a Verdict: the run's
// incidents (failing steps), whether each was recovered later in the run,
// and the failure type of the run when it failed.
//
// Signals are read in a fixed order and the first decisive one wins:
// structure (tool manifest, JSON Schema, finish reasons, step limits), codes
// (HTTP status, JSON-RPC codes, provider error codes, exception types), text
// rules, then caller-supplied constraints. Precision comes first: when the
// evidence is ambiguous the answer is Unknown, never a guess.
//
// Incidents are failing tool calls (a tool span's error, a result fed back
// to the model that says it failed, or a call the structure rejects even
// when no tool span exists), failing model calls, errors on other spans of
// the run, and how the run ended (finish reason, step limit, a loop). An
// incident is recovered when a later successful step supersedes it — the
// same tool succeeds, a valid tool replaces an unknown one, a model call
// succeeds after a failed one — and the run ends without error. A failed
// run takes the class of its last unrecovered incident that has one; a
// loop wins.
//
// Exported API: New(Options) → Classifier (Classify a trajectory.Run into
// a Verdict; ClassifyCall for one call; NewLoopDetector); the taxonomy (FailureType and its
// values, FailureTypes, ParseFailureType, Outcome, Signal, Label, the
// Reason* reasons, NotRetryable); Incident; Subject (what a model is asked
// about, SubjectKind); the streaming loop rule (LoopDetector, Loop, Call);
// ClassifyText (an error string alone, for the corpora); Concluded.
//
// The package depends on pdata only (through trajectory).
package classifier

// FailureType is the class of a failure.
type FailureType string

const (
	WrongToolCalled   FailureType = "wrong_tool_called"
	SchemaMismatch    FailureType = "schema_mismatch"
	LoopDetected      FailureType = "loop_detected"
	ExternalFault     FailureType = "external_fault"
	Timeout           FailureType = "timeout"
	ContextOverflow   FailureType = "context_overflow"
	ConstraintIgnored FailureType = "constraint_ignored"
	PlanIncomplete    FailureType = "plan_incomplete"
	Unknown           FailureType = "unknown"
)

// FailureTypes lists every failure type in a stable order.
var FailureTypes = []FailureType{
	WrongToolCalled, SchemaMismatch, LoopDetected, ExternalFault, Timeout,
	ContextOverflow, ConstraintIgnored, PlanIncomplete, Unknown,
}

// ParseFailureType returns the failure type named s and whether it is one.
func ParseFailureType(s string) (FailureType, bool) {
	for _, t := range FailureTypes {
		if string(t) == s {
			return t, true
		}
	}
	return "", false
}

// Outcome is the verdict of a run.
type Outcome string

const (
	OutcomeOK        Outcome = "ok"
	OutcomeRecovered Outcome = "recovered"
	OutcomeFailed    Outcome = "failed"
)

// Signal names the kind of evidence a classification rests on.
type Signal string

const (
	SignalManifest         Signal = "manifest"          // requested tool not among the offered definitions
	SignalJSONSchema       Signal = "json_schema"       // arguments fail the offered JSON Schema
	SignalFinishReason     Signal = "finish_reason"     // e.g. length
	SignalStepLimit        Signal = "step_limit"        // the run stopped while still calling tools
	SignalNoResponse       Signal = "no_response"       // the last model call came back empty and the run ended there
	SignalPlaceholderValue Signal = "placeholder_value" // a tool result holds undefined/NaN: the tool ran on a missing or non-numeric argument
	SignalLoop             Signal = "loop"              // repeated equal tool calls
	SignalHTTPStatus       Signal = "http_status"       //
	SignalJSONRPCCode      Signal = "jsonrpc_code"      //
	SignalProviderCode     Signal = "provider_code"     // context_length_exceeded, rate_limit_exceeded, ...
	SignalExceptionType    Signal = "exception_type"    //
	SignalTextRule         Signal = "text_rule"         // Rule holds the rule name
	SignalConstraint       Signal = "constraint"        // a forbidden string in LLM output
	SignalOTTL             Signal = "ottl"              // Rule holds the OTTL rule name
	SignalLLM              Signal = "llm"               // a model's answer that passed the gates; Rule holds the model name
	SignalCorrection       Signal = "correction"        // a human correction of the error shape; Rule holds its signature
	SignalNone             Signal = ""
)

// Label returns the signal as written in evidence: text_rule:<name> and
// ottl:<name> carry the rule name.
func Label(s Signal, rule string) string {
	if rule != "" && (s == SignalTextRule || s == SignalOTTL) {
		return string(s) + ":" + rule
	}
	return string(s)
}
