package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/trajectory"
	"github.com/triage-otel/triage/wire"
)

// verdictIncomplete is the triage.verdict of a run decided from a partial
// buffer whose evidence does not settle it.
const verdictIncomplete = wire.VerdictIncomplete

// attrIncompleteReason says why a run's evidence is partial: the trigger
// that took its trace out of the buffer early (evicted, shutdown) or the
// per-trace limit that cut it.
const attrIncompleteReason = wire.AttrIncompleteReason

// incompleteReason returns why a run cannot be decided from what its trace
// held, or "" when it can. A trace leaves the buffer early when it is
// evicted (num_traces, max_bytes), cut by a per-trace limit or held at
// shutdown; its runs whose root had not arrived may still be going on. The
// classifier would read their unfinished end as a failure (no final answer,
// a step-limit stop, a lost root) and their unrecovered incidents as
// terminal, though the missing spans may recover them: a failure for
// absence of evidence. Such a run is decided only when the evidence present
// settles it (see settled).
func incompleteReason(h *heldTrace, run *trajectory.Run, v *classifier.Verdict) string {
	if run.RootFound {
		return "" // the run ended: what it holds is what it did
	}
	reason := ""
	switch {
	case h.rareOrZero().cutBy != "":
		reason = h.rareOrZero().cutBy
	case h.trigger == triggerEvicted, h.trigger == triggerShutdown:
		reason = h.trigger.String()
	default:
		// Decided after decision_wait of inactivity: the rest of the run
		// is not coming (an instrumentation that loses the root).
		return ""
	}
	if settled(run, v) {
		return ""
	}
	return reason
}

// settled reports whether a run's verdict stands whatever spans are
// missing: its steps end in a final answer (no missing span can then recover
// an incident or add a terminal one), or it failed on a span that encloses
// its steps — the agent, or a workflow around it, ended in error, which is
// evidence present, not absent.
func settled(run *trajectory.Run, v *classifier.Verdict) bool {
	if classifier.Concluded(run) {
		return true
	}
	if v.Outcome != classifier.OutcomeFailed || v.EvidenceSpanID.IsEmpty() {
		return false
	}
	for i := range run.SpanErrors {
		if se := &run.SpanErrors[i]; se.SpanID == v.EvidenceSpanID && se.StatusError {
			return true
		}
	}
	return false
}

// incompleteAnnotations are the run annotations of an incomplete run: its
// verdict, why, and who ran it.
func (p *triageProcessor) incompleteAnnotations(run *trajectory.Run, reason string) []annotation {
	return append([]annotation{strAnn(attrVerdict, verdictIncomplete), strAnn(attrIncompleteReason, reason)},
		p.identityAnnotations(run)...)
}
