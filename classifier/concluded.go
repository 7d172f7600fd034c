package classifier

import "github.com/triage-otel/triage/trajectory"

// Concluded reports whether a run's steps end in a final answer: its last
// step is a model call that succeeded, asked for no tools and shows that it
// answered (output text, or a finish reason other than a tool call). A
// model span that shows neither (content capture off, no finish reason)
// proves nothing: it may have asked for tools. Spans that
// are missing from such a run (a trace decided from a partial buffer, a
// root that never arrived) cannot change which incidents were recovered,
// so its verdict rests on the evidence present, not on evidence absent.
func Concluded(run *trajectory.Run) bool {
	if run == nil || len(run.Steps) == 0 {
		return false
	}
	last := &run.Steps[len(run.Steps)-1]
	if last.Kind != trajectory.StepLLM || last.Failed() || requestsTools(last) {
		return false
	}
	return last.OutputText != "" || len(last.FinishReasons) > 0
}
