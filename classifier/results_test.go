package classifier

import (
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/trajectory"
)

// fed adds a model step whose input carries results that match no recorded
// call: the instrumentation lost the request and there is no tool span.
func (b *runBuilder) fed(results ...trajectory.ToolResult) *runBuilder {
	return b.add(trajectory.Step{Kind: trajectory.StepLLM, InputResults: results, FinishReasons: []string{"tool_calls"}})
}

func res(content string) trajectory.ToolResult { return trajectory.ToolResult{Content: content} }

// An error the framework fed back as text, with no tool span and no
// recorded request, is an incident of its own, classified by the text
// rules.
func TestFedBackErrorWithoutACall(t *testing.T) {
	c := mustNew(t, Options{})
	cases := []struct {
		content string
		want    FailureType
	}{
		{`Error: Tool "book_room" not found. Please fix your mistakes.`, WrongToolCalled},
		{"Tool refund_payment does not exist.", WrongToolCalled},
		{"lookup_sku is not a valid tool, try one of [search_catalog].", WrongToolCalled},
		{"Error: Received tool input did not match expected schema", SchemaMismatch},
		{"Error(UpstreamHTTPError): inventory-service request failed: 503 Service Unavailable", ExternalFault},
		{"Error(TimeoutError): The operation was aborted due to timeout", Timeout},
		{`{"error":{"code":429,"message":"quota exhausted for project"}}`, ExternalFault},
		{`{"isError":true,"content":[{"type":"text","text":"invalid arguments: 'qty' must be an integer"}]}`, SchemaMismatch},
		{`{"name":"ValidationError","message":"field 'date' is required"}`, SchemaMismatch},
	}
	for _, k := range cases {
		b := newRun().llm().fed(res(k.content)).answer("Sorry, that did not work.")
		b.run.Steps[0].FinishReasons = []string{"tool_calls"}
		v := c.Classify(&b.run)
		if v.Outcome != OutcomeFailed || v.FailureType != k.want {
			t.Errorf("%q: got %s/%s (%s %s), want failed/%s", k.content, v.Outcome, v.FailureType, v.Signal, v.Rule, k.want)
		}
	}
}

// Results that merely mention an error word are data.
func TestFedBackDataIsNotAnError(t *testing.T) {
	c := mustNew(t, Options{})
	for _, content := range []string{
		"Error rate over the last hour: 0.2%",
		"Errors are reported to the on-call channel.",
		`{"status":"failed","order":"77","reason":"card declined by issuer"}`,
		`{"title":"Handling a TimeoutError in the client","body":"Retry with back-off."}`,
		`{"error":null,"rows":3}`,
		`{"errors":[],"data":{"n":1}}`,
		`{"errors":[{"message":"partial"}],"data":{"n":1}}`,
		"Could not be happier with the product - 5 stars",
	} {
		b := newRun().llm().fed(res(content)).answer("Here you go.")
		if v := c.Classify(&b.run); v.Outcome != OutcomeOK {
			t.Errorf("%q: got %s/%s (%s %s), want ok", content, v.Outcome, v.FailureType, v.Signal, v.Rule)
		}
	}
}

// A call known only from its result is recovered by a later call that
// succeeded, whatever its tool (the instrumentation named neither).
func TestUnnamedFedBackErrorRecovered(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun().llm().
		fed(res("Tool fetch_rates does not exist.")).
		fed(res(`{"rate":1.08}`)).
		answer("1 EUR is 1.08 USD.")
	wantVerdict(t, c.Classify(&b.run), OutcomeRecovered, "")

	// ... and not by one that came before it.
	b = newRun().llm().
		fed(res(`{"rate":1.08}`)).
		fed(res("Tool fetch_rates does not exist.")).
		answer("Sorry.")
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, WrongToolCalled)
}

// Results a model step recorded for its own calls (streamed tool-result
// parts) answer those calls.
func TestOwnToolResultsAnswerTheirCalls(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun()
	b.add(trajectory.Step{Kind: trajectory.StepLLM, Requested: []trajectory.ToolCall{tc("q1", "quote", `{"n":"many"}`)},
		ToolResults: []trajectory.ToolResult{{CallID: "q1", Name: "quote", Content: `{"error":true,"message":"Tool validation failed for quote: n: Expected number, received string"}`}}})
	b.answer("I could not get a quote.")
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, SchemaMismatch)
	if len(v.Incidents) != 1 || v.Incidents[0].Tool != "quote" {
		t.Errorf("incidents %+v", v.Incidents)
	}

	// A successful own result makes the call known to have succeeded: the
	// same call asked again is not a loop, and nothing failed.
	b = newRun()
	b.add(trajectory.Step{Kind: trajectory.StepLLM, Requested: []trajectory.ToolCall{tc("q1", "quote", `{"n":3}`)},
		ToolResults: []trajectory.ToolResult{{CallID: "q1", Name: "quote", Content: `{"price":9}`}}})
	b.answer("9 each.")
	wantVerdict(t, c.Classify(&b.run), OutcomeOK, "")
}

// Calls recorded with neither name nor arguments are told apart by what
// they returned, volatile values masked.
func TestLoopOfUnnamedCallsByResult(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun().llm()
	for _, ts := range []string{"2026-03-01T10:00:00.100Z", "2026-03-01T10:00:00.900Z", "2026-03-01T10:00:01.300Z", "2026-03-01T10:00:02.000Z"} {
		b.fed(res(`{"queue":"eu-1","depth":4,"checked_at":"` + ts + `"}`))
	}
	b.rootError("MaxTurnsExceeded", "Agent stopped after 5 steps without producing a final answer")
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, LoopDetected)

	b = newRun().llm()
	for _, r := range []string{`{"queue":"eu-1","depth":4}`, `{"region":"eu","zones":3}`, `{"owner":"ops"}`, `{"sla":"99.9"}`} {
		b.fed(res(r))
	}
	b.rootError("MaxTurnsExceeded", "Agent stopped after 5 steps without producing a final answer")
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, PlanIncomplete)
}

// A last model call that came back with nothing, after a long wait, was
// cut off by a deadline.
func TestSilentLastModelCall(t *testing.T) {
	c := mustNew(t, Options{})
	silent := func(wait time.Duration) *trajectory.Run {
		r := &trajectory.Run{RootFound: true, RootSpanID: sid(200), Start: pcommon.Timestamp(1_000_000_000)}
		end := r.Start + pcommon.Timestamp(wait)
		r.Steps = []trajectory.Step{{Kind: trajectory.StepLLM, SpanID: sid(1), Start: end - 1_000_000, End: end, OutputEmpty: true}}
		r.End = end
		return r
	}
	v := c.Classify(silent(8 * time.Second))
	wantVerdict(t, v, OutcomeFailed, Timeout)
	if v.Signal != SignalNoResponse {
		t.Errorf("signal %s", v.Signal)
	}
	v = c.Classify(silent(300 * time.Millisecond))
	wantVerdict(t, v, OutcomeFailed, Unknown)
	if v.Reason != ReasonNoResponse {
		t.Errorf("reason %q", v.Reason)
	}
	// The threshold is an option.
	wantVerdict(t, mustNew(t, Options{SilentCallTimeout: 100 * time.Millisecond}).Classify(silent(300*time.Millisecond)), OutcomeFailed, Timeout)

	// A call that reported how it finished, or said anything, is not silent.
	r := silent(8 * time.Second)
	r.Steps[0].FinishReasons = []string{"stop"}
	wantVerdict(t, c.Classify(r), OutcomeOK, "")
	r = silent(8 * time.Second)
	r.Steps[0].OutputText = "Done."
	wantVerdict(t, c.Classify(r), OutcomeOK, "")
	// An output that was not recorded says nothing.
	r = silent(8 * time.Second)
	r.Steps[0].OutputEmpty = false
	wantVerdict(t, c.Classify(r), OutcomeOK, "")
	// A run that says how it finished is not silent either.
	r = silent(8 * time.Second)
	r.FinishReason = "stop"
	wantVerdict(t, c.Classify(r), OutcomeOK, "")

	if _, err := New(Options{SilentCallTimeout: -time.Second}); err == nil {
		t.Error("negative SilentCallTimeout accepted")
	}
}

// A tool that does not validate its input echoes a missing argument as
// undefined and an unparsable number as NaN.
func TestResultEchoingAMissingArgument(t *testing.T) {
	c := mustNew(t, Options{})
	for _, content := range []string{
		`{"origin":"LIS","destination":"undefined","seats":2}`,
		`{"amount":NaN,"unit":"kg"}`,
		`{\sku\:\undefined\,\qty\:3}`, // an instrumentation that replaced the quotes
		`[{"id":1,"owner":undefined}]`,
	} {
		b := newRun().llm().fed(res(content)).answer("Sorry, I could not do that.")
		v := c.Classify(&b.run)
		wantVerdict(t, v, OutcomeFailed, SchemaMismatch)
		if v.Signal != SignalPlaceholderValue {
			t.Errorf("%q: signal %s", content, v.Signal)
		}
	}
	for _, content := range []string{
		`{"note":"reading past the end is undefined behaviour"}`,
		`{"value":null,"reason":"not measured"}`,
		`{"label":"NaN handling","steps":3}`,
		"The origin is undefined, please ask the user.",
	} {
		b := newRun().llm().fed(res(content)).answer("Done.")
		if v := c.Classify(&b.run); v.Outcome != OutcomeOK {
			t.Errorf("%q: got %s/%s (%s), want ok", content, v.Outcome, v.FailureType, v.Signal)
		}
	}
	// A later call of the same tool that got valid arguments recovers it.
	b := newRun().llm(tc("1", "lookup", `{}`)).
		answer("", trajectory.ToolResult{CallID: "1", Content: `{"city":"undefined","temp":null}`})
	b.run.Steps[1].FinishReasons = []string{"tool_calls"}
	b.run.Steps[1].Requested = []trajectory.ToolCall{tc("2", "lookup", `{"city":"Oslo"}`)}
	b.answer("6 degrees in Oslo.", trajectory.ToolResult{CallID: "2", Content: `{"city":"Oslo","temp":6}`})
	wantVerdict(t, c.Classify(&b.run), OutcomeRecovered, "")
}

// How error reports open, in SDKs and frameworks not in the captures.
func TestErrorReportOpenings(t *testing.T) {
	for _, content := range []string{
		"Error code: 503 - {'error': {'message': 'upstream unavailable'}}",
		"Error fetching shipment 88: connection reset by peer",
		"Error calling tool lookup_sku: KeyError('sku')",
		"ERROR - quota exhausted",
		"Exception in tool reserve_room: ValueError",
		"Error 500 while contacting billing",
		"error: permission denied for ledger",
		"Error(ValueError): bad date",
	} {
		if !resultIsError(&trajectory.ToolResult{Content: content}) {
			t.Errorf("%q not read as an error report", content)
		}
	}
	for _, content := range []string{
		"Error handling in Go: a practical guide",
		"Error budgets are computed monthly.",
		"Errors: none",
		"Exceptional service, 5 stars",
		"error_rate=0.02",
	} {
		if resultIsError(&trajectory.ToolResult{Content: content}) {
			t.Errorf("%q read as an error report", content)
		}
	}
}

// Two error-shaped JSON results of the same length in one run are each
// read for themselves: the classification keeps its last decode
// (classification.jsonError) for the same text only.
func TestJSONErrorsOfOneRunReadApart(t *testing.T) {
	texts := []string{`{"error":"rate limit exceeded (429)"}`, `{"error":"invalid api key provided!"}`}
	if len(texts[0]) != len(texts[1]) {
		t.Fatal("the texts must be of one length")
	}
	args := []string{`{"city":"Paris"}`, `{"city":"Rome"}`}
	b := newRun().llm(tc("1", "lookup", args[0]), tc("2", "lookup", args[1]))
	b.answer("done", trajectory.ToolResult{CallID: "1", Name: "lookup", Content: texts[0]},
		trajectory.ToolResult{CallID: "2", Name: "lookup", Content: texts[1]})
	v := mustNew(t, Options{}).Classify(&b.run)
	var got []Incident
	for _, inc := range v.Incidents {
		if inc.Tool == "lookup" {
			got = append(got, inc)
		}
	}
	if len(got) != 2 {
		t.Fatalf("want an incident per call, got %+v", v.Incidents)
	}
	for i, text := range texts {
		req := tc(fmt.Sprint(i+1), "lookup", args[i])
		want, failed, _ := mustNew(t, Options{}).ClassifyCall(Call{Request: &req, Offered: offered,
			Result: &trajectory.ToolResult{CallID: req.ID, Name: "lookup", Content: text}})
		if !failed {
			t.Fatalf("%s: the call alone did not fail", text)
		}
		if got[i].FailureType != want.FailureType || got[i].Rule != want.Rule || got[i].Reason != want.Reason {
			t.Errorf("%s: in the run %s/%s, alone %s/%s", text, got[i].FailureType, got[i].Rule, want.FailureType, want.Rule)
		}
	}
	if got[0].FailureType == got[1].FailureType && got[0].Rule == got[1].Rule {
		t.Errorf("the texts classify alike (%s/%s): the test needs texts read differently", got[0].FailureType, got[0].Rule)
	}
}
