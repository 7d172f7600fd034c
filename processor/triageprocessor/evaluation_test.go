package triageprocessor

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/trajectory"
)

// evalEvents returns the gen_ai.evaluation.result events of a span.
func evalEvents(s ptrace.Span) []ptrace.SpanEvent {
	var out []ptrace.SpanEvent
	for i := 0; i < s.Events().Len(); i++ {
		if ev := s.Events().At(i); ev.Name() == "gen_ai.evaluation.result" {
			out = append(out, ev)
		}
	}
	return out
}

func evAttr(ev ptrace.SpanEvent, key string) (pcommon.Value, bool) {
	return ev.Attributes().Get(key)
}

// A failed run: its root carries one evaluation event naming the failure
// type with the run's confidence and evidence, the incident span one naming
// the incident; the conventions' attribute names are used.
func TestEvaluationEventOnRootAndIncidents(t *testing.T) {
	h := newHarness(t, nil)
	td := agentTrace(traceID(1), "svc", genaiRun("upstream returned 502 Bad Gateway")...)
	v := expectedVerdicts(t, td, classifier.Options{})[spanID(1)]
	require.Equal(t, classifier.OutcomeFailed, v.Outcome)
	h.send(td)

	root := h.forwarded()[spanID(1)][0]
	evs := evalEvents(root)
	require.Len(t, evs, 1)
	ev := evs[0]
	name, _ := evAttr(ev, "gen_ai.evaluation.name")
	assert.Equal(t, "triage", name.Str())
	label, _ := evAttr(ev, "gen_ai.evaluation.score.label")
	assert.Equal(t, string(v.FailureType), label.Str())
	score, ok := evAttr(ev, "gen_ai.evaluation.score.value")
	require.True(t, ok)
	assert.Equal(t, pcommon.ValueTypeDouble, score.Type())
	assert.InDelta(t, v.Confidence, score.Double(), 1e-9)
	expl, _ := evAttr(ev, "gen_ai.evaluation.explanation")
	for _, want := range []string{string(v.Signal), v.EvidenceSpanID.String(), "verdict failed"} {
		assert.Contains(t, expl.Str(), want)
	}
	assert.Equal(t, root.EndTimestamp(), ev.Timestamp())
	// triage.* stays.
	got, _ := strAttr(root, attrFailureType)
	assert.Equal(t, string(v.FailureType), got)

	require.NotEmpty(t, v.Incidents)
	inc := v.Incidents[0]
	incEvs := evalEvents(h.forwarded()[inc.SpanID][0])
	require.Len(t, incEvs, 1)
	label, _ = evAttr(incEvs[0], "gen_ai.evaluation.score.label")
	assert.Equal(t, string(inc.FailureType), label.Str())
	score, _ = evAttr(incEvs[0], "gen_ai.evaluation.score.value")
	assert.InDelta(t, inc.Confidence, score.Double(), 1e-9)
	expl, _ = evAttr(incEvs[0], "gen_ai.evaluation.explanation")
	assert.Contains(t, expl.Str(), "not recovered")

	// Spans that are neither root nor incident get none.
	assert.Empty(t, evalEvents(h.forwarded()[spanID(2)][0]))
}

// ok and recovered runs are labelled with the verdict; an ok run the
// classifier gave no confidence has no score.
func TestEvaluationEventVerdictLabels(t *testing.T) {
	h := newHarness(t, nil)
	h.send(agentTrace(traceID(1), "svc", genaiRun("")...))
	evs := evalEvents(h.forwarded()[spanID(1)][0])
	require.Len(t, evs, 1)
	label, _ := evAttr(evs[0], "gen_ai.evaluation.score.label")
	assert.Equal(t, "ok", label.Str())
	_, hasScore := evAttr(evs[0], "gen_ai.evaluation.score.value")
	want := expectedVerdicts(t, agentTrace(traceID(1), "svc", genaiRun("")...), classifier.Options{})[spanID(1)]
	assert.Equal(t, want.Confidence > 0, hasScore)

	// A recovered run, from the shared captures.
	for _, l := range loadLabels(t) {
		if !strings.HasSuffix(l.CaptureFile, "_recovered.json") || !strings.HasPrefix(l.CaptureFile, "openai-otel/") {
			continue
		}
		td := loadFixture(t, l.CaptureFile)
		runs := trajectory.Build(td)
		c, err := classifier.New(classifier.Options{})
		require.NoError(t, err)
		if len(runs) != 1 || c.Classify(&runs[0]).Outcome != classifier.OutcomeRecovered {
			continue
		}
		r := newHarness(t, nil)
		r.send(td)
		evs := evalEvents(r.forwarded()[runs[0].RootSpanID][0])
		require.Len(t, evs, 1, l.CaptureFile)
		label, _ := evAttr(evs[0], "gen_ai.evaluation.score.label")
		assert.Equal(t, "recovered", label.Str(), l.CaptureFile)
		return
	}
	t.Fatal("no recovered openai-otel capture found: the recovered label is untested")
}

// A run decided without its root: the stand-ins carry the run's event, and
// the root arriving late gets it from the decision cache.
func TestEvaluationEventRootMissingAndLate(t *testing.T) {
	h := newHarness(t, nil)
	spans := genaiRun("upstream returned 502 Bad Gateway")
	h.send(agentTrace(traceID(1), "svc", spans[:3]...))
	h.now = h.now.Add(2 * defaultDecisionWait)
	h.p.decideExpired(t.Context())
	require.Equal(t, 3, h.sink.SpanCount())
	for _, id := range []uint64{2, 3, 4} {
		s := h.forwarded()[spanID(id)][0]
		if _, standIn := s.Attributes().Get(attrRootMissing); !standIn {
			continue
		}
		var run []ptrace.SpanEvent
		for _, ev := range evalEvents(s) {
			if expl, _ := evAttr(ev, "gen_ai.evaluation.explanation"); strings.HasPrefix(expl.Str(), "verdict ") {
				run = append(run, ev)
			}
		}
		assert.Len(t, run, 1, "stand-in %d carries the run's evaluation", id)
	}
	h.send(agentTrace(traceID(1), "svc", spans[3]))
	late := h.forwarded()[spanID(1)][0]
	evs := evalEvents(late)
	require.Len(t, evs, 1, "the late root gets the run's evaluation")
	label, _ := evAttr(evs[0], "gen_ai.evaluation.score.label")
	got, _ := strAttr(late, attrFailureType)
	assert.Equal(t, got, label.Str())
}

func TestEvaluationEventsSwitchedOff(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.EvaluationEvents = false })
	h.send(agentTrace(traceID(1), "svc", genaiRun("upstream returned 502 Bad Gateway")...))
	for id, copies := range h.forwarded() {
		assert.Empty(t, evalEvents(copies[0]), "span %s", id)
	}
	got, _ := strAttr(h.forwarded()[spanID(1)][0], attrVerdict)
	assert.Equal(t, "failed", got, "triage.* is still written")
}

// Every shared capture: each run root's event agrees with its triage.*
// attributes (label = failure type or verdict, score = confidence).
func TestEvaluationEventMatchesAnnotationsOnCaptures(t *testing.T) {
	checked := 0
	for _, l := range loadLabels(t) {
		td := loadFixture(t, l.CaptureFile)
		if td.SpanCount() == 0 {
			continue
		}
		h := newHarness(t, func(c *Config) { c.Constraints.Global = l.Constraints })
		h.send(td)
		h.p.decideExpired(t.Context())
		require.NoError(t, h.p.Shutdown(t.Context()))
		for _, copies := range h.forwarded() {
			s := copies[0]
			verdict, ok := strAttr(s, attrVerdict)
			if !ok || verdict == verdictIncomplete {
				continue
			}
			var run []ptrace.SpanEvent
			for _, ev := range evalEvents(s) {
				if expl, _ := evAttr(ev, "gen_ai.evaluation.explanation"); strings.HasPrefix(expl.Str(), "verdict ") {
					run = append(run, ev)
				}
			}
			require.Len(t, run, 1, "%s span %s", l.CaptureFile, s.SpanID())
			label, _ := evAttr(run[0], "gen_ai.evaluation.score.label")
			want := verdict
			if verdict == string(classifier.OutcomeFailed) {
				want, _ = strAttr(s, attrFailureType)
			}
			assert.Equal(t, want, label.Str(), "%s span %s", l.CaptureFile, s.SpanID())
			if conf, ok := s.Attributes().Get(attrConfidence); ok {
				score, _ := evAttr(run[0], "gen_ai.evaluation.score.value")
				assert.InDelta(t, conf.Double(), score.Double(), 1e-9)
			}
			checked++
		}
	}
	assert.Greater(t, checked, 200, "run roots checked")
}

// The annotations of a trace are written from memory reused by the traces
// decided after it; what the decision cache keeps for a missing root must
// not be part of it. The late root, arriving after other traces were
// decided and annotated, gets exactly its stand-ins' run annotations and
// evaluation.
func TestLateRootAnnotationsOutliveLaterDecisions(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Recovery.Enabled = true })
	spans := genaiRun("upstream returned 502 Bad Gateway")
	h.send(agentTrace(traceID(1), "svc", spans[:3]...))
	h.now = h.now.Add(2 * defaultDecisionWait)
	h.p.decideExpired(t.Context())
	var standIn ptrace.Span
	for _, id := range []uint64{2, 3, 4} {
		if s := h.forwarded()[spanID(id)][0]; s.Attributes().Len() > 0 {
			if _, ok := s.Attributes().Get(attrRootMissing); ok {
				standIn = s
			}
		}
	}
	require.NotEqual(t, ptrace.Span{}, standIn, "a stand-in carries the run's verdict")
	for i := uint64(2); i < 12; i++ {
		// Other failing traces (other tools, other reasons), decided and
		// annotated before the late root arrives.
		other := genaiRun(fmt.Sprintf("tool %d failed: connection reset by peer", i))
		other[1].attrs["gen_ai.tool.name"] = fmt.Sprintf("tool-%d", i)
		h.send(agentTrace(traceID(i), "svc", other...))
	}
	h.send(agentTrace(traceID(1), "svc", spans[3]))
	late := rootOf(t, h, traceID(1))

	runAttrs := func(s ptrace.Span, skip string) map[string]any {
		out := map[string]any{}
		for k, v := range s.Attributes().All() {
			if strings.HasPrefix(k, "triage.") && k != skip {
				out[k] = v.AsRaw()
			}
		}
		return out
	}
	want := runAttrs(standIn, attrRootMissing)
	require.Contains(t, want, attrDecision, "the run got a recovery decision")
	assert.Equal(t, want, runAttrs(late, attrLate))
	var wantEv []map[string]any
	for _, ev := range evalEvents(standIn) {
		if expl, _ := evAttr(ev, "gen_ai.evaluation.explanation"); strings.HasPrefix(expl.Str(), "verdict ") {
			wantEv = append(wantEv, ev.Attributes().AsRaw())
		}
	}
	var gotEv []map[string]any
	for _, ev := range evalEvents(late) {
		gotEv = append(gotEv, ev.Attributes().AsRaw())
	}
	require.Len(t, wantEv, 1)
	assert.Equal(t, wantEv, gotEv)
}
