package triageprocessor

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadatatest"
)

// longText is a text of n bytes made afresh on every call (its own
// memory), as the receiver decodes each occurrence of a repeated value.
func longText(seed string, n int) string {
	return strings.Repeat(seed, n/len(seed)+1)[:n]
}

// textSpan is a rootless span of trace tid carrying texts the way agent
// instrumentations repeat them: a string attribute, an array of strings,
// an event attribute, and a short string.
func textSpan(ss ptrace.SpanSlice, tid pcommon.TraceID, id uint64) {
	s := ss.AppendEmpty()
	s.SetTraceID(tid)
	s.SetSpanID(spanID(id))
	s.SetParentSpanID(spanID(1))
	s.SetName("chat m")
	s.Attributes().PutStr("app.instructions", longText("You are a careful assistant. ", 600))
	tools := s.Attributes().PutEmptySlice("app.tools")
	tools.AppendEmpty().SetStr(longText(`{"name":"lookup","parameters":{}}`, 300))
	tools.AppendEmpty().SetInt(7)
	s.Attributes().PutStr("app.short", longText("short ", minSharedText-1))
	s.Events().AppendEmpty().Attributes().PutStr("app.event", longText("event body ", 200))
}

func textBatch(tid pcommon.TraceID, ids ...uint64) ptrace.Traces {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for _, id := range ids {
		textSpan(ss, tid, id)
	}
	return td
}

// spanTexts are the texts of span s that textSpan set, in order.
func spanTexts(t *testing.T, s ptrace.Span) []string {
	t.Helper()
	get := func(m pcommon.Map, k string) pcommon.Value {
		v, ok := m.Get(k)
		require.True(t, ok, k)
		return v
	}
	return []string{
		get(s.Attributes(), "app.instructions").Str(),
		get(s.Attributes(), "app.tools").Slice().At(0).Str(),
		get(s.Events().At(0).Attributes(), "app.event").Str(),
		get(s.Attributes(), "app.short").Str(),
	}
}

func sameMemory(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// The held spans of one trace share each long text they repeat, across
// batches; the values are unchanged; short texts and other traces' texts
// are not shared.
func TestSharedTextsWithinTrace(t *testing.T) {
	h := newHarness(t, nil)
	a, b := traceID(1), traceID(2)
	h.send(textBatch(a, 2, 3))
	h.send(textBatch(a, 4))
	h.send(textBatch(b, 2))
	for _, tid := range []pcommon.TraceID{a, b} {
		h.send(agentTrace(tid, "svc", spanSpec{id: 1, name: "invoke_agent a", attrs: map[string]any{"gen_ai.operation.name": "invoke_agent"}}))
	}

	byTrace := map[pcommon.TraceID][][]string{}
	for _, td := range h.sink.AllTraces() {
		eachSpan(td, func(_ ptrace.ResourceSpans, s ptrace.Span) {
			if s.Name() == "chat m" {
				byTrace[s.TraceID()] = append(byTrace[s.TraceID()], spanTexts(t, s))
			}
		})
	}
	require.Len(t, byTrace[a], 3)
	require.Len(t, byTrace[b], 1)
	want := spanTexts(t, textBatch(a, 9).ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0))
	for _, texts := range append(byTrace[a], byTrace[b]...) {
		assert.Equal(t, want, texts, "sharing changes no value")
	}
	first := byTrace[a][0]
	for _, later := range byTrace[a][1:] {
		for i := 0; i < 3; i++ {
			assert.True(t, sameMemory(first[i], later[i]), "long text %d of a later span shares the first copy", i)
		}
		assert.False(t, sameMemory(first[3], later[3]), "a text shorter than minSharedText is not shared")
	}
	for i := range first {
		assert.False(t, sameMemory(first[i], byTrace[b][0][i]), "another trace's text %d is not shared", i)
	}
	// Span 3 shared with span 2 in its batch, span 4 with span 2 across
	// batches: two spans' three long texts each.
	perSpan := int64(len(first[0]) + len(first[1]) + len(first[2]))
	metadatatest.AssertEqualProcessorTriageTextsShared(t, h.tel, []metricdata.DataPoint[int64]{{Value: 2 * perSpan}},
		metricdatatest.IgnoreTimestamp())
}

// A batch that brings its trace's root is decided at once: its texts are
// not shared (nothing would be saved).
func TestSharedTextsNotWithRoot(t *testing.T) {
	h := newHarness(t, nil)
	tid := traceID(3)
	td := textBatch(tid, 2, 3)
	root := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().AppendEmpty()
	root.SetTraceID(tid)
	root.SetSpanID(spanID(1))
	root.SetName("invoke_agent a")
	h.send(td)

	var texts [][]string
	for _, out := range h.sink.AllTraces() {
		eachSpan(out, func(_ ptrace.ResourceSpans, s ptrace.Span) {
			if s.Name() == "chat m" {
				texts = append(texts, spanTexts(t, s))
			}
		})
	}
	require.Len(t, texts, 2)
	assert.False(t, sameMemory(texts[0][0], texts[1][0]))
}

// Texts that share a fingerprint (same length, same ends) but differ in
// between are told apart: each keeps its own value.
func TestSharedTextsFingerprintCollision(t *testing.T) {
	st := newSharedTexts()
	const key = 42
	x := strings.Repeat("a", 100) + "x" + strings.Repeat("b", 100)
	y := strings.Repeat("a", 100) + "y" + strings.Repeat("b", 100)
	require.Equal(t, fingerprint(x, key), fingerprint(y, key))
	assert.Equal(t, x, st.text(x, key))
	assert.Equal(t, y, st.text(y, key))
	x2 := strings.Clone(y)
	assert.True(t, sameMemory(st.text(x2, key), y), "the slot now holds the later text")
}

// The table keeps at most its budget of bytes, however many texts pass
// through it, and a text longer than a shard's part is not taken.
func TestSharedTextsBudget(t *testing.T) {
	st := newSharedTexts()
	big := shardBudget / 5
	for i := 0; i < 40*textShards; i++ {
		st.text(longText(string(rune('a'+i%26))+strings.Repeat("-", i), big), uint64(i))
	}
	total := 0
	for i := range st.shards {
		sh := &st.shards[i]
		sum := 0
		for _, e := range sh.slots {
			sum += len(e.s)
		}
		assert.Equal(t, sh.bytes, sum, "shard %d counts its texts", i)
		assert.LessOrEqual(t, sh.bytes, shardBudget, "shard %d", i)
		total += sh.bytes
	}
	assert.LessOrEqual(t, total, sharedTextsBudget)
	assert.Positive(t, total)

	m := pcommon.NewMap()
	huge := longText("h", shardBudget+1)
	m.PutStr("k", huge)
	st.shareAttrs(m, 1)
	v, _ := m.Get("k")
	assert.True(t, sameMemory(v.Str(), huge))
	for i := range st.shards {
		for _, e := range st.shards[i].slots {
			assert.NotEqual(t, len(huge), len(e.s), "a text over the shard budget is not kept")
		}
	}
}

// The fingerprint reads both ends of every text it may be given: a change
// of its first or its last byte changes it.
func TestSharedTextsFingerprintEnds(t *testing.T) {
	for n := minSharedText; n <= 80; n++ {
		s := longText("abcdefghij", n)
		h := fingerprint(s, 1)
		assert.NotEqual(t, h, fingerprint("Z"+s[1:], 1), "first byte, n=%d", n)
		assert.NotEqual(t, h, fingerprint(s[:n-1]+"Z", 1), "last byte, n=%d", n)
		assert.NotEqual(t, h, fingerprint(s, 2), "key, n=%d", n)
	}
}

// A resource's texts and a scope's name are the same for every run of a
// process: they are shared across traces, the spans' texts are not.
func TestSharedTextsResourceAcrossTraces(t *testing.T) {
	h := newHarness(t, nil)
	for _, n := range []uint64{5, 6} {
		td := textBatch(traceID(n), 2)
		rs := td.ResourceSpans().At(0)
		rs.Resource().Attributes().PutStr("service.name", "svc")
		rs.Resource().Attributes().PutStr("process.command_line", longText("/usr/bin/agent --serve ", 80))
		rs.ScopeSpans().At(0).Scope().SetName(longText("instrumentation-library/", 40))
		h.send(td)
		h.send(agentTrace(traceID(n), "svc", spanSpec{id: 1, name: "invoke_agent a"}))
	}
	type seen struct{ cmd, scope, instructions string }
	var chats []seen
	for _, td := range h.sink.AllTraces() {
		eachSpan(td, func(rs ptrace.ResourceSpans, s ptrace.Span) {
			if s.Name() != "chat m" {
				return
			}
			cmd, ok := rs.Resource().Attributes().Get("process.command_line")
			require.True(t, ok)
			chats = append(chats, seen{cmd.Str(), "", spanTexts(t, s)[0]})
		})
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			sss := td.ResourceSpans().At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				if sss.At(j).Spans().At(0).Name() == "chat m" {
					chats[len(chats)-1].scope = sss.At(j).Scope().Name()
				}
			}
		}
	}
	require.Len(t, chats, 2)
	assert.Equal(t, longText("/usr/bin/agent --serve ", 80), chats[1].cmd)
	assert.True(t, sameMemory(chats[0].cmd, chats[1].cmd), "resource text shared across traces")
	assert.Equal(t, longText("instrumentation-library/", 40), chats[1].scope)
	assert.True(t, sameMemory(chats[0].scope, chats[1].scope), "scope name shared across traces")
	assert.False(t, sameMemory(chats[0].instructions, chats[1].instructions), "span texts stay within their trace")
}
