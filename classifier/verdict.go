package classifier

import "go.opentelemetry.io/collector/pdata/pcommon"

// Incident is a failing step (or span) of a run.
type Incident struct {
	SpanID      pcommon.SpanID
	StepIndex   int // index in Run.Steps; -1 when the incident is on a non-step span
	Tool        string
	FailureType FailureType
	Signal      Signal
	Rule        string  // rule name for text_rule / ottl signals
	Confidence  float64 // 0..1
	Reason      string  // human-readable; set for unknown incidents whose class is clear but not retryable (auth, content filter, ...)
	Recovered   bool
}

// Verdict is the classification of one run.
type Verdict struct {
	Outcome        Outcome
	FailureType    FailureType // "" unless Outcome is failed
	Signal         Signal
	Rule           string
	Confidence     float64
	Reason         string
	EvidenceSpanID pcommon.SpanID
	Incidents      []Incident
}
