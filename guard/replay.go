package guard

// A run is a function of the batches it was fed: AddRead folds each batch
// in end-time order, and nothing it does depends on the clock or on other
// runs, except two things a run is told from outside: which guards tripped
// already (a guard trips once per run; a trip changes nothing else of the
// run's state) and what usage was reported to the session. So a caller
// that holds the spans anyway (the processor holds a trace's spans until
// its root) need not keep a run between batches: it keeps Dropped, and
// Rebuild, fed the same spans read again in the same batches, is the same
// run again, with the same state, returning no trip (the first run
// returned them).

// Dropped is what a dropped run keeps: the guards that tripped.
type Dropped struct{ tripped uint8 }

// Drop returns what the caller keeps to rebuild the run later (Rebuild),
// and false when the run cannot be dropped: it reported usage to its
// session (MarkReported), which a rebuilt run would not know.
func (r *Run) Drop() (Dropped, bool) {
	if !r.Reported().IsZero() {
		return Dropped{}, false
	}
	return Dropped{tripped: r.tripped}, true
}

// Rebuild is the run dropped as d again: a new run that takes in reads,
// the spans the dropped run had taken in, read again (Read) and in the
// batches it was fed, with the guards that tripped on it tripped. Nothing
// is returned: the trips were the dropped run's.
func (g *Guards) Rebuild(d Dropped, batches ...[]Read) *Run {
	r := g.NewRun()
	r.tripped = d.tripped
	for _, b := range batches {
		_ = r.AddRead(b)
	}
	return r
}
