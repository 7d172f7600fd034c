package trajectory

import (
	"fmt"
	"testing"
)

// An index built into more than once (a large trace, then a smaller one)
// and then released keeps none of the spans any of those builds wrote, and
// keeps its room.
func TestSpanIndexReleaseClearsEveryBuild(t *testing.T) {
	trace := func(spans int) *synth {
		s := newSynth("svc")
		s.span(1, 0, "root", nil)
		for i := 2; i <= spans; i++ {
			s.span(uint64(i), 1, fmt.Sprintf("step %d", i), map[string]any{"gen_ai.operation.name": "chat"})
		}
		return s
	}
	var idx SpanIndex
	Build(trace(12).td, WithIndex(&idx))
	Build(trace(3).td, WithIndex(&idx))
	if n := len(idx.Spans()); n != 3 {
		t.Fatalf("second build indexed %d spans, want 3", n)
	}
	room := idx.entries[:cap(idx.entries)]
	idx.Release()
	for i, e := range room {
		if e != (IndexedSpan{}) {
			t.Fatalf("entry %d still holds a span after release", i)
		}
	}
	if len(idx.Spans()) != 0 || cap(idx.Spans()) != len(room) {
		t.Fatalf("after release: %d spans, room %d; want 0 and %d", len(idx.Spans()), cap(idx.Spans()), len(room))
	}
	// A build after a release starts the count again: releasing it clears
	// its own spans.
	Build(trace(2).td, WithIndex(&idx))
	idx.Release()
	for i, e := range room {
		if e != (IndexedSpan{}) {
			t.Fatalf("entry %d kept after the second release", i)
		}
	}
}
