package triageprocessor

import (
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/triage-otel/triage/classifier"
)

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// measureDecidedEntries returns the heap bytes per cache entry of n entries
// made by mk, and what the cache accounts per entry.
func measureDecidedEntries(t testing.TB, n int, mk func(i int) *decided) (heap, accounted float64) {
	c, err := newDecidedCache(n, 1<<40, time.Minute)
	require.NoError(t, err)
	now := time.Unix(1_800_000_000, 0)
	before := heapInUse()
	for i := range n {
		c.add(traceID(uint64(i+1)), mk(i), now)
	}
	after := heapInUse()
	runtime.KeepAlive(c)
	return float64(after-before) / float64(n), float64(c.bytes) / float64(n)
}

// The bytes the cache accounts per entry follow the heap it really uses,
// so decision_cache_bytes bounds memory. Figures are in the README (Sizing).
func TestDecidedCacheBytesPerEntry(t *testing.T) {
	heap, accounted := measureDecidedEntries(t, 50_000, func(int) *decided { return &decided{} })
	t.Logf("trace decided with its roots: heap %.0f B/entry, accounted %.0f B", heap, accounted)
	assert.InDelta(t, 1, accounted/heap, 0.4, "accounted %.0f B for %.0f B of heap", accounted, heap)

	h := newHarness(t, func(c *Config) { c.DecisionWait = time.Second })
	h.send(agentTrace(traceID(70), "svc", genaiRun("upstream returned 502 Bad Gateway")[:2]...))
	h.expire()
	d, ok := h.p.decided.get(traceID(70))
	require.True(t, ok)
	require.NotEmpty(t, d.roots, "a rootless failed run keeps its root's annotations")
	heap, accounted = measureDecidedEntries(t, 5_000, func(int) *decided { return cloneDecided(d) })
	t.Logf("trace decided without a failed run's root (decision kept): heap %.0f B/entry, accounted %.0f B", heap, accounted)
	assert.InDelta(t, 1, accounted/heap, 0.4, "accounted %.0f B for %.0f B of heap", accounted, heap)
}

// Most traces keep nothing for their late spans: their entries share one
// decision (nothingKept) and are accounted for the entry alone.
func TestDecidedCacheBytesPerEntryKeepingNothing(t *testing.T) {
	heap, accounted := measureDecidedEntries(t, 50_000, func(int) *decided { return keep(decided{}) })
	t.Logf("trace decided keeping nothing: heap %.0f B/entry, accounted %.0f B", heap, accounted)
	assert.InDelta(t, 1, accounted/heap, 0.4, "accounted %.0f B for %.0f B of heap", accounted, heap)
	assert.Same(t, nothingKept, keep(decided{}))
	assert.NotSame(t, nothingKept, keep(decided{cutBy: "max_spans_per_trace"}))
}

func TestDecisionCacheBoundedByBytes(t *testing.T) {
	const maxBytes = 16 << 10
	h := newHarness(t, func(c *Config) { c.DecisionWait = time.Second; c.DecisionCacheBytes = maxBytes })
	const n = 40
	for i := range n {
		// Rootless failed runs: each entry keeps its root's decision.
		h.send(agentTrace(traceID(uint64(100+i)), "svc", genaiRun("upstream returned 502 Bad Gateway")[:2]...))
		h.expire()
		require.LessOrEqual(t, h.p.decided.bytes, maxBytes)
	}
	evicted := sumValue(t, h, "decision_cache_evicted", attribute.String("cache_limit", "decision_cache_bytes"))
	assert.Positive(t, evicted)
	assert.Equal(t, int64(n-h.p.decided.len()), evicted)
	assert.Equal(t, int64(h.p.decided.bytes), sumValue(t, h, "decision_cache_bytes"))

	// The newest trace is remembered: its late root gets the decision.
	h.send(agentTrace(traceID(uint64(100+n-1)), "svc", genaiRun("")[3]))
	root := h.forwarded()[spanID(1)]
	var last string
	for _, s := range root {
		if s.TraceID() == traceID(uint64(100+n-1)) {
			last, _ = strAttr(s, attrDecisionID)
		}
	}
	assert.NotEmpty(t, last)
}

func TestDecisionCacheBoundedByCount(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DecisionCacheSize = 3 })
	for i := range 10 {
		h.send(agentTrace(traceID(uint64(200+i)), "svc", genaiRun("")...))
	}
	assert.Equal(t, 3, h.p.decided.len())
	assert.Equal(t, int64(7), sumValue(t, h, "decision_cache_evicted", attribute.String("cache_limit", "decision_cache_size")))
	assert.Equal(t, int64(3*decidedEntryBytes), sumValue(t, h, "decision_cache_bytes"))
}

func cloneDecided(d *decided) *decided {
	out := &decided{cutBy: d.cutBy}
	for _, r := range d.roots {
		c := make([]annotation, len(r.anns))
		for i, a := range r.anns {
			a.str = string([]byte(a.str))
			c[i] = a
		}
		out.roots = append(out.roots, missingRoot{id: r.id, anns: c})
		out.lateRoot = c
	}
	return out
}

// A cache entry keeps its own strings (kept copies them): an annotation that
// is a view of the trace's text (a tool name decoded from a message history) must not pin
// that text once the trace is gone.
func TestDecidedCacheOwnsItsStrings(t *testing.T) {
	c, err := newDecidedCache(4, 1<<20, time.Second)
	require.NoError(t, err)
	history := strings.Repeat(`{"role":"assistant","tool_calls":[{"name":"book_room"}]}`, 500)
	tool := history[strings.Index(history, "book_room"):][:len("book_room")]
	require.Equal(t, "book_room", tool)
	anns := kept([]annotation{strAnn(attrTool, tool), boolAnn(attrRootMissing, true)})
	d := &decided{roots: []missingRoot{{id: spanID(1), anns: anns}}, lateRoot: anns}
	c.add(traceID(1), d, time.Now())

	got, ok := c.get(traceID(1))
	require.True(t, ok)
	kept, ok := got.rootAnnotations(spanID(1))
	require.True(t, ok)
	for _, list := range [][]annotation{kept, got.lateRoot} {
		assert.Equal(t, "book_room", list[0].str)
		p := uintptr(unsafe.Pointer(unsafe.StringData(list[0].str)))
		lo := uintptr(unsafe.Pointer(unsafe.StringData(history)))
		assert.False(t, p >= lo && p < lo+uintptr(len(history)), "the kept tool name is a view of the trace's text")
	}
}

// The explanations of a trace's evaluations are carved from its text
// block, which the spans carry out: what the decision cache keeps of them
// is its own.
func TestKeptOwnsItsExplanations(t *testing.T) {
	ta := getTraceAnnotations()
	defer ta.release()
	inc := classifier.Incident{SpanID: spanID(2), FailureType: classifier.FailureType("timeout"), Signal: classifier.Signal("http_status"), Reason: "HTTP 504"}
	ta.reserveText([]classifier.Verdict{{Incidents: []classifier.Incident{inc}}}, true)
	block := ta.text[:cap(ta.text)]
	anns := ta.evaluated(nil, incidentEvaluation(ta, &inc))
	require.Equal(t, "incident timeout, not recovered; signal http_status; evidence span 0000000000000002; reason HTTP 504", anns[0].eval.explanation)
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(block)))
	inBlock := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return p >= lo && p < lo+uintptr(len(block))
	}
	require.True(t, inBlock(anns[0].eval.explanation), "carved from the trace's text block")
	c := kept(anns)
	assert.Equal(t, anns[0].eval.explanation, c[0].eval.explanation)
	assert.False(t, inBlock(c[0].eval.explanation), "the kept explanation is a view of the trace's text block")
}
