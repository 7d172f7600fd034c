package recovery

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/classifier"
)

func TestInputFromVerdict(t *testing.T) {
	trace := pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	root := pcommon.SpanID{1, 1, 1, 1, 1, 1, 1, 1}
	bad := pcommon.SpanID{2, 2, 2, 2, 2, 2, 2, 2}
	early := pcommon.SpanID{3, 3, 3, 3, 3, 3, 3, 3}
	v := classifier.Verdict{
		Outcome: classifier.OutcomeFailed, FailureType: classifier.ExternalFault,
		Signal: classifier.SignalTextRule, Rule: "http_5xx", Confidence: 0.8, Reason: "HTTP 503",
		EvidenceSpanID: bad,
		Incidents: []classifier.Incident{
			{SpanID: early, Tool: "search", FailureType: classifier.Timeout, Signal: classifier.SignalExceptionType, Recovered: true},
			{SpanID: bad, Tool: "payments", FailureType: classifier.ExternalFault, Signal: classifier.SignalTextRule, Rule: "http_5xx"},
		},
	}
	in := InputFromVerdict(&v, trace, root)
	if in.FailureType != "external_fault" || in.Confidence != 0.8 || in.Tool != "payments" || in.TraceID != trace || in.SpanID != root {
		t.Fatalf("%+v", in)
	}
	if len(in.Evidence) != 1 || in.Evidence[0].Signal != "text_rule:http_5xx" || in.Evidence[0].SpanID != bad {
		t.Fatalf("evidence %+v (recovered incidents and duplicates are left out)", in.Evidence)
	}
	e := newEngine(t, `{}`)
	in.SessionID = "s"
	d := decide(t, e, in)
	raw, _ := d.JSON()
	if err := ValidateDecisionJSON(raw); err != nil {
		t.Fatal(err)
	}
	empty := InputFromVerdict(&classifier.Verdict{Outcome: classifier.OutcomeFailed}, trace, root)
	if empty.FailureType != "unknown" || len(empty.Evidence) != 0 {
		t.Fatalf("%+v", empty)
	}
}
