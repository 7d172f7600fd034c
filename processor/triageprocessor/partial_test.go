package triageprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/triage-otel/triage/classifier"
)

// assertIncomplete checks that span carries an incomplete run verdict with
// reason, and nothing a failed run would carry.
func assertIncomplete(t *testing.T, span ptrace.Span, reason string) {
	t.Helper()
	got, _ := strAttr(span, attrVerdict)
	assert.Equal(t, verdictIncomplete, got, "span %s verdict", span.SpanID())
	got, _ = strAttr(span, attrIncompleteReason)
	assert.Equal(t, reason, got, "span %s incomplete reason", span.SpanID())
	for _, k := range append([]string{attrFailureType, attrSignal, attrConfidence, attrEvidenceSpanID, attrTool, attrRecovered}, decisionAttrs...) {
		_, ok := span.Attributes().Get(k)
		assert.False(t, ok, "span %s of an incomplete run carries %s", span.SpanID(), k)
	}
}

// A trace evicted before its run ended: the run has an unrecovered tool
// error and no final answer, which the whole trace might still recover.
func TestEvictedRunWithoutFinalAnswerIsIncomplete(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.NumTraces = 1 })
	tid := traceID(40)
	spans := genaiRun("upstream returned 502 Bad Gateway") // chat, failing tool, chat, root
	h.send(agentTrace(tid, "svc", spans[:2]...))
	h.send(agentTrace(traceID(41), "svc", spanSpec{id: 2, parent: 1, name: "chat"}))

	fwd := h.forwarded()
	require.Len(t, fwd, 2, "the evicted trace is forwarded")
	for _, id := range []uint64{2, 3} {
		s := fwd[spanID(id)][0]
		assertIncomplete(t, s, "evicted")
		missing, _ := s.Attributes().Get(attrRootMissing)
		assert.True(t, missing.Bool(), "stand-in for the missing root")
		_, late := s.Attributes().Get(attrLate)
		assert.False(t, late)
	}
	assert.Equal(t, int64(1), sumValue(t, h, "decisions", attribute.String("verdict", "incomplete"), attribute.String("failure_type", "")))
	assert.Zero(t, sumValue(t, h, "recovery_decisions"), "no decision from absent evidence")

	// The rest of the run arrives: forwarded at once from the decision
	// cache, the root with the same incomplete verdict, and no new trace or
	// decision is started.
	h.send(agentTrace(tid, "svc", spans[2:]...))
	assert.Equal(t, 1, h.p.held.Len(), "only the other trace is held")
	fwd = h.forwarded()
	root := fwd[spanID(1)]
	require.Len(t, root, 1)
	assertIncomplete(t, root[0], "evicted")
	late, _ := root[0].Attributes().Get(attrLate)
	assert.True(t, late.Bool())
	_, annotated := fwd[spanID(4)][0].Attributes().Get(attrVerdict)
	assert.False(t, annotated, "a late child gets nothing")
	assert.Equal(t, int64(1), sumValue(t, h, "decisions"), "late spans start no decision")
	assert.Equal(t, int64(2), sumValue(t, h, "late_spans"))
}

// A trace evicted after its run reached its final answer: only the root is
// missing, the evidence present settles the run, it is decided as whole.
func TestEvictedConcludedRunIsDecided(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.NumTraces = 1 })
	tid := traceID(42)
	spans := genaiRun("upstream returned 502 Bad Gateway")[:3]
	spans[2].attrs["gen_ai.response.finish_reasons"] = []any{"stop"} // the final answer
	partial := agentTrace(tid, "svc", spans...)
	var want classifier.Verdict
	for _, v := range expectedVerdicts(t, partial, classifier.Options{}) {
		want = v
	}
	require.Equal(t, classifier.OutcomeFailed, want.Outcome, "the library fails the run: its tool error was never recovered")

	h.send(partial)
	h.send(agentTrace(traceID(43), "svc", spanSpec{id: 2, parent: 1, name: "chat"}))
	stand := h.forwarded()[spanID(2)][0]
	got, _ := strAttr(stand, attrVerdict)
	assert.Equal(t, string(want.Outcome), got)
	got, _ = strAttr(stand, attrFailureType)
	assert.Equal(t, string(want.FailureType), got)
	_, ok := stand.Attributes().Get(attrDecision)
	assert.True(t, ok, "a settled failed run gets its decision")
	_, ok = stand.Attributes().Get(attrIncompleteReason)
	assert.False(t, ok)
}

// A run whose agent span ended in error while the trace's root is still
// missing: the failure is evidence present, so it is decided.
func TestEvictedRunFailedOnItsAgentSpanIsDecided(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.NumTraces = 1 })
	tid := traceID(44)
	partial := agentTrace(tid, "svc",
		spanSpec{id: 2, parent: 5, name: "chat m", attrs: map[string]any{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}},
		spanSpec{id: 5, parent: 1, name: "workflow", attrs: map[string]any{"traceloop.span.kind": "workflow"}, errMsg: "upstream returned 503 Service Unavailable"},
	)
	var want classifier.Verdict
	for _, v := range expectedVerdicts(t, partial, classifier.Options{}) {
		want = v
	}
	require.Equal(t, classifier.OutcomeFailed, want.Outcome)

	h.send(partial)
	h.send(agentTrace(traceID(45), "svc", spanSpec{id: 2, parent: 1, name: "chat"}))
	top := h.forwarded()[spanID(5)][0]
	got, _ := strAttr(top, attrVerdict)
	assert.Equal(t, string(classifier.OutcomeFailed), got)
	got, _ = strAttr(top, attrFailureType)
	assert.Equal(t, string(want.FailureType), got)
}

func TestCutRunIsIncomplete(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxSpansPerTrace = 2 })
	tid := traceID(46)
	spans := genaiRun("upstream returned 502 Bad Gateway")
	h.send(agentTrace(tid, "svc", spans...))
	fwd := h.forwarded()
	require.Len(t, fwd, 4, "held, cut and late spans are all forwarded")
	assertIncomplete(t, fwd[spanID(2)][0], "max_spans_per_trace")
	// The root came in the same batch, after the cut: annotated as the
	// run's root from the decision, marked late (its stand-ins carried the
	// run first).
	assertIncomplete(t, fwd[spanID(1)][0], "max_spans_per_trace")
	late, _ := fwd[spanID(1)][0].Attributes().Get(attrLate)
	assert.True(t, late.Bool())
	assert.Zero(t, sumValue(t, h, "recovery_decisions"))
}

func TestShutdownRunIsIncomplete(t *testing.T) {
	h := newHarness(t, nil)
	h.send(agentTrace(traceID(47), "svc", genaiRun("upstream returned 502 Bad Gateway")[:2]...))
	require.NoError(t, h.p.Shutdown(context.Background()))
	for _, id := range []uint64{2, 3} {
		assertIncomplete(t, h.forwarded()[spanID(id)][0], "shutdown")
	}
	assert.Equal(t, int64(1), sumValue(t, h, "decisions", attribute.String("verdict", "incomplete"), attribute.String("failure_type", "")))
}

// decision_wait is not partial: the rest of the run is not coming, and the
// run is decided from what arrived, as the CLI decides a capture file.
func TestDecisionWaitRunIsDecided(t *testing.T) {
	h := newHarness(t, nil)
	partial := agentTrace(traceID(48), "svc", genaiRun("upstream returned 502 Bad Gateway")[:2]...)
	var want classifier.Verdict
	for _, v := range expectedVerdicts(t, partial, classifier.Options{}) {
		want = v
	}
	h.send(partial)
	h.expire()
	got, _ := strAttr(h.forwarded()[spanID(2)][0], attrVerdict)
	assert.Equal(t, string(want.Outcome), got)
	assert.NotEqual(t, verdictIncomplete, got)
}

// Under a flood of concurrent traces arriving span by span, most are
// evicted before their run ends. The run recovers from a tool error: no
// part of it may come out failed.
func TestFloodOfPartialTracesFailsNoRunForAbsentEvidence(t *testing.T) {
	const numTraces, flood = 5, 50
	chat := func(id uint64, finish string) spanSpec {
		return spanSpec{id: id, parent: 1, name: "chat m", attrs: map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.response.finish_reasons": []any{finish}}}
	}
	tool := func(id uint64, errMsg string) spanSpec {
		return spanSpec{id: id, parent: 1, name: "execute_tool lookup", errMsg: errMsg,
			attrs: map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}}
	}
	spans := []spanSpec{
		chat(2, "tool_calls"), tool(3, "upstream returned 502 Bad Gateway"),
		chat(4, "tool_calls"), tool(5, ""), chat(6, "stop"),
		{id: 1, name: "invoke_agent a", attrs: map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}},
	}
	whole := expectedVerdicts(t, agentTrace(traceID(1), "svc", spans...), classifier.Options{})[spanID(1)]
	require.Equal(t, classifier.OutcomeRecovered, whole.Outcome, "the whole run recovers")

	h := newHarness(t, func(c *Config) { c.NumTraces = numTraces })
	for step := range spans {
		for i := range flood {
			h.send(agentTrace(traceID(uint64(500+i)), "svc", spans[step]))
		}
	}
	require.NoError(t, h.p.Shutdown(context.Background()))
	require.Equal(t, flood*len(spans), h.sink.SpanCount(), "every span forwarded once")
	verdicts := map[string]int{}
	for _, copies := range h.forwarded() {
		for _, s := range copies {
			if v, ok := strAttr(s, attrVerdict); ok {
				verdicts[v]++
			}
		}
	}
	assert.Zero(t, verdicts[string(classifier.OutcomeFailed)], "verdicts on forwarded spans: %v", verdicts)
	assert.Positive(t, verdicts[verdictIncomplete], "verdicts on forwarded spans: %v", verdicts)
	assert.Zero(t, sumValue(t, h, "recovery_decisions"))
	assert.Equal(t, int64(flood-numTraces), sumValue(t, h, "traces_evicted"))
}
