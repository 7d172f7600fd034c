package guard

import (
	"fmt"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/recovery"
)

// The repeated-failure guard: one tool's last N calls all failed. Calls of
// other tools in between do not break the streak; a call of the tool that
// succeeded does; a call still pending (asked for, not answered) is
// skipped.

// onCallStatus is told when a call's outcome became known or changed.
func (r *Run) onCallStatus(j int32) {
	g := r.g.cfg.RepeatedFailure
	c := r.calls.ref(j)
	if !g.Enabled || c.status != callFailed || c.name == "" || r.Tripped(RepeatedFailure) {
		return
	}
	newest, ok := r.lastOfTool.Get(c.name)
	if !ok {
		return
	}
	var streak []int32
	for i := newest; i >= 0 && len(streak) < g.Threshold; i = r.calls.ref(i).prevOfTool {
		switch r.calls.ref(i).status {
		case callOK:
			return
		case callFailed:
			streak = append(streak, i)
		}
	}
	if len(streak) < g.Threshold {
		return
	}
	last := r.calls.ref(streak[0])
	ev := make([]recovery.Evidence, 0, len(streak))
	for i := len(streak) - 1; i >= 0; i-- {
		inc := r.calls.ref(streak[i]).inc
		ev = append(ev, recovery.Evidence{SpanID: inc.SpanID, Signal: classifier.Label(inc.Signal, inc.Rule),
			Rule: inc.Rule, Reason: inc.Reason})
	}
	ft := last.inc.FailureType
	if ft == "" {
		ft = classifier.Unknown
	}
	r.trip(Trip{
		Guard:       RepeatedFailure,
		FailureType: ft,
		Confidence:  last.inc.Confidence,
		Reason:      fmt.Sprintf("%s failed %d times in a row", c.name, len(streak)),
		SpanID:      r.callSpan(last),
		Tool:        c.name,
		Evidence:    ev,
	})
}
