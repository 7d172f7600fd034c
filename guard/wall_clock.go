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
	if limit <= 0 || r.rare == nil {
		return
	}
	c := r.rare
	if c.minStart == 0 || c.maxEnd <= c.minStart {
		return
	}
	d := time.Duration(c.maxEnd - c.minStart)
	if d <= limit {
		return
	}
	r.trip(budgetTrip(WallClock, c.maxEndSpan,
		fmt.Sprintf("run has been going for %s, wall_clock.max_per_run is %s", d.Round(time.Millisecond), limit)))
}
