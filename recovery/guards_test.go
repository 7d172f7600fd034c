package recovery

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/triage-otel/triage/recovery/internal/store"
)

func TestDecisionPhaseAndVersion(t *testing.T) {
	e := newEngine(t, `{}`)
	d := decide(t, e, input("timeout", "s1"))
	if d.Version != DecisionVersion || d.Phase != PhaseFinal || d.Guard != "" || d.InFlightDecisionID != "" {
		t.Fatalf("final decision: version=%d phase=%q guard=%q in_flight=%q", d.Version, d.Phase, d.Guard, d.InFlightDecisionID)
	}
	// A guard named on a final decision is dropped: guards are in-flight only.
	in := input("timeout", "s1")
	in.Guard = "loop"
	if d := decide(t, e, in); d.Guard != "" || d.Phase != PhaseFinal {
		t.Fatalf("final with a guard: %+v", d)
	}
	raw, _ := d.JSON()
	for _, k := range []string{`"version":2`, `"phase":"final"`, `"guard":""`, `"in_flight_decision_id":""`} {
		if !strings.Contains(string(raw), k) {
			t.Errorf("document lacks %s: %s", k, raw)
		}
	}
	if err := ValidateDecisionJSON(raw); err != nil {
		t.Fatal(err)
	}
	// Version 1 documents (no phase) are not valid version 2 documents.
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	delete(m, "phase")
	old, _ := json.Marshal(m)
	if ValidateDecisionJSON(old) == nil {
		t.Error("a document without phase validates")
	}
}

const guardPolicyDoc = `
policy:
  loop_detected: {kind: replan, max_attempts: 2}
guard_policy:
  tokens: {kind: abort, reason: "token budget"}
`

// In-flight decisions take the guard's entry when it has one, else the
// entry of their failure type; the final decision of the same run and type
// reuses the in-flight attempt and answer.
func TestInFlightThenFinal(t *testing.T) {
	e := newEngine(t, guardPolicyDoc)
	in := input("loop_detected", "s1")
	in.Phase, in.Guard = PhaseInFlight, "loop"
	f := decide(t, e, in)
	if f.Phase != PhaseInFlight || f.Guard != "loop" || f.Action.Kind != ActionReplan || f.Policy != "loop_detected:replan" || f.Attempt != 1 {
		t.Fatalf("in-flight loop: %+v", f)
	}
	raw, _ := f.JSON()
	if err := ValidateDecisionJSON(raw); err != nil {
		t.Fatalf("in-flight document: %v\n%s", err, raw)
	}

	final := input("loop_detected", "s1")
	final.Confidence = 0.95
	final.InFlight = &f
	d := decide(t, e, final)
	if d.InFlightDecisionID != f.DecisionID || d.DecisionID == f.DecisionID || d.Phase != PhaseFinal || d.Guard != "" {
		t.Fatalf("final: %+v", d)
	}
	if d.Attempt != 1 || d.Action != f.Action || d.Policy != f.Policy || d.Confidence != 0.95 {
		t.Fatalf("final did not reuse the in-flight attempt and answer: %+v", d)
	}
	raw, _ = d.JSON()
	if err := ValidateDecisionJSON(raw); err != nil {
		t.Fatal(err)
	}
	// The run was counted once: the next loop of the session is attempt 2.
	if n := decide(t, e, input("loop_detected", "s1")); n.Attempt != 2 {
		t.Fatalf("next failure is attempt %d, want 2 (in-flight + final counted once)", n.Attempt)
	}

	// A final decision of another type is decided (and counted) on its own
	// but still references the in-flight one.
	in2 := input("loop_detected", "s2")
	in2.Phase, in2.Guard = PhaseInFlight, "loop"
	f2 := decide(t, e, in2)
	other := input("external_fault", "s2")
	other.InFlight = &f2
	d2 := decide(t, e, other)
	if d2.InFlightDecisionID != f2.DecisionID || d2.FailureType != "external_fault" || d2.Action.Kind != ActionRetry || d2.Attempt != 1 {
		t.Fatalf("final of another type: %+v", d2)
	}

	// Guard entries answer their guard.
	b := input("unknown", "s3")
	b.Phase, b.Guard, b.Reason = PhaseInFlight, "tokens", "run used 120 tokens, max_per_run 100"
	bd := decide(t, e, b)
	if bd.Action.Kind != ActionAbort || bd.Policy != "guard_policy.tokens:abort" || bd.Action.Reason != "token budget" {
		t.Fatalf("budget guard: %+v", bd)
	}
}

func TestGuardPolicyErrorsNameTheEntry(t *testing.T) {
	cfg := decodeConfig(t, `
guard_policy:
  loop: {kind: replann}
policy:
  non_idempotent: {kind: sequence, steps: [{kind: replan}, {kind: backoff_and_retry}]}
max_total_attempts: -1
max_recovery_duration: -1s
non_idempotent_tools: ["send_(email", ""]
`)
	err := cfg.Validate()
	if err == nil {
		t.Fatal("invalid config validated")
	}
	for _, want := range []string{
		`guard_policy.loop: unknown kind "replann"`,
		`policy.non_idempotent: kind "backoff_and_retry" retries`,
		"max_total_attempts: must not be negative",
		"max_recovery_duration: must not be negative",
		`non_idempotent_tools[0] "send_(email"`,
		"non_idempotent_tools[1]: must not be empty",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestNonIdempotentToolsAreNeverRetried(t *testing.T) {
	e := newEngine(t, `
non_idempotent_tools: ["send_email", "delete_.*"]
policy:
  external_fault: {kind: backoff_and_retry, max_attempts: 3}
`)
	cases := []struct {
		tool, hint string
		noRetry    bool
		reason     string
	}{
		{"send_email", "", true, "non_idempotent_tools: send_email"},
		{"delete_user", "", true, "non_idempotent_tools: delete_.*"},
		{"send_email_draft", "", false, ""}, // names match whole
		{"get_weather", "", false, ""},
		{"transfer_funds", "MCP annotation destructiveHint: true", true, "MCP annotation destructiveHint: true"},
	}
	for _, c := range cases {
		in := input("external_fault", "s-"+c.tool)
		in.Tool, in.NonIdempotent = c.tool, c.hint
		d := decide(t, e, in)
		if !c.noRetry {
			if d.Action.Kind != ActionRetry {
				t.Errorf("%s: %s, want retry", c.tool, d.Action.Kind)
			}
			continue
		}
		if d.Action.Kind != ActionEscalate || d.Policy != "non_idempotent:escalate" ||
			!strings.Contains(d.Action.Reason, c.reason) || !strings.Contains(d.Action.Reason, "not retried") {
			t.Errorf("%s: %+v, want escalate naming %q", c.tool, d, c.reason)
		}
	}
	// Actions that are not retries are left alone.
	in := input("loop_detected", "s-loop")
	in.Tool = "send_email"
	if d := decide(t, e, in); d.Action.Kind != ActionReplan {
		t.Errorf("replan of a non-idempotent tool changed: %+v", d)
	}
	// A configured alternative answers instead of escalate.
	alt := newEngine(t, `
non_idempotent_tools: [charge_card]
policy:
  non_idempotent: {kind: fallback, target: "tool:charge_card_idempotent", max_attempts: 1}
`)
	in = input("timeout", "s-alt")
	in.Tool = "charge_card"
	d := decide(t, alt, in)
	if d.Action.Kind != ActionFallback || d.Action.Target != "tool:charge_card_idempotent" || d.Policy != "non_idempotent:fallback" || !strings.Contains(d.Action.Reason, "charge_card is not idempotent") {
		t.Fatalf("alternative: %+v", d)
	}
	if d := decide(t, alt, in); d.Action.Kind != ActionEscalate || d.Policy != "non_idempotent:exhausted" {
		t.Fatalf("alternative past its budget: %+v", d)
	}
}

func TestSessionCaps(t *testing.T) {
	clock := newFakeClock()
	e := newEngine(t, `
max_total_attempts: 3
history: {reset_on_success: true}
`, WithClock(clock))
	types := []string{"timeout", "external_fault", "wrong_tool_called", "timeout"}
	for i, ft := range types {
		d := decide(t, e, input(ft, "caps"))
		if i < 3 && d.Policy == "max_total_attempts:escalate" {
			t.Fatalf("failure %d capped early: %+v", i+1, d)
		}
		if i == 3 && (d.Action.Kind != ActionEscalate || d.Policy != "max_total_attempts:escalate" || !strings.Contains(d.Action.Reason, "max_total_attempts 3")) {
			t.Fatalf("4th failure across types: %+v", d)
		}
	}
	// A success restarts the session, caps included.
	_ = e.RecordSuccess(context.Background(), SuccessInput{SessionID: "caps"})
	if d := decide(t, e, input("timeout", "caps")); d.Policy == "max_total_attempts:escalate" {
		t.Fatalf("after a success: %+v", d)
	}

	dur := newEngine(t, `max_recovery_duration: 10m`, WithClock(clock))
	decide(t, dur, input("timeout", "long"))
	clock.Advance(9 * time.Minute)
	if d := decide(t, dur, input("timeout", "long")); d.Action.Kind != ActionRetry {
		t.Fatalf("within the duration: %+v", d)
	}
	clock.Advance(2 * time.Minute)
	d := decide(t, dur, input("schema_mismatch", "long"))
	if d.Action.Kind != ActionEscalate || d.Policy != "max_recovery_duration:escalate" || !strings.Contains(d.Action.Reason, "11m0s") {
		t.Fatalf("past the duration: %+v", d)
	}
	raw, _ := d.JSON()
	if err := ValidateDecisionJSON(raw); err != nil {
		t.Fatal(err)
	}
}

// Two engines on one Redis (two collectors) share the caps and the usage.
func TestSessionCapsAndUsageInRedis(t *testing.T) {
	srv := startRedis(t)
	doc := "max_total_attempts: 2\nmax_recovery_duration: 1h\nhistory:\n  redis: {endpoint: \"" + srv.addr + "\", timeout: 1s}\n"
	a, b := newEngine(t, doc), newEngine(t, doc)
	decide(t, a, input("timeout", "shared"))
	decide(t, b, input("external_fault", "shared"))
	if d := decide(t, a, input("unknown", "shared")); d.Policy != "max_total_attempts:escalate" {
		t.Fatalf("third failure on the other collector: %+v", d)
	}
	if st := a.Stats(); st.Degraded != 0 {
		t.Fatalf("served from memory: %+v", st)
	}
	ctx := context.Background()
	if _, err := a.AddUsage(ctx, "shared", Usage{Tokens: 100, Cost: 0.25}); err != nil {
		t.Fatal(err)
	}
	got, err := b.AddUsage(ctx, "shared", Usage{Tokens: 50, Cost: 0.5})
	if err != nil || got.Tokens != 150 || got.Cost != 0.75 {
		t.Fatalf("usage across collectors: %+v %v", got, err)
	}
	// Usage survives the reset of the attempt history.
	_ = a.RecordSuccess(ctx, SuccessInput{SessionID: "shared"})
	if got, _ := a.AddUsage(ctx, "shared", Usage{}); got.Tokens != 150 {
		t.Fatalf("usage after a success: %+v", got)
	}
	// The first failure's time is kept in Redis.
	r := store.NewRedis(store.RedisOptions{Endpoint: srv.addr})
	defer r.Close()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	first, _ := r.Attempt(ctx, "timed", "timeout", t0)
	again, _ := r.Attempt(ctx, "timed", "schema_mismatch", t0.Add(time.Minute))
	if !first.First.Equal(t0) || !again.First.Equal(t0) || again.Total != 2 || again.Type != 1 {
		t.Fatalf("attempts %+v then %+v, want first %v", first, again, t0)
	}
}
