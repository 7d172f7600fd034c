package recovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

const sequencePolicy = `
policy:
  external_fault:
    kind: sequence
    steps:
      - {kind: backoff_and_retry, max_attempts: 2, base_delay: 1s}
      - {kind: replan, hint: "External service may be down: try a different approach."}
history:
  reset_on_success: true
`

func TestSequenceWalksAcrossRunsOfOneSessionThenEscalates(t *testing.T) {
	e := newEngine(t, sequencePolicy)
	in := input("external_fault", "conv-42")
	ds := checkWalk(t, e, in, []step{
		{ActionRetry, 1000, "external_fault.steps[0]:backoff_and_retry"},
		{ActionRetry, 2000, "external_fault.steps[0]:backoff_and_retry"},
		{ActionReplan, 0, "external_fault.steps[1]:replan"},
		{ActionReplan, 0, "external_fault.steps[1]:replan"},
		{ActionReplan, 0, "external_fault.steps[1]:replan"},
		{ActionEscalate, 0, "external_fault:exhausted"},
		{ActionEscalate, 0, "external_fault:exhausted"},
	})
	for _, d := range ds {
		if d.MaxAttempts != 5 {
			t.Fatalf("max_attempts %d, want 5 (2 backoffs + 3 replans)", d.MaxAttempts)
		}
	}
	if !strings.Contains(ds[5].Action.Reason, "exhausted") {
		t.Errorf("exhausted escalation should say so: %q", ds[5].Action.Reason)
	}
	// Another session starts from the beginning; another failure type of
	// the same session has its own count.
	if d := decide(t, e, input("external_fault", "conv-43")); d.Attempt != 1 || d.Action.Kind != ActionRetry {
		t.Errorf("other session: %+v", d)
	}
	if d := decide(t, e, input("wrong_tool_called", "conv-42")); d.Attempt != 1 || d.Action.Kind != ActionRetry {
		t.Errorf("other failure type: %+v", d)
	}
}

func TestSuccessResetsTheSession(t *testing.T) {
	e := newEngine(t, sequencePolicy)
	in := input("external_fault", "conv-1")
	decide(t, e, in)
	decide(t, e, in)
	if err := e.RecordSuccess(context.Background(), SuccessInput{SessionID: "conv-1"}); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, e, in); d.Attempt != 1 || d.Action.DelayMS != 1000 {
		t.Fatalf("after a success the budget restarts: %+v", d)
	}

	keep := newEngine(t, strings.Replace(sequencePolicy, "reset_on_success: true", "reset_on_success: false", 1))
	decide(t, keep, in)
	_ = keep.RecordSuccess(context.Background(), SuccessInput{SessionID: "conv-1"})
	if d := decide(t, keep, in); d.Attempt != 2 {
		t.Fatalf("reset_on_success false keeps counting: attempt %d", d.Attempt)
	}
}

func TestDefaultPolicy(t *testing.T) {
	e := newEngine(t, `{}`)
	cases := []struct {
		ft   string
		want []ActionKind
	}{
		{"wrong_tool_called", []ActionKind{ActionRetry, ActionRetry, ActionRetry, ActionEscalate}},
		{"schema_mismatch", []ActionKind{ActionRetry, ActionRetry, ActionEscalate}},
		{"external_fault", []ActionKind{ActionRetry, ActionRetry, ActionRetry, ActionFallback, ActionEscalate}},
		{"timeout", []ActionKind{ActionRetry, ActionRetry, ActionRetry, ActionEscalate}},
		{"loop_detected", []ActionKind{ActionReplan, ActionReplan, ActionEscalate}},
		{"context_overflow", []ActionKind{ActionReplan, ActionReplan, ActionEscalate}},
		{"constraint_ignored", []ActionKind{ActionReplan, ActionReplan, ActionEscalate}},
		{"plan_incomplete", []ActionKind{ActionResume, ActionResume, ActionEscalate}},
		{"unknown", []ActionKind{ActionEscalate, ActionEscalate}},
	}
	for _, c := range cases {
		for i, k := range c.want {
			d := decide(t, e, input(c.ft, "default-"+c.ft))
			if d.Action.Kind != k {
				t.Errorf("%s failure %d: %s, want %s (%s)", c.ft, i+1, d.Action.Kind, k, d.Policy)
			}
		}
	}
	d := decide(t, e, input("timeout", "default-timeout-2"))
	if d.Action.DelayMS != 2000 {
		t.Errorf("timeout first backoff %dms, want 2000", d.Action.DelayMS)
	}
}

func TestUserEntriesOverrideDefaultsOnly(t *testing.T) {
	e := newEngine(t, `
policy:
  timeout: {kind: abort, reason: "deadline is contractual"}
  default: {kind: suspend}
`)
	if d := decide(t, e, input("timeout", "s")); d.Action.Kind != ActionAbort || d.MaxAttempts != 0 {
		t.Errorf("timeout overridden to abort: %+v", d)
	}
	if d := decide(t, e, input("wrong_tool_called", "s")); d.Action.Kind != ActionRetry {
		t.Errorf("wrong_tool_called keeps its default: %+v", d)
	}
	bare := newEngine(t, `
disable_default_policy: true
policy:
  default: {kind: suspend}
`)
	if d := decide(t, bare, input("wrong_tool_called", "s")); d.Action.Kind != ActionSuspend || d.Policy != "default:suspend" {
		t.Errorf("without defaults every type falls to default: %+v", d)
	}
}

func TestDecideInputHandling(t *testing.T) {
	e := newEngine(t, `{}`)
	bad := input("timeout", "s")
	bad.TraceID = pcommon.TraceID{}
	if _, err := e.Decide(context.Background(), bad); err == nil {
		t.Error("a missing trace id must be rejected")
	}
	bad = input("timeout", "s")
	bad.SpanID = pcommon.SpanID{}
	if _, err := e.Decide(context.Background(), bad); err == nil {
		t.Error("a missing span id must be rejected")
	}

	odd := input("made_up_type", "")
	odd.Confidence = 7
	odd.Evidence = append(odd.Evidence, Evidence{Signal: "llm"})
	d := decide(t, e, odd)
	if d.FailureType != "unknown" || d.Action.Kind != ActionEscalate || !strings.Contains(d.Action.Reason, "made_up_type") {
		t.Errorf("unrecognised type should escalate as unknown, saying so: %+v", d)
	}
	if d.SessionID != "trace:"+testTraceHex || d.TraceID != testTraceHex || d.SpanID != testSpanHex {
		t.Errorf("no session: the trace is the session, ids in lower-case hex: %q %q %q", d.SessionID, d.TraceID, d.SpanID)
	}
	raw, err := d.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if d.Confidence != 1 || !strings.Contains(string(raw), `"span_id":"`+testSpanHex+`"`) || !strings.Contains(string(raw), `{"span_id":"","signal":"llm"`) {
		t.Errorf("confidence clamped, evidence span ids in hex (\"\" for none): %v %s", d.Confidence, raw)
	}
	var back Decision
	if err := json.Unmarshal(raw, &back); err != nil || back.Evidence[0].SpanID != testSpan || !back.Evidence[1].SpanID.IsEmpty() {
		t.Errorf("the document reads back: %v %+v", err, back.Evidence)
	}
	if err := json.Unmarshal([]byte(`{"span_id":"not-hex"}`), &Evidence{}); err == nil {
		t.Error("an evidence span id that is not hex must not read")
	}
	if _, err := time.Parse(time.RFC3339Nano, d.Time); err != nil {
		t.Errorf("time %q: %v", d.Time, err)
	}
	d2 := decide(t, e, odd)
	if d2.DecisionID == d.DecisionID {
		t.Error("decision ids must be unique")
	}
}

func TestDecisionCarriesNoSecrets(t *testing.T) {
	e := newEngine(t, `{}`)
	in := input("unknown", "s")
	in.Reason = "401 Unauthorized: invalid api key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234"
	in.Evidence[0].Reason = "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijk " + strings.Repeat("x", 5000)
	d := decide(t, e, in)
	raw, _ := d.JSON()
	for _, secret := range []string{"sk-proj-AbCdEf", "eyJhbGciOiJIUzI1NiJ9"} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("decision leaks %q: %s", secret, raw)
		}
	}
	if len(d.Evidence[0].Reason) > 600 {
		t.Errorf("evidence reason not truncated: %d bytes", len(d.Evidence[0].Reason))
	}
	if !strings.Contains(d.Action.Reason, "401 Unauthorized") {
		t.Errorf("the classifier's reason should reach the escalation: %q", d.Action.Reason)
	}
	// The caller's evidence is left as it was (the redacted evidence is a
	// copy), and no evidence is an empty list in the document.
	if !strings.HasPrefix(in.Evidence[0].Reason, "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9") {
		t.Errorf("the input's evidence was written: %.80q", in.Evidence[0].Reason)
	}
	in.Evidence = nil
	d = decide(t, e, in)
	if raw, _ := d.JSON(); !strings.Contains(string(raw), `"evidence":[]`) {
		t.Errorf("no evidence: %s", raw)
	}
}

// pageOnCall is a strategy written outside the package: the extension point.
type pageOnCall struct{}

func (pageOnCall) Kind() string     { return "page_on_call" }
func (pageOnCall) MaxAttempts() int { return 2 }
func (pageOnCall) Decide(ctx context.Context, env *Env, path string, attempt int) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return Result{Action: Action{Kind: ActionSuspend, Reason: "paging on-call for " + env.Tool + " (" + string(env.FailureType) + ")"},
		Path: path, Leaf: "page_on_call", Attempt: attempt, MaxAttempts: 2}, nil
}

func TestWithStrategyReplacesAnEntry(t *testing.T) {
	e := newEngine(t, "", WithStrategy("timeout", pageOnCall{}))
	in := input("timeout", "s-ext")
	for i := 1; i <= 2; i++ {
		d := decide(t, e, in)
		if d.Action.Kind != ActionSuspend || d.Policy != "timeout:page_on_call" || d.Attempt != i || d.MaxAttempts != 2 ||
			d.Action.Reason != "paging on-call for payments (timeout)" {
			t.Fatalf("failure %d: %+v", i, d)
		}
	}
	if d := decide(t, e, in); d.Action.Kind != ActionEscalate || d.Policy != "timeout:exhausted" {
		t.Fatalf("past its budget: %+v", d)
	}
	// Other entries keep the configured policy.
	if d := decide(t, e, input("loop_detected", "s-ext")); d.Action.Kind != ActionReplan {
		t.Fatalf("loop_detected: %+v", d)
	}
	// The context reaches the strategy.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Decide(ctx, input("timeout", "s-cancelled")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}

// The engine owns the decision document's guarantee: text from the policy
// (hints, targets) passes the redactor like text from the run.
func TestPolicyTextIsRedacted(t *testing.T) {
	e := newEngine(t, `
policy:
  timeout: {kind: fallback, target: "model:x?key=sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234", hint: "retry with password=hunter2hunter2"}
`)
	d := decide(t, e, input("timeout", "s"))
	raw, _ := d.JSON()
	for _, secret := range []string{"sk-proj-AbCdEf", "hunter2hunter2"} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("decision leaks %q: %s", secret, raw)
		}
	}
	if !strings.HasPrefix(d.Action.Target, "model:x") || !strings.HasPrefix(d.Action.Hint, "retry with") {
		t.Errorf("the rest of the text is kept: %+v", d.Action)
	}
}

// The document's own strings, cut from one, are what the ids' String, the
// concatenation of the policy and time.Format write.
func TestDocumentStrings(t *testing.T) {
	ids := []uuid.UUID{{}, uuid.MustParse("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"), {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	traces := []pcommon.TraceID{{}, {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}, {15: 1}}
	spans := []pcommon.SpanID{{}, {0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}, {7: 0xff}}
	times := []time.Time{time.Unix(0, 0), time.Unix(1_800_000_000, 123_456_789), time.Unix(1_800_000_000, 120_000_000).In(time.FixedZone("x", 3600)),
		time.Date(12345, 1, 2, 3, 4, 5, 6, time.UTC), time.Date(-5, 1, 2, 3, 4, 5, 0, time.UTC)}
	policies := [][2]string{{"", ""}, {"timeout", "exhausted"}, {"external_fault.steps[1]", "replan"}}
	for _, id := range ids {
		for _, tr := range traces {
			for _, sp := range spans {
				for _, now := range times {
					for _, pl := range policies {
						got := newDocumentStrings(id, tr, sp, pl[0], pl[1], now)
						want := documentStrings{id: id.String(), trace: tr.String(), span: sp.String(), policy: pl[0] + ":" + pl[1], time: now.UTC().Format(time.RFC3339Nano)}
						if got != want {
							t.Fatalf("newDocumentStrings = %+v, want %+v", got, want)
						}
					}
				}
			}
		}
	}
}

// A trace's own session id is "trace:" and its id in hex.
func TestTraceSession(t *testing.T) {
	for _, id := range []pcommon.TraceID{{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}, {15: 1}} {
		if got, want := traceSession(id), "trace:"+id.String(); got != want {
			t.Errorf("traceSession = %q, want %q", got, want)
		}
	}
}

// TestRFC3339NanoUTCMatchesFormat holds the decision time's writer to
// time.Time.AppendFormat with time.RFC3339Nano in UTC: the years it
// writes itself and those it leaves to AppendFormat, every digit count of
// the fraction, and times of other zones.
func TestRFC3339NanoUTCMatchesFormat(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	var ts []time.Time
	for _, y := range []int{-1, 0, 1, 9, 99, 999, 1970, 2000, 2024, 2026, 9999, 10000} {
		for _, ns := range []int{0, 1, 10, 100, 120_000_000, 123_456_789, 999_999_999, 500_000_000, 1000} {
			ts = append(ts, time.Date(y, time.February, 28, 23, 59, 59, ns, time.UTC), time.Date(y, time.December, 31, 0, 0, 0, ns, east))
		}
	}
	for i := int64(0); i < 2000; i++ {
		ts = append(ts, time.Unix(1_700_000_000+i*7_919_731, i*123_457%1_000_000_000), time.Unix(-i*86_399_999, i*77_777))
	}
	ts = append(ts, time.Now(), time.Time{})
	for _, tm := range ts {
		want := tm.UTC().AppendFormat(nil, time.RFC3339Nano)
		// Twice: the second writes from the text kept of its second.
		for range 2 {
			if got := appendRFC3339NanoUTC(nil, tm); !bytes.Equal(got, want) {
				t.Fatalf("%v: got %s, want %s", tm, got, want)
			}
		}
		// Another time of the same second.
		later := tm.Add(time.Duration(999_999_999 - tm.Nanosecond()))
		if got, want := appendRFC3339NanoUTC(nil, later), later.UTC().AppendFormat(nil, time.RFC3339Nano); !bytes.Equal(got, want) {
			t.Fatalf("%v: got %s, want %s", later, got, want)
		}
	}
}
