package llm

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/internal/llmtest"
	"github.com/triage-otel/triage/trajectory"
)

// Error texts no structure, code or rule places: the runs are unknown
// without a reason, so the model is asked.
const (
	msgNoHandler = "dispatcher has no handler registered under the name frob"
	msgCityShape = "payload rejected: field city expects a place name, got 42"
	msgSilent    = "the upstream never answered the call"
)

// review classifies run and asks the consultant, checking first that the
// run is a reasonless unknown.
func review(t *testing.T, c *Consultant, run *trajectory.Run) (classifier.Verdict, *Consultation) {
	t.Helper()
	cl := newClassifier(t)
	v := cl.Classify(run)
	if v.Outcome != classifier.OutcomeFailed || v.FailureType != classifier.Unknown || v.Reason != "" {
		t.Fatalf("precondition: the run must be a reasonless unknown, got %+v", v)
	}
	return c.Review(context.Background(), cl, run, v)
}

func TestRightAnswersAreAccepted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		run   *trajectory.Run
		ft    classifier.FailureType
		quote string
	}{
		{"wrong tool on the root", rootFailure("s", "AgentError", msgNoHandler, 0), classifier.WrongToolCalled, "no handler registered under the name frob"},
		{"schema without a recorded schema", toolFailure("s", nil, `{"city":42}`, "ToolError", msgCityShape, 200*time.Millisecond), classifier.SchemaMismatch, "Field city expects a   place name"},
		{"timeout on a slow step", toolFailure("s", offeredTools, `{"city":"Paris"}`, "ToolError", msgSilent, 5*time.Second), classifier.Timeout, "never answered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Always(answerJSON(tc.ft, 0.93, tc.quote)))
			obs := &countingObserver{}
			c := newConsultant(t, Options{Endpoint: srv.Endpoint(), APIKey: "sk-test-key-123", Observer: obs})
			v, cons := review(t, c, tc.run)
			if cons.Outcome != OutcomeAccepted || v.FailureType != tc.ft {
				t.Fatalf("outcome %s %s (%s), verdict %s", cons.Outcome, cons.Gate, cons.Detail, v.FailureType)
			}
			if v.Signal != classifier.SignalLLM || v.Rule != "scripted-model" || v.Confidence != DefaultConfidenceCap {
				t.Errorf("signal %s rule %q confidence %v", v.Signal, v.Rule, v.Confidence)
			}
			in := v.Incidents[len(v.Incidents)-1]
			if v.EvidenceSpanID != in.SpanID || in.FailureType != tc.ft || in.Signal != classifier.SignalLLM {
				t.Errorf("incident %+v, evidence span %v", in, v.EvidenceSpanID)
			}
			if srv.Calls() != 1 || obs.get("accepted:"+string(tc.ft)) != 1 || obs.get("call:answered") != 1 {
				t.Errorf("calls %d, observer %v", srv.Calls(), obs.counts)
			}
			req := srv.Requests()[0]
			if req.Model != "scripted-model" || req.ResponseFormat == nil || req.ResponseFormat.Type != "json_object" || req.MaxTokens != DefaultMaxTokens || req.Authorization != "Bearer sk-test-key-123" {
				t.Errorf("request %+v auth %q", req, req.Authorization)
			}
		})
	}
}

func TestWrongAnswersAtLowConfidenceAreRejected(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(answerJSON(classifier.ExternalFault, 0.55, "no handler registered")))
	obs := &countingObserver{}
	c := newConsultant(t, Options{Endpoint: srv.Endpoint(), Observer: obs})
	v, cons := review(t, c, rootFailure("s", "AgentError", msgNoHandler, 0))
	if v.FailureType != classifier.Unknown || cons.Outcome != OutcomeRejected || cons.Gate != GateConfidence || obs.get("rejected:confidence") != 1 {
		t.Fatalf("verdict %s, %s %s, observer %v", v.FailureType, cons.Outcome, cons.Gate, obs.counts)
	}
	if v.Signal == classifier.SignalLLM {
		t.Errorf("a rejected answer left its signal: %+v", v)
	}
}

func TestConfidentAnswersWithoutTheirQuoteAreRejected(t *testing.T) {
	run := func() *trajectory.Run {
		return toolFailure("s", offeredTools, `{"city":"Paris"}`, "ToolError", msgSilent, 5*time.Second)
	}
	for name, quote := range map[string]string{
		"invented":               "503 Service Unavailable",
		"from the context":       "tools offered to the model",
		"the tool name":          "lookup",
		"a schema word":          `"city"`,
		"too short":              "the",
		"a paraphrase":           "the upstream did not answer",
		"empty":                  "",
		"cut across two entries": "ToolError the upstream",
	} {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Always(answerJSON(classifier.Timeout, 0.97, quote)))
			obs := &countingObserver{}
			c := newConsultant(t, Options{Endpoint: srv.Endpoint(), Observer: obs})
			v, cons := review(t, c, run())
			if v.FailureType != classifier.Unknown || cons.Gate != GateEvidence || obs.get("rejected:evidence") != 1 {
				t.Fatalf("quote %q: verdict %s, %s %s (%s)", quote, v.FailureType, cons.Outcome, cons.Gate, cons.Detail)
			}
		})
	}
}

func TestConfidentAnswersContradictingStructureAreRejected(t *testing.T) {
	for _, tc := range []struct {
		name  string
		run   *trajectory.Run
		ft    classifier.FailureType
		quote string
	}{
		{"wrong tool for a tool offered that ran", toolFailure("s", offeredTools, `{"city":"Paris"}`, "ToolError", msgNoHandler, time.Second), classifier.WrongToolCalled, "no handler registered"},
		{"schema for arguments that validate", toolFailure("s", offeredTools, `{"city":"Paris"}`, "ToolError", msgCityShape, time.Second), classifier.SchemaMismatch, "expects a place name"},
		{"timeout for a 10 ms step", toolFailure("s", offeredTools, `{"city":"Paris"}`, "ToolError", msgSilent, 10*time.Millisecond), classifier.Timeout, "never answered"},
		{"external fault for a 400", rootFailure("s", "AgentError", msgSilent, 400), classifier.ExternalFault, "never answered"},
		{"a loop from one error", rootFailure("s", "AgentError", msgSilent, 0), classifier.LoopDetected, "never answered"},
		{"plan incomplete from one error", rootFailure("s", "AgentError", msgSilent, 0), classifier.PlanIncomplete, "never answered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Always(answerJSON(tc.ft, 0.99, tc.quote)))
			obs := &countingObserver{}
			c := newConsultant(t, Options{Endpoint: srv.Endpoint(), Observer: obs})
			v, cons := review(t, c, tc.run)
			if v.FailureType != classifier.Unknown || cons.Gate != GateStructure || obs.get("rejected:structure") != 1 {
				t.Fatalf("verdict %s, %s %s (%s)", v.FailureType, cons.Outcome, cons.Gate, cons.Detail)
			}
		})
	}
}

func TestMalformedAnswersAreNoAnswer(t *testing.T) {
	for name, content := range map[string]string{
		"prose":              "I think this is a timeout.",
		"not an answer":      `{"type":"timeout"}`,
		"unknown type":       `{"failure_type":"network_glitch","confidence":0.9,"evidence":"never answered"}`,
		"confidence above 1": `{"failure_type":"timeout","confidence":90,"evidence":"never answered"}`,
		"cut off":            `{"failure_type":"timeout","confid`,
		"empty":              "",
	} {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Always(content))
			obs := &countingObserver{}
			c := newConsultant(t, Options{Endpoint: srv.Endpoint(), Observer: obs})
			v, cons := review(t, c, rootFailure("s", "AgentError", msgSilent, 0))
			if v.FailureType != classifier.Unknown || cons.Outcome != OutcomeFailed || cons.Gate != ErrNoAnswer || obs.get("call:no_answer") != 1 {
				t.Fatalf("verdict %s, %s %s", v.FailureType, cons.Outcome, cons.Gate)
			}
		})
	}
	// Cut at max_tokens: the detail says so.
	srv := llmtest.New(t, func(llmtest.Request, int) llmtest.Reply {
		return llmtest.Reply{Content: "<think>Let me consider", Finish: "length"}
	})
	c := newConsultant(t, Options{Endpoint: srv.Endpoint()})
	_, cons := review(t, c, rootFailure("s", "AgentError", msgSilent, 0))
	mustContain(t, "detail", cons.Detail, "max_tokens")
}

func TestAnswersAfterReasoningAreRead(t *testing.T) {
	a := answerJSON(classifier.Timeout, 0.9, "never answered")
	for name, content := range map[string]string{
		"think block":       "<think>The upstream {did not} answer; a timeout.</think>\n" + a,
		"fenced":            "Here is my answer:\n```json\n" + a + "\n```\nHope it helps.",
		"trailing text":     a + "\nThe step ran out of time.",
		"prose first":       "Reasoning: {not json} the call waited. Answer: " + a,
		"string confidence": `{"failure_type":"timeout","confidence":"0.9","evidence":"never answered"}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Always(content))
			c := newConsultant(t, Options{Endpoint: srv.Endpoint()})
			v, cons := review(t, c, toolFailure("s", offeredTools, `{"city":"Paris"}`, "ToolError", msgSilent, 5*time.Second))
			if cons.Outcome != OutcomeAccepted || v.FailureType != classifier.Timeout {
				t.Fatalf("%s %s (%s)", cons.Outcome, cons.Gate, cons.Detail)
			}
		})
	}
}

func TestRetriesOn429And5xx(t *testing.T) {
	good := answerJSON(classifier.Timeout, 0.9, "never answered")
	t.Run("429 then an answer, honouring Retry-After", func(t *testing.T) {
		srv := llmtest.New(t, func(_ llmtest.Request, n int) llmtest.Reply {
			if n == 1 {
				return llmtest.Reply{Status: 429, Body: `{"error":{"code":"rate_limit_exceeded"}}`, Header: map[string]string{"Retry-After": "0"}}
			}
			return llmtest.Reply{Content: good}
		})
		c := newConsultant(t, Options{Endpoint: srv.Endpoint()})
		_, cons := review(t, c, toolFailure("s", offeredTools, `{"city":"Paris"}`, "ToolError", msgSilent, 5*time.Second))
		if cons.Outcome != OutcomeAccepted || cons.Attempts != 2 || srv.Calls() != 2 {
			t.Fatalf("%s %s attempts %d calls %d", cons.Outcome, cons.Detail, cons.Attempts, srv.Calls())
		}
	})
	t.Run("5xx every time", func(t *testing.T) {
		srv := llmtest.New(t, func(llmtest.Request, int) llmtest.Reply { return llmtest.Reply{Status: 503, Body: "overloaded"} })
		obs := &countingObserver{}
		c := newConsultant(t, Options{Endpoint: srv.Endpoint(), MaxRetries: 3, Observer: obs})
		v, cons := review(t, c, rootFailure("s", "AgentError", msgSilent, 0))
		if v.FailureType != classifier.Unknown || cons.Gate != ErrServer || srv.Calls() != 4 || obs.get("error:server_error") != 1 {
			t.Fatalf("verdict %s %s calls %d", v.FailureType, cons.Gate, srv.Calls())
		}
	})
	t.Run("4xx is not retried", func(t *testing.T) {
		srv := llmtest.New(t, func(llmtest.Request, int) llmtest.Reply {
			return llmtest.Reply{Status: 401, Body: `{"error":"invalid api key"}`}
		})
		c := newConsultant(t, Options{Endpoint: srv.Endpoint()})
		_, cons := review(t, c, rootFailure("s", "AgentError", msgSilent, 0))
		if cons.Gate != ErrClient || srv.Calls() != 1 {
			t.Fatalf("%s calls %d", cons.Gate, srv.Calls())
		}
	})
	t.Run("a server refusing response_format is asked without it", func(t *testing.T) {
		srv := llmtest.New(t, func(req llmtest.Request, _ int) llmtest.Reply {
			if req.ResponseFormat != nil {
				return llmtest.Reply{Status: 400, Body: `{"error":"unsupported parameter: response_format"}`}
			}
			return llmtest.Reply{Content: good}
		})
		c := newConsultant(t, Options{Endpoint: srv.Endpoint()})
		_, cons := review(t, c, toolFailure("s", offeredTools, `{"city":"Paris"}`, "ToolError", msgSilent, 5*time.Second))
		if cons.Outcome != OutcomeAccepted || srv.Calls() != 2 {
			t.Fatalf("%s %s calls %d", cons.Outcome, cons.Detail, srv.Calls())
		}
	})
	t.Run("a bad envelope", func(t *testing.T) {
		srv := llmtest.New(t, func(llmtest.Request, int) llmtest.Reply { return llmtest.Reply{Body: `<html>gateway</html>`} })
		c := newConsultant(t, Options{Endpoint: srv.Endpoint()})
		_, cons := review(t, c, rootFailure("s", "AgentError", msgSilent, 0))
		if cons.Gate != ErrBadResponse {
			t.Fatalf("%s", cons.Gate)
		}
	})
	t.Run("nothing listening", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Always(good))
		ep := srv.Endpoint()
		srv.Close()
		c := newConsultant(t, Options{Endpoint: ep, MaxRetries: 1})
		_, cons := review(t, c, rootFailure("s", "AgentError", msgSilent, 0))
		if cons.Gate != ErrTransport || cons.Attempts != 2 {
			t.Fatalf("%s attempts %d", cons.Gate, cons.Attempts)
		}
	})
}

func TestTimeoutBoundsTheConsultation(t *testing.T) {
	srv := llmtest.New(t, func(llmtest.Request, int) llmtest.Reply {
		return llmtest.Reply{Content: answerJSON(classifier.Timeout, 0.9, "never answered"), Delay: 5 * time.Second}
	})
	obs := &countingObserver{}
	c := newConsultant(t, Options{Endpoint: srv.Endpoint(), Timeout: 150 * time.Millisecond, Observer: obs})
	start := time.Now()
	v, cons := review(t, c, rootFailure("s", "AgentError", msgSilent, 0))
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %v with a 150ms timeout", took)
	}
	if v.FailureType != classifier.Unknown || cons.Gate != ErrTimeout || obs.get("error:timeout") != 1 {
		t.Fatalf("verdict %s, %s %s", v.FailureType, cons.Outcome, cons.Gate)
	}
}

// Not-retryable unknowns, typed failures, ok runs and runs without error
// evidence never reach the model: the server counts zero calls.
func TestNotRetryableUnknownsNeverReachTheModel(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(answerJSON(classifier.ExternalFault, 0.99, "error")))
	obs := &countingObserver{}
	c := newConsultant(t, Options{Endpoint: srv.Endpoint(), Observer: obs})
	cl := newClassifier(t)
	notRetryable := []string{
		"Incorrect API key provided: sk-abc***",
		"Your account has been suspended",
		"You exceeded your billing hard limit; check your plan and billing details",
		"The response was filtered due to the prompt triggering content management policy",
		"Session expired, please sign in",
		"Country, region, or territory not supported",
		"The model text-davinci-003 has been deprecated",
		"Interrupted at node: approve_refund",
		"Run cancelled by user",
		"Environment variable SEARCH_TOKEN_FILE is not set",
		"'NoneType' object has no attribute 'items'",
		"connect ECONNREFUSED 127.0.0.1:8080",
	}
	runs := []*trajectory.Run{}
	for _, msg := range notRetryable {
		runs = append(runs, rootFailure("s", "Error", msg, 0))
	}
	runs = append(runs,
		rootFailure("s", "Error", "503 Service Unavailable", 0),                                                                 // typed
		rootFailure("s", "Error", "request failed", 403),                                                                        // auth by status
		&trajectory.Run{RootFound: true, Steps: []trajectory.Step{{Kind: trajectory.StepLLM, FinishReasons: []string{"stop"}}}}, // ok
	)
	for _, run := range runs {
		v := cl.Classify(run)
		v2, cons := c.Review(context.Background(), cl, run, v)
		if v2.FailureType != v.FailureType || v2.Reason != v.Reason {
			t.Errorf("verdict changed: %+v -> %+v", v, v2)
		}
		if v.FailureType == classifier.Unknown && (cons == nil || cons.Outcome != OutcomeSkipped || cons.Gate != classifier.SkipNotRetryable) {
			t.Errorf("%+v: consultation %+v (reason %q)", run.SpanErrors, cons, v.Reason)
		}
	}
	if n := srv.Calls(); n != 0 {
		t.Fatalf("the model was called %d times", n)
	}
	if obs.get("skipped:not_retryable") != len(notRetryable)+1 {
		t.Errorf("observer %v", obs.counts)
	}
}

func TestCallCaps(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(answerJSON(classifier.Unknown, 0, "")))
	obs := &countingObserver{}
	c := newConsultant(t, Options{Endpoint: srv.Endpoint(), MaxCallsPerSession: 2, MaxCallsPerMinute: 3, Observer: obs})
	// Distinct shapes, so the cache does not answer.
	shape := func(i int) string { return msgSilent + strings.Repeat(" again", i) }
	for i := range 4 {
		review(t, c, rootFailure("conv-a", "AgentError", shape(i), 0))
	}
	if srv.Calls() != 2 || obs.get("skipped:session_cap") != 2 {
		t.Fatalf("session cap: calls %d, observer %v", srv.Calls(), obs.counts)
	}
	for i := range 3 {
		review(t, c, rootFailure("conv-b", "AgentError", shape(10+i), 0))
	}
	if srv.Calls() != 3 || obs.get("skipped:minute_cap") != 2 {
		t.Fatalf("minute cap: calls %d, observer %v", srv.Calls(), obs.counts)
	}
}

// Runs without a session are capped per trace: one trace's many failing
// runs do not spend the minute's budget, another trace still gets calls.
func TestCallCapPerTraceWithoutSession(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(answerJSON(classifier.Unknown, 0, "")))
	obs := &countingObserver{}
	c := newConsultant(t, Options{Endpoint: srv.Endpoint(), MaxCallsPerSession: 2, MaxCallsPerMinute: 100, Observer: obs})
	shape := func(i int) string { return msgSilent + strings.Repeat(" again", i) }
	inTrace := func(b byte, i int) *trajectory.Run {
		r := rootFailure("", "AgentError", shape(i), 0)
		r.TraceID = pcommon.TraceID{b, 1}
		return r
	}
	for i := range 4 {
		review(t, c, inTrace(1, i))
	}
	if srv.Calls() != 2 || obs.get("skipped:session_cap") != 2 {
		t.Fatalf("per-trace cap: calls %d, observer %v", srv.Calls(), obs.counts)
	}
	review(t, c, inTrace(2, 10))
	if srv.Calls() != 3 {
		t.Fatalf("another trace: calls %d, observer %v", srv.Calls(), obs.counts)
	}
}

func TestConcurrencyLimit(t *testing.T) {
	srv := llmtest.New(t, func(llmtest.Request, int) llmtest.Reply {
		return llmtest.Reply{Content: answerJSON(classifier.Unknown, 0, ""), Delay: 100 * time.Millisecond}
	})
	c := newConsultant(t, Options{Endpoint: srv.Endpoint(), MaxConcurrency: 2, MaxCallsPerMinute: -1})
	cl := newClassifier(t)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run := rootFailure("", "AgentError", msgSilent+strings.Repeat("!", i), 0)
			c.Review(context.Background(), cl, run, cl.Classify(run))
		}()
	}
	wg.Wait()
	if srv.Calls() != 6 || srv.Peak() != 2 {
		t.Fatalf("calls %d, peak in flight %d (max_concurrency 2)", srv.Calls(), srv.Peak())
	}
}

// The same error shape — other ids, numbers, quoted names — is answered
// from the cache, and the gates run again on the cached answer.
func TestCacheHitsAcrossRuns(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(answerJSON(classifier.WrongToolCalled, 0.9, "no handler registered under 'frob' (req 7f3a91c2)")))
	obs := &countingObserver{}
	c := newConsultant(t, Options{Endpoint: srv.Endpoint(), Observer: obs})
	first, cons1 := review(t, c, rootFailure("s1", "AgentError", "dispatcher has no handler registered under 'frob' (req 7f3a91c2), 3 tries", 0))
	second, cons2 := review(t, c, rootFailure("s2", "AgentError", "dispatcher has no handler registered under 'zap' (req 0b77e1d4), 12 tries", 0))
	if first.FailureType != classifier.WrongToolCalled || second.FailureType != classifier.WrongToolCalled {
		t.Fatalf("first %s (%s), second %s (%s %s)", first.FailureType, cons1.Detail, second.FailureType, cons2.Outcome, cons2.Detail)
	}
	if cons1.Signature != cons2.Signature || cons2.Source != SourceMemory || srv.Calls() != 1 || obs.get("hit:memory") != 1 {
		t.Fatalf("signatures %s %s, source %s, calls %d", cons1.Signature, cons2.Signature, cons2.Source, srv.Calls())
	}
	// The cached answer is gated again on each run: the same shape on a
	// tool call whose tool was offered and ran contradicts wrong_tool_called.
	msg := "dispatcher has no handler registered under 'frob' (req 7f3a91c2)"
	a, consA := review(t, c, toolFailure("s3", nil, `{"city":"Paris"}`, "ToolError", msg, time.Second))
	b, consB := review(t, c, toolFailure("s4", offeredTools, `{"city":"Paris"}`, "ToolError", msg, time.Second))
	if a.FailureType != classifier.WrongToolCalled || b.FailureType != classifier.Unknown || consB.Source != SourceMemory || consB.Gate != GateStructure {
		t.Fatalf("no definitions: %s (%s); offered and ran: %s (%s %s %s)", a.FailureType, consA.Detail, b.FailureType, consB.Source, consB.Gate, consB.Detail)
	}
	if srv.Calls() != 2 {
		t.Fatalf("calls %d", srv.Calls())
	}
}

func TestCorrectionsOverride(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(answerJSON(classifier.ExternalFault, 0.95, "never answered")))
	c0 := newConsultant(t, Options{Endpoint: srv.Endpoint()})
	_, probe := review(t, c0, rootFailure("s", "AgentError", msgSilent, 0))
	calls := srv.Calls()
	obs := &countingObserver{}
	c := newConsultant(t, Options{Endpoint: srv.Endpoint(), Observer: obs, Corrections: []Correction{
		{Signature: probe.Signature, Expected: classifier.Timeout, Note: "upstream hangs are timeouts"},
	}})
	v, cons := review(t, c, rootFailure("s", "AgentError", msgSilent, 0))
	if v.FailureType != classifier.Timeout || v.Signal != classifier.SignalCorrection || v.Rule != probe.Signature || cons.Outcome != OutcomeCorrected {
		t.Fatalf("verdict %+v, %s", v, cons.Outcome)
	}
	if srv.Calls() != calls || obs.get("hit:correction") != 1 {
		t.Fatalf("a corrected shape reached the model")
	}
	// "unknown" keeps the shape unknown and away from the model.
	c = newConsultant(t, Options{Endpoint: srv.Endpoint(), Corrections: []Correction{{Signature: probe.Signature, Expected: classifier.Unknown}}})
	v, cons = review(t, c, rootFailure("s", "AgentError", msgSilent, 0))
	if v.FailureType != classifier.Unknown || cons.Outcome != OutcomeDeclined || srv.Calls() != calls {
		t.Fatalf("verdict %s, %s, calls %d", v.FailureType, cons.Outcome, srv.Calls())
	}
}

// What is sent: the error verbatim but redacted, the structure, no
// content of the agent's conversation.
func TestWhatIsSent(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(answerJSON(classifier.Unknown, 0, "")))
	c := newConsultant(t, Options{Endpoint: srv.Endpoint()})
	run := toolFailure("conv-secret-session", offeredTools, `{"city":"Paris","api_key":"abc123"}`, "ToolError",
		msgSilent+" (Authorization: Bearer sk-live-0123456789abcdefghij)", 5*time.Second)
	run.Steps[2].OutputText = "PRIVATE ANSWER TEXT"
	_, cons := review(t, c, run)
	user := lastUser(srv)
	mustContain(t, "prompt", user, "ERROR EVIDENCE", "the upstream never answered the call", "tool: lookup",
		"tools offered to the model: lookup, convert", "a tool span executed the call", "the arguments validate against the schema",
		`schema of lookup: {"properties"`, "[REDACTED]", "<- this step")
	for _, never := range []string{"sk-live-0123456789abcdefghij", "abc123", "PRIVATE ANSWER TEXT", "conv-secret-session"} {
		if strings.Contains(user, never) {
			t.Errorf("prompt holds %q:\n%s", never, user)
		}
	}
	if cons.Prompt == nil || cons.Prompt.User != user || !strings.HasPrefix(cons.Signature, SignaturePrefix) {
		t.Errorf("consultation %+v", cons)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	for _, o := range []Options{
		{Model: "m"},
		{Endpoint: "localhost:11434", Model: "m"},
		{Endpoint: "http://x/v1"},
		{Endpoint: "http://x/v1", Model: "m", ConfidenceThreshold: 1.5},
		{Endpoint: "http://x/v1", Model: "m", MaxConcurrency: -1},
		{Endpoint: "http://x/v1", Model: "m", Timeout: -time.Second},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
