package classifier

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/trajectory"
)

// rootStatus gives the run's root an ERROR status with msg and nothing
// else (no exception event, no error type, no codes), ending after every
// step: the status an instrumentation sets on the root from the whole
// trace.
func (b *runBuilder) rootStatus(msg string) *runBuilder {
	b.run.SpanErrors = append(b.run.SpanErrors, trajectory.SpanError{SpanID: b.run.RootSpanID, IsRoot: true,
		End: pcommon.Timestamp(uint64(b.n+1) * 1000), StatusError: true, StatusMessage: msg})
	return b
}

func (b *runBuilder) llmErr(typ, msg string) *runBuilder {
	return b.add(trajectory.Step{Kind: trajectory.StepLLM, Offered: offered, StatusError: true, StatusMessage: msg,
		Errors: []trajectory.ErrorInfo{{Type: typ, Message: msg}}})
}

// A CRM assistant whose first model call got an overload answer, retried
// by the SDK; the run then looked the customer up and answered. The
// instrumentation put the first error of the trace on the root.
func TestRootStatusCopiedFromRetriedCallIsRecovered(t *testing.T) {
	const overloaded = "Gateway answered 529: model capacity exhausted, retry shortly"
	run := newRun().
		llmErr("APICallError", overloaded).
		llm(tc("c1", "lookup", `{"city":"Ghent"}`)).
		tool("lookup", "c1", `{"city":"Ghent"}`).
		answer("The Ghent account is active.").
		rootStatus(overloaded).run
	v := mustNew(t, Options{}).Classify(&run)
	if v.Outcome != OutcomeRecovered {
		t.Fatalf("outcome %s (%s, evidence %v), want recovered", v.Outcome, v.FailureType, v.EvidenceSpanID)
	}
}

// The same copy over a tool failure the model could only apologise for:
// the tool's incident fails the run, with its own span as evidence.
func TestRootStatusCopiedFromUnrecoveredToolLeavesTheToolIncident(t *testing.T) {
	const down = "billing-ledger: HTTP 503 Service Unavailable"
	run := newRun().
		llm(tc("c1", "convert", `{"amount":12,"to":"EUR"}`)).
		toolErr("convert", "c1", `{"amount":12,"to":"EUR"}`, "LedgerError", down).
		answer("I could not convert the invoice total right now.").
		rootStatus(down).run
	v := mustNew(t, Options{}).Classify(&run)
	if v.Outcome != OutcomeFailed || v.FailureType != ExternalFault {
		t.Fatalf("got %s/%s, want failed/external_fault", v.Outcome, v.FailureType)
	}
	if v.EvidenceSpanID != run.Steps[1].SpanID {
		t.Fatalf("evidence %v, want the tool span %v", v.EvidenceSpanID, run.Steps[1].SpanID)
	}
}

// What stays a failure of the root: evidence of its own, a message no
// other span recorded, or a run that did not go on to answer.
func TestRootErrorOfItsOwnStillFails(t *testing.T) {
	const overloaded = "Gateway answered 529: model capacity exhausted, retry shortly"
	cases := map[string]trajectory.Run{
		"own exception event": newRun().
			llmErr("APICallError", overloaded).
			answer("The Ghent account is active.").
			rootError("APICallError", overloaded).run,
		"new message": newRun().
			llmErr("APICallError", overloaded).
			answer("The Ghent account is active.").
			rootStatus("Gateway answered 503: service unavailable").run,
		"no answer after it": newRun().
			llmErr("APICallError", overloaded).
			llm(tc("c1", "lookup", `{"city":"Ghent"}`)).
			rootStatus(overloaded).run,
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			v := mustNew(t, Options{}).Classify(&run)
			if v.Outcome != OutcomeFailed {
				t.Fatalf("outcome %s, want failed", v.Outcome)
			}
			if v.EvidenceSpanID != run.RootSpanID {
				t.Fatalf("evidence %v, want the root %v", v.EvidenceSpanID, run.RootSpanID)
			}
		})
	}
}
