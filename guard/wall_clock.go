package guard

import (
	"fmt"
	"time"
)

// The wall-clock guard: how long the run has been going, from the earliest
// span start to the latest span end seen (the agent's clock: no skew with
// the collector's). It is checked when spans arrive; a run that sends
// nothing is not seen to go on.

func (r *Run) checkWallClock() {
	limit := r.g.cfg.WallClock.MaxPerRun
	if limit <= 0 || r.minStart == 0 || r.maxEnd <= r.minStart {
		return
	}
	d := time.Duration(r.maxEnd - r.minStart)
	if d <= limit {
		return
	}
	r.trip(budgetTrip(WallClock, r.maxEndSpan,
		fmt.Sprintf("run has been going for %s, wall_clock.max_per_run is %s", d.Round(time.Millisecond), limit)))
}
