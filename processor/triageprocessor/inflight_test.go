package triageprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadatatest"
	"github.com/triage-otel/triage/recovery"
)

// timedSpan is a span of a hand-built run with its own times (ms from the
// run's start), so that spans sent in separate batches keep their order.
type timedSpan struct {
	spanSpec
	at int // end, in ms; the span starts 1ms before
	// httpStatus > 0 adds http.response.status_code.
	httpStatus int
}

func timedBatch(tid pcommon.TraceID, svc string, spans ...timedSpan) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", svc)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("test")
	base := time.Unix(1_700_000_000, 0)
	for _, sp := range spans {
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(spanID(sp.id))
		if sp.parent != 0 {
			s.SetParentSpanID(spanID(sp.parent))
		}
		s.SetName(sp.name)
		start := 0
		if sp.parent != 0 {
			start = sp.at - 1
		}
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(start) * time.Millisecond)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(sp.at) * time.Millisecond)))
		if err := s.Attributes().FromRaw(sp.attrs); err != nil {
			panic(err)
		}
		if sp.httpStatus > 0 {
			s.Attributes().PutInt("http.response.status_code", int64(sp.httpStatus))
		}
		if sp.errMsg != "" {
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage(sp.errMsg)
		}
	}
	return td
}

func chatSpan(id uint64, at int, in, out int) timedSpan {
	return timedSpan{spanSpec: spanSpec{id: id, parent: 1, name: "chat m", attrs: map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
		"gen_ai.usage.input_tokens": in, "gen_ai.usage.output_tokens": out,
		"gen_ai.conversation.id": "sess-1",
	}}, at: at}
}

func toolSpan(id uint64, at int, tool, args, errMsg string, status int) timedSpan {
	return timedSpan{spanSpec: spanSpec{id: id, parent: 1, name: "execute_tool " + tool, attrs: map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
		"gen_ai.tool.call.id": fmt.Sprintf("call-%d", id), "gen_ai.tool.call.arguments": args,
	}, errMsg: errMsg}, at: at, httpStatus: status}
}

func rootSpan(at int) timedSpan {
	return timedSpan{spanSpec: spanSpec{id: 1, name: "invoke_agent a", attrs: map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a", "gen_ai.conversation.id": "sess-1",
	}}, at: at}
}

// turns is a run calling tool with args turn after turn (args(i) == ""
// keeps the same arguments), failing with a 503 when fail is set, then a
// final answer and the root.
func turns(n int, tool string, args func(int) string, fail bool) []timedSpan {
	var out []timedSpan
	id, at := uint64(10), 10
	for i := range n {
		a := `{"city":"Paris"}`
		if args != nil {
			a = args(i)
		}
		errMsg, status := "", 0
		if fail {
			errMsg, status = "upstream returned 503 Service Unavailable", 503
		}
		out = append(out, chatSpan(id, at, 100, 10), toolSpan(id+1, at+5, tool, a, errMsg, status))
		id, at = id+2, at+10
	}
	return append(out, chatSpan(id, at, 100, 10), rootSpan(at+1))
}

// looping is a run calling get_weather with the same arguments n times
// and stopped without an answer (a step limit): a loop to the end.
func looping(n int) []timedSpan {
	s := turns(n, "get_weather", nil, false)
	return append(s[:len(s)-2], s[len(s)-1])
}

// sendEach sends the spans in batches of the given sizes (the rest in the
// last) and returns, per batch, the in-flight decision spans that batch
// produced.
func sendEach(h *harness, tid pcommon.TraceID, spans []timedSpan, sizes ...int) [][]ptrace.Span {
	var per [][]ptrace.Span
	seen := 0
	for b := 0; len(spans) > 0; b++ {
		n := len(spans)
		if b < len(sizes) && sizes[b] < n {
			n = sizes[b]
		}
		h.send(timedBatch(tid, "svc", spans[:n]...))
		spans = spans[n:]
		all := h.decisionSpans()
		per = append(per, all[seen:])
		seen = len(all)
	}
	return per
}

func decisionOf(t *testing.T, s ptrace.Span) recovery.Decision {
	t.Helper()
	doc, ok := strAttr(s, attrDecision)
	require.True(t, ok, "span %s has no decision", s.Name())
	require.NoError(t, recovery.ValidateDecisionJSON([]byte(doc)), doc)
	var d recovery.Decision
	require.NoError(t, json.Unmarshal([]byte(doc), &d))
	return d
}

// finalOf returns the final decision stamped on the run's root.
func finalOf(t *testing.T, h *harness) (recovery.Decision, bool) {
	t.Helper()
	roots := h.forwarded()[spanID(1)]
	require.Len(t, roots, 1)
	if _, ok := strAttr(roots[0], attrDecision); !ok {
		return recovery.Decision{}, false
	}
	return decisionOf(t, roots[0]), true
}

// inputSpans counts the forwarded spans that are not decision spans.
func inputSpans(h *harness) int { return h.sink.SpanCount() - len(h.decisionSpans()) }

func TestInFlightLoopDecisionBeforeRoot(t *testing.T) {
	h := newHarness(t, nil)
	tid := traceID(100)
	spans := looping(5)
	// Batches: [chat, tool] [chat, tool] [chat, tool] [chat tool chat tool] [root]
	per := sendEach(h, tid, spans, 2, 2, 2, 4, 1)
	require.Len(t, per, 5)
	assert.Empty(t, per[0])
	assert.Empty(t, per[1])
	require.Len(t, per[2], 1, "the third equal call trips the loop guard in its batch")
	for _, later := range per[3:] {
		assert.Empty(t, later, "at most one in-flight decision per guard per run")
	}
	ds := per[2][0]
	assert.Equal(t, tid, ds.TraceID())
	assert.Equal(t, spanID(15), ds.ParentSpanID(), "the decision span hangs under the span that tripped the guard")
	for k, want := range map[string]string{attrPhase: "in_flight", attrGuard: "loop", attrFailureType: "loop_detected", attrActionKind: "replan", attrTool: "get_weather"} {
		got, _ := strAttr(ds, k)
		assert.Equal(t, want, got, k)
	}
	f := decisionOf(t, ds)
	assert.Equal(t, recovery.PhaseInFlight, f.Phase)
	assert.Equal(t, "loop", f.Guard)
	assert.Equal(t, spanID(15).String(), f.SpanID)
	assert.Equal(t, "sess-1", f.SessionID)
	assert.Equal(t, "loop_detected:replan", f.Policy)
	assert.Equal(t, 1, f.Attempt)

	final, ok := finalOf(t, h)
	require.True(t, ok)
	assert.Equal(t, recovery.PhaseFinal, final.Phase)
	assert.Equal(t, f.DecisionID, final.InFlightDecisionID, "the final decision references the in-flight one")
	assert.Equal(t, 1, final.Attempt, "the run counted once in its session")
	assert.Equal(t, f.Action, final.Action)
	id, _ := strAttr(h.forwarded()[spanID(1)][0], attrInFlightDecisionID)
	assert.Equal(t, f.DecisionID, id)
	assert.Equal(t, len(spans), inputSpans(h), "every input span forwarded once")

	metadatatest.AssertEqualProcessorTriageGuardTrips(t, h.tel, []metricdata.DataPoint[int64]{{
		Attributes: attribute.NewSet(attribute.String("guard", "loop")), Value: 1,
	}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorTriageInFlightDecisions(t, h.tel, []metricdata.DataPoint[int64]{{
		Attributes: attribute.NewSet(attribute.String("action", "replan"), attribute.String("guard", "loop")), Value: 1,
	}}, metricdatatest.IgnoreTimestamp())
}

func TestInFlightNoDecisionForAnOKRun(t *testing.T) {
	h := newHarness(t, nil)
	spans := turns(5, "get_weather", func(i int) string { return fmt.Sprintf(`{"city":"c%d"}`, i) }, false)
	per := sendEach(h, traceID(101), spans, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
	for i, p := range per {
		assert.Empty(t, p, "batch %d", i)
	}
	_, ok := finalOf(t, h)
	assert.False(t, ok, "an ok run has no decision")
	assert.Equal(t, len(spans), h.sink.SpanCount())
}

// A run sent whole, root included, is decided at once: no in-flight
// decision even when it loops.
func TestInFlightNotForARunSentWhole(t *testing.T) {
	h := newHarness(t, nil)
	spans := looping(5)
	per := sendEach(h, traceID(102), spans, len(spans))
	assert.Empty(t, per[0])
	final, ok := finalOf(t, h)
	require.True(t, ok)
	assert.Equal(t, "loop_detected", final.FailureType)
	assert.Empty(t, final.InFlightDecisionID)
}

func TestInFlightRepeatedFailure(t *testing.T) {
	h := newHarness(t, nil)
	spans := turns(4, "get_weather", func(i int) string { return fmt.Sprintf(`{"city":"c%d"}`, i) }, true)
	per := sendEach(h, traceID(103), spans, 2, 2, 2, 2, 3)
	require.Len(t, per[2], 1, "the third failure in a row trips the guard")
	f := decisionOf(t, per[2][0])
	assert.Equal(t, "repeated_failure", f.Guard)
	assert.Equal(t, "external_fault", f.FailureType)
	assert.Equal(t, recovery.ActionRetry, f.Action.Kind, "the policy entry of the failures' class answers")
	assert.Equal(t, "get_weather", f.Tool)
	assert.Len(t, f.Evidence, 3)
	for _, p := range per[3:] {
		assert.Empty(t, p)
	}
	final, ok := finalOf(t, h)
	require.True(t, ok)
	assert.Equal(t, "external_fault", final.FailureType)
	assert.Equal(t, f.DecisionID, final.InFlightDecisionID)
	assert.Equal(t, f.Attempt, final.Attempt)
}

// A planted failure of a non-idempotent tool is never retried: named by
// configuration, or by the MCP annotations of the definitions the model was
// offered.
func TestNonIdempotentToolIsNotRetried(t *testing.T) {
	args := func(i int) string { return fmt.Sprintf(`{"amount":%d}`, i) }
	t.Run("configured", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.Recovery.NonIdempotentTools = []string{"charge_.*"} })
		per := sendEach(h, traceID(104), turns(3, "charge_card", args, true), 2, 2, 2, 2)
		require.Len(t, per[2], 1)
		f := decisionOf(t, per[2][0])
		assert.Equal(t, recovery.ActionEscalate, f.Action.Kind)
		assert.Equal(t, "non_idempotent:escalate", f.Policy)
		assert.Contains(t, f.Action.Reason, "tool charge_card is not idempotent (non_idempotent_tools: charge_.*): not retried")
		final, ok := finalOf(t, h)
		require.True(t, ok)
		assert.Equal(t, recovery.ActionEscalate, final.Action.Kind)
		assert.Equal(t, f.DecisionID, final.InFlightDecisionID)
	})
	t.Run("mcp_annotations", func(t *testing.T) {
		h := newHarness(t, nil)
		spans := turns(1, "transfer_funds", args, true)
		// The model was offered the tool with destructiveHint: true.
		spans[0].attrs["gen_ai.tool.definitions"] = `[{"type":"function","name":"transfer_funds","parameters":{"type":"object"},"annotations":{"destructiveHint":true,"idempotentHint":false}}]`
		h.send(timedBatch(traceID(105), "svc", spans...))
		final, ok := finalOf(t, h)
		require.True(t, ok)
		assert.Equal(t, "external_fault", final.FailureType)
		assert.Equal(t, recovery.ActionEscalate, final.Action.Kind, "an external fault is retried, but not on a destructive tool")
		assert.Equal(t, "non_idempotent:escalate", final.Policy)
		assert.Contains(t, final.Action.Reason, "MCP annotation destructiveHint: true")

		// Without the annotation the same failure is retried.
		plain := newHarness(t, nil)
		plain.send(timedBatch(traceID(106), "svc", turns(1, "transfer_funds", args, true)...))
		d, ok := finalOf(t, plain)
		require.True(t, ok)
		assert.Equal(t, recovery.ActionRetry, d.Action.Kind)
	})
}

func TestInFlightTokenBudgetAborts(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Guards.Tokens.MaxPerRun = 300 })
	spans := turns(4, "get_weather", func(i int) string { return fmt.Sprintf(`{"city":"c%d"}`, i) }, false)
	per := sendEach(h, traceID(107), spans, 2, 2, 2, 2, 2)
	// 110 tokens per model call: the third call passes 300.
	require.Len(t, per[2], 1)
	f := decisionOf(t, per[2][0])
	assert.Equal(t, "tokens", f.Guard)
	assert.Equal(t, recovery.ActionAbort, f.Action.Kind)
	assert.Equal(t, "guard_policy.tokens:abort", f.Policy)
	assert.Contains(t, f.Action.Reason, "run used 330 tokens, tokens.max_per_run is 300")
	assert.Equal(t, spanID(14).String(), f.SpanID)
	_, ok := finalOf(t, h)
	assert.False(t, ok, "the run itself ended ok: no final decision")
}

// The session's usage counts every run of the session, also those that
// ended without being watched in flight.
func TestInFlightSessionBudget(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Guards.Tokens.MaxPerSession = 500 })
	distinct := func(i int) string { return fmt.Sprintf(`{"city":"c%d"}`, i) }
	// A first run of the session, sent whole: 3 model calls, 330 tokens.
	h.send(timedBatch(traceID(108), "svc", turns(2, "get_weather", distinct, false)...))
	require.Empty(t, h.decisionSpans())
	// A second run: its second model call takes the session past 500.
	per := sendEach(h, traceID(109), turns(3, "get_weather", distinct, false), 2, 2, 2)
	assert.Empty(t, per[0])
	require.Len(t, per[1], 1)
	f := decisionOf(t, per[1][0])
	assert.Equal(t, "tokens", f.Guard)
	assert.Contains(t, f.Action.Reason, "session used 550 tokens, tokens.max_per_session is 500")
}

func TestInFlightWallClock(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Guards.WallClock.MaxPerRun = 25 * time.Millisecond })
	spans := turns(4, "get_weather", func(i int) string { return fmt.Sprintf(`{"city":"c%d"}`, i) }, false)
	per := sendEach(h, traceID(110), spans, 2, 2, 2, 2, 2)
	// Spans end at 10, 15, 20, 25, 30 ms...: the run's first span started at 9ms.
	require.Len(t, per[2], 1)
	f := decisionOf(t, per[2][0])
	assert.Equal(t, "wall_clock", f.Guard)
	assert.True(t, strings.HasPrefix(f.Action.Reason, "run has been going for 26ms"), f.Action.Reason)
}

func TestGuardsNeedRecovery(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Recovery.Enabled = false })
	require.Nil(t, h.p.guards)
	sendEach(h, traceID(111), looping(5), 2, 2, 2, 5)
	assert.Empty(t, h.decisionSpans())
}

// A trace decided while its guards run (decision_wait) takes the in-flight
// decisions made so far, and none is made after.
func TestInFlightClosedWhenDecided(t *testing.T) {
	h := newHarness(t, nil)
	spans := looping(5)
	sendEach(h, traceID(112), spans[:6], 6) // loops; the root never comes
	require.Len(t, h.decisionSpans(), 1)
	h.now = h.now.Add(h.p.cfg.DecisionWait + time.Second)
	h.p.decideExpired(context.Background())
	// The root-missing run's stand-ins carry the final decision.
	var final *recovery.Decision
	for _, s := range h.forwarded() {
		if doc, ok := strAttr(s[0], attrDecision); ok && s[0].Name() != decisionSpanName {
			var d recovery.Decision
			require.NoError(t, json.Unmarshal([]byte(doc), &d))
			final = &d
		}
	}
	require.NotNil(t, final)
	assert.Equal(t, decisionOf(t, h.decisionSpans()[0]).DecisionID, final.InFlightDecisionID)
}
