package guard

import (
	"fmt"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/recovery"
)

// The loop guard: the classifier's loop rule (LoopDetector) on the calls
// so far, in run order. A call enters the detector once, when what
// identifies it is known: when its tool step arrives with its arguments,
// when its result is the only trace of it, or else when the next model
// step starts (the results fed back to it are taken first).

func (r *Run) addToLoop(j int32) {
	c := &r.calls[j]
	if c.inLoop {
		return
	}
	c.inLoop = true
	r.lastAdd = j
	if r.loop == nil {
		r.loop = r.g.classifier.NewLoopDetector()
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
