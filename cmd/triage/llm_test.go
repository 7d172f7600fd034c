package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/internal/evalset"
	"github.com/triage-otel/triage/internal/llmtest"
)

// modelServer answers every request with answer.
func newModelServer(t *testing.T, answer string) *llmtest.Server {
	return llmtest.New(t, llmtest.Always(answer))
}

// unknownTrace writes a trace whose run fails with an error no rule
// places, and returns its path and trace id.
func unknownTrace(t *testing.T, msg string) (string, string) {
	t.Helper()
	td := evalset.CorpusTrace(evalset.CorpusEntry{ExceptionType: "AgentError", Error: msg, Label: "wrong_tool_called"}, t.Name()+msg)
	var m ptrace.JSONMarshaler
	raw, err := m.MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String()
}

const noHandler = "dispatcher has no handler registered under the name frob"

func TestClassifyWithModel(t *testing.T) {
	srv := newModelServer(t, `{"failure_type":"wrong_tool_called","confidence":0.92,"evidence":"no handler registered under the name frob"}`)
	path, _ := unknownTrace(t, noHandler)

	// Without a model: unknown, and no model field.
	code, out, errOut := runCLI("classify", path)
	if code != 0 || !strings.Contains(out, `"failure_type":"unknown"`) || strings.Contains(out, `"model"`) {
		t.Fatalf("without model: exit %d %s %s", code, out, errOut)
	}
	code, out, errOut = runCLI("classify", "--llm-endpoint", srv.Endpoint(), "--llm-model", "m1", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var line struct {
		FailureType string  `json:"failure_type"`
		Signal      string  `json:"signal"`
		Rule        string  `json:"rule"`
		Confidence  float64 `json:"confidence"`
		Model       struct {
			Outcome   string `json:"outcome"`
			Signature string `json:"signature"`
		} `json:"model"`
	}
	if err := json.Unmarshal([]byte(out), &line); err != nil {
		t.Fatal(err)
	}
	if line.FailureType != "wrong_tool_called" || line.Signal != "llm" || line.Rule != "m1" || line.Confidence != 0.6 ||
		line.Model.Outcome != "accepted" || !strings.HasPrefix(line.Model.Signature, "sig1:") {
		t.Fatalf("line %s", out)
	}
	if srv.Calls() != 1 {
		t.Errorf("calls %d", srv.Calls())
	}
}

func TestClassifyModelFromEnvironment(t *testing.T) {
	srv := newModelServer(t, `{"failure_type":"timeout","confidence":0.95,"evidence":"a quote that is nowhere"}`)
	path, _ := unknownTrace(t, noHandler+" (token=ghp_abcdefghijklmnopqrstuvwxyz0123456789)")
	t.Setenv(envLLMBaseURL, srv.Endpoint())
	t.Setenv(envLLMModel, "env-model")
	t.Setenv(envLLMAPIKey, "sk-env-key-0123456789abcdef")
	code, out, errOut := runCLI("classify", "--explain", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	mustHave(t, out, "model env-model: signature sig1:", "sent (redacted):", "| ERROR EVIDENCE", "no handler registered under the name frob",
		"[REDACTED]", `answer (1 attempt(s)`, "gates: rejected by evidence", "the run stays unknown", "verdict: failed, unknown")
	// The trajectory dump shows the user's own file; what was sent, and
	// what the model section shows, hold no secret.
	modelPart := out[strings.Index(out, "model env-model"):]
	if strings.Contains(modelPart, "ghp_abcdefghijklmnopqrstuvwxyz0123456789") || strings.Contains(srv.Requests()[0].User(), "ghp_abcdefghijklmnopqrstuvwxyz0123456789") {
		t.Errorf("a secret was shown or sent:\n%s", modelPart)
	}
	if srv.Requests()[0].Authorization != "Bearer sk-env-key-0123456789abcdef" {
		t.Errorf("authorization %q", srv.Requests()[0].Authorization)
	}
}

func TestModelFlagErrors(t *testing.T) {
	path, _ := unknownTrace(t, noHandler)
	for _, args := range [][]string{
		{"classify", "--llm-model", "m", path},
		{"classify", "--llm-endpoint", "localhost:1234", "--llm-model", "m", path},
		{"classify", "--llm-endpoint", "http://127.0.0.1:1/v1", path},
		{"classify", "--corrections", "x.jsonl", path},
	} {
		if code, _, errOut := runCLI(args...); code != exitUsage || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

func TestEvalCorrections(t *testing.T) {
	path, traceID := unknownTrace(t, noHandler)
	other, _ := unknownTrace(t, "the gizmo refused to spin")
	// The signature of the first run, from classify with a model that
	// declines.
	srv := newModelServer(t, `{"failure_type":"unknown","confidence":0,"evidence":""}`)
	_, out, _ := runCLI("classify", "--llm-endpoint", srv.Endpoint(), "--llm-model", "m", path)
	var line struct {
		Model struct {
			Signature string `json:"signature"`
		} `json:"model"`
	}
	if err := json.Unmarshal([]byte(out), &line); err != nil || line.Model.Signature == "" {
		t.Fatalf("no signature: %s", out)
	}
	corrections := filepath.Join(t.TempDir(), "corrections.jsonl")
	content := fmt.Sprintf(`# corrections
{"trace_id":%q,"expected":"wrong_tool_called","note":"frob is not a tool"}
{"signature":%q,"expected":"wrong_tool_called"}
{"signature":"sig1:0000000000000000","expected":"timeout"}
`, traceID, line.Model.Signature)
	if err := os.WriteFile(corrections, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	// Scored without a model: both matching corrections fail (unknown is
	// not accepted for a label), the third matches no run.
	code, out, errOut := runCLI("eval", "--corrections", corrections, path, other)
	if code != exitFailed {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	mustHave(t, out, "corrections: 3, 2 matched a run, 2 name a signature", "wrong_tool_called   correct 0, wrong 2", "0 passed, 2 failed")
	// With a model answering right, they pass.
	right := newModelServer(t, `{"failure_type":"wrong_tool_called","confidence":0.9,"evidence":"no handler registered"}`)
	code, out, errOut = runCLI("eval", "--llm-endpoint", right.Endpoint(), "--llm-model", "m", "--corrections", corrections, path, other)
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	mustHave(t, out, "model: m", "wrong_tool_called   correct 2, wrong 0", "2 passed, 0 failed")
	// classify --corrections applies the signature override: no call.
	calls := srv.Calls()
	_, out, errOut = runCLI("classify", "--llm-endpoint", srv.Endpoint(), "--llm-model", "m", "--corrections", corrections, path)
	if !strings.Contains(out, `"failure_type":"wrong_tool_called","signal":"correction"`) || srv.Calls() != calls {
		t.Fatalf("override: %s %s", out, errOut)
	}
	// A bad line is reported with its number; eval still scores the rest.
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	_ = os.WriteFile(bad, []byte(content+`{"expected":"nonsense","trace_id":"x"}`+"\n"), 0o600)
	code, _, errOut = runCLI("eval", "--corrections", bad, path)
	if code != exitFailed || !strings.Contains(errOut, "line 5") {
		t.Fatalf("bad line: exit %d %s", code, errOut)
	}
}

func mustHave(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("missing %q in:\n%s", sub, s)
		}
	}
}
