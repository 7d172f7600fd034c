package guard

import (
	"reflect"
	"runtime"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/trajectory"
)

// Every shared capture replayed span by span (and in a few batchings) with
// its root held back: ok and recovered runs trip nothing; runs whose final
// verdict is a loop found by the loop rule trip the loop guard before the
// root arrives, on the call and span the final verdict names.
func TestCapturesReplayedBeforeTheirRoot(t *testing.T) {
	g, cls := mustGuards(t, DefaultConfig())
	caps := loadCaptures(t, cls)
	batchings := map[string][]int{"span by span": repeatOnes(400), "pairs": repeat(2, 200), "one batch then root": nil}
	loops, okRuns := 0, 0
	for _, c := range caps {
		v := c.verdict
		for bname, sizes := range batchings {
			sz := sizes
			if sz == nil {
				sz = []int{len(c.spans) - c.nRoots}
			}
			trips, at := feed(g, c.spans, sz)
			nonRoot := len(c.spans) - c.nRoots
			switch {
			case v.Outcome != classifier.OutcomeFailed:
				if len(trips) > 0 {
					t.Errorf("%s (%s, %s): %s run tripped %v: %s", c.name, bname, v.Outcome, v.Outcome, names(trips), trips[0].Reason)
				}
			case v.FailureType == classifier.LoopDetected && v.Signal == classifier.SignalLoop:
				var loop *Trip
				for i := range trips {
					if trips[i].Guard == Loop {
						loop = &trips[i]
						// The trip came before the root was fed.
						if c.nRoots > 0 && batchEnd(sz, at[i]) > nonRoot {
							t.Errorf("%s (%s): loop tripped only with the root", c.name, bname)
						}
					}
				}
				if loop == nil {
					t.Errorf("%s (%s): final verdict is a loop but the loop guard did not trip (trips %v)", c.name, bname, names(trips))
					continue
				}
				if loop.SpanID != v.EvidenceSpanID || loop.FailureType != classifier.LoopDetected {
					t.Errorf("%s (%s): loop trip on span %s, final verdict's evidence %s", c.name, bname, loop.SpanID, v.EvidenceSpanID)
				}
			}
		}
		switch {
		case v.Outcome != classifier.OutcomeFailed:
			okRuns++
		case v.FailureType == classifier.LoopDetected && v.Signal == classifier.SignalLoop:
			loops++
		}
	}
	if loops < 5 || okRuns < 20 {
		t.Fatalf("only %d loop and %d ok/recovered captures: the test has nothing to check", loops, okRuns)
	}
	t.Logf("%d captures: %d loops detected before the root, %d ok/recovered runs without a trip", len(caps), loops, okRuns)
}

// batchEnd is the number of spans fed once batch b was added.
func batchEnd(sizes []int, b int) int {
	n := 0
	for i := 0; i <= b; i++ {
		if i < len(sizes) {
			n += sizes[i]
		} else {
			return 1 << 30
		}
	}
	return n
}

func repeatOnes(n int) []int { return repeat(1, n) }

func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// readCounter counts the readings Build takes from a run.
type readCounter struct {
	r     *Run
	taken int
}

func (c *readCounter) ReadStep(id pcommon.SpanID, st *trajectory.Step) bool {
	ok := c.r.ReadStep(id, st)
	if ok {
		c.taken++
	}
	return ok
}

// Build at the root, taking over the steps the run read as the spans
// arrived, makes exactly the runs it makes reading every span itself.
func TestBuildTakesTheRunsReadings(t *testing.T) {
	g, cls := mustGuards(t, DefaultConfig())
	taken := 0
	for _, c := range loadCaptures(t, cls) {
		nonRoot := c.spans[:len(c.spans)-c.nRoots]
		for _, size := range []int{1, 3, len(nonRoot)} {
			r := g.NewRun()
			for s := nonRoot; len(s) > 0; {
				n := min(size, len(s))
				r.Add(s[:n])
				s = s[n:]
			}
			src := &readCounter{r: r}
			got := trajectory.Build(c.td, trajectory.WithReadSteps(src))
			if !reflect.DeepEqual(got, c.runs) {
				t.Fatalf("%s (batches of %d): runs differ with the run's readings", c.name, size)
			}
			taken += src.taken
		}
	}
	if taken == 0 {
		t.Fatal("Build took no reading")
	}
}

// The estimate of what runs hold (RunBytes, Read.Bytes) bounds their heap:
// every capture's spans but its roots read into a run, the runs kept, on a
// second pass (the first fills the caches shared by all runs).
func TestRunBytesBoundsTheHeap(t *testing.T) {
	g, cls := mustGuards(t, DefaultConfig())
	caps := loadCaptures(t, cls)
	var runs []*Run
	var est, spans int
	for pass := range 2 {
		runs, est, spans = nil, 0, 0
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, c := range caps {
			nonRoot := c.spans[:len(c.spans)-c.nRoots]
			r := g.NewRun()
			reads := g.Read(nonRoot)
			est += g.RunBytes()
			for i := range reads {
				est += reads[i].Bytes()
			}
			r.AddRead(reads)
			runs = append(runs, r)
			spans += len(nonRoot)
		}
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		held := int(after.HeapAlloc) - int(before.HeapAlloc)
		if pass == 1 {
			t.Logf("%d runs, %d spans: heap %d B (%d B/span), estimate %d B (%d B/span; RunBytes %d)", len(runs), spans, held, held/spans, est, est/spans, g.RunBytes())
			if held > est {
				t.Errorf("the runs hold %d B, more than the %d B estimated", held, est)
			}
		}
	}
	runtime.KeepAlive(runs)
}
