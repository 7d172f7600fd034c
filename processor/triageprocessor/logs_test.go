package triageprocessor

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"

	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadatatest"
	"github.com/triage-otel/triage/trajectory"
)

// logsHarness is a traces and a logs instance of one component, built by
// the factory as the collector builds them.
type logsHarness struct {
	*harness
	lp      *logsProcessor
	logSink *consumertest.LogsSink
}

func newLogsHarness(t *testing.T, mutate func(*Config)) *logsHarness {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.Constraints.Global = []string{"SECRET"}
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(t, cfg.Validate())
	tel := componenttest.NewTelemetry()
	set := metadatatest.NewSettings(tel)
	sink, logSink := new(consumertest.TracesSink), new(consumertest.LogsSink)
	f := NewFactory()
	lc, err := f.CreateLogs(context.Background(), set, cfg, logSink)
	require.NoError(t, err)
	tc, err := f.CreateTraces(context.Background(), set, cfg, sink)
	require.NoError(t, err)
	p := tc.(*triageProcessor)
	lp := lc.(*logsProcessor)
	require.Same(t, p, lp.p, "the traces and logs instances of one component share one state")
	h := &logsHarness{harness: &harness{t: t, p: p, sink: sink, tel: tel, now: time.Unix(1_800_000_000, 0)}, lp: lp, logSink: logSink}
	p.now = func() time.Time { return h.now }
	t.Cleanup(func() {
		require.NoError(t, lp.Shutdown(context.Background()))
		require.NoError(t, p.Shutdown(context.Background()))
		require.NoError(t, tel.Shutdown(context.Background()))
	})
	return h
}

func (h *logsHarness) sendLogs(ld plog.Logs) {
	h.t.Helper()
	want := plog.NewLogs()
	ld.CopyTo(want)
	want.MarkReadOnly()
	ld.MarkReadOnly()
	before := len(h.logSink.AllLogs())
	require.NoError(h.t, h.lp.ConsumeLogs(context.Background(), ld))
	all := h.logSink.AllLogs()
	require.Len(h.t, all, before+1, "every batch of log records is forwarded")
	assert.Equal(h.t, want, all[len(all)-1], "log records are forwarded unchanged")
}

// event is one GenAI log record: the event name, the span it names and its
// body.
type event struct {
	span uint64
	name string
	body map[string]any
}

// genaiLogs builds a batch of GenAI events of trace tid from the same
// service and instrumentation scope as agentTrace's spans.
func genaiLogs(tid pcommon.TraceID, evs ...event) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "svc")
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName("test")
	for _, e := range evs {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTraceID(tid)
		if e.span != 0 {
			lr.SetSpanID(spanID(e.span))
		}
		lr.Attributes().PutStr("event.name", e.name)
		if err := lr.Body().SetEmptyMap().FromRaw(e.body); err != nil {
			panic(err)
		}
	}
	return ld
}

// leakEvents are the events of genaiRun's two chat calls (spans 2 and 4):
// the second answer holds the forbidden string, visible only on logs.
func leakEvents(tid pcommon.TraceID) plog.Logs {
	return genaiLogs(tid,
		event{2, trajectory.EventUserMessage, map[string]any{"content": "look it up"}},
		event{2, trajectory.EventChoice, map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{
			"tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "lookup", "arguments": "{}"}}}}}},
		event{4, trajectory.EventToolMessage, map[string]any{"id": "c1", "content": "found"}},
		event{4, trajectory.EventChoice, map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"content": "here is the SECRET code"}}},
	)
}

func rootVerdict(t *testing.T, h *harness, root uint64) (verdict, failureType string) {
	t.Helper()
	copies := h.forwarded()[spanID(root)]
	require.NotEmpty(t, copies, "root %d forwarded", root)
	verdict, _ = strAttr(copies[0], attrVerdict)
	failureType, _ = strAttr(copies[0], attrFailureType)
	return verdict, failureType
}

// Log events that arrive before their trace's spans are held and joined
// when the root decides the trace.
func TestLogEventsBeforeSpansAreJoined(t *testing.T) {
	h := newLogsHarness(t, nil)
	tid := traceID(1)
	h.sendLogs(leakEvents(tid))
	assert.Equal(t, int64(4), sumValue(t, h.harness, "log_records_held"))
	h.send(agentTrace(tid, "svc", genaiRun("")...))
	v, ft := rootVerdict(t, h.harness, 1)
	assert.Equal(t, "failed", v)
	assert.Equal(t, "constraint_ignored", ft, "the answer on logs was checked against the constraints")
	assert.Equal(t, int64(4), sumValue(t, h.harness, "log_records_joined"))
	assert.Equal(t, int64(0), sumValue(t, h.harness, "log_records_held"))

	// Without the logs the same spans are ok: the join is what found it.
	plain := newLogsHarness(t, nil)
	plain.send(agentTrace(tid, "svc", genaiRun("")...))
	v, _ = rootVerdict(t, plain.harness, 1)
	assert.Equal(t, "ok", v)
}

// Once an instrumentation was seen emitting GenAI events, a trace of it
// whose root arrives before its events waits for them: decided as soon as
// every LLM span has its output event, or after logs_wait.
func TestRootWaitsForLogEventsOfAnEmittingInstrumentation(t *testing.T) {
	h := newLogsHarness(t, func(c *Config) { c.LogsWait = 3 * time.Second })
	// A first trace teaches the processor that (svc, test) emits events.
	h.sendLogs(leakEvents(traceID(1)))
	h.send(agentTrace(traceID(1), "svc", genaiRun("")...))
	require.Equal(t, 4, h.sink.SpanCount())

	// Trace 2: its spans first. The root does not decide it.
	tid := traceID(2)
	h.send(agentTrace(tid, "svc", genaiRun("")...))
	assert.Equal(t, 4, h.sink.SpanCount(), "trace 2 waits for its log events")
	// The first call's events are not enough; the second call's are.
	events := leakEvents(tid)
	first, second := plog.NewLogs(), plog.NewLogs()
	events.CopyTo(first)
	events.CopyTo(second)
	first.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().RemoveIf(func(lr plog.LogRecord) bool { return lr.SpanID() == spanID(4) })
	second.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().RemoveIf(func(lr plog.LogRecord) bool { return lr.SpanID() == spanID(2) })
	h.now = h.now.Add(time.Second)
	h.sendLogs(first)
	h.p.decideExpired(context.Background())
	assert.Equal(t, 4, h.sink.SpanCount(), "one LLM span still lacks its output event")
	h.sendLogs(second)
	require.Equal(t, 8, h.sink.SpanCount(), "decided when the last output event arrived")
	copies := h.forwarded()[spanID(1)] // trace 1's root, then trace 2's
	require.Len(t, copies, 2)
	got, _ := strAttr(copies[1], attrFailureType)
	assert.Equal(t, "constraint_ignored", got, "the events it waited for were joined")
	assert.Equal(t, int64(2), sumValue(t, h.harness, "traces_decided", attribute.String("trigger", "root")))

	// Trace 3: its events never come: decided logs_wait after its root.
	tid = traceID(3)
	h.send(agentTrace(tid, "svc", genaiRun("")...))
	h.now = h.now.Add(2900 * time.Millisecond)
	h.p.decideExpired(context.Background())
	assert.Equal(t, 8, h.sink.SpanCount(), "still within logs_wait")
	h.now = h.now.Add(200 * time.Millisecond)
	h.p.decideExpired(context.Background())
	assert.Equal(t, 12, h.sink.SpanCount())
	assert.Equal(t, int64(1), sumValue(t, h.harness, "traces_decided", attribute.String("trigger", "logs_wait")))

	// A late event of trace 3 is forwarded, counted, and changes nothing.
	h.sendLogs(genaiLogs(tid, event{4, trajectory.EventChoice, map[string]any{"message": map[string]any{"content": "SECRET"}}}))
	assert.Equal(t, int64(1), sumValue(t, h.harness, "log_records_dropped", attribute.String("reason", "late")))
	assert.Equal(t, 12, h.sink.SpanCount())
}

// A failed LLM call emits no output event: any event of it completes it.
func TestFailedLLMSpanNeedsNoOutputEvent(t *testing.T) {
	h := newLogsHarness(t, nil)
	h.sendLogs(leakEvents(traceID(1))) // learn the emitter
	tid := traceID(2)
	spans := genaiRun("")
	spans[2].errMsg = "503 Service Unavailable" // the second chat call fails
	h.send(agentTrace(tid, "svc", spans...))
	require.Zero(t, h.sink.SpanCount())
	h.sendLogs(genaiLogs(tid,
		event{2, trajectory.EventChoice, map[string]any{"finish_reason": "tool_calls", "message": map[string]any{}}},
		event{4, trajectory.EventUserMessage, map[string]any{"content": "again"}},
	))
	assert.Equal(t, 4, h.sink.SpanCount(), "the failed call's input event completes it")
}

// Traces of instrumentations never seen emitting events, and components
// with logs_wait 0, never wait.
func TestNoWaitWithoutEmittingInstrumentation(t *testing.T) {
	h := newLogsHarness(t, nil)
	h.sendLogs(leakEvents(traceID(1))) // (svc, test) emits
	h.send(agentTrace(traceID(2), "other-svc", genaiRun("")...))
	assert.Equal(t, 4, h.sink.SpanCount(), "another service's instrumentation sent no event: decided at once")

	z := newLogsHarness(t, func(c *Config) { c.LogsWait = 0 })
	z.sendLogs(leakEvents(traceID(1)))
	z.send(agentTrace(traceID(1), "svc", genaiRun("")...))
	z.send(agentTrace(traceID(2), "svc", genaiRun("")...))
	assert.Equal(t, 8, z.sink.SpanCount())
}

func TestLogBoundsAndDropsCounted(t *testing.T) {
	t.Run("per trace", func(t *testing.T) {
		h := newLogsHarness(t, func(c *Config) { c.MaxLogRecordsPerTrace = 3 })
		h.sendLogs(leakEvents(traceID(1)))
		assert.Equal(t, int64(1), sumValue(t, h.harness, "log_records_dropped", attribute.String("reason", "max_log_records_per_trace")))
		assert.Equal(t, int64(3), sumValue(t, h.harness, "log_records_held"))
	})
	t.Run("bytes push out pending logs first", func(t *testing.T) {
		size := (&plog.ProtoMarshaler{}).LogRecordSize(leakEvents(traceID(1)).ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(3))
		h := newLogsHarness(t, func(c *Config) { c.MaxLogBytes = 2 * size })
		h.sendLogs(genaiLogs(traceID(1), event{4, trajectory.EventChoice, map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"content": "here is the SECRET code"}}}))
		h.sendLogs(genaiLogs(traceID(2), event{4, trajectory.EventChoice, map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"content": "here is the SECRET code"}}}))
		assert.Equal(t, int64(2), sumValue(t, h.harness, "log_records_held"))
		h.sendLogs(genaiLogs(traceID(3), event{4, trajectory.EventChoice, map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"content": "here is the SECRET code"}}}))
		assert.Equal(t, int64(1), sumValue(t, h.harness, "log_records_dropped", attribute.String("reason", "max_log_bytes")))
		assert.LessOrEqual(t, h.p.logs.bytes, 2*size)
		assert.False(t, h.p.logs.pending.Contains(traceID(1)), "the oldest pending logs went first")
		assert.True(t, h.p.logs.pending.Contains(traceID(3)))
	})
	t.Run("pending traces bounded by num_traces", func(t *testing.T) {
		h := newLogsHarness(t, func(c *Config) { c.NumTraces = 2 })
		for i := uint64(1); i <= 3; i++ {
			h.sendLogs(genaiLogs(traceID(i), event{2, trajectory.EventUserMessage, map[string]any{"content": "x"}}))
		}
		assert.Equal(t, 2, h.p.logs.pending.Len())
		assert.Equal(t, int64(1), sumValue(t, h.harness, "log_records_dropped", attribute.String("reason", "evicted")))
	})
	t.Run("pending expire after decision_wait", func(t *testing.T) {
		h := newLogsHarness(t, func(c *Config) { c.DecisionWait = 5 * time.Second })
		h.sendLogs(genaiLogs(traceID(1), event{2, trajectory.EventUserMessage, map[string]any{"content": "x"}}))
		h.now = h.now.Add(6 * time.Second)
		h.p.decideExpired(context.Background())
		assert.Zero(t, h.p.logs.pending.Len())
		assert.Zero(t, h.p.logs.records)
		assert.Equal(t, int64(1), sumValue(t, h.harness, "log_records_dropped", attribute.String("reason", "expired")))
		assert.Equal(t, int64(0), sumValue(t, h.harness, "log_records_held"))
	})
	t.Run("records without a span, and other records", func(t *testing.T) {
		h := newLogsHarness(t, nil)
		ld := genaiLogs(traceID(1), event{0, trajectory.EventUserMessage, map[string]any{"content": "x"}})
		other := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty()
		other.Body().SetStr("an application log line")
		other.SetTraceID(traceID(1))
		other.SetSpanID(spanID(2))
		h.sendLogs(ld)
		assert.Equal(t, int64(1), sumValue(t, h.harness, "log_records_dropped", attribute.String("reason", "no_span")))
		assert.Zero(t, h.p.logs.records, "only GenAI events are held")
	})
}

// The shared state is per configuration, a second traces pipeline gets its
// own, and the state is released by its last instance, in either order.
func TestSharedStateLifecycle(t *testing.T) {
	ctx := context.Background()
	f := NewFactory()
	set := metadatatest.NewSettings(componenttest.NewTelemetry())
	cfgA := createDefaultConfig().(*Config)
	cfgB := createDefaultConfig().(*Config)

	for _, logsFirst := range []bool{true, false} {
		ta, err := f.CreateTraces(ctx, set, cfgA, consumertest.NewNop())
		require.NoError(t, err)
		la, err := f.CreateLogs(ctx, set, cfgA, consumertest.NewNop())
		require.NoError(t, err)
		la2, err := f.CreateLogs(ctx, set, cfgA, consumertest.NewNop())
		require.NoError(t, err)
		tb, err := f.CreateTraces(ctx, set, cfgB, consumertest.NewNop())
		require.NoError(t, err)
		ta2, err := f.CreateTraces(ctx, set, cfgA, consumertest.NewNop())
		require.NoError(t, err)

		pa := ta.(*triageProcessor)
		assert.Same(t, pa, la.(*logsProcessor).p)
		assert.Same(t, pa, la2.(*logsProcessor).p)
		assert.NotSame(t, pa, tb.(*triageProcessor), "another configuration, another state")
		assert.NotSame(t, pa, ta2.(*triageProcessor), "a second traces pipeline has its own state")

		require.NoError(t, ta.Start(ctx, nil))
		require.NoError(t, la.Start(ctx, nil))
		// Held spans are decided and forwarded at the traces instance's
		// Shutdown, whichever instance goes first.
		require.NoError(t, pa.ConsumeTraces(ctx, agentTrace(traceID(9), "svc", genaiRun("")[:2]...)))
		if logsFirst {
			require.NoError(t, la.Shutdown(ctx))
			require.NoError(t, la2.Shutdown(ctx))
			require.NoError(t, la2.Shutdown(ctx)) // twice is harmless
			states.mu.Lock()
			_, still := states.m[cfgA]
			states.mu.Unlock()
			assert.True(t, still, "the traces instance still holds the state")
			require.NoError(t, ta.Shutdown(ctx))
		} else {
			require.NoError(t, ta.Shutdown(ctx))
			// Logs after the traces instance shut down go on, unjoined.
			require.NoError(t, la.(*logsProcessor).ConsumeLogs(ctx, leakEvents(traceID(9))))
			require.NoError(t, la.Shutdown(ctx))
			require.NoError(t, la2.Shutdown(ctx))
		}
		assert.Zero(t, pa.held.Len())
		states.mu.Lock()
		_, still := states.m[cfgA]
		states.mu.Unlock()
		assert.False(t, still, "the last instance forgot the state")
		require.NoError(t, tb.Shutdown(ctx))
		require.NoError(t, ta2.Shutdown(ctx))
	}
}

// Real captures: the processor in a traces and a logs pipeline gives
// openai-otel's and EDOT's constraint_leak the answer the CLI gives with the
// .logs.json joined, in either order of arrival once the instrumentation is
// known.
func TestFixtureLogsJoined(t *testing.T) {
	for _, stack := range []string{"openai-otel", "openai-edot"} {
		for _, logsFirst := range []bool{true, false} {
			h := newLogsHarness(t, func(c *Config) { c.Constraints.Global = []string{"CONFIDENTIAL"} })
			td := loadFixture(t, stack+"/constraint_leak.json")
			ld := loadLogsFixture(t, stack+"/constraint_leak.logs.json")
			if !logsFirst {
				// Teach the processor the instrumentation with another
				// capture of the stack first.
				h.sendLogs(loadLogsFixture(t, stack+"/ok_single_tool.logs.json"))
				h.send(loadFixture(t, stack+"/ok_single_tool.json"))
				h.send(td)
				h.sendLogs(ld)
			} else {
				h.sendLogs(ld)
				h.send(td)
			}
			runs := trajectory.Build(td)
			require.Len(t, runs, 1)
			v, ft := rootVerdict(t, h.harness, binaryID(runs[0].RootSpanID))
			assert.Equal(t, "failed", v, "%s logs first=%v", stack, logsFirst)
			assert.Equal(t, "constraint_ignored", ft, "%s logs first=%v", stack, logsFirst)
		}
	}
}

func binaryID(id pcommon.SpanID) uint64 {
	var n uint64
	for _, b := range id {
		n = n<<8 | uint64(b)
	}
	return n
}

func loadLogsFixture(t *testing.T, rel string) plog.Logs {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sharedDir(t), "fixtures", "frameworks", rel))
	require.NoError(t, err)
	ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(b)
	require.NoError(t, err)
	return ld
}

// decision_wait is for traces whose root has not arrived: it does not cut
// short a trace whose root arrived and that waits for its log events, even
// when every held trace waits.
func TestWaitingForLogsOutlivesDecisionWait(t *testing.T) {
	h := newLogsHarness(t, func(c *Config) {
		c.DecisionWait = time.Second
		c.LogsWait = 4 * time.Second
	})
	h.sendLogs(leakEvents(traceID(1))) // learn the emitter
	h.send(agentTrace(traceID(1), "svc", genaiRun("")...))
	require.Equal(t, 4, h.sink.SpanCount())

	h.send(agentTrace(traceID(2), "svc", genaiRun("")...))       // waits for logs
	h.send(agentTrace(traceID(3), "svc", genaiRun("")...))       // waits for logs
	h.send(agentTrace(traceID(4), "other", genaiRun("")[:3]...)) // no root: decision_wait
	h.now = h.now.Add(2 * time.Second)
	h.p.decideExpired(context.Background())
	assert.Equal(t, 7, h.sink.SpanCount(), "only the rootless trace was decided by decision_wait")
	assert.Equal(t, int64(1), sumValue(t, h.harness, "traces_decided", attribute.String("trigger", "decision_wait")))

	// The logs of trace 3 arrive after decision_wait: still joined.
	h.sendLogs(leakEvents(traceID(3)))
	require.Equal(t, 11, h.sink.SpanCount())
	for _, root := range h.forwarded()[spanID(1)] {
		if root.TraceID() == traceID(3) {
			got, _ := strAttr(root, attrFailureType)
			assert.Equal(t, "constraint_ignored", got)
		}
	}

	h.now = h.now.Add(3 * time.Second)
	h.p.decideExpired(context.Background())
	assert.Equal(t, 15, h.sink.SpanCount())
	assert.Equal(t, int64(1), sumValue(t, h.harness, "traces_decided", attribute.String("trigger", "logs_wait")))
}
