package triageprocessor

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadatatest"
)

func traceID(n uint64) pcommon.TraceID {
	var id pcommon.TraceID
	binary.BigEndian.PutUint64(id[8:], n)
	id[0] = 0x7a
	return id
}

func spanID(n uint64) pcommon.SpanID {
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], n)
	return id
}

// spanSpec describes a span of a hand-built agent trace.
type spanSpec struct {
	id, parent uint64 // parent 0 = root
	name       string
	attrs      map[string]any
	errMsg     string // non-empty: status error with this message
}

// agentTrace builds one batch holding the given spans of trace tid, in the
// given order, under service svc.
func agentTrace(tid pcommon.TraceID, svc string, specs ...spanSpec) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", svc)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("test")
	base := time.Unix(1_700_000_000, 0)
	for i, sp := range specs {
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(spanID(sp.id))
		if sp.parent != 0 {
			s.SetParentSpanID(spanID(sp.parent))
		}
		s.SetName(sp.name)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(i) * time.Millisecond)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(i+1) * time.Millisecond)))
		if err := s.Attributes().FromRaw(sp.attrs); err != nil {
			panic(err)
		}
		if sp.errMsg != "" {
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage(sp.errMsg)
		}
	}
	return td
}

// genaiRun returns the spans of a GenAI-semconv agent run: root 1, a chat
// call 2, a tool call 3 (failing when toolErr is set) and a final chat 4.
func genaiRun(toolErr string) []spanSpec {
	return []spanSpec{
		{id: 2, parent: 1, name: "chat m", attrs: map[string]any{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}},
		{id: 3, parent: 1, name: "execute_tool lookup", attrs: map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup", "app.fault": "none"}, errMsg: toolErr},
		{id: 4, parent: 1, name: "chat m", attrs: map[string]any{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}},
		{id: 1, name: "invoke_agent a", attrs: map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}},
	}
}

type harness struct {
	t    *testing.T
	p    *triageProcessor
	sink *consumertest.TracesSink
	tel  *componenttest.Telemetry
	now  time.Time
}

func newHarness(t *testing.T, mutate func(*Config)) *harness {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(t, cfg.Validate())
	tel := componenttest.NewTelemetry()
	sink := new(consumertest.TracesSink)
	p, err := newTriageProcessor(metadatatest.NewSettings(tel), cfg, sink)
	require.NoError(t, err)
	h := &harness{t: t, p: p, sink: sink, tel: tel, now: time.Unix(1_800_000_000, 0)}
	p.now = func() time.Time { return h.now }
	t.Cleanup(func() {
		require.NoError(t, p.Shutdown(context.Background()))
		require.NoError(t, tel.Shutdown(context.Background()))
	})
	return h
}

func (h *harness) send(td ptrace.Traces) {
	h.t.Helper()
	td = ownedBatch(h.p, td)
	require.NoError(h.t, h.p.ConsumeTraces(context.Background(), td))
}

// expire lets decision_wait pass without activity and runs the ticker's
// check: traces whose root never arrived are decided as the collector
// decides them (not as partial traces, which shutdown would make them).
func (h *harness) expire() {
	h.t.Helper()
	h.now = h.now.Add(h.p.cfg.DecisionWait + time.Second)
	h.p.decideExpired(context.Background())
}

// forwarded returns every span forwarded so far, by span ID.
func (h *harness) forwarded() map[pcommon.SpanID][]ptrace.Span {
	out := map[pcommon.SpanID][]ptrace.Span{}
	for _, td := range h.sink.AllTraces() {
		eachSpan(td, func(_ ptrace.ResourceSpans, s ptrace.Span) { out[s.SpanID()] = append(out[s.SpanID()], s) })
	}
	return out
}

// decisionSpans returns the in-flight decision spans forwarded so far.
func (h *harness) decisionSpans() []ptrace.Span {
	var out []ptrace.Span
	for _, td := range h.sink.AllTraces() {
		eachSpan(td, func(_ ptrace.ResourceSpans, s ptrace.Span) {
			if s.Name() == decisionSpanName {
				out = append(out, s)
			}
		})
	}
	return out
}

func eachSpan(td ptrace.Traces, f func(ptrace.ResourceSpans, ptrace.Span)) {
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			spans := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				f(rs, spans.At(k))
			}
		}
	}
}

func strAttr(s ptrace.Span, key string) (string, bool) {
	v, ok := s.Attributes().Get(key)
	if !ok {
		return "", false
	}
	return v.AsString(), true
}

// sharedDir finds /work/shared (or wherever shared/ is) by walking up from
// the working directory.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		for _, cand := range []string{filepath.Join(dir, "shared"), filepath.Join(dir, "..", "shared")} {
			if st, err := os.Stat(filepath.Join(cand, "fixtures", "frameworks")); err == nil && st.IsDir() {
				return cand
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("shared/fixtures not found above the working directory")
		}
		dir = parent
	}
}

func loadFixture(t *testing.T, rel string) ptrace.Traces {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sharedDir(t), "fixtures", "frameworks", rel))
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
	require.NoError(t, err)
	return td
}

// ownedBatch is what the collector hands a traces consumer: a processor
// that declares MutatesData takes its input apart, and the test keeps
// using td, as a second consumer of the batch would, so it gets a copy, as
// the collector's fan-out gives one; any other gets td read-only (it must
// not mutate its input).
func ownedBatch(c consumer.Traces, td ptrace.Traces) ptrace.Traces {
	if c.Capabilities().MutatesData {
		own := ptrace.NewTraces()
		td.CopyTo(own)
		return own
	}
	td.MarkReadOnly()
	return td
}
