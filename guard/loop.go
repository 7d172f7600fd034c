package guard

import (
	"fmt"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/recovery"
	"github.com/triage-otel/triage/trajectory"
)

// The loop guard: the classifier's loop rule (LoopDetector) on the calls
// so far, in run order. A call enters the detector once, when what
// identifies it is known: when its tool step arrives with its arguments,
// when its result is the only trace of it, or else when the next model
// step starts (the results fed back to it are taken first).

func (r *Run) addToLoop(j int32) {
	c := r.calls.ref(j)
	if c.inLoop {
		return
	}
	c.inLoop = true
	r.lastAdd = j
	if r.loop == nil {
		if r.firstLoop == nil {
			// A run's first call cannot complete a loop (the threshold
			// is 2 or more): it is kept as it would enter the detector,
			// which is made with the second (about half the held runs
			// make one call before their root).
			r.firstLoop = &loopCall{name: c.name, args: r.args(c), result: c.result, failed: c.status == callFailed}
			return
		}
		f := r.firstLoop
		r.firstLoop = nil
		r.loop = r.g.classifier.NewLoopDetector()
		r.loop.Add(f.name, f.args, f.result, f.failed)
	}
	l, found := r.loop.Add(c.name, r.args(c), c.result, c.status == callFailed)
	if !found || !r.g.cfg.Loop.Enabled {
		return
	}
	span := r.callSpan(c)
	r.trip(Trip{
		Guard:       Loop,
		FailureType: classifier.LoopDetected,
		Confidence:  l.Confidence,
		Reason:      fmt.Sprintf("%s called %d times with the same arguments within the last %d calls", l.Tool, l.Count, l.Window),
		SpanID:      span,
		Tool:        l.Tool,
		Evidence:    []recovery.Evidence{{SpanID: span, Signal: string(classifier.SignalLoop)}},
	})
}

// loopCall is a call as it enters the loop detector (LoopDetector.Add's
// arguments): the run's first, until the second is added.
type loopCall struct {
	name, args string
	result     *trajectory.ToolResult
	failed     bool
}

// lastFailed marks the call added last to the loop rule as failed.
func (r *Run) lastFailed() {
	if r.loop == nil {
		r.firstLoop.failed = true
		return
	}
	r.loop.LastFailed()
}
