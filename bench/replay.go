package bench

import (
	"encoding/binary"
	"math/rand/v2"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/trajectory"
)

// Source hands out the data of one benchmark op: the export requests of
// one or more agent runs, in the order an SDK would send them, with trace
// IDs never handed out before.
type Source interface {
	// Next returns the requests of the next op (copies: the caller may
	// keep and mutate them).
	Next() []ptrace.Traces
	// Traces is the number of distinct traces in the op Next returned
	// last.
	Traces() int
}

// Replay replays a fixed set of templates, each a sequence of export
// requests (one capture file, or one synthetic run split into SDK-sized
// batches), giving every trace of a template a fresh trace ID each time.
type Replay struct {
	templates []template
	next      uint64
	rnd       *rand.Rand
	lastIDs   int
}

type template struct {
	name     string
	requests []ptrace.Traces
	traces   int
	spans    int
	bytes    int
}

// NewReplay returns an empty replay seeded with seed.
func NewReplay(seed uint64) *Replay {
	return &Replay{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Add appends a template made of the given requests (kept, not copied).
func (r *Replay) Add(name string, requests ...ptrace.Traces) {
	t := template{name: name, requests: requests}
	ids := map[pcommon.TraceID]bool{}
	var sizer ptrace.ProtoMarshaler
	for _, td := range requests {
		t.spans += td.SpanCount()
		t.bytes += sizer.TracesSize(td)
		trajectory.ForEachSpan(td, func(s ptrace.Span) { ids[s.TraceID()] = true })
	}
	t.traces = len(ids)
	r.templates = append(r.templates, t)
}

// Len is the number of templates.
func (r *Replay) Len() int { return len(r.templates) }

// Totals returns the spans, protobuf bytes and traces of one pass over
// every template.
func (r *Replay) Totals() (spans, bytes, traces int) {
	for _, t := range r.templates {
		spans += t.spans
		bytes += t.bytes
		traces += t.traces
	}
	return spans, bytes, traces
}

// Traces implements Source.
func (r *Replay) Traces() int { return r.lastIDs }

// Next implements Source: a copy of the next template, cycling, with fresh
// trace IDs (the same new ID for every span of one old trace across the
// template's requests; links into the template's traces follow).
func (r *Replay) Next() []ptrace.Traces {
	t := r.templates[r.next%uint64(len(r.templates))]
	r.next++
	ids := make(map[pcommon.TraceID]pcommon.TraceID, t.traces)
	remap := func(old pcommon.TraceID) pcommon.TraceID {
		n, ok := ids[old]
		if !ok {
			binary.BigEndian.PutUint64(n[:8], r.rnd.Uint64())
			binary.BigEndian.PutUint64(n[8:], r.next)
			ids[old] = n
		}
		return n
	}
	out := make([]ptrace.Traces, len(t.requests))
	for i, req := range t.requests {
		td := ptrace.NewTraces()
		req.CopyTo(td)
		trajectory.ForEachSpan(td, func(s ptrace.Span) { s.SetTraceID(remap(s.TraceID())) })
		out[i] = td
	}
	for _, td := range out {
		trajectory.ForEachSpan(td, func(s ptrace.Span) {
			links := s.Links()
			for l := 0; l < links.Len(); l++ {
				if n, ok := ids[links.At(l).TraceID()]; ok {
					links.At(l).SetTraceID(n)
				}
			}
		})
	}
	r.lastIDs = len(ids)
	return out
}

// splitBatches cuts one trace's spans into requests of at most size spans,
// in the order given (the order they ended), each request keeping its
// resource and scope: what an SDK's batch span processor exports.
func splitBatches(td ptrace.Traces, size int) []ptrace.Traces {
	var out []ptrace.Traces
	var cur ptrace.SpanSlice
	n := 0
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			spans := ss.Spans()
			started := false
			for k := 0; k < spans.Len(); k++ {
				if n%size == 0 || !started {
					if n%size == 0 {
						out = append(out, ptrace.NewTraces())
					}
					req := out[len(out)-1]
					drs := req.ResourceSpans().AppendEmpty()
					rs.Resource().CopyTo(drs.Resource())
					dss := drs.ScopeSpans().AppendEmpty()
					ss.Scope().CopyTo(dss.Scope())
					cur = dss.Spans()
					started = true
				}
				spans.At(k).CopyTo(cur.AppendEmpty())
				n++
			}
		}
	}
	return out
}

// WithoutRoots drops the parentless spans of reqs (in place), so that a
// buffering processor holds each trace until its timer instead of
// deciding it: what the held-memory measures feed.
func WithoutRoots(reqs []ptrace.Traces) []ptrace.Traces {
	for _, td := range reqs {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				sss.At(j).Spans().RemoveIf(func(s ptrace.Span) bool { return s.ParentSpanID().IsEmpty() })
			}
		}
	}
	return reqs
}
