package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// traceGroup is the spans of one trace from one incoming batch, taken out
// of the batch with their resource and scope. The processor owns incoming
// batches (it declares MutatesData), so spans are moved, never copied:
// what is held is the data the receiver decoded.
type traceGroup struct {
	id    pcommon.TraceID
	td    ptrace.Traces
	spans int
	bytes int
	// sizes are the protobuf sizes of td's spans in ForEachSpan order,
	// for the rare group that does not fit its trace's limits whole.
	sizes []int
	root  bool // holds a span without a parent
	// guardSizes are what the in-flight guards' state grows by for each
	// span of td, in the order of sizes (readInFlight), until hold counts
	// them in sizes (chargeGuardState).
	guardSizes []int
	// pooled is the room the group lives in when it is its batch's first
	// (releaseGroups).
	pooled *firstGroup

	// Destination of the spans of the source resource (and scope) being
	// walked, so spans of one source share one resource/scope copy.
	rsFrom, ssFrom int
	dst            ptrace.SpanSlice
}

// groupByTrace moves the spans of td into one group per trace, in order of
// first appearance, and sizes them. It runs outside the processor's lock:
// under it, a batch costs a lookup and a move per trace. Spans without a
// trace or span ID are dropped and counted by reason. A resource (or
// scope) whose spans all belong to one trace is moved whole; otherwise its
// spans are moved one by one under a copy of it.
//
// A batch of one trace whose spans are all valid (most batches: an SDK
// exports a trace's spans together) moves into its group as one list of
// resources, not resource by resource. Until a resource shows otherwise, the leading resources of the first
// trace are only counted (whole); the first that does not belong with
// them has them moved into their group first, so the order is the same.
func groupByTrace(td ptrace.Traces, sizer *ptrace.ProtoMarshaler) ([]*traceGroup, map[string]int64) {
	f := firstGroupPool.Get().(*firstGroup)
	gr := grouper{sizer: sizer, first: f, sizes: f.sizes[:0]}
	rss := td.ResourceSpans()
	whole := 0 // the leading resources counted but not moved; -1 once moved
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		only, single, found := gr.scan(rs)
		if whole == i && found && single && (i == 0 || only == gr.groups[0].id) {
			gr.countWhole(rs, only)
			whole++
			continue
		}
		if whole > 0 {
			g := gr.groups[0]
			for k := 0; k < whole; k++ {
				g.moveResource(rss.At(k))
			}
		}
		whole = -1
		switch {
		case !found:
			continue // no valid span
		case single:
			gr.moveWhole(rs, only)
		default:
			gr.moveSpans(i, rs)
		}
	}
	if whole > 0 {
		// The batch's resources move over as one list (no copy of each,
		// the batch is left empty).
		rss.MoveAndAppendTo(gr.groups[0].traces().ResourceSpans())
	}
	return gr.groups, gr.invalid
}

// grouper is the state of one groupByTrace call: the groups in order of
// first appearance (indexed by trace ID once there are several), the
// invalid spans by reason, and the sizes of the spans of the resource
// being moved, in order (invalidSize for an invalid span).
type grouper struct {
	sizer   *ptrace.ProtoMarshaler
	groups  []*traceGroup
	byID    map[pcommon.TraceID]*traceGroup
	invalid map[string]int64
	sizes   []int
	// first is the room of the batch's first group, from firstGroupPool.
	first *firstGroup
}

// group returns the group of trace id, made on first use.
func (gr *grouper) group(id pcommon.TraceID) *traceGroup {
	if len(gr.groups) == 1 && gr.groups[0].id == id {
		return gr.groups[0]
	}
	if len(gr.groups) == 0 {
		// The first trace of the batch (most batches hold one): no index
		// until a second one appears, and the list made with the group.
		f := gr.first
		f.g = traceGroupOf(id)
		f.g.pooled = f
		f.list[0] = &f.g
		gr.groups = f.list[:]
		return &f.g
	}
	if gr.byID == nil {
		gr.byID = make(map[pcommon.TraceID]*traceGroup, 4)
		for _, g := range gr.groups {
			gr.byID[g.id] = g
		}
	}
	g, ok := gr.byID[id]
	if !ok {
		ng := traceGroupOf(id)
		g = &ng
		gr.byID[id] = g
		gr.groups = append(gr.groups, g)
	}
	return g
}

// firstGroup is a batch's first group with the batch's list of groups,
// and room for the sizes of the spans of the batch's resources (grouper's).
// Nothing keeps a group once its batch is held (ConsumeTraces), so this
// room is reused from batch to batch (firstGroupPool, releaseGroups).
type firstGroup struct {
	g     traceGroup
	list  [1]*traceGroup
	sizes []int
}

var firstGroupPool = sync.Pool{New: func() any { return new(firstGroup) }}

// maxPooledSizes is the most span sizes a pooled first group keeps room
// for: one huge batch must not pin its sizes in the pool.
const maxPooledSizes = 4096

// releaseGroups returns the room of groups' first group (groupByTrace) to
// the pool. Nothing may use the groups afterwards.
func releaseGroups(groups []*traceGroup) {
	if len(groups) == 0 || groups[0].pooled == nil {
		return
	}
	f := groups[0].pooled
	// The sizes the first group kept are its resources' (countWhole) or
	// copies (add); either is room the next batch's grouper reuses.
	sizes := f.g.sizes
	if cap(sizes) < cap(f.sizes) {
		sizes = f.sizes
	}
	*f = firstGroup{}
	if cap(sizes) <= maxPooledSizes {
		f.sizes = sizes[:0]
	}
	firstGroupPool.Put(f)
}

// traceGroupOf is the empty group of trace id.
func traceGroupOf(id pcommon.TraceID) traceGroup {
	return traceGroup{id: id, rsFrom: -1, ssFrom: -1}
}

// invalidSize marks an invalid span in grouper.sizes.
const invalidSize = -1

// scan is the first pass over a resource: the size of each span
// (invalidSize for an invalid one), whether it holds valid spans (found)
// and whether they all belong to one trace (single, only).
func (gr *grouper) scan(rs ptrace.ResourceSpans) (only pcommon.TraceID, single, found bool) {
	single = true
	sss := rs.ScopeSpans()
	n := 0
	for j := 0; j < sss.Len(); j++ {
		n += sss.At(j).Spans().Len()
	}
	if cap(gr.sizes) < n {
		gr.sizes = make([]int, 0, n)
	}
	gr.sizes = gr.sizes[:0]
	for j := 0; j < sss.Len(); j++ {
		spans := sss.At(j).Spans()
		for k := 0; k < spans.Len(); k++ {
			span := spans.At(k)
			if reason := invalidSpan(span); reason != "" {
				gr.invalid = countBy(gr.invalid, reason)
				gr.sizes = append(gr.sizes, invalidSize)
				single = false
				continue
			}
			gr.sizes = append(gr.sizes, gr.sizer.SpanSize(span))
			if !found {
				only, found = span.TraceID(), true
			} else if span.TraceID() != only {
				single = false
			}
		}
	}
	return only, single, found
}

// moveWhole moves a resource whose spans all belong to trace only into its
// group.
func (gr *grouper) moveWhole(rs ptrace.ResourceSpans, only pcommon.TraceID) {
	gr.countWhole(rs, only).moveResource(rs)
}

// countWhole counts in its group the spans of a resource whose spans all
// belong to trace only, and returns the group.
func (gr *grouper) countWhole(rs ptrace.ResourceSpans, only pcommon.TraceID) *traceGroup {
	g := gr.group(only)
	sss := rs.ScopeSpans()
	for j := 0; j < sss.Len(); j++ {
		spans := sss.At(j).Spans()
		for k := 0; k < spans.Len(); k++ {
			g.root = g.root || spans.At(k).ParentSpanID().IsEmpty()
		}
	}
	sizes := gr.sizes
	if g.sizes == nil {
		// The group keeps these sizes (the next resource gets new ones):
		// add copies them onto themselves.
		g.sizes = sizes[:0:len(sizes)]
		gr.sizes = nil
	}
	g.add(sizes)
	return g
}

// moveResource moves a resource counted by countWhole into the group.
func (g *traceGroup) moveResource(rs ptrace.ResourceSpans) {
	rs.MoveTo(g.traces().ResourceSpans().AppendEmpty())
	g.rsFrom = -1
}

// traces is the group's spans, made on the first moved in (a group that
// is its whole batch takes the batch's).
func (g *traceGroup) traces() ptrace.Traces {
	if g.td == (ptrace.Traces{}) {
		g.td = ptrace.NewTraces()
	}
	return g.td
}

// moveSpans moves the valid spans of resource i one by one into their
// groups, under copies of their resource and scope.
func (gr *grouper) moveSpans(i int, rs ptrace.ResourceSpans) {
	n := 0
	sss := rs.ScopeSpans()
	for j := 0; j < sss.Len(); j++ {
		ss := sss.At(j)
		spans := ss.Spans()
		for k := 0; k < spans.Len(); k++ {
			if gr.sizes[n] == invalidSize {
				n++
				continue
			}
			span := spans.At(k)
			g := gr.group(span.TraceID())
			g.root = g.root || span.ParentSpanID().IsEmpty()
			g.add(gr.sizes[n : n+1])
			moveSpan(g.destination(i, j, rs, ss), span)
			n++
		}
	}
}

func (g *traceGroup) add(sizes []int) {
	for _, s := range sizes {
		g.bytes += s
	}
	g.spans += len(sizes)
	g.sizes = append(g.sizes, sizes...)
}

// destination returns where spans of source resource i, scope j go in the
// group, appending a copy of the resource and scope on the first span.
func (g *traceGroup) destination(i, j int, rs ptrace.ResourceSpans, ss ptrace.ScopeSpans) ptrace.SpanSlice {
	if g.rsFrom != i || g.ssFrom != j {
		g.dst = appendScope(g.traces(), rs, ss)
		g.rsFrom, g.ssFrom = i, j
	}
	return g.dst
}

// appendScope appends to dst a resource and scope copied from rs and ss,
// without spans, and returns its span slice.
func appendScope(dst ptrace.Traces, rs ptrace.ResourceSpans, ss ptrace.ScopeSpans) ptrace.SpanSlice {
	drs := dst.ResourceSpans().AppendEmpty()
	rs.Resource().CopyTo(drs.Resource())
	drs.SetSchemaUrl(rs.SchemaUrl())
	dss := drs.ScopeSpans().AppendEmpty()
	ss.Scope().CopyTo(dss.Scope())
	dss.SetSchemaUrl(ss.SchemaUrl())
	return dss.Spans()
}

// moveSpan moves span to the end of dst (span is left empty).
func moveSpan(dst ptrace.SpanSlice, span ptrace.Span) ptrace.Span {
	s := dst.AppendEmpty()
	span.MoveTo(s)
	return s
}

// splitter moves the spans of a group one at a time, each to one of two
// destinations, keeping their resource and scope.
type splitter struct {
	dst    ptrace.Traces
	from   [2]int // the source resource and scope of cur
	cur    ptrace.SpanSlice
	inited bool
}

func (s *splitter) move(i, j int, rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, span ptrace.Span) {
	if !s.inited || s.from != [2]int{i, j} {
		s.cur = appendScope(s.dst, rs, ss)
		s.from, s.inited = [2]int{i, j}, true
	}
	moveSpan(s.cur, span)
}

// chargeGuardState counts in the group's sizes what the in-flight guards
// will hold for its spans — and newRun, the state of a trace they are not
// watching yet, on its first span — so that max_trace_bytes (and
// max_bytes) bound the spans held and the guards' state together. Called
// once the group is to be held (its trace is not decided yet).
func (g *traceGroup) chargeGuardState(newRun int) {
	if len(g.guardSizes) == 0 || len(g.guardSizes) != len(g.sizes) {
		return
	}
	for i, b := range g.guardSizes {
		g.sizes[i] += b
		g.bytes += b
	}
	g.sizes[0] += newRun
	g.bytes += newRun
	g.guardSizes = nil
}
