package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/exporter/recoverywebhookexporter"
	"github.com/triage-otel/triage/guard"
	"github.com/triage-otel/triage/recovery"
	"github.com/triage-otel/triage/wire"
)

// The decisions these tests act on are real: made by the recovery engine
// the collector runs (the processor's default policy and guard policy), encoded as the connector encodes
// them, and POSTed and signed by the recovery_webhook exporter itself.

type fixture struct {
	t      *testing.T
	secret string
	rt     *Runtime
	srv    *httptest.Server
	engine *recovery.Engine
	exp    exporter.Logs
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	f := &fixture{t: t, secret: "whsec_" + base64.StdEncoding.EncodeToString(key)}
	rt, err := New(f.secret)
	if err != nil {
		t.Fatal(err)
	}
	f.rt = rt
	f.srv = httptest.NewServer(newSidecar(rt).routes())
	t.Cleanup(f.srv.Close)
	// The engine as the processor configures it by default.
	cfg := recovery.DefaultOptions()
	cfg.GuardPolicy = guard.DefaultPolicy()
	f.engine, err = recovery.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.engine.Close() })
	f.exp = startExporter(t, f.srv.URL+"/decisions", f.secret)
	return f
}

func startExporter(t *testing.T, endpoint, secret string) exporter.Logs {
	t.Helper()
	factory := recoverywebhookexporter.NewFactory()
	cfg := factory.CreateDefaultConfig().(*recoverywebhookexporter.Config)
	cfg.ClientConfig.Endpoint = endpoint
	cfg.Secret = configopaque.String(secret)
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 50 * time.Millisecond
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	exp, err := factory.CreateLogs(context.Background(), exportertest.NewNopSettings(factory.Type()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	return exp
}

func newTraceID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// decide asks the engine; guard names the guard of an in-flight decision
// ("" for a final one), prior the in-flight decision a final one follows.
func (f *fixture) decide(trace, session, failureType, guard string, prior *recovery.Decision) recovery.Decision {
	f.t.Helper()
	var traceID pcommon.TraceID
	if _, err := hex.Decode(traceID[:], []byte(trace)); err != nil {
		f.t.Fatal(err)
	}
	spanID := pcommon.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}
	in := recovery.Input{FailureType: classifier.FailureType(failureType), Confidence: 0.9, TraceID: traceID, SpanID: spanID,
		SessionID: session, Service: "looping-agent", Agent: "travel-assistant", Tool: "get_weather",
		Evidence: []recovery.Evidence{{SpanID: spanID, Signal: "loop"}}, InFlight: prior}
	in.Phase = recovery.PhaseFinal
	if guard != "" {
		in.Phase, in.Guard = recovery.PhaseInFlight, guard
	}
	if failureType == "unknown" {
		in.Reason = "token budget exceeded: run used 51230 tokens, tokens.max_per_run is 50000"
	}
	d, err := f.engine.Decide(context.Background(), in)
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

// send delivers one decision through the webhook exporter, as the
// collector's logs pipeline does, and waits until the runtime has it.
func (f *fixture) send(d recovery.Decision) {
	f.t.Helper()
	doc, err := d.JSON()
	if err != nil {
		f.t.Fatal(err)
	}
	before := total(f.rt.Outcomes())
	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr(string(doc))
	lr.Attributes().PutStr(wire.AttrDecisionID, d.DecisionID)
	if err := f.exp.ConsumeLogs(context.Background(), ld); err != nil {
		f.t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for total(f.rt.Outcomes()) == before {
		if time.Now().After(deadline) {
			f.t.Fatalf("decision %s never reached the runtime", d.DecisionID)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func total(m map[Outcome]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// A loop caught in flight stops the running run (its context's cause is
// the decision) and plans a new attempt with the hint; the final decision
// that follows only confirms it. The session's third loop is escalated.
func TestLoopStopsTheRunThenReplans(t *testing.T) {
	f := newFixture(t)
	const session = "conv-42"
	for attempt := 1; attempt <= 3; attempt++ {
		trace := newTraceID()
		ctx, run := f.rt.Start(context.Background(), trace, session)
		inFlight := f.decide(trace, session, "loop_detected", "loop", nil)
		f.send(inFlight)

		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("attempt %d: the run's context was not cancelled", attempt)
		}
		var stopped *StoppedError
		if !errors.As(context.Cause(ctx), &stopped) || stopped.Decision.DecisionID != inFlight.DecisionID || stopped.Decision.Guard != "loop" {
			t.Fatalf("attempt %d: cause %v, want the in-flight decision %s", attempt, context.Cause(ctx), inFlight.DecisionID)
		}
		plan := Next(stopped.Decision)
		if attempt < 3 {
			if !plan.Again || plan.HandOver || plan.Hint == "" || stopped.Decision.Action.Kind != "replan" {
				t.Fatalf("attempt %d: %+v for %+v, want another attempt with a hint (replan)", attempt, plan, stopped.Decision.Action)
			}
		} else if plan.Again || !plan.HandOver || stopped.Decision.Action.Kind != "escalate" {
			t.Fatalf("attempt %d: %+v for %+v, want a hand-over (the session's loop budget is spent)", attempt, plan, stopped.Decision.Action)
		}
		run.End()

		final := f.decide(trace, session, "loop_detected", "", &inFlight)
		f.send(final)
		got, ok := run.Final()
		if !ok || got.InFlightDecisionID != inFlight.DecisionID || got.Phase != "final" {
			t.Fatalf("attempt %d: final %+v (ok %v), want one referencing %s", attempt, got, ok, inFlight.DecisionID)
		}
		if d, _ := run.Decision(); d.DecisionID != inFlight.DecisionID {
			t.Fatalf("attempt %d: the run's decision became %s, want the in-flight one", attempt, d.DecisionID)
		}
	}
	if o := f.rt.Outcomes(); o[Stopped] != 3 || o[Confirmed] != 3 || total(o) != 6 {
		t.Fatalf("outcomes %v, want 3 stopped and 3 confirmed", o)
	}
}

// A budget guard aborts: stop, no new attempt, no hand-over, the reason
// kept.
func TestBudgetAborts(t *testing.T) {
	f := newFixture(t)
	trace := newTraceID()
	ctx, run := f.rt.Start(context.Background(), trace, "conv-budget")
	defer run.End()
	f.send(f.decide(trace, "conv-budget", "unknown", "tokens", nil))
	<-ctx.Done()
	var stopped *StoppedError
	if !errors.As(context.Cause(ctx), &stopped) {
		t.Fatalf("cause %v", context.Cause(ctx))
	}
	p := Next(stopped.Decision)
	if stopped.Decision.Action.Kind != "abort" || p.Again || p.HandOver || !strings.Contains(p.Reason, "token budget") {
		t.Fatalf("%+v -> %+v, want abort with the budget's reason", stopped.Decision.Action, p)
	}
	// A second guard tripping for the stopped run changes nothing.
	f.send(f.decide(trace, "conv-budget", "loop_detected", "loop", nil))
	if d, _ := run.Decision(); d.Guard != "tokens" || f.rt.Outcomes()[Late] != 1 {
		t.Fatalf("decision %+v, outcomes %v: the first in-flight decision must stand", d, f.rt.Outcomes())
	}
}

// A final decision without an in-flight one is kept for the driver of the
// ended run (Wait), and followed: back off and retry.
func TestFinalDecisionIsFollowed(t *testing.T) {
	f := newFixture(t)
	trace := newTraceID()
	ctx, run := f.rt.Start(context.Background(), trace, "conv-final")
	run.End()
	go f.send(f.decide(trace, "conv-final", "external_fault", "", nil))
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, ok := run.Wait(wctx)
	if !ok || d.Phase != "final" || d.FailureType != "external_fault" {
		t.Fatalf("Wait: %+v %v", d, ok)
	}
	if p := Next(d); !p.Again || p.Delay <= 0 || d.Action.Kind != "retry" {
		t.Fatalf("%+v -> %+v, want a delayed retry", d.Action, p)
	}
	if !errors.Is(context.Cause(ctx), context.Canceled) {
		t.Fatalf("an ended run's context: cause %v, want plain cancellation", context.Cause(ctx))
	}
}

// A run registered by session only (its framework makes the root span) is
// found by session_id; a decision naming no run here is counted, not acted
// on.
func TestMatchBySessionAndUnmatched(t *testing.T) {
	f := newFixture(t)
	ctx, run := f.rt.Start(context.Background(), "", "conv-no-trace")
	defer run.End()
	f.send(f.decide(newTraceID(), "conv-other", "loop_detected", "loop", nil))
	if ctx.Err() != nil || f.rt.Outcomes()[Unmatched] != 1 {
		t.Fatalf("a decision for another session touched the run (outcomes %v)", f.rt.Outcomes())
	}
	f.send(f.decide(newTraceID(), "conv-no-trace", "loop_detected", "loop", nil))
	if ctx.Err() == nil || f.rt.Outcomes()[Stopped] != 1 {
		t.Fatalf("the session's run was not stopped (outcomes %v)", f.rt.Outcomes())
	}
}

// signed builds a webhook request as the exporter signs it.
func signed(t *testing.T, url, secret string, doc []byte, id string, ts time.Time) *http.Request {
	t.Helper()
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	stamp := strconv.FormatInt(ts.Unix(), 10)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(doc))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", stamp)
	req.Header.Set("webhook-signature", recoverywebhookexporter.Sign(key, id, stamp, doc))
	return req
}

func withBody(r *http.Request, body []byte) *http.Request {
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return r
}

func do(t *testing.T, req *http.Request) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Only what the exporter signed with the shared secret, recently, is acted
// on; a retry of a delivered decision is acknowledged and not acted on
// again.
func TestSignatureAndDuplicates(t *testing.T) {
	f := newFixture(t)
	trace := newTraceID()
	ctx, run := f.rt.Start(context.Background(), trace, "conv-sig")
	defer run.End()
	d := f.decide(trace, "conv-sig", "loop_detected", "loop", nil)
	doc, _ := d.JSON()
	url := f.srv.URL + "/decisions"
	now := time.Now()

	other := "whsec_" + base64.StdEncoding.EncodeToString([]byte("another-secret-another-secret!!"))
	tampered := bytes.Replace(doc, []byte(`"replan"`), []byte(`"abort"`), 1)
	bad := map[string]*http.Request{
		"another secret":   signed(t, url, other, doc, d.DecisionID, now),
		"stale timestamp":  signed(t, url, f.secret, doc, d.DecisionID, now.Add(-10*time.Minute)),
		"future timestamp": signed(t, url, f.secret, doc, d.DecisionID, now.Add(10*time.Minute)),
		"no signature": func() *http.Request {
			r := signed(t, url, f.secret, doc, d.DecisionID, now)
			r.Header.Del("webhook-signature")
			return r
		}(),
		"tampered body": func() *http.Request {
			r := signed(t, url, f.secret, doc, d.DecisionID, now)
			return withBody(r, tampered)
		}(),
		"other id, same sig": func() *http.Request {
			r := signed(t, url, f.secret, doc, d.DecisionID, now)
			r.Header.Set("webhook-id", "x")
			return r
		}(),
	}
	for name, req := range bad {
		if code := do(t, req); code != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, code)
		}
	}
	if ctx.Err() != nil || total(f.rt.Outcomes()) != 0 {
		t.Fatalf("an unverified request was acted on (outcomes %v)", f.rt.Outcomes())
	}
	if code := do(t, signed(t, url, f.secret, []byte(`{"phase":"in_flight"}`), "not-a-decision", now)); code != http.StatusBadRequest {
		t.Errorf("a signed body that is no decision: %d, want 400", code)
	}
	if code := do(t, signed(t, url, f.secret, doc, d.DecisionID, now)); code != http.StatusNoContent || ctx.Err() == nil {
		t.Fatalf("the signed decision: %d, run stopped %v", code, ctx.Err() != nil)
	}
	if code := do(t, signed(t, url, f.secret, doc, d.DecisionID, now)); code != http.StatusOK || total(f.rt.Outcomes()) != 1 {
		t.Fatalf("the retry: %d, outcomes %v: want 200 and one action", code, f.rt.Outcomes())
	}
}

// With another secret the exporter's decisions are refused (401), so the
// exporter keeps retrying them and the runtime acts on none.
func TestExporterWithAnotherSecretIsRefused(t *testing.T) {
	f := newFixture(t)
	other := startExporter(t, f.srv.URL+"/decisions", "whsec_"+base64.StdEncoding.EncodeToString([]byte("not-the-runtime-secret-32-bytes")))
	trace := newTraceID()
	ctx, run := f.rt.Start(context.Background(), trace, "conv-wrong")
	defer run.End()
	d := f.decide(trace, "conv-wrong", "loop_detected", "loop", nil)
	doc, _ := d.JSON()
	ld := plog.NewLogs()
	ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr(string(doc))
	if err := other.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // several retries at 10-50 ms
	if ctx.Err() != nil || total(f.rt.Outcomes()) != 0 {
		t.Fatalf("a decision signed with another secret was acted on (outcomes %v)", f.rt.Outcomes())
	}
}

// The sidecar's run API, as a non-Go agent uses it: register, long-poll,
// read the plan, end.
func TestSidecarAPI(t *testing.T) {
	f := newFixture(t)
	trace := newTraceID()
	post := func(body string) int {
		resp, err := http.Post(f.srv.URL+"/runs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(`{"trace_id":"xyz"}`); code != http.StatusBadRequest {
		t.Fatalf("a bad trace id: %d", code)
	}
	if code := post(`{"trace_id":"` + trace + `","session_id":"conv-sidecar"}`); code != http.StatusCreated {
		t.Fatalf("register: %d", code)
	}
	get := func(wait string) (int, map[string]json.RawMessage) {
		resp, err := http.Get(f.srv.URL + "/runs/" + trace + "?wait=" + wait)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]json.RawMessage
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	if code, _ := get("0s"); code != http.StatusNoContent {
		t.Fatalf("no decision yet: %d, want 204", code)
	}
	inFlight := f.decide(trace, "conv-sidecar", "loop_detected", "loop", nil)
	go f.send(inFlight)
	code, out := get("10s")
	var d Decision
	var p Plan
	_ = json.Unmarshal(out["decision"], &d)
	_ = json.Unmarshal(out["plan"], &p)
	if code != http.StatusOK || d.DecisionID != inFlight.DecisionID || !p.Again || p.Hint == "" {
		t.Fatalf("long-poll: %d %s", code, out)
	}
	req, _ := http.NewRequest(http.MethodDelete, f.srv.URL+"/runs/"+trace, nil)
	if code := do(t, req); code != http.StatusNoContent {
		t.Fatalf("end: %d", code)
	}
	f.send(f.decide(trace, "conv-sidecar", "loop_detected", "", &inFlight))
	_, out = get("0s")
	var final Decision
	if err := json.Unmarshal(out["final"], &final); err != nil || final.InFlightDecisionID != inFlight.DecisionID {
		t.Fatalf("after the end: %s", out)
	}
	if resp, _ := http.Get(f.srv.URL + "/runs/" + newTraceID()); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an unknown run: %d", resp.StatusCode)
	}
}

// Next covers every action kind the schema allows; a kind it does not know
// is handed over.
func TestNextCoversEveryKind(t *testing.T) {
	var schema struct {
		Properties struct {
			Action struct {
				Properties struct {
					Kind struct {
						Enum []string `json:"enum"`
					} `json:"kind"`
				} `json:"properties"`
			} `json:"action"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(recovery.DecisionSchema, &schema); err != nil {
		t.Fatal(err)
	}
	kinds := schema.Properties.Action.Properties.Kind.Enum
	if len(kinds) < 8 {
		t.Fatalf("schema kinds %v", kinds)
	}
	want := map[string]string{"retry": "again", "replan": "again", "resume": "again", "rollback": "again",
		"fallback": "again", "suspend": "hand over", "escalate": "hand over", "abort": "give up", "made-up": "hand over"}
	for _, k := range append(kinds, "made-up") {
		p := Next(Decision{Action: Action{Kind: k, Hint: "h", Subgoal: "s", CheckpointID: "c", Target: "t"}})
		got := "give up"
		switch {
		case p.Again && !p.HandOver:
			got = "again"
		case p.HandOver && !p.Again:
			got = "hand over"
		case p.Again && p.HandOver:
			got = "both"
		}
		if w, ok := want[k]; !ok || got != w {
			t.Errorf("kind %q: %s, want %q", k, got, w)
		}
	}
}

// The example's copy of the document names only fields the schema has, so
// it cannot drift from what the collector sends.
func TestDecisionFieldsAreInTheSchema(t *testing.T) {
	var schema struct {
		Properties map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(recovery.DecisionSchema, &schema); err != nil {
		t.Fatal(err)
	}
	check := func(typ reflect.Type, props map[string]json.RawMessage, where string) {
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if _, ok := props[name]; !ok {
				t.Errorf("%s.%s (json %q) is not in recovery/decision.schema.json", where, typ.Field(i).Name, name)
			}
		}
	}
	top := map[string]json.RawMessage{}
	for k := range schema.Properties {
		top[k] = nil
	}
	check(reflect.TypeFor[Decision](), top, "Decision")
	check(reflect.TypeFor[Action](), schema.Properties["action"].Properties, "Action")
}
