package triageprocessor

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/trajectory"
)

// rootlessAgent is a run under a root span 99 that never arrives: an agent
// span 10 covering a chat call 11, a tool call 12 and a chat call 13. The
// agent span is listed first so that it starts first and ends last.
func rootlessAgent(agentErr, toolErr string, final bool) []spanSpec {
	last := map[string]any{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
	if final {
		last["gen_ai.response.finish_reasons"] = []any{"stop"}
		last["gen_ai.output.messages"] = `[{"role":"assistant","parts":[{"type":"text","content":"done"}],"finish_reason":"stop"}]`
	} else {
		last["gen_ai.response.finish_reasons"] = []any{"tool_calls"}
	}
	return []spanSpec{
		{id: 10, parent: 99, name: "invoke_agent a", attrs: map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}, errMsg: agentErr},
		{id: 11, parent: 10, name: "chat m", attrs: map[string]any{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.response.finish_reasons": []any{"tool_calls"}}},
		{id: 12, parent: 10, name: "execute_tool lookup", attrs: map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}, errMsg: toolErr},
		{id: 13, parent: 10, name: "chat m", attrs: last},
	}
}

// coverAll stretches the first span of a batch over all the others, as an
// agent span encloses its steps.
func coverAll(td ptrace.Traces) ptrace.Traces {
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	outer := spans.At(0)
	for i := 1; i < spans.Len(); i++ {
		if e := spans.At(i).EndTimestamp(); e >= outer.EndTimestamp() {
			outer.SetEndTimestamp(e + 1)
		}
	}
	return td
}

func rootlessBatch(tid uint64, specs []spanSpec) ptrace.Traces {
	return coverAll(agentTrace(traceID(tid), "svc", specs...))
}

func tick(h *harness, d time.Duration) {
	h.now = h.now.Add(d)
	h.p.decideExpired(context.Background())
}

// The outermost received span ended in error: decided settle_wait after
// the last span, not decision_wait; the root arriving later gets the cached
// decision.
func TestRootlessRunEndedInErrorDecidedAfterSettle(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DecisionWait = 30 * time.Second; c.SettleWait = 2 * time.Second })
	h.send(rootlessBatch(1, rootlessAgent("agent failed", "upstream returned 502 Bad Gateway", false)))
	tick(h, 1900*time.Millisecond)
	assert.Zero(t, h.sink.SpanCount(), "within settle_wait")
	tick(h, 200*time.Millisecond)
	require.Equal(t, 4, h.sink.SpanCount(), "decided once settle_wait passed")
	assert.Equal(t, int64(1), sumValue(t, h, "traces_decided", attribute.String("trigger", "run_ended")))
	verdict, _ := strAttr(h.forwarded()[spanID(10)][0], attrVerdict)
	assert.Equal(t, "failed", verdict)
	missing, _ := h.forwarded()[spanID(10)][0].Attributes().Get(attrRootMissing)
	assert.True(t, missing.Bool(), "the outermost span stands in for the root")

	h.send(agentTrace(traceID(1), "svc", spanSpec{id: 99, name: "request"}))
	root := h.forwarded()[spanID(99)]
	require.Len(t, root, 1)
	got, _ := strAttr(root[0], attrVerdict)
	assert.Equal(t, "failed", got, "the late root gets the cached decision")
}

// The outermost span is an agent span that ended OK after a final answer:
// nothing is pending, decided early; without a final answer it waits.
func TestRootlessRunFinalAnswer(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SettleWait = time.Second })
	h.send(rootlessBatch(1, rootlessAgent("", "", true)))
	tick(h, time.Second)
	require.Equal(t, 4, h.sink.SpanCount())
	verdict, _ := strAttr(h.forwarded()[spanID(10)][0], attrVerdict)
	assert.Equal(t, "ok", verdict)

	// The last model call asked for tools: something is pending.
	h.send(rootlessBatch(2, rootlessAgent("", "", false)))
	tick(h, time.Second)
	tick(h, time.Second)
	assert.Equal(t, 4, h.sink.SpanCount(), "a run still calling tools is not over")
	tick(h, defaultDecisionWait)
	assert.Equal(t, 8, h.sink.SpanCount(), "decision_wait stays the backstop")
	assert.Equal(t, int64(1), sumValue(t, h, "traces_decided", attribute.String("trigger", "decision_wait")))
}

// Steps side by side with no span covering them never show the run is over.
func TestRootlessStepsSideBySideWaitForDecisionWait(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DecisionWait = 10 * time.Second; c.SettleWait = time.Second })
	spans := rootlessAgent("", "boom", false)[1:] // no agent span
	for i := range spans {
		spans[i].parent = 99
	}
	spans[1].errMsg = "upstream returned 502 Bad Gateway"
	h.send(agentTrace(traceID(1), "svc", spans...))
	tick(h, 2*time.Second)
	tick(h, 2*time.Second)
	assert.Zero(t, h.sink.SpanCount())
	tick(h, 7*time.Second)
	assert.Equal(t, 3, h.sink.SpanCount())
	assert.Equal(t, int64(1), sumValue(t, h, "traces_decided", attribute.String("trigger", "decision_wait")))
}

// Out of order, as behind two tiers: the outermost span arrives first and
// a child with the evidence arrives within settle_wait; it is part of the
// decision, and the settle restarts from it.
func TestRootlessOutOfOrderChildrenWithinSettle(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SettleWait = 2 * time.Second })
	specs := rootlessAgent("agent failed", "upstream returned 502 Bad Gateway", false)
	full := coverAll(agentTrace(traceID(1), "svc", specs...))
	// Split: the agent span alone, then its children.
	outer, children := ptrace.NewTraces(), ptrace.NewTraces()
	full.CopyTo(outer)
	full.CopyTo(children)
	outer.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool { return s.SpanID() != spanID(10) })
	children.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool { return s.SpanID() == spanID(10) })

	h.send(outer)
	tick(h, 1500*time.Millisecond)
	h.send(children)
	tick(h, 1500*time.Millisecond)
	assert.Zero(t, h.sink.SpanCount(), "settle restarted with the children")
	tick(h, 600*time.Millisecond)
	require.Equal(t, 4, h.sink.SpanCount())
	want := expectedVerdicts(t, full, classifier.Options{})[spanID(99)]
	got, _ := strAttr(h.forwarded()[spanID(10)][0], attrFailureType)
	assert.Equal(t, string(want.FailureType), got, "the children's evidence decided it")
	require.Equal(t, "external_fault", got, "fixture sanity: the tool's 502 is the evidence")
}

func TestSettleWaitZeroDisablesEarlyDecisions(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DecisionWait = 10 * time.Second; c.SettleWait = 0 })
	h.send(rootlessBatch(1, rootlessAgent("agent failed", "", false)))
	tick(h, 5*time.Second)
	assert.Zero(t, h.sink.SpanCount())
	tick(h, 6*time.Second)
	assert.Equal(t, 4, h.sink.SpanCount())
}

// A rootless trace of an instrumentation that sends its content on logs
// also waits for its log events (at most logs_wait) before the check.
func TestRootlessRunWaitsForItsLogEvents(t *testing.T) {
	h := newLogsHarness(t, func(c *Config) { c.SettleWait = time.Second; c.LogsWait = 4 * time.Second })
	h.sendLogs(leakEvents(traceID(1))) // learn the emitter (svc, test)
	h.send(agentTrace(traceID(1), "svc", genaiRun("")...))
	specs := rootlessAgent("agent failed", "", true)
	h.send(rootlessBatch(2, specs))
	tick(h.harness, time.Second)
	assert.Equal(t, 4, h.sink.SpanCount(), "the rootless run waits for the events of its chat spans")
	tick(h.harness, 3*time.Second)
	assert.Equal(t, 8, h.sink.SpanCount(), "at most logs_wait")
}

// On the shared captures, with span arrival in export order: the runs whose
// root never arrived and whose spans show they are over are decided after
// settle_wait instead of decision_wait, with exactly the annotations the
// backstop gives them.
func TestEarlyDecisionOnCaptures(t *testing.T) {
	const settle, decisionWait = 2 * time.Second, 10 * time.Second
	type outcome struct{ verdict, failureType, signal string }
	decideAll := func(t *testing.T, td ptrace.Traces, constraints []string, settleWait time.Duration) (map[string]outcome, int64, time.Duration) {
		h := newHarness(t, func(c *Config) {
			c.DecisionWait, c.SettleWait = decisionWait, settleWait
			c.Constraints.Global = constraints
		})
		for _, b := range splitSpans(td) {
			h.send(b)
		}
		start := h.now
		var waited time.Duration
		for step := 0; step < 120 && h.sink.SpanCount() < td.SpanCount(); step++ {
			tick(h, 100*time.Millisecond)
			waited = h.now.Sub(start)
		}
		out := map[string]outcome{}
		for id, copies := range h.forwarded() {
			s := copies[0]
			if v, ok := strAttr(s, attrVerdict); ok {
				ft, _ := strAttr(s, attrFailureType)
				sig, _ := strAttr(s, attrSignal)
				out[id.String()] = outcome{v, ft, sig}
			}
		}
		return out, sumValue(t, h, "traces_decided", attribute.String("trigger", "run_ended")), waited
	}
	var rootless, early int
	var stacks []string
	var minWait, maxWait, backstopWait time.Duration
	for _, l := range loadLabels(t) {
		td := loadFixture(t, l.CaptureFile)
		if td.SpanCount() == 0 {
			continue
		}
		runs := trajectory.Build(td)
		lost := false
		for i := range runs {
			lost = lost || !runs[i].RootFound
		}
		if !lost {
			continue
		}
		rootless++
		withEarly, n, waited := decideAll(t, td, l.Constraints, settle)
		backstop, _, bw := decideAll(t, td, l.Constraints, 0)
		backstopWait = max(backstopWait, bw)
		assert.Equal(t, backstop, withEarly, "%s: an early decision must give the backstop's annotations", l.CaptureFile)
		if n > 0 {
			early++
			stacks = append(stacks, l.CaptureFile)
			assert.Less(t, waited, decisionWait, l.CaptureFile)
			assert.GreaterOrEqual(t, waited, settle, l.CaptureFile)
			if minWait == 0 || waited < minWait {
				minWait = waited
			}
			maxWait = max(maxWait, waited)
		}
	}
	sort.Strings(stacks)
	t.Logf("captures with a run whose root never arrived: %d; decided settle_wait (%s) after their last span instead of decision_wait (%s): %d (waited %s..%s after the last span, 100ms ticks; the backstop waits up to %s): %s",
		rootless, settle, decisionWait, early, minWait, maxWait, backstopWait, strings.Join(stacks, " "))
	assert.Positive(t, early, "some rootless runs show they are over")
}
