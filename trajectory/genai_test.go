package trajectory

import (
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Tests shaped like the GenAI semantic conventions' own examples
// (semantic-conventions-genai, registry attributes and span docs, v1.41+).

// putAny sets a structured (non-string) attribute, as the conventions
// recommend for arguments, results, messages and tool definitions.
func putAny(t *testing.T, sp ptrace.Span, key string, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		if err := sp.Attributes().PutEmptyMap(key).FromRaw(x); err != nil {
			t.Fatal(err)
		}
	case []any:
		if err := sp.Attributes().PutEmptySlice(key).FromRaw(x); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("putAny %T", v)
	}
}

func TestGenAIStructuredToolCallArgumentsAndResult(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "invoke_agent weather", map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"})
	tool := s.span(2, 1, "execute_tool get_weather", map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "call_mszuSIzqtI65i1wAUOE8w5H4",
	})
	putAny(t, tool, "gen_ai.tool.call.arguments", map[string]any{"location": "San Francisco?", "date": "2025-10-01"})
	putAny(t, tool, "gen_ai.tool.call.result", map[string]any{"temperature_range": map[string]any{"high": 75, "low": 60}, "conditions": "sunny"})
	r := Build(s.td)[0]
	eq(t, "steps", stepKinds(&r), "tool")
	st := &r.Steps[0]
	eqJSON(t, "arguments", st.Arguments, `{"location":"San Francisco?","date":"2025-10-01"}`)
	eqJSON(t, "result", st.Result, `{"temperature_range":{"high":75,"low":60},"conditions":"sunny"}`)
	eq(t, "call id", st.ToolCallID, "call_mszuSIzqtI65i1wAUOE8w5H4")
	eq(t, "failed", st.Failed(), false)

	// A structured CallToolResult that says isError.
	s = newSynth("svc")
	tool = s.span(1, 0, "execute_tool book", map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "book"})
	putAny(t, tool, "gen_ai.tool.call.result", map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "no seats left"}}})
	r = Build(s.td)[0]
	eq(t, "isError result", r.Steps[0].ResultIsError, true)
}

func TestGenAIStructuredMessagesAndAgentToolDefinitions(t *testing.T) {
	s := newSynth("svc")
	agent := s.span(1, 0, "invoke_agent Math Tutor", map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Math Tutor", "gen_ai.provider.name": "openai"})
	putAny(t, agent, "gen_ai.tool.definitions", []any{map[string]any{
		"type": "function", "name": "get_current_weather", "description": "Get the current weather in a given location",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{
			"location": map[string]any{"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
			"unit":     map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}},
		}, "required": []any{"location", "unit"}},
	}})
	chat := s.span(2, 1, "chat gpt-4", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4"})
	putAny(t, chat, "gen_ai.input.messages", []any{
		map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "content": "Weather in Paris?"}}},
		map[string]any{"role": "assistant", "parts": []any{map[string]any{"type": "tool_call", "id": "call_VSPygqKTWdrhaFErNvMV18Yl", "name": "get_weather", "arguments": map[string]any{"location": "Paris"}}}},
		map[string]any{"role": "tool", "parts": []any{map[string]any{"type": "tool_call_response", "id": " call_VSPygqKTWdrhaFErNvMV18Yl", "result": "rainy, 57°F"}}},
	})
	putAny(t, chat, "gen_ai.output.messages", []any{
		map[string]any{"role": "assistant", "parts": []any{map[string]any{"type": "text", "content": "The weather in Paris is currently rainy with a temperature of 57°F."}}, "finish_reason": "stop"},
	})
	r := Build(s.td)[0]
	eq(t, "steps", stepKinds(&r), "llm")
	st := &r.Steps[0]
	eq(t, "offered from the invoke_agent span", strings.Join(offeredNames(st), ","), "get_current_weather")
	if len(st.Offered) == 1 && !strings.Contains(string(st.Offered[0].Schema), `"required"`) {
		t.Errorf("schema %s", st.Offered[0].Schema)
	}
	if len(st.InputResults) != 1 || st.InputResults[0].Content != "rainy, 57°F" || st.InputResults[0].Name != "get_weather" {
		t.Errorf("input results %+v", st.InputResults)
	}
	eq(t, "output", st.OutputText, "The weather in Paris is currently rainy with a temperature of 57°F.")
	eq(t, "finish", strings.Join(st.FinishReasons, ","), "stop")
	eq(t, "provider", st.Provider, "openai")
	eq(t, "agent", r.Agent, "Math Tutor")
}

func TestGenAIProviderAndDeprecatedSystem(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "chat claude", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.system": "legacy"})
	s.span(2, 0, "chat gemini", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.system": "gcp.gemini"})
	runs := Build(s.td)
	if len(runs) != 2 {
		t.Fatalf("want 2 runs, got %d", len(runs))
	}
	eq(t, "provider.name wins", runs[0].Steps[0].Provider, "anthropic")
	eq(t, "deprecated gen_ai.system", runs[1].Steps[0].Provider, "gcp.gemini")
}

// invoke_workflow groups agents (one run each); plan wraps the model call
// that makes the plan; create_agent and memory operations are not steps,
// and their errors are the run's span errors.
func TestGenAIAgentOperations(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "invoke_workflow customer_support_pipeline", map[string]any{"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": "customer_support_pipeline"})
	s.span(2, 1, "create_agent triage", map[string]any{"gen_ai.operation.name": "create_agent", "gen_ai.agent.name": "triage"})
	s.span(3, 1, "invoke_agent triage", map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage"})
	s.span(4, 3, "plan triage", map[string]any{"gen_ai.operation.name": "plan", "gen_ai.agent.name": "triage"})
	s.span(5, 4, "chat m", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": []string{"stop"}})
	fail(s.span(6, 3, "search_memory prefs", map[string]any{"gen_ai.operation.name": "search_memory", "gen_ai.memory.store.id": "ms_abc123", "error.type": "timeout"}), "memory store timed out")
	s.span(7, 1, "invoke_agent resolver", map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "resolver"})
	s.span(8, 7, "execute_tool refund", map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "refund"})
	s.span(9, 7, "upsert_memory notes", map[string]any{"gen_ai.operation.name": "upsert_memory", "gen_ai.memory.record.count": 1})
	runs := Build(s.td)
	if len(runs) != 2 {
		t.Fatalf("want one run per agent of the workflow, got %d", len(runs))
	}
	var triage, resolver *Run
	for i := range runs {
		switch runs[i].Agent {
		case "triage":
			triage = &runs[i]
		case "resolver":
			resolver = &runs[i]
		}
	}
	if triage == nil || resolver == nil {
		t.Fatalf("agents %q, %q", runs[0].Agent, runs[1].Agent)
	}
	eq(t, "triage steps: the plan's model call only", stepKinds(triage), "llm")
	if len(triage.SpanErrors) != 1 || triage.SpanErrors[0].SpanID != sid(6) || triage.SpanErrors[0].Errors[0].Type != "timeout" {
		t.Errorf("span errors %+v", triage.SpanErrors)
	}
	eq(t, "resolver steps", stepKinds(resolver), "tool")
	eq(t, "resolver has no errors", len(resolver.SpanErrors), 0)
}

// Message content recorded as span events: the per-message events with
// their body in gen_ai.event.content, or as the event's attributes.
func TestGenAIMessageSpanEvents(t *testing.T) {
	s := newSynth("svc")
	chat := s.span(1, 0, "chat m", map[string]any{"gen_ai.operation.name": "chat"})
	add := func(name string, attrs map[string]any) {
		ev := chat.Events().AppendEmpty()
		ev.SetName(name)
		if err := ev.Attributes().FromRaw(attrs); err != nil {
			t.Fatal(err)
		}
	}
	add("gen_ai.user.message", map[string]any{attrEventContent: `{"content":"Cancel order 42"}`})
	add("gen_ai.assistant.message", map[string]any{attrEventContent: `{"tool_calls":[{"id":"c7","type":"function","function":{"name":"cancel_order","arguments":"{\"id\":42}"}}]}`})
	add("gen_ai.tool.message", map[string]any{"id": "c7", "content": "Error: order 42 is already shipped"})
	add("gen_ai.choice", map[string]any{attrEventContent: `{"index":0,"finish_reason":"stop","message":{"content":"It has shipped; I cannot cancel it."}}`})
	r := Build(s.td)[0]
	st := &r.Steps[0]
	if len(st.InputResults) != 1 || st.InputResults[0].CallID != "c7" || st.InputResults[0].Name != "cancel_order" ||
		st.InputResults[0].Content != "Error: order 42 is already shipped" {
		t.Errorf("input results %+v", st.InputResults)
	}
	eq(t, "output", st.OutputText, "It has shipped; I cannot cancel it.")
	eq(t, "finish", strings.Join(st.FinishReasons, ","), "stop")

	// Attributes on the span win over its events.
	s = newSynth("svc")
	chat = s.span(1, 0, "chat m", map[string]any{"gen_ai.operation.name": "chat",
		"gen_ai.output.messages": `[{"role":"assistant","parts":[{"type":"text","content":"from the span"}]}]`})
	ev := chat.Events().AppendEmpty()
	ev.SetName("gen_ai.choice")
	ev.Attributes().PutStr(attrEventContent, `{"message":{"content":"from the event"}}`)
	eq(t, "span content wins", Build(s.td)[0].Steps[0].OutputText, "from the span")
}

// MCP: a CallToolResult with isError gives error.type tool_error; a
// JSON-RPC error gives its code.
func TestMCPToolErrorConvention(t *testing.T) {
	s := newSynth("svc")
	fail(s.span(1, 0, "tools/call get-weather", map[string]any{
		"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get-weather",
		"jsonrpc.request.id": "5", "error.type": "tool_error", "mcp.session.id": "191c4850af6c49e08843a3f6c80e5046",
	}), "")
	fail(s.span(2, 0, "tools/call get-forecast", map[string]any{
		"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get-forecast",
		"error.type": "-32602", "rpc.response.status_code": "-32602",
	}), "Unknown tool: get-forecast")
	runs := Build(s.td)
	if len(runs) != 2 {
		t.Fatalf("want 2 runs, got %d", len(runs))
	}
	a, b := &runs[0].Steps[0], &runs[1].Steps[0]
	eq(t, "convention", a.Convention, ConventionMCP)
	eq(t, "tool_error is an error result", a.ResultIsError, true)
	eq(t, "tool", a.ToolName, "get-weather")
	eq(t, "jsonrpc", b.JSONRPCCode, -32602)
	eq(t, "has jsonrpc", b.HasJSONRPC, true)
	eq(t, "tool_error carries no code", a.HasJSONRPC, false)
}
