package triageprocessor

import (
	"cmp"
	"slices"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/trajectory"
)

// okCapture is a shared capture whose full trace the library says is ok
// or recovered, its spans listed as an SDK exports them.
type okCapture struct {
	name    string
	outcome classifier.Outcome
	// byEnd: end-time order; inFile: the order the capture holds them. The
	// parentless spans (the root ends last) come last in both.
	byEnd, inFile []spanItem
}

type spanItem struct {
	rs   ptrace.ResourceSpans
	ss   ptrace.ScopeSpans
	span ptrace.Span
}

var (
	okCapturesOnce sync.Once
	okCaptures     []okCapture
)

// loadOKCaptures reads the single-run shared captures whose full trace is
// ok or recovered, with the constraints their labels give.
func loadOKCaptures(t *testing.T) []okCapture {
	okCapturesOnce.Do(func() {
		for _, l := range loadLabels(t) {
			td := loadFixture(t, l.CaptureFile)
			runs := trajectory.Build(td)
			if len(runs) != 1 {
				continue
			}
			cls, err := classifier.New(classifier.Options{Constraints: l.Constraints})
			if err != nil {
				t.Fatal(err)
			}
			v := cls.Classify(&runs[0])
			if v.Outcome == classifier.OutcomeFailed {
				continue
			}
			c := okCapture{name: l.CaptureFile, outcome: v.Outcome}
			var roots []spanItem
			for i := 0; i < td.ResourceSpans().Len(); i++ {
				rs := td.ResourceSpans().At(i)
				for j := 0; j < rs.ScopeSpans().Len(); j++ {
					ss := rs.ScopeSpans().At(j)
					for k := 0; k < ss.Spans().Len(); k++ {
						it := spanItem{rs, ss, ss.Spans().At(k)}
						if it.span.ParentSpanID().IsEmpty() {
							roots = append(roots, it)
						} else {
							c.inFile = append(c.inFile, it)
						}
					}
				}
			}
			c.byEnd = slices.Clone(c.inFile)
			slices.SortStableFunc(c.byEnd, func(a, b spanItem) int { return cmp.Compare(a.span.EndTimestamp(), b.span.EndTimestamp()) })
			c.byEnd = append(c.byEnd, roots...)
			c.inFile = append(c.inFile, roots...)
			okCaptures = append(okCaptures, c)
		}
	})
	return okCaptures
}

// FuzzInFlightBatchSplits: the processor (default guards) never sends an
// in-flight decision for a run whose full trace is ok or recovered,
// however its spans are cut into batches (each byte of cuts is a batch
// size, 1..16; the rest goes in one last batch) and whether they arrive in
// end order or in the order the capture holds them, root last.
func FuzzInFlightBatchSplits(f *testing.F) {
	f.Add(uint16(0), false, []byte{1, 1, 1})
	f.Add(uint16(7), true, []byte{2, 3, 1, 5})
	f.Add(uint16(30), false, []byte{0})
	f.Add(uint16(55), true, []byte{1, 2, 1, 2, 1, 2, 1, 2})
	f.Add(uint16(101), false, []byte{15, 15})
	f.Fuzz(func(t *testing.T, which uint16, inFileOrder bool, cuts []byte) {
		caps := loadOKCaptures(t)
		if len(caps) == 0 {
			t.Skip("no ok captures")
		}
		c := caps[int(which)%len(caps)]
		spans := c.byEnd
		if inFileOrder {
			spans = c.inFile
		}
		h := newHarness(t, nil)
		for len(spans) > 0 {
			n := len(spans)
			if len(cuts) > 0 {
				n = min(n, int(cuts[0]%16)+1)
				cuts = cuts[1:]
			}
			batch := ptrace.NewTraces()
			for _, it := range spans[:n] {
				it.span.CopyTo(appendScope(batch, it.rs, it.ss).AppendEmpty())
			}
			h.send(batch)
			spans = spans[n:]
		}
		if ds := h.decisionSpans(); len(ds) > 0 {
			g, _ := strAttr(ds[0], attrGuard)
			ft, _ := strAttr(ds[0], attrFailureType)
			t.Fatalf("%s (%s in full) got %d in-flight decisions: guard %s, %s", c.name, c.outcome, len(ds), g, ft)
		}
		if got, want := h.sink.SpanCount(), len(c.byEnd); got != want {
			t.Fatalf("%s: %d spans forwarded, want %d", c.name, got, want)
		}
	})
}
