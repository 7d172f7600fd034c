package triageprocessor

import (
	"context"
	"strconv"
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

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/guard"
	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadatatest"
	"github.com/triage-otel/triage/trajectory"
)

// expectedVerdicts classifies td with the library directly, the way the
// processor should, keyed by run root span ID.
func expectedVerdicts(t *testing.T, td ptrace.Traces, opts classifier.Options, extra ...classifier.Incident) map[pcommon.SpanID]classifier.Verdict {
	t.Helper()
	c, err := classifier.New(opts)
	require.NoError(t, err)
	out := map[pcommon.SpanID]classifier.Verdict{}
	runs := trajectory.Build(td)
	for i := range runs {
		out[runs[i].RootSpanID] = c.Classify(&runs[i], extra...)
	}
	return out
}

func sumValue(t *testing.T, h *harness, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	m, err := h.tel.GetMetric("otelcol_processor_triage_" + name)
	if err != nil {
		return 0
	}
	want := attribute.NewSet(attrs...)
	var total int64
	switch data := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, dp := range data.DataPoints {
			if len(attrs) == 0 || dp.Attributes.Equals(&want) {
				total += dp.Value
			}
		}
	default:
		t.Fatalf("metric %s is %T, not an int sum", name, m.Data)
	}
	return total
}

func TestDecideOnRootArrival(t *testing.T) {
	h := newHarness(t, nil)
	tid := traceID(1)
	spans := genaiRun("upstream returned 502 Bad Gateway")

	// Children first: the run is not complete, nothing is forwarded.
	h.send(agentTrace(tid, "svc", spans[:3]...))
	assert.Zero(t, h.sink.SpanCount())
	assert.Equal(t, 1, h.p.held.Len())
	assert.Equal(t, int64(1), sumValue(t, h, "traces_held"))
	assert.Equal(t, int64(3), sumValue(t, h, "spans_held"))

	// The root completes the run: decided and forwarded in the same call.
	h.send(agentTrace(tid, "svc", spans[3]))
	require.Equal(t, 4, h.sink.SpanCount())
	assert.Equal(t, 0, h.p.held.Len())
	assert.Equal(t, int64(0), sumValue(t, h, "traces_held"))
	assert.Equal(t, int64(0), sumValue(t, h, "spans_held"))
	assert.Equal(t, int64(1), sumValue(t, h, "traces_decided", attribute.String("trigger", "root")))

	want := expectedVerdicts(t, agentTrace(tid, "svc", spans...), classifier.Options{})
	v, ok := want[spanID(1)]
	require.True(t, ok, "the library finds a run rooted at span 1")
	require.Equal(t, classifier.OutcomeFailed, v.Outcome, "fixture sanity: the failing tool fails the run")

	root := h.forwarded()[spanID(1)][0]
	got, _ := strAttr(root, attrVerdict)
	assert.Equal(t, string(v.Outcome), got)
	got, _ = strAttr(root, attrFailureType)
	assert.Equal(t, string(v.FailureType), got)
	got, _ = strAttr(root, attrEvidenceSpanID)
	assert.Equal(t, v.EvidenceSpanID.String(), got)
	got, _ = strAttr(root, attrSignal)
	assert.Equal(t, string(v.Signal), got)
	conf, ok := root.Attributes().Get(attrConfidence)
	require.True(t, ok)
	assert.InDelta(t, v.Confidence, conf.Double(), 1e-9)

	// The incident span carries its own class and whether it was recovered.
	require.NotEmpty(t, v.Incidents)
	inc := v.Incidents[0]
	incSpan := h.forwarded()[inc.SpanID][0]
	got, _ = strAttr(incSpan, attrFailureType)
	assert.Equal(t, string(inc.FailureType), got)
	rec, ok := incSpan.Attributes().Get(attrRecovered)
	require.True(t, ok)
	assert.Equal(t, inc.Recovered, rec.Bool())

	// Spans that are neither a run root nor an incident are untouched.
	_, annotated := strAttr(h.forwarded()[spanID(2)][0], attrFailureType)
	assert.False(t, annotated)

	metadatatest.AssertEqualProcessorTriageDecisions(t, h.tel, []metricdata.DataPoint[int64]{{
		Attributes: attribute.NewSet(attribute.String("failure_type", string(v.FailureType)), attribute.String("verdict", string(v.Outcome))),
		Value:      1,
	}}, metricdatatest.IgnoreTimestamp())
}

func TestOKRunAnnotatedOK(t *testing.T) {
	h := newHarness(t, nil)
	td := agentTrace(traceID(2), "svc", genaiRun("")...)
	want := expectedVerdicts(t, td, classifier.Options{})
	h.send(td)
	require.Equal(t, 4, h.sink.SpanCount())
	root := h.forwarded()[spanID(1)][0]
	got, _ := strAttr(root, attrVerdict)
	assert.Equal(t, string(want[spanID(1)].Outcome), got)
	_, hasType := strAttr(root, attrFailureType)
	assert.Equal(t, want[spanID(1)].FailureType != "", hasType)
}

func TestDecideAfterDecisionWaitWhenRootNeverArrives(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DecisionWait = 10 * time.Second })
	tid := traceID(3)
	spans := genaiRun("upstream returned 502 Bad Gateway")[:3] // no root

	h.send(agentTrace(tid, "svc", spans[:2]...))
	h.now = h.now.Add(9 * time.Second)
	h.send(agentTrace(tid, "svc", spans[2])) // activity resets the wait
	h.now = h.now.Add(9 * time.Second)
	h.p.decideExpired(context.Background())
	assert.Zero(t, h.sink.SpanCount(), "9s after the last span the trace is still held")

	h.now = h.now.Add(2 * time.Second)
	h.p.decideExpired(context.Background())
	assert.Equal(t, 3, h.sink.SpanCount())
	assert.Equal(t, int64(1), sumValue(t, h, "traces_decided", attribute.String("trigger", "decision_wait")))
	assert.Equal(t, int64(0), sumValue(t, h, "traces_held"))
}

func TestTickerDecidesAfterDecisionWait(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DecisionWait = 20 * time.Millisecond })
	h.p.now = time.Now
	require.NoError(t, h.p.Start(context.Background(), nil))
	h.send(agentTrace(traceID(4), "svc", genaiRun("")[:3]...))
	require.Eventually(t, func() bool { return h.sink.SpanCount() == 3 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, int64(1), sumValue(t, h, "traces_decided", attribute.String("trigger", "decision_wait")))
}

func TestLateSpansForwardedFromDecisionCache(t *testing.T) {
	h := newHarness(t, nil)
	tid := traceID(5)
	full := agentTrace(tid, "svc", genaiRun("upstream returned 502 Bad Gateway")...)
	want := expectedVerdicts(t, full, classifier.Options{})[spanID(1)]
	require.NotEmpty(t, want.Incidents)
	incID := want.Incidents[0].SpanID

	h.send(full)
	require.Equal(t, 4, h.sink.SpanCount())
	first := h.forwarded()[incID][0]
	_, ok := first.Attributes().Get(attrFailureType)
	require.True(t, ok, "the incident span is annotated with the decision")

	// A retransmission of the incident span arrives after the decision: it
	// is forwarded at once, as it came. It was part of the decision, so
	// annotating it again would count its incident twice downstream.
	var late ptrace.Traces
	eachSpan(full, func(_ ptrace.ResourceSpans, s ptrace.Span) {
		if s.SpanID() == incID {
			late = agentTrace(tid, "svc", spanSpec{id: 3, parent: 1, name: s.Name(), attrs: s.Attributes().AsRaw(), errMsg: s.Status().Message()})
		}
	})
	h.send(late)
	require.Equal(t, 5, h.sink.SpanCount())
	copies := h.forwarded()[incID]
	require.Len(t, copies, 2)
	for k := range copies[1].Attributes().All() {
		assert.False(t, strings.HasPrefix(k, "triage."), "retransmitted span re-annotated with %s", k)
	}
	assert.Equal(t, int64(1), sumValue(t, h, "late_spans"))
	assert.Equal(t, 0, h.p.held.Len(), "a late span does not open a new trace")
	assert.Equal(t, int64(1), sumValue(t, h, "decisions"), "and starts no new decision")
}

func TestLateRootAnnotatedWithVerdict(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DecisionWait = time.Second })
	tid := traceID(6)
	spans := genaiRun("upstream returned 502 Bad Gateway")
	h.send(agentTrace(tid, "svc", spans[:3]...))
	h.now = h.now.Add(2 * time.Second)
	h.p.decideExpired(context.Background())
	require.Equal(t, 3, h.sink.SpanCount())

	// What the library says of the orphan run decided without its root.
	orphan := expectedVerdicts(t, agentTrace(tid, "svc", spans[:3]...), classifier.Options{})
	require.NotEmpty(t, orphan)
	var worst classifier.Verdict
	for _, v := range orphan {
		if worst.Outcome == "" || worse(string(v.Outcome), string(worst.Outcome)) {
			worst = v
		}
	}

	h.send(agentTrace(tid, "svc", spans[3]))
	require.Equal(t, 4, h.sink.SpanCount())
	root := h.forwarded()[spanID(1)][0]
	got, ok := strAttr(root, attrVerdict)
	require.True(t, ok, "the late root carries the verdict")
	assert.Equal(t, string(worst.Outcome), got)
	got, _ = strAttr(root, attrFailureType)
	assert.Equal(t, string(worst.FailureType), got)
	late, ok := root.Attributes().Get(attrLate)
	require.True(t, ok, "the late root is marked as repeating the decision of its stand-ins")
	assert.True(t, late.Bool())
	assert.Equal(t, int64(1), sumValue(t, h, "decisions"), "the late root starts no new decision")
}

func TestFloodOfTraceIDsStaysBoundedAndCountsEvictions(t *testing.T) {
	const limit, flood = 10, 1000
	h := newHarness(t, func(c *Config) { c.NumTraces = limit })
	for i := range flood {
		// Child spans only: no trace ever completes on its own.
		h.send(agentTrace(traceID(uint64(1000+i)), "svc", spanSpec{id: 2, parent: 1, name: "chat"}))
		require.LessOrEqual(t, h.p.held.Len(), limit)
	}
	assert.Equal(t, limit, h.p.held.Len())
	assert.Equal(t, flood-limit, h.sink.SpanCount(), "evicted traces are forwarded, not dropped")
	assert.Equal(t, int64(flood-limit), sumValue(t, h, "traces_evicted"))
	assert.Equal(t, int64(flood-limit), sumValue(t, h, "traces_decided", attribute.String("trigger", "evicted")))
	assert.Equal(t, int64(limit), sumValue(t, h, "traces_held"))

	require.NoError(t, h.p.Shutdown(context.Background()))
	assert.Equal(t, flood, h.sink.SpanCount())
}

func TestGlobalByteCapEvicts(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxBytes = 4096; c.MaxTraceBytes = 4096 })
	big := strings.Repeat("x", 1000)
	for i := range 20 {
		h.send(agentTrace(traceID(uint64(i+1)), "svc", spanSpec{id: 2, parent: 1, name: "chat", attrs: map[string]any{"blob": big}}))
		require.LessOrEqual(t, h.p.heldBytes, 4096)
	}
	assert.Positive(t, sumValue(t, h, "traces_evicted"))
	require.NoError(t, h.p.Shutdown(context.Background()))
	assert.Equal(t, 20, h.sink.SpanCount())
}

func TestMaxSpansPerTraceCutsAndCounts(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxSpansPerTrace = 5 })
	tid := traceID(7)
	var specs []spanSpec
	for i := range 8 {
		specs = append(specs, spanSpec{id: uint64(10 + i), parent: 1, name: "chat", attrs: map[string]any{"gen_ai.operation.name": "chat"}})
	}
	h.send(agentTrace(tid, "svc", specs...))
	assert.Equal(t, 8, h.sink.SpanCount(), "the held spans and the cut ones are all forwarded")
	assert.Equal(t, int64(3), sumValue(t, h, "spans_cut", attribute.String("limit", "max_spans_per_trace")))
	assert.Equal(t, int64(1), sumValue(t, h, "traces_decided", attribute.String("trigger", "limit")))

	// The root arriving later goes through the decision cache and still
	// counts as cut.
	h.send(agentTrace(tid, "svc", spanSpec{id: 1, name: "invoke_agent", attrs: map[string]any{"gen_ai.operation.name": "invoke_agent"}}))
	assert.Equal(t, 9, h.sink.SpanCount())
	assert.Equal(t, int64(4), sumValue(t, h, "spans_cut", attribute.String("limit", "max_spans_per_trace")))
	assert.Equal(t, 0, h.p.held.Len())
}

func TestMaxTraceBytesCuts(t *testing.T) {
	// The guards off: their state counts too (next test).
	h := newHarness(t, func(c *Config) { c.MaxTraceBytes = 2000; c.Guards = guard.Config{} })
	tid := traceID(8)
	big := strings.Repeat("y", 900)
	var specs []spanSpec
	for i := range 4 {
		specs = append(specs, spanSpec{id: uint64(10 + i), parent: 1, name: "chat", attrs: map[string]any{"blob": big}})
	}
	h.send(agentTrace(tid, "svc", specs...))
	assert.Equal(t, 4, h.sink.SpanCount())
	assert.Equal(t, int64(2), sumValue(t, h, "spans_cut", attribute.String("limit", "max_trace_bytes")))
}

// TestMaxTraceBytesCountsGuardState: the in-flight guards' state of a
// trace counts against max_trace_bytes with its spans, and what it cuts is
// counted as any cut.
func TestMaxTraceBytesCountsGuardState(t *testing.T) {
	var specs []spanSpec
	for i := range 8 {
		specs = append(specs, spanSpec{id: uint64(10 + i), parent: 1, name: "chat", attrs: map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
			"gen_ai.output.messages": `[{"role":"assistant","parts":[{"type":"tool_call","id":"c` + strconv.Itoa(i) + `","name":"lookup","arguments":{"q":"x"}}]}]`}})
	}
	size := 0
	for _, sp := range specs {
		td := agentTrace(traceID(1), "svc", sp)
		size += (&ptrace.ProtoMarshaler{}).TracesSize(td) // more than the span's own size: the resource's too
	}
	for _, guards := range []bool{false, true} {
		h := newHarness(t, func(c *Config) {
			c.MaxTraceBytes = size
			if !guards {
				c.Guards = guard.Config{}
			}
		})
		h.send(agentTrace(traceID(8), "svc", specs...))
		cut := sumValue(t, h, "spans_cut", attribute.String("limit", "max_trace_bytes"))
		if !guards {
			assert.Zero(t, cut, "the spans alone fit")
			assert.Equal(t, 1, h.p.held.Len())
			continue
		}
		assert.Positive(t, cut, "the spans and the guards' state do not")
		assert.Equal(t, 8, h.sink.SpanCount(), "the trace is decided with what it holds, the cut spans forwarded")
	}
}

func TestShutdownFlushesEverythingHeld(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.p.Start(context.Background(), nil))
	for i := range 5 {
		h.send(agentTrace(traceID(uint64(100+i)), "svc", genaiRun("")[:3]...))
	}
	assert.Zero(t, h.sink.SpanCount())
	require.NoError(t, h.p.Shutdown(context.Background()))
	assert.Equal(t, 15, h.sink.SpanCount())
	assert.Equal(t, int64(5), sumValue(t, h, "traces_decided", attribute.String("trigger", "shutdown")))
	assert.Equal(t, int64(0), sumValue(t, h, "spans_held"))

	// After Shutdown nothing is held any more: spans are decided at once.
	h.send(agentTrace(traceID(200), "svc", genaiRun("")[:1]...))
	assert.Equal(t, 16, h.sink.SpanCount())
	assert.Equal(t, 0, h.p.held.Len())
}

func TestBadInputDoesNotPanic(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Rules = []RuleConfig{{Name: "any", FailureType: "timeout", Conditions: []string{`span.attributes["gen_ai.tool.name"] == "lookup"`}}}
	})
	tid := traceID(9)
	nonUTF8 := string([]byte{0xff, 0xfe, 'x'})
	td := agentTrace(tid, "svc",
		// Unknown parents, a cycle (20 <-> 21), duplicate span IDs and
		// malformed JSON where the conventions expect JSON.
		spanSpec{id: 20, parent: 21, name: "chat", attrs: map[string]any{"gen_ai.operation.name": "chat", "gen_ai.input.messages": "{not json", "gen_ai.tool.definitions": "[{"}},
		spanSpec{id: 21, parent: 20, name: "execute_tool", attrs: map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup", "gen_ai.tool.call.arguments": "{\"a\":"}},
		spanSpec{id: 22, parent: 999, name: nonUTF8, attrs: map[string]any{"llm.output_messages.0.message.tool_calls.x.tool_call.function.name": 5, "ai.response.toolCalls": "[[[", "input.value": nonUTF8}},
		spanSpec{id: 22, parent: 998, name: "dup", attrs: map[string]any{"openinference.span.kind": "TOOL", "http.response.status_code": "not a number"}},
		spanSpec{id: 23, parent: 22, name: "mcp", attrs: map[string]any{"mcp.method.name": "tools/call", "error.type": map[string]any{"nested": []any{1, "x"}}, "rpc.jsonrpc.error_code": "abc"}, errMsg: nonUTF8},
	)
	require.NotPanics(t, func() { h.send(td) })
	require.NotPanics(t, func() { require.NoError(t, h.p.Shutdown(context.Background())) })
	assert.Equal(t, 5, h.sink.SpanCount())

	// An empty trace ID and an empty batch are fine too.
	require.NotPanics(t, func() {
		h.send(ptrace.NewTraces())
		h.send(agentTrace(pcommon.NewTraceIDEmpty(), "svc", spanSpec{id: 1, name: "root"}))
	})
}

func TestOTTLRuleMarksIncident(t *testing.T) {
	rule := RuleConfig{
		Name:        "lookup_db_down",
		FailureType: "external_fault",
		Conditions: []string{
			`span.attributes["app.fault"] == "db_down"`,
			`IsMatch(span.status.message, "never matches this")`,
		},
	}
	h := newHarness(t, func(c *Config) { c.Rules = []RuleConfig{rule} })
	tid := traceID(10)
	spans := genaiRun("")
	spans[1].attrs = map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup", "app.fault": "db_down"}
	td := agentTrace(tid, "svc", spans...)
	h.send(td)

	extra := classifier.Incident{SpanID: spanID(3), StepIndex: -1, FailureType: classifier.ExternalFault, Signal: classifier.SignalOTTL, Rule: rule.Name, Confidence: 1}
	runs := trajectory.Build(td)
	require.Len(t, runs, 1)
	for i, s := range runs[0].Steps {
		if s.SpanID == spanID(3) {
			extra.StepIndex, extra.Tool = i, s.ToolName
		}
	}
	want := expectedVerdicts(t, td, classifier.Options{}, extra)[spanID(1)]

	incSpan := h.forwarded()[spanID(3)][0]
	got, _ := strAttr(incSpan, attrFailureType)
	assert.Equal(t, "external_fault", got)
	got, _ = strAttr(incSpan, attrSignal)
	assert.Equal(t, "ottl", got)
	got, _ = strAttr(incSpan, attrRule)
	assert.Equal(t, "lookup_db_down", got)

	root := h.forwarded()[spanID(1)][0]
	got, _ = strAttr(root, attrVerdict)
	assert.Equal(t, string(want.Outcome), got)
	got, _ = strAttr(root, attrFailureType)
	assert.Equal(t, string(want.FailureType), got)

	// The same trace without the attribute has no OTTL incident.
	h2 := newHarness(t, func(c *Config) { c.Rules = []RuleConfig{rule} })
	h2.send(agentTrace(traceID(11), "svc", genaiRun("")...))
	_, marked := strAttr(h2.forwarded()[spanID(3)][0], attrSignal)
	assert.False(t, marked)
}

func TestRuleErrorsCountedAndErrorMode(t *testing.T) {
	// ParseJSON fails at evaluation on a value that is not JSON.
	rule := RuleConfig{Name: "json_rule", FailureType: "timeout", Conditions: []string{`ParseJSON(span.attributes["payload"])["k"] == "v"`}}
	for _, mode := range []string{"ignore", "silent", "propagate"} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.Rules = []RuleConfig{rule}
				require.NoError(t, c.ErrorMode.UnmarshalText([]byte(mode)))
			})
			spans := genaiRun("")
			for i := range spans {
				spans[i].attrs["payload"] = `{"k":"x"}`
			}
			spans[0].attrs["payload"] = "{broken"
			h.send(agentTrace(traceID(12), "svc", spans...))
			require.Equal(t, 4, h.sink.SpanCount(), "rule errors never drop spans")
			assert.Equal(t, int64(1), sumValue(t, h, "rule_errors", attribute.String("rule", "json_rule")))
			_, marked := strAttr(h.forwarded()[spanID(1)][0], attrRuleError)
			assert.Equal(t, mode == "propagate", marked)
		})
	}
}

func TestConstraintsPerService(t *testing.T) {
	// The final chat answer leaks a forbidden string.
	mk := func(svc string) ptrace.Traces {
		spans := genaiRun("")
		spans[2].attrs = map[string]any{
			"gen_ai.operation.name":  "chat",
			"gen_ai.output.messages": `[{"role":"assistant","parts":[{"type":"text","content":"the vault code is SECRET-42"}]}]`,
		}
		return agentTrace(traceID(13), svc, spans...)
	}
	h := newHarness(t, func(c *Config) {
		c.Constraints.PerService = map[string][]string{"bank": {"SECRET-42"}}
	})
	h.send(mk("bank"))
	wantBank := expectedVerdicts(t, mk("bank"), classifier.Options{Constraints: []string{"SECRET-42"}})[spanID(1)]
	wantOther := expectedVerdicts(t, mk("other"), classifier.Options{})[spanID(1)]
	require.NotEqual(t, wantBank.FailureType, wantOther.FailureType, "sanity: the constraint changes the library's answer")

	got, _ := strAttr(h.forwarded()[spanID(1)][0], attrFailureType)
	assert.Equal(t, string(wantBank.FailureType), got)

	h2 := newHarness(t, func(c *Config) {
		c.Constraints.PerService = map[string][]string{"bank": {"SECRET-42"}}
	})
	h2.send(mk("other"))
	got, _ = strAttr(h2.forwarded()[spanID(1)][0], attrFailureType)
	assert.Equal(t, string(wantOther.FailureType), got)
}

// The processor owns its input (MutatesData): it moves the batch's spans
// into its buffer and annotates them there, without copying them; the
// pipeline clones a batch for it only when another consumer shares it.
func TestInputMovedNotCopied(t *testing.T) {
	h := newHarness(t, nil)
	require.True(t, h.p.Capabilities().MutatesData)
	td := agentTrace(traceID(14), "svc", genaiRun("upstream returned 502 Bad Gateway")...)
	want := td.SpanCount()
	var root ptrace.Span
	eachSpan(td, func(_ ptrace.ResourceSpans, s ptrace.Span) {
		if s.ParentSpanID().IsEmpty() {
			root = s
		}
	})
	require.NoError(t, h.p.ConsumeTraces(context.Background(), td))
	assert.Equal(t, want, h.sink.SpanCount())
	assert.Zero(t, td.SpanCount(), "the spans left the batch")
	v, ok := root.Attributes().Get(attrVerdict)
	require.True(t, ok, "the span forwarded and annotated is the one received, not a copy")
	assert.Equal(t, "failed", v.Str())
}

// TestConcurrentConsumersLoseNothing runs several senders, the ticker and a
// small buffer together (run with -race): every span is forwarded exactly
// once and the gauges return to zero.
func TestConcurrentConsumersLoseNothing(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.NumTraces = 8
		c.MaxSpansPerTrace = 3
		c.DecisionCacheSize = 16
		c.DecisionWait = 5 * time.Millisecond
	})
	h.p.now = time.Now
	require.NoError(t, h.p.Start(context.Background(), nil))
	const senders, perSender = 4, 50
	done := make(chan struct{})
	for s := range senders {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range perSender {
				tid := traceID(uint64(10_000 + s*perSender + i))
				spans := genaiRun("upstream returned 502 Bad Gateway")
				// Children and root in separate calls, interleaved with
				// the other senders.
				assert.NoError(t, h.p.ConsumeTraces(context.Background(), agentTrace(tid, "svc", spans[:3]...)))
				assert.NoError(t, h.p.ConsumeTraces(context.Background(), agentTrace(tid, "svc", spans[3])))
			}
		}()
	}
	for range senders {
		<-done
	}
	require.NoError(t, h.p.Shutdown(context.Background()))
	assert.Equal(t, senders*perSender*4, h.sink.SpanCount())
	seen := map[[24]byte]int{}
	for _, td := range h.sink.AllTraces() {
		eachSpan(td, func(_ ptrace.ResourceSpans, s ptrace.Span) {
			var k [24]byte
			tid, sid := s.TraceID(), s.SpanID()
			copy(k[:16], tid[:])
			copy(k[16:], sid[:])
			seen[k]++
		})
	}
	assert.Len(t, seen, senders*perSender*4, "no span forwarded twice")
	assert.Equal(t, int64(0), sumValue(t, h, "traces_held"))
	assert.Equal(t, int64(0), sumValue(t, h, "spans_held"))
	assert.Equal(t, 0, h.p.heldSpans)
	assert.Equal(t, 0, h.p.heldBytes)
	assert.Empty(t, h.p.deciding)
}

func TestRootWaitCollectsSpansFromOtherServices(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RootWait = 2 * time.Second })
	tid := traceID(20)
	spans := genaiRun("")
	h.send(agentTrace(tid, "client", spans...))
	assert.Zero(t, h.sink.SpanCount(), "with root_wait the root does not decide at once")

	// A span from another service's exporter arrives after the root.
	h.now = h.now.Add(time.Second)
	h.send(agentTrace(tid, "server", spanSpec{id: 30, parent: 3, name: "tools/call lookup", attrs: map[string]any{"mcp.method.name": "tools/call"}}))
	h.p.decideExpired(context.Background())
	assert.Zero(t, h.sink.SpanCount())

	h.now = h.now.Add(time.Second)
	h.p.decideExpired(context.Background())
	assert.Equal(t, 5, h.sink.SpanCount())
	assert.Len(t, h.sink.AllTraces(), 1, "one decision forwarded the whole trace")
	assert.Equal(t, int64(1), sumValue(t, h, "traces_decided", attribute.String("trigger", "root")))
	assert.Zero(t, sumValue(t, h, "late_spans"))
	_, ok := strAttr(h.forwarded()[spanID(1)][0], attrVerdict)
	assert.True(t, ok)
}
