package evalset

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// writeTrace writes a one-trace capture; spans are (id, parent, attrs,
// error message) and end in the given order.
type mspan struct {
	id, parent byte
	name       string
	attrs      map[string]any
	errMsg     string
}

func writeTrace(t *testing.T, path, scope string, spans ...mspan) {
	t.Helper()
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	ss.Scope().SetName(scope)
	ss.Scope().SetVersion("9.9.9")
	for i, m := range spans {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{7})
		sp.SetSpanID(pcommon.SpanID{m.id})
		if m.parent != 0 {
			sp.SetParentSpanID(pcommon.SpanID{m.parent})
		}
		sp.SetName(m.name)
		sp.SetStartTimestamp(pcommon.Timestamp(1000 * (i + 1)))
		sp.SetEndTimestamp(pcommon.Timestamp(1000*(i+1) + 500))
		if err := sp.Attributes().FromRaw(m.attrs); err != nil {
			t.Fatal(err)
		}
		if m.errMsg != "" {
			sp.Status().SetCode(ptrace.StatusCodeError)
			sp.Status().SetMessage(m.errMsg)
		}
	}
	data, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSupportMatrix(t *testing.T) {
	dir := t.TempDir()
	agent := mspan{1, 0, "invoke_agent a", map[string]any{"gen_ai.operation.name": "invoke_agent"}, ""}
	// Stack "spans": tool spans with errors on them.
	writeTrace(t, filepath.Join(dir, "spans", "ok.json"), "lib-spans", agent,
		mspan{2, 1, "chat", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": []any{"tool_calls"},
			"gen_ai.output.messages": `[{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"pay","arguments":{}}]}]`}, ""},
		mspan{3, 1, "execute_tool pay", map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "pay", "gen_ai.tool.call.id": "c1"}, ""},
		mspan{4, 1, "chat", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": []any{"stop"}}, ""})
	writeTrace(t, filepath.Join(dir, "spans", "upstream.json"), "lib-spans", agent,
		mspan{2, 1, "chat", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": []any{"tool_calls"}}, ""},
		mspan{3, 1, "execute_tool pay", map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "pay"}, "payments API returned 503 Service Unavailable"},
		mspan{4, 1, "chat", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": []any{"stop"}}, ""})
	// Stack "textonly": no tool spans, the calls not recorded, the error
	// only as text fed back; one failure the spans do not show.
	writeTrace(t, filepath.Join(dir, "textonly", "ok.json"), "lib-text", agent,
		mspan{2, 1, "chat", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": []any{"tool_calls"}}, ""},
		mspan{3, 1, "chat", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": []any{"stop"},
			"gen_ai.input.messages": `[{"role":"assistant","parts":[{"type":"text","content":""}]},{"role":"tool","parts":[{"type":"text","content":"{\"paid\":true}"}]}]`}, ""})
	writeTrace(t, filepath.Join(dir, "textonly", "upstream.json"), "lib-text", agent,
		mspan{2, 1, "chat", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": []any{"tool_calls"}}, ""},
		mspan{3, 1, "chat", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": []any{"stop"}}, ""})
	if err := os.WriteFile(filepath.Join(dir, "textonly", "empty.json"), []byte(`{"resourceSpans":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	labels := filepath.Join(dir, "labels.json")
	if err := os.WriteFile(labels, []byte(`[
		{"framework":"spans","scenario":"ok","label":"none","capture_file":"spans/ok.json"},
		{"framework":"spans","scenario":"upstream","label":"external_fault","capture_file":"spans/upstream.json"},
		{"framework":"textonly","scenario":"ok","label":"none","capture_file":"textonly/ok.json"},
		{"framework":"textonly","scenario":"upstream","label":"external_fault","capture_file":"textonly/upstream.json"},
		{"framework":"textonly","scenario":"first_call","label":"timeout","capture_file":"textonly/empty.json"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := BuildMatrix(labels, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Stacks) != 2 || m.Stacks[0].Name != "spans" || m.Stacks[1].Name != "textonly" {
		t.Fatalf("stacks %+v", m.Stacks)
	}
	if strings.Join(m.Scenarios, ",") != "ok,upstream,first_call" {
		t.Errorf("scenarios %v", m.Scenarios)
	}
	spans, text := m.Stacks[0], m.Stacks[1]
	if it := spans.Cells["upstream"]; !it.Pass || it.Predicted != "external_fault" {
		t.Errorf("spans/upstream: %+v", it)
	}
	if it := text.Cells["upstream"]; it.Pass || it.Kind != KindMissed {
		t.Errorf("textonly/upstream: %+v", it)
	}
	if strings.Join(spans.Instrumentation, ",") != "lib-spans@9.9.9" {
		t.Errorf("instrumentation %v", spans.Instrumentation)
	}
	if len(spans.Gaps) != 0 {
		t.Errorf("spans gaps %q", spans.Gaps)
	}
	gaps := strings.Join(text.Gaps, "\n")
	for _, want := range []string{"tool calls leave no span", "tool calls are not recorded", "1 of 1 failed runs show no error status",
		"1 captures hold no span", "not told apart: upstream (answered none)"} {
		if !strings.Contains(gaps, want) {
			t.Errorf("textonly gaps lack %q:\n%s", want, gaps)
		}
	}

	var b bytes.Buffer
	m.WriteMarkdown(&b)
	md := b.String()
	for _, want := range []string{
		"| scenario (label) | spans | textonly |",
		"| ok (ok) | ok | ok |",
		"| upstream (EF) | EF | ✗ ok |",
		"| first_call (TO) |  | · |",
		"| **right / scored** | 2/2 | 1/2 |",
		"- **textonly** — instrumentation (from the spans): lib-text@9.9.9.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestHarnessPackages(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "run-all.mjs"), []byte(`export const FRAMEWORKS = [
  { id: 'plain', script: 'agents/plain.mjs', convention: 'x', packages: ['fw-core', '@scope/instr'] },
  {
    id: 'ws',
    script: 'stacks/ws/agent.mjs',
    args: ['--flag'],
    packages: ['fw-core@1', 'only-root'],
  },
];`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "package-lock.json"), []byte(`{"packages":{
		"node_modules/fw-core":{"version":"2.0.0"},
		"node_modules/@scope/instr":{"version":"0.3.1"},
		"node_modules/only-root":{"version":"5.5.5"},
		"stacks/ws/node_modules/fw-core":{"version":"1.4.2"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := harnessPackages(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(got["plain"], ","); s != "fw-core@2.0.0,@scope/instr@0.3.1" {
		t.Errorf("plain: %s", s)
	}
	if s := strings.Join(got["ws"], ","); s != "fw-core@1.4.2,only-root@5.5.5" {
		t.Errorf("ws (its own copy first): %s", s)
	}
	if _, err := harnessPackages(t.TempDir()); err == nil {
		t.Error("no harness: no error")
	}
}
