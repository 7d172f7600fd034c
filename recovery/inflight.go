package recovery

import "time"

// reuseInFlight answers the final decision of a run whose in-flight
// decision had the same failure type: the run failed once, so it keeps the
// attempt the in-flight decision took and its answer (breakers and budgets
// are not charged twice), under a new decision id that references it.
func (e *Engine) reuseInFlight(in Input, ofTrace bool) (Decision, bool) {
	f := in.InFlight
	if in.Phase != PhaseFinal || f == nil || f.FailureType != string(in.FailureType) || f.DecisionID == "" {
		return Decision{}, false
	}
	id, err := e.newID()
	if err != nil {
		return Decision{}, false // decided anew, which reports the error
	}
	d := *f
	d.Version, d.Phase, d.Guard = DecisionVersion, PhaseFinal, ""
	d.InFlightDecisionID = f.DecisionID
	d.DecisionID = id
	d.TraceID, d.SpanID = in.TraceID.String(), in.SpanID.String()
	d.SessionID = e.sessionText(in.SessionID, ofTrace)
	d.Service, d.Agent, d.Tool = in.Service, in.Agent, in.Tool
	d.Confidence, d.Evidence = in.Confidence, in.Evidence
	d.Time = e.clock.Now().UTC().Format(time.RFC3339Nano)
	return d, true
}
