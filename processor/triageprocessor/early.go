package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/trajectory"
)

// Runs whose root never arrives.
//
// Some instrumentations lose a run's root span on failure (or never end
// it), and such a trace used to wait the whole decision_wait. It is now
// decided as soon as its spans show that the run is over, once no span of
// it arrived for settle_wait (trigger run_ended); decision_wait stays the
// backstop for a run that does not show it, and spans arriving after the
// decision get the cached decision as before.
//
// A run shows it is over when its outermost received span — the one whose
// time range covers every other span of the run — is not a model or tool
// call (it is the agent, workflow or chain span under the lost root; a
// received span has ended) and
//   - ended in error: the failure reached the outermost span we have, or
//   - is an agent span and the run's last step is a final answer
//     (classifier.Concluded: a successful model call that asked for no
//     tools): nothing is pending.
//
// Every run of the trace must show it. A run made only of steps side by
// side (no span covers them all) never does: a later step may still come.
//
// Why a settle delay. Spans of one trace can arrive out of order: behind
// two collector tiers they come through different tier-1 instances, and a
// slow exporter can hold children while their parent already arrived. The
// outermost span may thus arrive before spans it covers, and deciding at
// once would classify without them (they would only get the cached
// decision). settle_wait of quiet before the check leaves room for them,
// like root_wait for a root that overtakes its children; behind two tiers
// set it to at least root_wait. A check that finds the run not over is
// repeated only when new spans of the trace arrive.

// maxEndedChecksPerTick bounds the trajectory builds the ticker runs, under
// the processor's lock, to check whether runs are over; the rest wait for
// the next tick.
const maxEndedChecksPerTick = 256

// endedDue is a rootless trace scheduled for the check.
type endedDue struct {
	h   *heldTrace
	due time.Time
}

// noteRootless schedules a held trace that has no root yet for the check,
// settle_wait after its latest span. Called with p.mu held.
func (p *triageProcessor) noteRootless(h *heldTrace, now time.Time) {
	if p.cfg.SettleWait <= 0 || h.queued || h.endedQueued {
		return
	}
	h.endedQueued = true
	p.endedDue = append(p.endedDue, endedDue{h: h, due: now.Add(p.cfg.SettleWait)})
}

// decideEnded moves the rootless traces whose runs are over to deciding.
// Called with p.mu held; returns the traces and the held deltas.
func (p *triageProcessor) decideEnded(now time.Time, toDecide []*heldTrace) ([]*heldTrace, int, int) {
	dTraces, dSpans, checks := 0, 0, 0
	for len(p.endedDue) > 0 && !now.Before(p.endedDue[0].due) {
		h := p.endedDue[0].h
		p.endedDue[0] = endedDue{}
		p.endedDue = p.endedDue[1:]
		h.endedQueued = false
		if h.trigger != triggerNone || h.queued {
			continue // decided meanwhile, or its root arrived
		}
		if quiet := h.lastSeen.Add(p.cfg.SettleWait); now.Before(quiet) {
			// Spans arrived since it was scheduled: settle again.
			h.endedQueued = true
			p.endedDue = append(p.endedDue, endedDue{h: h, due: quiet})
			continue
		}
		if h.rareOrZero().checked.Equal(h.lastSeen) {
			continue
		}
		if checks >= maxEndedChecksPerTick {
			h.endedQueued = true
			p.endedDue = append(p.endedDue, endedDue{h: h, due: now})
			break
		}
		checks++
		if p.cfg.LogsWait > 0 && p.awaitsLogs(h) {
			if logsDue := h.lastSeen.Add(p.cfg.LogsWait); now.Before(logsDue) {
				h.endedQueued = true
				p.endedDue = append(p.endedDue, endedDue{h: h, due: logsDue})
				continue
			}
		}
		built := p.buildForDecision(h)
		if !runsEnded(built.runs, h.td) {
			h.rareState().checked = h.lastSeen
			continue
		}
		// The trace leaves the buffer with the runs just built: its
		// decision reads them instead of building the same spans again
		// (no span joins it from here on; late ones are annotated from the
		// decision).
		h.rareState().built = built
		p.held.Remove(h.id)
		dTraces, dSpans = dTraces-1, dSpans-h.spans
		toDecide = append(toDecide, p.startDeciding(h, triggerRunEnded))
	}
	return toDecide, dTraces, dSpans
}

// runsEnded reports whether runs (built from td) are some, none with its
// root, and every one of them shows it is over (see the top of this file).
func runsEnded(runs []trajectory.Run, td ptrace.Traces) bool {
	if len(runs) == 0 {
		return false
	}
	for i := range runs {
		if runs[i].RootFound || runEnded(&runs[i], td) == "" {
			return false
		}
	}
	return true
}

// runEnded says how a rootless run shows it is over ("outermost_error",
// "final_answer"), or "" when it does not.
func runEnded(run *trajectory.Run, td ptrace.Traces) string {
	top, ok := trajectory.OutermostSpan(run, td)
	if !ok || top.Role == trajectory.SpanLLM || top.Role == trajectory.SpanTool {
		return ""
	}
	if top.Error {
		return "outermost_error"
	}
	if top.Role == trajectory.SpanAgent && classifier.Concluded(run) {
		return "final_answer"
	}
	return ""
}
