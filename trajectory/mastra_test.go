package trajectory

import (
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// span times for hand-built Mastra trees: [start, end] in µs from 0.
func at(sp ptrace.Span, start, end uint64) ptrace.Span {
	sp.SetStartTimestamp(pcommon.Timestamp(start * 1000))
	sp.SetEndTimestamp(pcommon.Timestamp(end * 1000))
	return sp
}

// A Mastra agent call shaped like @mastra/otel-exporter 0.x exports it, in
// an inventory domain: the model asks for a tool, the tool span runs
// inside the step span, the next step answers.
func mastraInventoryRun(s *synth) {
	at(s.span(1, 0, "agent.stock-keeper", map[string]any{
		mastraSpanTypeKey: "agent_run", "gen_ai.operation.name": "agent.run", "gen_ai.agent.id": "stock-keeper",
	}), 0, 1000)
	at(s.span(2, 1, "chat some-model", map[string]any{
		mastraSpanTypeKey: "model_generation", "gen_ai.operation.name": "chat", "gen_ai.request.model": "some-model",
		"gen_ai.response.finish_reasons": "stop",
	}), 10, 990)
	at(s.span(3, 2, "step: 0", map[string]any{
		mastraSpanTypeKey: "model_step", "gen_ai.operation.name": "model.step", "modelId": "some-model",
		"output": `{"text":"","toolCalls":[{"toolCallId":"c1","toolName":"reserve_stock","args":{"sku":"A-1","qty":2}}]}`,
		"body":   `{"id":"x","choices":[{"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":40,"completion_tokens":9},"extra":"…[truncated]`,
	}), 20, 400)
	at(s.span(4, 3, "chunk: 'tool-call'", map[string]any{
		mastraSpanTypeKey: "model_chunk", "output": `{"toolName":"reserve_stock","toolCallId":"c1","toolInput":{"sku":"A-1","qty":2}}`,
	}), 100, 101)
	at(s.span(5, 3, "tool.execute reserve_stock", map[string]any{
		mastraSpanTypeKey: "tool_call", "gen_ai.operation.name": "tool.execute", "gen_ai.tool.name": "reserve_stock",
		"input": `{"sku":"A-1","qty":2}`, "output": `{"reserved":2}`,
	}), 120, 300)
	at(s.span(6, 3, "chunk: 'tool-result'", map[string]any{
		mastraSpanTypeKey: "model_chunk", "output": `{"toolCallId":"c1","toolName":"reserve_stock","args":{"sku":"A-1","qty":2},"result":{"reserved":2}}`,
	}), 310, 310)
	at(s.span(7, 2, "step: 1", map[string]any{
		mastraSpanTypeKey: "model_step", "output": `{"text":"Two units reserved.","toolCalls":[]}`,
	}), 500, 900)
}

func TestMastraAgentRun(t *testing.T) {
	s := newSynth("inventory")
	mastraInventoryRun(s)
	runs := Build(s.td)
	if len(runs) != 1 {
		t.Fatalf("want 1 run, got %d", len(runs))
	}
	r := runs[0]
	// The model generation is the loop, not a model call: one step per
	// model_step, and the tool between them although its span ends before
	// the step span that encloses it.
	eq(t, "steps", stepKinds(&r), "llm,tool,llm")
	llm0, tool, llm1 := &r.Steps[0], &r.Steps[1], &r.Steps[2]
	eq(t, "convention", llm0.Convention, ConventionMastra)
	eq(t, "model", llm0.Model, "some-model")
	eq(t, "requested", len(llm0.Requested), 1) // the tool-call chunk repeats the step's call
	eq(t, "requested name", llm0.Requested[0].Name, "reserve_stock")
	eqJSON(t, "requested args", llm0.Requested[0].Arguments, `{"sku":"A-1","qty":2}`)
	eq(t, "finish reason from the response body", strings.Join(llm0.FinishReasons, ","), "tool_calls")
	eq(t, "input tokens from the response body", llm0.InputTokens, int64(40))
	eq(t, "output tokens", llm0.OutputTokens, int64(9))
	eq(t, "result chunk", len(llm0.ToolResults), 1)
	eq(t, "result chunk id", llm0.ToolResults[0].CallID, "c1")
	eqJSON(t, "result chunk content", llm0.ToolResults[0].Content, `{"reserved":2}`)
	eq(t, "tool", tool.ToolName, "reserve_stock")
	eq(t, "tool call id linked from the request", tool.ToolCallID, "c1")
	eqJSON(t, "tool args", tool.Arguments, `{"sku":"A-1","qty":2}`)
	eqJSON(t, "tool result", tool.Result, `{"reserved":2}`)
	eq(t, "answer", llm1.OutputText, "Two units reserved.")
	eq(t, "run finish reason from the model generation", r.FinishReason, "stop")
	eq(t, "agent", r.Agent, "stock-keeper")
	eq(t, "nothing failed", llm0.Failed() || tool.Failed() || llm1.Failed(), false)
}

// A failed model call leaves every span OK: the error is a chunk.
func TestMastraErrorChunkFailsItsStep(t *testing.T) {
	s := newSynth("svc")
	at(s.span(1, 0, "agent.a", map[string]any{mastraSpanTypeKey: "agent_run"}), 0, 100)
	at(s.span(2, 1, "chat m", map[string]any{mastraSpanTypeKey: "model_generation", "gen_ai.response.finish_reasons": "error"}), 1, 99)
	step := at(s.span(3, 2, "step: 0", map[string]any{mastraSpanTypeKey: "model_step", "output": `{"text":"","toolCalls":[]}`}), 2, 90)
	step.Status().SetCode(ptrace.StatusCodeOk)
	at(s.span(4, 3, "chunk: 'error'", map[string]any{
		mastraSpanTypeKey: "model_chunk",
		"output":          `{"type":"error","error":{"name":"AI_APICallError","message":"Service temporarily unavailable, retry later"}}`,
	}), 80, 80)
	r := Build(s.td)[0]
	eq(t, "steps", stepKinds(&r), "llm")
	st := &r.Steps[0]
	eq(t, "failed", st.Failed(), true)
	if len(st.Errors) != 1 || st.Errors[0].Type != "AI_APICallError" || !strings.Contains(st.Errors[0].Message, "temporarily unavailable") {
		t.Errorf("errors = %+v", st.Errors)
	}
	eq(t, "run finish reason", r.FinishReason, "error")
}

// When the agent call throws, Mastra never ends the step and the agent
// spans: only chunks arrive, with a parent that is not in the export.
// They make one model step of their own.
func TestMastraOrphanChunksFormAStep(t *testing.T) {
	s := newSynth("svc")
	at(s.span(10, 99, "chunk: 'tool-call'", map[string]any{
		mastraSpanTypeKey: "model_chunk", "output": `{"toolName":"cancel_order","toolCallId":"k9","toolInput":{"order":"77"}}`,
	}), 5, 6)
	at(s.span(11, 99, "chunk: 'error'", map[string]any{
		mastraSpanTypeKey: "model_chunk", "output": `{"error":{"name":"Error","message":"Tool cancel_order not found\n    at Object.execute (file:///x.js:1:2)"}}`,
	}), 7, 7)
	runs := Build(s.td)
	if len(runs) != 1 {
		t.Fatalf("want 1 run, got %d", len(runs))
	}
	r := runs[0]
	eq(t, "root found", r.RootFound, false)
	eq(t, "steps", stepKinds(&r), "llm")
	st := &r.Steps[0]
	eq(t, "requested", len(st.Requested), 1)
	eq(t, "requested name", st.Requested[0].Name, "cancel_order")
	eq(t, "failed", st.Failed(), true)
	eq(t, "step span is a chunk of it", st.SpanID, sid(10))
	eq(t, "parent is the lost step", st.ParentID, sid(99))
	eq(t, "spans", len(r.SpanIDs), 2)
	if st.Start != pcommon.Timestamp(5000) || st.End != pcommon.Timestamp(7000) {
		t.Errorf("step time [%d, %d], want [5000, 7000]", st.Start, st.End)
	}
}

// 1.x exports the same tree with mastra.<type>.output and GenAI tool names.
func TestMastraV1AttributeNames(t *testing.T) {
	s := newSynth("svc")
	at(s.span(1, 0, "invoke_agent planner", map[string]any{
		mastraSpanTypeKey: "agent_run", "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner",
		"gen_ai.tool.definitions": `[{"type":"function","name":"find_slot","parameters":{"type":"object"}}]`,
	}), 0, 1000)
	at(s.span(2, 1, "chat m", map[string]any{mastraSpanTypeKey: "model_generation", "gen_ai.operation.name": "chat"}), 1, 999)
	at(s.span(3, 2, "step: 0", map[string]any{
		mastraSpanTypeKey:          "model_step",
		"mastra.model_step.output": `{"text":"","toolCalls":[{"toolCallId":"t1","toolName":"find_slot","args":{"day":"mon"}}],"finishReason":"tool-calls"}`,
	}), 2, 500)
	at(s.span(4, 3, "execute_tool find_slot", map[string]any{
		mastraSpanTypeKey: "tool_call", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "find_slot",
		"gen_ai.tool.call.id": "t1", "gen_ai.tool.call.arguments": `{"day":"mon"}`, "gen_ai.tool.call.result": `{"slots":[]}`,
	}), 100, 200)
	at(s.span(5, 3, "chunk: 'text-delta'", map[string]any{mastraSpanTypeKey: "model_chunk", "mastra.model_chunk.output": `{"text":"No"}`}), 300, 300)
	r := Build(s.td)[0]
	eq(t, "steps", stepKinds(&r), "llm,tool")
	eq(t, "finish reason from the step output", strings.Join(r.Steps[0].FinishReasons, ","), "tool-calls")
	eq(t, "text from a chunk", r.Steps[0].OutputText, "No")
	eq(t, "tool id", r.Steps[1].ToolCallID, "t1")
	eqJSON(t, "tool result", r.Steps[1].Result, `{"slots":[]}`)
	eq(t, "agent definitions offered", strings.Join(offeredNames(&r.Steps[0]), ","), "find_slot")
	eq(t, "agent", r.Agent, "planner")
}

// A tool error fed back as a result chunk, and a throwing tool span.
func TestMastraToolErrors(t *testing.T) {
	s := newSynth("svc")
	at(s.span(1, 0, "agent.a", map[string]any{mastraSpanTypeKey: "agent_run"}), 0, 100)
	at(s.span(2, 1, "chat m", map[string]any{mastraSpanTypeKey: "model_generation"}), 1, 99)
	at(s.span(3, 2, "step: 0", map[string]any{mastraSpanTypeKey: "model_step",
		"output": `{"text":"","toolCalls":[{"toolCallId":"v1","toolName":"quote","args":{"n":"many"}},{"toolCallId":"v2","toolName":"ship","args":{}}]}`}), 2, 90)
	at(s.span(4, 3, "chunk: 'tool-result'", map[string]any{mastraSpanTypeKey: "model_chunk",
		"output": `{"toolCallId":"v1","toolName":"quote","args":{"n":"many"},"result":{"error":true,"message":"Tool validation failed for quote"}}`}), 10, 10)
	tool := at(s.span(5, 3, "tool.execute ship", map[string]any{mastraSpanTypeKey: "tool_call", "gen_ai.tool.name": "ship",
		"error.type": "unknown", "error.message": "carrier API returned 503"}), 20, 30)
	tool.Status().SetCode(ptrace.StatusCodeError)
	at(s.span(6, 3, "chunk: 'tool-error'", map[string]any{mastraSpanTypeKey: "model_chunk",
		"output": `{"toolCallId":"v2","toolName":"ship","error":{"name":"Error","message":"carrier API returned 503"}}`}), 31, 31)
	r := Build(s.td)[0]
	eq(t, "steps", stepKinds(&r), "llm,tool")
	res := r.Steps[0].ToolResults
	if len(res) != 2 {
		t.Fatalf("tool results %+v", res)
	}
	eq(t, "validation result is recorded, not flagged by the reader", res[0].IsError, false)
	eq(t, "tool-error chunk", res[1].IsError, true)
	eq(t, "tool-error content", strings.Contains(res[1].Content, "503"), true)
	eq(t, "tool span failed", r.Steps[1].Failed(), true)
	eq(t, "tool status message from error.message", r.Steps[1].StatusMessage, "carrier API returned 503")
	eq(t, "the model step itself did not fail", r.Steps[0].Failed(), false)
}

// Spans without mastra.span.type are not Mastra's, whatever their scope.
func TestMastraReaderNeedsItsAttribute(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "chat", map[string]any{"gen_ai.operation.name": "chat", "output": `{"text":"hi"}`})
	r := Build(s.td)[0]
	eq(t, "steps", stepKinds(&r), "llm")
	eq(t, "convention", r.Steps[0].Convention, ConventionGenAI)
}

// TestUnpairedTextIsNotJSON: what unpairedText tells from a literal's ends
// is what unquoting and validating its text would find (not JSON), and it
// does not claim a text that is JSON or may be.
func TestUnpairedTextIsNotJSON(t *testing.T) {
	for _, c := range []struct {
		lit      string
		unpaired bool
	}{
		{`"{\"id\":\"x\",\"usage\":{\"prompt_tokens\":4},\"extra\":\"…[truncated]"`, true},
		{`"[1,2,{\"a\":3}"`, true},
		{` "{\"a\":[1]" `, true},
		{`"{\"a\":[1]}"`, false},
		{`"[{\"a\":1}]"`, false},
		{`"{\"a\":\"]\u005d"`, false}, // ends with an escape: left to the validation
		{`"\u007b\"a\":[1]"`, false},  // starts with an escape
		{`"{]"`, true},
		{`{"a":"]"}`, false},
		{`""`, false},
	} {
		if got := unpairedText(json.RawMessage(c.lit)); got != c.unpaired {
			t.Errorf("unpairedText(%s) = %v, want %v", c.lit, got, c.unpaired)
		}
		if c.unpaired {
			if _, ok := validText(rawJSONText(json.RawMessage(c.lit))); ok {
				t.Errorf("%s: unpaired, but its text is JSON", c.lit)
			}
		}
	}
}
