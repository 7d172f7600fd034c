package guard

import (
	"sync"
	"testing"

	"github.com/triage-otel/triage/classifier"
)

var (
	fuzzOnce sync.Once
	fuzzOK   []capture // captures whose full trace is ok (or recovered)
	fuzzG    *Guards
)

// fileOrder lists the spans of a capture in the order the capture holds
// them (the order its requests were exported in), parentless spans last.
func fileOrder(c *capture) []Span {
	spans, roots := split(c.td)
	return append(spans, roots...)
}

// FuzzBatchSplits: a run whose full trace is ok (or recovered) never trips
// a guard, however its spans are cut into batches (each byte of cuts is a
// batch size) and whether they arrive in end order or in the order the
// capture holds them, root last.
func FuzzBatchSplits(f *testing.F) {
	f.Add(uint16(0), false, []byte{1, 1, 1})
	f.Add(uint16(7), true, []byte{2, 3, 1, 5})
	f.Add(uint16(30), false, []byte{0})
	f.Add(uint16(55), true, []byte{1, 2, 1, 2, 1, 2, 1, 2})
	f.Fuzz(func(t *testing.T, which uint16, inFileOrder bool, cuts []byte) {
		fuzzOnce.Do(func() {
			var cls *classifier.Classifier
			fuzzG, cls = mustGuards(t, DefaultConfig())
			for _, c := range loadCaptures(t, cls) {
				if c.verdict.Outcome != classifier.OutcomeFailed {
					fuzzOK = append(fuzzOK, c)
				}
			}
		})
		if len(fuzzOK) == 0 {
			t.Skip("no ok captures")
		}
		c := &fuzzOK[int(which)%len(fuzzOK)]
		spans := c.spans
		if inFileOrder {
			spans = fileOrder(c)
		}
		sizes := make([]int, len(cuts))
		for i, b := range cuts {
			sizes[i] = int(b%16) + 1
		}
		if trips, _ := feed(fuzzG, spans, sizes); len(trips) > 0 {
			t.Fatalf("%s (%s) tripped %v: %s", c.name, c.verdict.Outcome, names(trips), trips[0].Reason)
		}
	})
}
