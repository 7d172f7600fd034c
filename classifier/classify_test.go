package classifier

import (
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/triage-otel/triage/trajectory"
)

func TestNewValidatesOptions(t *testing.T) {
	bad := []Options{
		{LoopThreshold: 1},
		{LoopThreshold: 4, LoopWindow: 3},
		{LoopSimilarity: 1.5},
		{LoopSimilarity: -0.1},
	}
	for _, o := range bad {
		if _, err := New(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	c := mustNew(t, Options{})
	if c.opts.LoopThreshold != DefaultLoopThreshold || c.opts.LoopWindow != DefaultLoopWindow {
		t.Errorf("defaults: %+v", c.opts)
	}
}

func TestNilAndEmptyRuns(t *testing.T) {
	c := mustNew(t, Options{})
	wantVerdict(t, c.Classify(nil), OutcomeOK, "")
	wantVerdict(t, c.Classify(&trajectory.Run{}), OutcomeOK, "")
}

func TestOKRun(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun().
		llm(tc("1", "lookup", `{"city":"Paris"}`)).tool("lookup", "1", `{"city":"Paris"}`).
		llm(tc("2", "convert", `{"amount":100,"to":"EUR"}`)).tool("convert", "2", `{"amount":100,"to":"EUR"}`).
		answer("18 degrees; 92 EUR")
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeOK, "")
	if len(v.Incidents) != 0 {
		t.Errorf("incidents %+v", v.Incidents)
	}
}

func TestWrongToolWithoutToolSpan(t *testing.T) {
	// The framework answered the unknown tool with an error result in the
	// next model input; there is no tool span.
	c := mustNew(t, Options{})
	b := newRun().
		llm(tc("1", "forecast", `{"city":"Paris"}`)).
		answer("Sorry, I can't.", trajectory.ToolResult{CallID: "1", Name: "forecast", Content: "Model tried to call unavailable tool 'forecast'", IsError: true})
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, WrongToolCalled)
	if v.Signal != SignalManifest || v.EvidenceSpanID != sid(1) || v.Confidence < 0.9 {
		t.Errorf("evidence %+v", v)
	}
	if len(v.Incidents) != 1 || v.Incidents[0].Tool != "forecast" || v.Incidents[0].Recovered {
		t.Errorf("incidents %+v", v.Incidents)
	}
}

func TestWrongToolRecoveredByValidTool(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun().
		llm(tc("1", "forecast", `{"city":"Paris"}`)).
		llm(tc("2", "lookup", `{"city":"Paris"}`)).tool("lookup", "2", `{"city":"Paris"}`).
		answer("18 degrees")
	b.run.Steps[1].InputResults = []trajectory.ToolResult{{CallID: "1", Name: "forecast", Content: "Error: forecast is not a valid tool", IsError: false}}
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeRecovered, "")
	if len(v.Incidents) != 1 || !v.Incidents[0].Recovered || v.Incidents[0].FailureType != WrongToolCalled {
		t.Errorf("incidents %+v", v.Incidents)
	}
}

func TestSchemaMismatchRecoveredBySameTool(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun().
		llm(tc("1", "convert", `{"amount":"one hundred","to":"Euro"}`)).
		llm(tc("2", "convert", `{"amount":100,"to":"EUR"}`)).tool("convert", "2", `{"amount":100,"to":"EUR"}`).
		answer("92 EUR")
	b.run.Steps[1].InputResults = []trajectory.ToolResult{{CallID: "1", Content: "Invalid input", IsError: true}}
	wantVerdict(t, c.Classify(&b.run), OutcomeRecovered, "")

	// Not retried: failed.
	b = newRun().
		llm(tc("1", "convert", `{"amount":"one hundred","to":"Euro"}`)).
		answer("Sorry", trajectory.ToolResult{CallID: "1", Content: "Invalid input", IsError: true})
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, SchemaMismatch)
	if v.Signal != SignalJSONSchema {
		t.Errorf("signal %s", v.Signal)
	}
}

func TestStructureContradictedByExecution(t *testing.T) {
	// The framework ran the call successfully: the manifest we saw was
	// partial, so no wrong-tool incident.
	c := mustNew(t, Options{})
	b := newRun().
		llm(tc("1", "dynamic_tool", `{}`)).tool("dynamic_tool", "1", `{}`).
		answer("done")
	wantVerdict(t, c.Classify(&b.run), OutcomeOK, "")
}

func TestToolErrorClassifiedFromSpan(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun().
		llm(tc("1", "lookup", `{"city":"Paris"}`)).
		toolErr("lookup", "1", `{"city":"Paris"}`, "UpstreamHTTPError", "weather-api request failed: 502 Bad Gateway").
		answer("Sorry")
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, ExternalFault)
	if v.EvidenceSpanID != sid(2) || v.Signal != SignalTextRule || v.Rule != "http_status_text" {
		t.Errorf("evidence %+v", v)
	}
}

func TestToolErrorFromResultTextWithoutSpanError(t *testing.T) {
	// The tool span looks fine; the result fed back says it failed.
	c := mustNew(t, Options{})
	b := newRun().
		llm(tc("1", "convert", `{"amount":100,"to":"EUR"}`)).tool("convert", "1", `{"amount":100,"to":"EUR"}`).
		answer("Sorry", trajectory.ToolResult{CallID: "1", Content: "TimeoutError: The operation was aborted due to timeout"})
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, Timeout)
	if v.Signal != SignalExceptionType {
		t.Errorf("signal %s", v.Signal)
	}
}

func TestResultsWithoutIDsMatchedByName(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun().
		llm(tc("", "lookup", `{"city":"Paris"}`)).
		answer("Sorry", trajectory.ToolResult{Name: "lookup", Content: "Error: rate limit exceeded"})
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, ExternalFault)
	// The same result resent in later turns counts once.
	b.answer("Still sorry", trajectory.ToolResult{Name: "lookup", Content: "Error: rate limit exceeded"})
	if v := c.Classify(&b.run); len(v.Incidents) != 1 {
		t.Errorf("incidents %+v", v.Incidents)
	}
}

func TestUnclassifiedToolErrorIsUnknown(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun().
		llm(tc("1", "lookup", `{"city":"Paris"}`)).
		toolErr("lookup", "1", `{"city":"Paris"}`, "Error", "something odd happened").
		answer("Sorry")
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, Unknown)
	if v.Reason != "" {
		t.Errorf("reason %q for an unclassified error", v.Reason)
	}
}

func TestLLMErrorRecoveredByRetry(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun()
	b.add(trajectory.Step{Kind: trajectory.StepLLM, StatusError: true, HTTPStatus: 503, StatusMessage: "Service Unavailable"})
	b.llm(tc("1", "lookup", `{"city":"Paris"}`)).tool("lookup", "1", `{"city":"Paris"}`).answer("18")
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeRecovered, "")
	if len(v.Incidents) != 1 || v.Incidents[0].Signal != SignalHTTPStatus {
		t.Errorf("incidents %+v", v.Incidents)
	}
}

func TestRootErrorEndsRun(t *testing.T) {
	c := mustNew(t, Options{})
	// A retried LLM error followed by a different fatal error: the
	// terminal incident decides.
	b := newRun()
	b.add(trajectory.Step{Kind: trajectory.StepLLM, StatusError: true, HTTPStatus: 429})
	b.llm(tc("1", "lookup", `{"city":"Paris"}`)).tool("lookup", "1", `{"city":"Paris"}`)
	b.add(trajectory.Step{Kind: trajectory.StepLLM, StatusError: true, HTTPStatus: 400,
		Errors: []trajectory.ErrorInfo{{Type: "BadRequestError", Message: "This model's maximum context length is 8192 tokens"}}})
	b.rootError("BadRequestError", "This model's maximum context length is 8192 tokens")
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, ContextOverflow)
	for _, in := range v.Incidents {
		if in.Recovered {
			t.Errorf("run ended in error, incident marked recovered: %+v", in)
		}
	}
}

func TestRootOnlyEvidence(t *testing.T) {
	// Instrumentations that lose the LLM span leave the error on the
	// agent span only.
	c := mustNew(t, Options{})
	b := newRun().rootError("InternalServerError", "503 The server is overloaded or not ready yet.")
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, ExternalFault)
	if v.EvidenceSpanID != b.run.RootSpanID || v.Incidents[0].StepIndex != -1 {
		t.Errorf("evidence %+v", v)
	}
	b = newRun().rootError("AuthenticationError", "401 Incorrect API key provided")
	v = c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, Unknown)
	if v.Reason != ReasonAuth {
		t.Errorf("reason %q", v.Reason)
	}
}

func TestDefiniteIncidentBeatsLaterWrapper(t *testing.T) {
	// A wrapper error that says nothing must not hide the step's class.
	c := mustNew(t, Options{})
	b := newRun()
	b.add(trajectory.Step{Kind: trajectory.StepLLM, StatusError: true, HTTPStatus: 503})
	b.rootError("RetryError", "Failed after 3 attempts.")
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, ExternalFault)
}

func TestLoopWins(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun()
	for i := range 3 {
		id := string(rune('a' + i))
		b.llm(tc(id, "lookup", `{"city":"Paris"}`)).tool("lookup", id, `{"city":"Paris"}`)
	}
	b.add(trajectory.Step{Kind: trajectory.StepLLM, StatusError: true, HTTPStatus: 429})
	b.rootError("RateLimitError", "429 Too Many Requests")
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, LoopDetected)
	if v.Signal != SignalLoop {
		t.Errorf("signal %s", v.Signal)
	}
}

func TestLoopThenAnswerIsRecovered(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun()
	for i := range 3 {
		id := string(rune('a' + i))
		b.llm(tc(id, "lookup", `{"city":"Paris"}`)).tool("lookup", id, `{"city":"Paris"}`)
	}
	b.answer("18 degrees")
	wantVerdict(t, c.Classify(&b.run), OutcomeRecovered, "")
}

func TestRetriesAfterErrorsAreNotALoop(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun()
	for i := range 3 {
		id := string(rune('a' + i))
		b.llm(tc(id, "lookup", `{"city":"Paris"}`)).toolErr("lookup", id, `{"city":"Paris"}`, "Error", "503 Service Unavailable")
	}
	b.answer("Sorry")
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, ExternalFault)
}

func TestRecoveredThenFail(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun().
		llm(tc("1", "lookup", `{"city":"Paris"}`)).
		toolErr("lookup", "1", `{"city":"Paris"}`, "Error", "502 Bad Gateway").
		llm(tc("2", "lookup", `{"city":"Paris"}`)).tool("lookup", "2", `{"city":"Paris"}`).
		llm(tc("3", "forecast", `{"city":"Paris"}`)).
		answer("Sorry", trajectory.ToolResult{CallID: "3", Content: "Tool forecast not found", IsError: true})
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, WrongToolCalled)
	if len(v.Incidents) != 2 || !v.Incidents[0].Recovered || v.Incidents[0].FailureType != ExternalFault || v.Incidents[1].Recovered {
		t.Errorf("incidents %+v", v.Incidents)
	}
}

func TestExtraIncidents(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun().llm().answer("fine")
	v := c.Classify(&b.run, Incident{SpanID: sid(2), StepIndex: -1, FailureType: ExternalFault, Signal: SignalOTTL, Rule: "slow_upstream", Confidence: 0.6})
	wantVerdict(t, v, OutcomeFailed, ExternalFault)
	if v.Signal != SignalOTTL || v.Rule != "slow_upstream" || v.Incidents[0].StepIndex != 1 {
		t.Errorf("evidence %+v", v)
	}
	// Recovered when a later step succeeded.
	v = c.Classify(&b.run, Incident{SpanID: sid(1), StepIndex: 0, FailureType: ExternalFault, Signal: SignalOTTL})
	wantVerdict(t, v, OutcomeRecovered, "")
}

func TestConstraintIgnored(t *testing.T) {
	c := mustNew(t, Options{Constraints: []string{"CONFIDENTIAL", "https://internal.example/"}})
	b := newRun().llm(tc("1", "lookup", `{"city":"Paris"}`)).tool("lookup", "1", `{"city":"Paris"}`).
		answer("See https://INTERNAL.example/wiki for details")
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, ConstraintIgnored)
	if v.Signal != SignalConstraint || v.Rule != "https://internal.example/" {
		t.Errorf("evidence %+v", v)
	}
	// A clean final answer supersedes an intermediate leak.
	b = newRun().answer("draft: confidential numbers").answer("Here is the public summary.")
	wantVerdict(t, c.Classify(&b.run), OutcomeRecovered, "")
	// Without constraints nothing fires.
	c2 := mustNew(t, Options{})
	wantVerdict(t, c2.Classify(&b.run), OutcomeOK, "")
}

func TestClassifyDoesNotMutateRun(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun().llm(tc("1", "forecast", `{}`)).answer("no", trajectory.ToolResult{CallID: "1", Content: "Error", IsError: true})
	before := len(b.run.Steps)
	_ = c.Classify(&b.run)
	_ = c.Classify(&b.run)
	if len(b.run.Steps) != before || b.run.Steps[0].Requested[0].Name != "forecast" {
		t.Fatal("run mutated")
	}
}

func TestWeakErrorPrefixNeedsARule(t *testing.T) {
	c := mustNew(t, Options{})
	// Ordinary output that happens to start like an error.
	b := newRun().llm(tc("1", "lookup", `{"city":"Paris"}`)).
		answer("3 failed logins", trajectory.ToolResult{CallID: "1", Content: "Failed logins in the last hour: 3"})
	wantVerdict(t, c.Classify(&b.run), OutcomeOK, "")
	// A failure a rule recognises.
	b = newRun().llm(tc("1", "lookup", `{"city":"Paris"}`)).
		answer("Sorry", trajectory.ToolResult{CallID: "1", Content: "Failed to fetch: 503 Service Unavailable"})
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, ExternalFault)
}

func TestResultHeads(t *testing.T) {
	c := mustNew(t, Options{})
	cases := []struct {
		content string
		want    FailureType // "" = the call succeeded
	}{
		{"An error occurred while running the tool. Please try again. Error: 502 Bad Gateway", ExternalFault},
		{"Encountered error: Request timed out", Timeout},
		{"Encountered error: KeyError('city')", Unknown},
		{"Unknown tool name: 'forecast'. Available tools: lookup", WrongToolCalled},
		{"1 validation error for lookup\ncity\n  Field required", SchemaMismatch},
		// data, not failures
		{"Our API enforces a rate limit of 10 requests per second.", ""},
		{"Timeouts are configured per route; see the docs.", ""},
		{"Sorry, we are closed on Sundays.", ""},
	}
	for _, k := range cases {
		b := newRun().llm(tc("1", "lookup", `{"city":"Paris"}`)).
			answer("ok", trajectory.ToolResult{CallID: "1", Content: k.content})
		v := c.Classify(&b.run)
		if k.want == "" {
			if v.Outcome != OutcomeOK {
				t.Errorf("%q: got %s/%s, want ok", k.content, v.Outcome, v.FailureType)
			}
			continue
		}
		if v.Outcome != OutcomeFailed || v.FailureType != k.want {
			t.Errorf("%q: got %s/%s, want failed/%s", k.content, v.Outcome, v.FailureType, k.want)
		}
	}
}

func TestStreamedToolEndingBeforeItsModelStep(t *testing.T) {
	// With streaming, a tool can end before the model step that asked for
	// it. Each call is counted once: two calls, not four (a loop).
	c := mustNew(t, Options{})
	b := newRun()
	for range 2 {
		b.tool("lookup", "", `{"city":"Paris"}`)
		b.llm(tc("", "lookup", `{"city":"Paris"}`))
		// the model step started before its tool
		b.run.Steps[len(b.run.Steps)-1].Start = b.run.Steps[len(b.run.Steps)-2].Start - 100
	}
	b.answer("18 degrees")
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeOK, "")
}

// Random runs: whatever the shape, Classify answers a consistent verdict
// and never panics.
func TestRandomRunsKeepInvariants(t *testing.T) {
	c := mustNew(t, Options{Constraints: []string{"secret"}, LoopSimilarity: 0.9})
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"lookup", "convert", "ghost", ""}
	args := []string{`{"city":"Paris"}`, `{"amount":"x"}`, `{`, ``, `"{\"city\":\"Nice\"}"`, `null`, `[1]`}
	texts := []string{"", "Error: rate limit", "secret plan", "429 Too Many Requests", "Tool ghost not found", "fine", "\xff\xfe"}
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	for range 2000 {
		b := newRun()
		b.run.RootFound = rng.IntN(3) > 0
		b.run.Orphans = rng.IntN(2)
		for range rng.IntN(12) {
			switch rng.IntN(3) {
			case 0:
				var reqs []trajectory.ToolCall
				for range rng.IntN(3) {
					reqs = append(reqs, tc(pick([]string{"", "1", "2", "3"}), pick(names), pick(args)))
				}
				var res []trajectory.ToolResult
				for range rng.IntN(3) {
					res = append(res, trajectory.ToolResult{CallID: pick([]string{"", "1", "2", "9"}), Name: pick(names), Content: pick(texts), IsError: rng.IntN(2) == 0})
				}
				var defs []trajectory.ToolDef
				if rng.IntN(2) == 0 {
					defs = offered
				}
				b.add(trajectory.Step{Kind: trajectory.StepLLM, Offered: defs, Requested: reqs, InputResults: res, OutputText: pick(texts),
					FinishReasons: []string{pick([]string{"stop", "tool_calls", "length", "content_filter", ""})},
					StatusError:   rng.IntN(5) == 0, HTTPStatus: []int{0, 0, 400, 429, 503}[rng.IntN(5)]})
			case 1:
				b.add(trajectory.Step{Kind: trajectory.StepTool, ToolName: pick(names), ToolCallID: pick([]string{"", "1", "2", "3"}), Arguments: pick(args),
					Result: pick(texts), ResultIsError: rng.IntN(4) == 0, StatusError: rng.IntN(4) == 0, StatusMessage: pick(texts),
					HasJSONRPC: rng.IntN(6) == 0, JSONRPCCode: []int{-32602, -32601, -32000, 5}[rng.IntN(4)]})
			default:
				b.add(trajectory.Step{Kind: trajectory.StepKind(pick([]string{"", "agent"}))})
			}
		}
		if rng.IntN(3) == 0 {
			b.rootError(pick([]string{"", "Error", "TimeoutError", "MaxStepsExceededError"}), pick(texts))
		}
		b.run.FinishReason = pick([]string{"", "", "tool-calls", "length"})
		var extra []Incident
		if rng.IntN(4) == 0 {
			extra = append(extra, Incident{SpanID: sid(byte(rng.IntN(20))), StepIndex: rng.IntN(30) - 5, Signal: SignalOTTL})
		}
		v := c.Classify(&b.run, extra...)
		switch v.Outcome {
		case OutcomeFailed:
			if _, ok := ParseFailureType(string(v.FailureType)); !ok {
				t.Fatalf("failed with type %q: %+v", v.FailureType, b.run)
			}
		case OutcomeOK:
			if v.FailureType != "" || len(v.Incidents) != 0 {
				t.Fatalf("ok with %q / %d incidents", v.FailureType, len(v.Incidents))
			}
		case OutcomeRecovered:
			if v.FailureType != "" || len(v.Incidents) == 0 {
				t.Fatalf("recovered with %q / %d incidents", v.FailureType, len(v.Incidents))
			}
			for _, in := range v.Incidents {
				if !in.Recovered {
					t.Fatalf("recovered run with an unrecovered incident %+v", in)
				}
			}
		default:
			t.Fatalf("outcome %q", v.Outcome)
		}
		for _, in := range v.Incidents {
			if _, ok := ParseFailureType(string(in.FailureType)); !ok {
				t.Fatalf("incident type %q", in.FailureType)
			}
			if in.StepIndex >= len(b.run.Steps) {
				t.Fatalf("incident step %d of %d", in.StepIndex, len(b.run.Steps))
			}
		}
	}
}

func TestToolOutputReportingAnError(t *testing.T) {
	// No result fed back is recorded (the model's input is not on the
	// spans), but the tool span's own output says the call failed.
	c := mustNew(t, Options{})
	b := newRun().llm(tc("1", "lookup", `{"city":"Paris"}`))
	b.add(trajectory.Step{Kind: trajectory.StepTool, ToolName: "lookup", ToolCallID: "1", Arguments: `{"city":"Paris"}`,
		Result: "Error: upstream returned 503 Service Unavailable"})
	b.answer("Sorry")
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, ExternalFault)
}

func TestParallelCallDoesNotRecoverItsSibling(t *testing.T) {
	// The model asked for an unknown tool and a valid one in the same
	// turn: the valid one does not recover the unknown one.
	c := mustNew(t, Options{})
	b := newRun().
		llm(tc("1", "forecast", `{"city":"Paris"}`), tc("2", "lookup", `{"city":"Paris"}`)).
		tool("lookup", "2", `{"city":"Paris"}`).
		answer("18 now; no forecast", trajectory.ToolResult{CallID: "1", Content: "Tool forecast not found", IsError: true})
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, WrongToolCalled)
}

// TestPooledClassificationsAreFresh: Classify lends its classification and
// lists from a pool; a verdict read after other runs (with more calls,
// incidents and loops: their lists are reused) is the verdict of a new
// Classifier that read that run alone.
func TestPooledClassificationsAreFresh(t *testing.T) {
	byFile := captureRuns(t)
	files := slices.Sorted(maps.Keys(byFile))
	shared := mustNew(t, Options{})
	n := 0
	for _, f := range files {
		runs := byFile[f]
		for i := range runs {
			got := shared.Classify(&runs[i])
			want := mustNew(t, Options{}).Classify(&runs[i])
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s run %d: after other runs %+v, alone %+v", f, i, got, want)
			}
			n++
		}
	}
	if n < 100 {
		t.Fatalf("only %d capture runs", n)
	}
}

// Conversations are resent whole on every turn: a fed-back result that
// carries a call id counts once however many later turns repeat it —
// whether its id names a recorded call, names none but the result answers
// an earlier call of its tool recorded without an id, or names nothing the
// run recorded (a call known only from its result).
func TestResentResultsWithIDsCountOnce(t *testing.T) {
	c := mustNew(t, Options{})
	failure := "Error: rate limit exceeded"
	cases := []struct {
		name   string
		run    func() *runBuilder
		result trajectory.ToolResult
	}{
		{"id of a recorded call", func() *runBuilder { return newRun().llm(tc("c1", "lookup", `{"city":"Paris"}`)) },
			trajectory.ToolResult{CallID: "c1", Name: "lookup", Content: failure}},
		{"id the call was recorded without", func() *runBuilder { return newRun().llm(tc("", "lookup", `{"city":"Paris"}`)) },
			trajectory.ToolResult{CallID: "c9", Name: "lookup", Content: failure}},
		{"id of no recorded call", func() *runBuilder { return newRun().llm() },
			trajectory.ToolResult{CallID: "c9", Content: failure}},
	}
	for _, k := range cases {
		b := k.run()
		for turn := range 3 {
			b.answer("Sorry, attempt "+string(rune('1'+turn)), k.result)
		}
		v := c.Classify(&b.run)
		if v.Outcome != OutcomeFailed || v.FailureType != ExternalFault || len(v.Incidents) != 1 {
			t.Errorf("%s: %s/%s with incidents %+v, want failed/%s with one", k.name, v.Outcome, v.FailureType, v.Incidents, ExternalFault)
		}
	}
}
