package guard

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/recovery"
)

// Name names a guard. These are the wire names: the guard field of an
// in-flight decision, the keys of the guards config block and of
// recovery.guard_policy.
type Name string

const (
	Loop            Name = "loop"
	RepeatedFailure Name = "repeated_failure"
	Tokens          Name = "tokens"
	Cost            Name = "cost"
	WallClock       Name = "wall_clock"
)

// Names lists every guard.
var Names = []Name{Loop, RepeatedFailure, Tokens, Cost, WallClock}

// signalGuard labels the evidence of budget guards, which rests on sums
// rather than on a classifier signal: "guard:tokens", ...
func signalGuard(n Name) string { return "guard:" + string(n) }

// Trip is one guard tripping on a run.
type Trip struct {
	Guard       Name
	FailureType classifier.FailureType
	Confidence  float64
	// Reason says what was seen, e.g. "get_weather called 3 times with
	// the same arguments within 6 calls".
	Reason string
	// SpanID is the span whose arrival tripped the guard.
	SpanID pcommon.SpanID
	// Tool is the tool the trip is about (loop, repeated_failure).
	Tool     string
	Evidence []recovery.Evidence
}

// Input is the recovery input of an in-flight decision for the trip: the
// caller adds the session, service, agent and what it knows of the tool.
func (t *Trip) Input(traceID pcommon.TraceID) recovery.Input {
	in := recovery.Input{
		FailureType: t.FailureType,
		Confidence:  t.Confidence,
		Evidence:    t.Evidence,
		TraceID:     traceID,
		SpanID:      t.SpanID,
		Tool:        t.Tool,
		Reason:      t.Reason,
		Phase:       recovery.PhaseInFlight,
		Guard:       string(t.Guard),
	}
	if in.FailureType == "" {
		in.FailureType = classifier.Unknown
	}
	return in
}
