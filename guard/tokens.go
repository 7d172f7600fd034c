package guard

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/recovery"
)

// The tokens guard: input + output tokens of the run's model steps, per
// run and, with the session's total from the caller, per session.

func (r *Run) checkTokens(total int64, limit int64, scope string) {
	if limit <= 0 || total <= limit {
		return
	}
	r.trip(budgetTrip(Tokens, r.lastUsageSpan,
		fmt.Sprintf("token budget exceeded: %s used %d tokens, tokens.max_per_%s is %d", scope, total, scope, limit)))
}

// budgetTrip is the trip of a budget guard: not a failure of the agent's
// task, so its class is unknown; the reason says which limit.
func budgetTrip(n Name, span pcommon.SpanID, reason string) Trip {
	return Trip{
		Guard: n, FailureType: classifier.Unknown, Confidence: 1, Reason: reason, SpanID: span,
		Evidence: []recovery.Evidence{{SpanID: span, Signal: signalGuard(n), Reason: reason}},
	}
}

// checkRunBudgets checks the per-run token and cost limits.
func (r *Run) checkRunBudgets() {
	r.checkTokens(r.usage.Tokens, r.g.cfg.Tokens.MaxPerRun, "run")
	r.checkCost(r.usage.Cost, r.g.cfg.Cost.MaxPerRun, "run")
}

// Usage is what the run's model steps spent so far.
func (r *Run) Usage() recovery.Usage { return r.usage }

// Unreported is the usage not yet reported to the session (see Reported).
func (r *Run) Unreported() recovery.Usage { return sub(r.usage, r.rareOrZero().reported) }

// MarkReported records that u more of the run's usage was added to its
// session's.
func (r *Run) MarkReported(u recovery.Usage) {
	if u.IsZero() {
		return
	}
	rare := r.rareState()
	rare.reported = rare.reported.Add(u)
}

// Reported is the usage reported to the session so far.
func (r *Run) Reported() recovery.Usage { return r.rareOrZero().reported }

// CheckSession checks the per-session limits against the session's total
// (this run's reported usage included) and returns the guards it tripped.
func (r *Run) CheckSession(total recovery.Usage) []Trip {
	r.beginBatch()
	r.checkTokens(total.Tokens, r.g.cfg.Tokens.MaxPerSession, "session")
	r.checkCost(total.Cost, r.g.cfg.Cost.MaxPerSession, "session")
	return r.endBatch()
}
