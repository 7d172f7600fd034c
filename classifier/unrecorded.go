package classifier

import (
	"github.com/triage-otel/triage/trajectory"
)

// Runs whose tool calls were recorded without arguments or results.
//
// Most GenAI instrumentations leave message content out by default: a run
// then shows which tools were called, but not with what, nor what they
// answered. A loop is the same call repeated; with the calls' arguments
// missing, three calls of one tool may be one question asked again or
// three different ones, and a step-limit stop may be either a loop or a
// plan that ran out of steps. Precision first: such a stop is unknown
// (ReasonCallsUnrecorded), never one of the two guessed.

// ReasonCallsUnrecorded: the run stopped at a step limit, and its tool
// calls were not recorded well enough (no arguments, no results, or no
// calls at all while the model asked for tools) to tell a loop from an
// unfinished plan.
const ReasonCallsUnrecorded = "calls_unrecorded"

// loopUndecidable reports whether the calls, in which the detector found
// no loop, could still hold one it cannot see: read with every call of a
// tool that has an unrecorded call made equal (unnamed unrecorded calls
// equal to one another), they repeat enough for a loop.
func loopUndecidable(calls []loopCall, threshold, window int) bool {
	unrecorded := map[string]bool{}
	for _, c := range calls {
		if c.unrecorded {
			unrecorded[c.name] = true
		}
	}
	if len(unrecorded) == 0 {
		return false
	}
	same := identityOf("")
	masked := make([]loopCall, len(calls))
	for i, c := range calls {
		if unrecorded[c.name] {
			c.args, c.unrecorded = same, false
			if c.name == "" {
				c.byResult = true // counted, as one unnamed tool
			}
		}
		masked[i] = c
	}
	_, ok := detectLoop(masked, threshold, window, 0)
	return ok
}

// toolTurnsUnrecorded reports whether model steps asked for tools (their
// finish reason says so) while no tool call of the run was recorded.
func (cl *classification) toolTurnsUnrecorded() bool {
	for i := range cl.steps {
		s := &cl.steps[i]
		if s.Kind != trajectory.StepLLM {
			continue
		}
		for _, fr := range s.FinishReasons {
			if isToolFinish(fr) {
				return true
			}
		}
	}
	return false
}
