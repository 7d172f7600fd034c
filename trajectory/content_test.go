package trajectory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunContent(t *testing.T) {
	agent := map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}
	chat := func(extra map[string]any) map[string]any {
		m := map[string]any{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.response.finish_reasons": []string{"stop"}}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tool := func(extra map[string]any) map[string]any {
		m := map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": "c1"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name  string
		spans []map[string]any // children of the agent span
		want  Content
	}{
		{"structure only", []map[string]any{chat(nil), tool(nil), chat(nil)}, ContentAbsent},
		{"token counts and roles are not content", []map[string]any{{
			"openinference.span.kind":                                            "LLM",
			"llm.token_count.prompt":                                             12,
			"llm.input_messages.0.message.role":                                  "user",
			"llm.output_messages.0.message.role":                                 "assistant",
			"llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup",
		}}, ContentAbsent},
		{"redaction placeholders are not content", []map[string]any{
			{"openinference.span.kind": "LLM", "input.value": "__REDACTED__", "output.value": "__REDACTED__"},
			{"openinference.span.kind": "TOOL", "tool.name": "lookup", "input.value": "__REDACTED__", "output.value": "__REDACTED__"},
		}, ContentAbsent},
		{"model input messages", []map[string]any{chat(map[string]any{"gen_ai.input.messages": `[{"role":"user","parts":[{"type":"text","content":"hi"}]}]`})}, ContentPresent},
		{"opt-in tool arguments", []map[string]any{chat(nil), tool(map[string]any{"gen_ai.tool.call.arguments": `{"q":"x"}`})}, ContentPresent},
		{"flattened message text", []map[string]any{{"openinference.span.kind": "LLM", "llm.input_messages.0.message.content": "hi"}}, ContentPresent},
		{"legacy traceloop completion", []map[string]any{{"llm.request.type": "chat", "gen_ai.completion.0.content": "hello"}}, ContentPresent},
		{"entity input", []map[string]any{{"traceloop.span.kind": "tool", "traceloop.entity.name": "lookup", "traceloop.entity.input": `{"q":"x"}`}}, ContentPresent},
		{"mastra input", []map[string]any{{"mastra.span.type": "model_generation", "input": `{"messages":[]}`}}, ContentPresent},
		{"a bare input attribute outside Mastra", []map[string]any{chat(map[string]any{"input": "x"})}, ContentAbsent},
		{"empty content attribute", []map[string]any{chat(map[string]any{"gen_ai.output.messages": " "})}, ContentAbsent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSynth("svc")
			s.span(1, 0, "invoke_agent a", agent)
			for i, a := range tt.spans {
				s.span(uint64(i+2), 1, "child", a)
			}
			runs := Build(s.td)
			if len(runs) != 1 {
				t.Fatalf("want 1 run, got %d", len(runs))
			}
			if got := runs[0].Content; got != tt.want {
				t.Errorf("Content = %q, want %q", got, tt.want)
			}
		})
	}
}

// Content on a span event (the GenAI inference-details event) counts.
func TestRunContentOnEvent(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "invoke_agent a", map[string]any{"gen_ai.operation.name": "invoke_agent"})
	sp := s.span(2, 1, "chat m", map[string]any{"gen_ai.operation.name": "chat"})
	ev := sp.Events().AppendEmpty()
	ev.SetName("gen_ai.client.inference.operation.details")
	ev.Attributes().PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"ok"}]}]`)
	if got := Build(s.td)[0].Content; got != ContentPresent {
		t.Errorf("Content = %q, want present", got)
	}
}

// On the real captures, Run.Content follows each instrumentation's content
// setting (harness/README.md): every run of the content-on set records
// content (with its log events joined); with each instrumentation's default
// only OTel's and EDOT's OpenAI instrumentations leave it out; with the
// switch off, only the instrumentations that ignore it (OpenLLMetry's
// LangChain and MCP instrumentations, its LlamaIndex agent span) or have
// none (Mastra) still record some.
func TestRunContentOnCaptures(t *testing.T) {
	defaultOff := map[string]bool{"openai-otel": true, "openai-edot": true}
	offKeeps := map[string]bool{"langgraph-openllmetry": true, "llamaindex-openllmetry": true, "mastra": true, "mcp-openllmetry": true}
	sets := []struct {
		dir  string
		want func(stack string) Content
	}{
		{fixturesDir, func(string) Content { return ContentPresent }},
		{filepath.Join("..", "testdata", "frameworks-content-default"), func(s string) Content {
			if defaultOff[s] {
				return ContentAbsent
			}
			return ContentPresent
		}},
		{filepath.Join("..", "testdata", "frameworks-content-off"), func(s string) Content {
			if offKeeps[s] {
				return ContentPresent
			}
			return ContentAbsent
		}},
	}
	for _, set := range sets {
		files, err := filepath.Glob(filepath.Join(set.dir, "*", "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Logf("%s: no captures", set.dir)
			continue
		}
		runs := 0
		for _, f := range files {
			if strings.HasSuffix(f, ".logs.json") {
				continue
			}
			var opts []Option
			if logs := strings.TrimSuffix(f, ".json") + ".logs.json"; fileExists(logs) {
				opts = append(opts, WithLogs(loadLogsFixture(t, logs)))
			}
			stack := filepath.Base(filepath.Dir(f))
			for _, r := range Build(loadFixture(t, f), opts...) {
				runs++
				if want := set.want(stack); r.Content != want {
					t.Errorf("%s: run %s content %q, want %q", f, r.RootSpanID, r.Content, want)
				}
			}
		}
		if runs == 0 {
			t.Errorf("%s: no runs built", set.dir)
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
