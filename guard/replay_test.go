package guard

import (
	"reflect"
	"testing"

	"github.com/triage-otel/triage/recovery"
)

// A run dropped after its first batch and rebuilt from that batch's spans
// read again takes the next batches as the run kept whole does: the same
// trips, on the same calls and spans, in the same batches (a guard that
// tripped on the first batch does not trip again).
func TestRunRebuiltFromItsFirstBatch(t *testing.T) {
	g, cls := mustGuards(t, DefaultConfig())
	caps := loadCaptures(t, cls)
	rebuilt, tripped := 0, 0
	for _, c := range caps {
		spans := c.spans[:len(c.spans)-c.nRoots]
		for _, first := range []int{1, 2, len(spans) / 2} {
			if first <= 0 || first >= len(spans) {
				continue
			}
			want, wantAt := feed(g, spans, append([]int{first}, repeatOnes(len(spans))...))
			r := g.NewRun()
			var got []Trip
			var gotAt []int
			for _, tr := range r.Add(spans[:first]) {
				got, gotAt = append(got, tr), append(gotAt, 0)
			}
			d, ok := r.Drop()
			if !ok {
				t.Fatalf("%s: a run that reported no usage cannot be dropped", c.name)
			}
			r = g.Rebuild(d, g.Read(spans[:first]))
			rebuilt++
			for i := first; i < len(spans); i++ {
				for _, tr := range r.Add(spans[i : i+1]) {
					got, gotAt = append(got, tr), append(gotAt, i-first+1)
				}
			}
			tripped += len(got)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotAt, wantAt) {
				t.Errorf("%s (first batch %d spans): rebuilt run tripped %v at %v, kept run %v at %v", c.name, first, names(got), gotAt, names(want), wantAt)
			}
		}
	}
	if rebuilt == 0 || tripped == 0 {
		t.Fatalf("%d runs rebuilt, %d trips: the test compares nothing", rebuilt, tripped)
	}
	t.Logf("%d runs rebuilt, %d trips compared", rebuilt, tripped)
}

// A run that reported usage to its session cannot be dropped: a rebuilt
// run would report it again.
func TestRunThatReportedIsNotDropped(t *testing.T) {
	g, _ := mustGuards(t, DefaultConfig())
	r := g.NewRun()
	if _, ok := r.Drop(); !ok {
		t.Fatal("a new run cannot be dropped")
	}
	r.MarkReported(recovery.Usage{Tokens: 5})
	if _, ok := r.Drop(); ok {
		t.Error("run that reported usage was dropped")
	}
}

// A guard that tripped on the dropped run stays tripped on the rebuilt one,
// also when the trip came from outside the spans (a session total).
func TestRebuiltRunKeepsItsTrips(t *testing.T) {
	g, _ := mustGuards(t, Config{Cost: CostConfig{MaxPerSession: 0.002}})
	r := g.NewRun()
	if trips := r.CheckSession(recovery.Usage{Cost: 0.0021}); len(trips) != 1 || trips[0].Guard != Cost {
		t.Fatalf("session cost: %v", names(trips))
	}
	d, ok := r.Drop()
	if !ok {
		t.Fatal("run cannot be dropped")
	}
	r = g.Rebuild(d)
	if !r.Tripped(Cost) {
		t.Error("rebuilt run lost the cost trip")
	}
	if trips := r.CheckSession(recovery.Usage{Cost: 9}); len(trips) != 0 {
		t.Errorf("rebuilt run tripped again: %v", names(trips))
	}
}
