package classifier

import (
	"github.com/triage-otel/triage/trajectory"
)

// A silent model call: the run's last step is a model call whose recorded
// output is empty (no text, no tool call) and that reports no finish
// reason and no output tokens, and no error anywhere says why. Frameworks that abort a hanging
// call on a deadline often resolve it that way instead of throwing. When
// the run waited at least SilentCallTimeout for it, the call was cut off
// by a deadline: timeout. A shorter wait is a failure whose class the
// spans don't show: unknown.

const (
	confNoResponseTimeout = 0.6
	confNoResponse        = 0.5
)

// ReasonNoResponse: the last model call came back empty, quickly.
const ReasonNoResponse = "no_response"

// emptyResponse reports whether a model step's recorded output held
// nothing. An output that was not recorded at all (content capture off, a
// hand-made span) says nothing.
func emptyResponse(s *trajectory.Step) bool {
	return s.OutputEmpty && s.OutputText == "" && len(s.Requested) == 0 && len(s.FinishReasons) == 0 && s.OutputTokens == 0
}

// noResponse adds the terminal incident of a silent last model call and
// reports whether it did.
func (cl *classification) noResponse(last *trajectory.Step, lastIx int) bool {
	if lastIx != len(cl.steps)-1 || !emptyResponse(last) || cl.run.FinishReason != "" {
		return false
	}
	// An error at or after that call, or on the run, explains the stop.
	for i := range cl.inc {
		switch cl.inc[i].kind {
		case kindRoot:
			return false
		case kindCall, kindLLM, kindSpan, kindExtra:
			if !cl.inc[i].Recovered && cl.inc[i].pos >= lastIx {
				return false
			}
		}
	}
	// The wait: from the end of the step before (or the start of the run)
	// to the end of the call. Some frameworks open the call's span only
	// once it is given up, so its own duration says nothing.
	from := cl.run.Start
	if lastIx > 0 {
		from = max(from, cl.steps[lastIx-1].End)
	}
	if from == 0 || last.End < from {
		from = last.Start
	}
	ft, reason, conf := Timeout, "", confNoResponseTimeout
	if waited := last.End.AsTime().Sub(from.AsTime()); waited < cl.c.opts.SilentCallTimeout {
		ft, reason, conf = Unknown, ReasonNoResponse, confNoResponse
	}
	cl.inc = append(cl.inc, incident{
		Incident: Incident{SpanID: last.SpanID, StepIndex: lastIx, FailureType: ft, Signal: SignalNoResponse,
			Confidence: conf, Reason: reason},
		kind: kindTerminal, pos: len(cl.steps),
	})
	return true
}
