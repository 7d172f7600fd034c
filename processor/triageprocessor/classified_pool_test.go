package triageprocessor

import (
	"testing"

	"github.com/triage-otel/triage/trajectory"
)

// A classified trace goes back to the pool with its index's room but
// without its spans: a pooled one must not keep a decided trace's data
// reachable.
func TestClassifiedReleaseDropsSpans(t *testing.T) {
	one := new(classifiedOne)
	td := benchTrace(1, 8, true)
	one.ct.runs = trajectory.Build(td, trajectory.WithIndex(&one.ct.index))
	one.verdict[0].Reason = "x"
	one.ct.verdicts = one.verdict[:]
	entries := one.ct.index.Spans()
	if len(entries) != 8 {
		t.Fatalf("index holds %d spans, want 8", len(entries))
	}
	one.release()
	for i, e := range entries[:cap(entries)] {
		if e != (trajectory.IndexedSpan{}) {
			t.Fatalf("index entry %d still holds a span after release", i)
		}
	}
	if one.ct.runs != nil || one.ct.verdicts != nil || one.verdict[0].Reason != "" {
		t.Fatal("release kept the trace's runs or verdicts")
	}
	// (The next Build's WithIndex empties the list before filling it.)
	if cap(one.ct.index.Spans()) != cap(entries) {
		t.Fatalf("release dropped the index's room (cap %d, want %d)", cap(one.ct.index.Spans()), cap(entries))
	}
}
