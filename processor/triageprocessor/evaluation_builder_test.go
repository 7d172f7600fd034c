package triageprocessor

import (
	"bytes"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/xpdata"
)

// addEvaluationsPut is addEvaluations with Put on each event's map: the
// reference the builder's layout is held to.
func addEvaluationsPut(span ptrace.Span, anns ...[]annotation) {
	n := 0
	for _, list := range anns {
		n += len(list) - attributeCount(list)
	}
	if n == 0 {
		return
	}
	events := span.Events()
	events.EnsureCapacity(events.Len() + n)
	for _, list := range anns {
		for _, a := range list {
			if a.eval == nil {
				continue
			}
			ev := events.AppendEmpty()
			ev.SetName(eventEvaluationResult)
			ts := span.EndTimestamp()
			if ts == 0 {
				ts = span.StartTimestamp()
			}
			ev.SetTimestamp(ts)
			m := ev.Attributes()
			m.EnsureCapacity(4)
			m.PutStr(attrEvaluationName, evaluationName)
			m.PutStr(attrEvaluationScoreLabel, a.eval.label)
			if a.eval.hasScore {
				m.PutDouble(attrEvaluationScoreValue, a.eval.score)
			}
			m.PutStr(attrEvaluationExplanation, a.eval.explanation)
		}
	}
}

// The evaluation events laid out with a MapBuilder (reused from span to
// span, as a trace's attrWriter reuses it) are, byte for byte, those Put
// writes: names, timestamps, keys, order and values, beside a span's own
// events and attributes.
func TestEvaluationEventsMatchPut(t *testing.T) {
	evals := []evaluation{
		{label: "tool_error", score: 0.9, hasScore: true, explanation: "incident tool_error, not recovered; signal status"},
		{label: "ok", explanation: "verdict ok: no incident"},
		{label: "", score: 0, hasScore: true, explanation: ""},
	}
	lists := [][]annotation{
		nil,
		{strAnn("triage.verdict", "failed")},
		{strAnn("triage.verdict", "failed"), {key: "e", eval: &evals[0]}},
		{{key: "e", eval: &evals[1]}, intAnn("triage.n", 3), {key: "e", eval: &evals[2]}},
		{{key: "e", eval: &evals[0]}, {key: "e", eval: &evals[1]}},
	}
	var b xpdata.MapBuilder
	for i, inc := range lists {
		for j, root := range lists {
			for _, end := range []pcommon.Timestamp{0, 77} {
				got, want := ptrace.NewTraces(), ptrace.NewTraces()
				for _, td := range []ptrace.Traces{got, want} {
					s := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
					s.SetStartTimestamp(11)
					s.SetEndTimestamp(end)
					s.Attributes().PutStr("own", "x")
					if i%2 == 1 {
						s.Events().AppendEmpty().SetName("own event")
					}
				}
				addEvaluations(&b, got.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0), inc, root)
				addEvaluationsPut(want.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0), inc, root)
				gb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(got)
				if err != nil {
					t.Fatal(err)
				}
				wb, _ := (&ptrace.ProtoMarshaler{}).MarshalTraces(want)
				if !bytes.Equal(gb, wb) {
					t.Fatalf("lists %d, %d, end %d: builder events differ from Put's", i, j, end)
				}
				gj, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(got)
				wj, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(want)
				if !bytes.Equal(gj, wj) {
					t.Fatalf("lists %d, %d, end %d:\n%s\nwant\n%s", i, j, end, gj, wj)
				}
			}
		}
	}
}
