package recovery

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/classifier"
)

// maxEvidence bounds the evidence a decision carries: the verdict's own plus
// a few unrecovered incidents is what a runtime or a human can use.
const maxEvidence = 8

// InputFromVerdict fills the classification part of an Input from a failed
// run's verdict: failure type, confidence, reason, evidence (the verdict's
// own first, then the unrecovered incidents), the failing tool, and the ids.
// The caller adds the session, service and agent.
func InputFromVerdict(v *classifier.Verdict, traceID pcommon.TraceID, spanID pcommon.SpanID) Input {
	in := Input{
		FailureType: v.FailureType,
		Confidence:  v.Confidence,
		Reason:      v.Reason,
		TraceID:     traceID,
		SpanID:      spanID,
	}
	if in.FailureType == "" {
		in.FailureType = classifier.Unknown
	}
	// Room for all the evidence at once: the verdict's own and each
	// unrecovered incident, at most maxEvidence.
	n := 1
	for i := range v.Incidents {
		if !v.Incidents[i].Recovered {
			n++
		}
	}
	in.Evidence = make([]Evidence, 0, min(n, maxEvidence))
	// The spans already given as evidence are those of in.Evidence (at
	// most maxEvidence): looked for there, with no set of their own.
	seen := func(id pcommon.SpanID) bool {
		for i := range in.Evidence {
			if in.Evidence[i].SpanID == id {
				return true
			}
		}
		return false
	}
	if v.Signal != classifier.SignalNone || !v.EvidenceSpanID.IsEmpty() {
		in.Evidence = append(in.Evidence, Evidence{
			SpanID: v.EvidenceSpanID,
			Signal: classifier.Label(v.Signal, v.Rule),
			Rule:   v.Rule,
			Reason: v.Reason,
		})
	}
	var lastTool string
	for _, inc := range v.Incidents {
		if inc.Recovered {
			continue
		}
		if inc.Tool != "" {
			lastTool = inc.Tool
			if inc.SpanID == v.EvidenceSpanID && !v.EvidenceSpanID.IsEmpty() {
				in.Tool = inc.Tool
			}
		}
		if len(in.Evidence) >= maxEvidence || seen(inc.SpanID) {
			continue
		}
		in.Evidence = append(in.Evidence, Evidence{
			SpanID: inc.SpanID,
			Signal: classifier.Label(inc.Signal, inc.Rule),
			Rule:   inc.Rule,
			Reason: inc.Reason,
		})
	}
	if in.Tool == "" {
		in.Tool = lastTool
	}
	if len(in.Evidence) == 0 {
		in.Evidence = nil // (as when nothing was appended)
	}
	return in
}
