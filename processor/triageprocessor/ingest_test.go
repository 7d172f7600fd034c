package triageprocessor

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// groupByTrace keeps every valid span once, in its trace's group, in the
// batch's order, under its own resource, and sizes it; none is left in the
// batch. Batches of one trace (moved as one list) and mixed ones
// (moved resource by resource or span by span) alike.
func TestGroupByTraceKeepsOrderAndResources(t *testing.T) {
	type res struct {
		traces []byte // one span per entry: its trace (0: an invalid span)
	}
	cases := map[string][]res{
		"one resource, one trace":          {{[]byte{1, 1, 1}}},
		"three resources, one trace":       {{[]byte{1}}, {[]byte{1, 1}}, {[]byte{1}}},
		"second resource another trace":    {{[]byte{1, 1}}, {[]byte{2}}, {[]byte{1}}},
		"mixed resource after whole ones":  {{[]byte{1}}, {[]byte{1}}, {[]byte{2, 1, 2}}, {[]byte{1}}},
		"invalid span after whole ones":    {{[]byte{1}}, {[]byte{1, 0, 1}}},
		"empty resource after a whole one": {{[]byte{1}}, {nil}, {[]byte{1}}},
		"only invalid spans":               {{[]byte{0, 0}}},
		"first resource mixed":             {{[]byte{1, 2}}, {[]byte{1}}, {[]byte{2}}},
	}
	var sizer ptrace.ProtoMarshaler
	for name, shape := range cases {
		t.Run(name, func(t *testing.T) {
			td := ptrace.NewTraces()
			type want struct {
				name, resource string
				size           int
			}
			byTrace := map[pcommon.TraceID][]want{}
			var order []pcommon.TraceID
			seq := 0
			for ri, r := range shape {
				rs := td.ResourceSpans().AppendEmpty()
				rs.Resource().Attributes().PutStr("service.name", fmt.Sprint("svc", ri))
				ss := rs.ScopeSpans().AppendEmpty()
				for _, tr := range r.traces {
					seq++
					sp := ss.Spans().AppendEmpty()
					sp.SetName(fmt.Sprint("span", seq))
					if tr == 0 {
						continue // no trace or span ID: invalid
					}
					id := traceID(uint64(tr))
					sp.SetTraceID(id)
					sp.SetSpanID(spanID(uint64(seq)))
					if _, ok := byTrace[id]; !ok {
						order = append(order, id)
					}
					byTrace[id] = append(byTrace[id], want{sp.Name(), fmt.Sprint("svc", ri), sizer.SpanSize(sp)})
				}
			}
			groups, _ := groupByTrace(td, &sizer)
			// (What is left in the batch is invalid spans and the empty
			// husks of spans moved one by one.)
			eachSpan(td, func(_ ptrace.ResourceSpans, s ptrace.Span) {
				if !s.TraceID().IsEmpty() {
					t.Fatalf("span %q left in the batch", s.Name())
				}
			})
			if len(groups) != len(order) {
				t.Fatalf("%d groups, want %d", len(groups), len(order))
			}
			for gi, g := range groups {
				if g.id != order[gi] {
					t.Fatalf("group %d is trace %v, want %v", gi, g.id, order[gi])
				}
				var got []want
				rss := g.td.ResourceSpans()
				for i := 0; i < rss.Len(); i++ {
					svc, _ := rss.At(i).Resource().Attributes().Get("service.name")
					sss := rss.At(i).ScopeSpans()
					for j := 0; j < sss.Len(); j++ {
						spans := sss.At(j).Spans()
						for k := 0; k < spans.Len(); k++ {
							if spans.At(k).TraceID() != g.id {
								t.Fatalf("group %v holds a span of trace %v", g.id, spans.At(k).TraceID())
							}
							got = append(got, want{spans.At(k).Name(), svc.Str(), sizer.SpanSize(spans.At(k))})
						}
					}
				}
				w := byTrace[g.id]
				if fmt.Sprint(got) != fmt.Sprint(w) {
					t.Fatalf("group %v holds %v, want %v", g.id, got, w)
				}
				total := 0
				for k, x := range w {
					total += x.size
					if k >= len(g.sizes) || g.sizes[k] != x.size {
						t.Fatalf("group %v sizes %v, want the sizes of %v", g.id, g.sizes, w)
					}
				}
				if g.spans != len(w) || g.bytes != total || len(g.sizes) != len(w) {
					t.Fatalf("group %v counts %d spans %d bytes (%d sizes), want %d, %d", g.id, g.spans, g.bytes, len(g.sizes), len(w), total)
				}
				if !g.root {
					t.Fatalf("group %v: its spans have no parent, root not found", g.id)
				}
			}
		})
	}
}
