package trajectory

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func toolMsg(name, id, status, content string) string {
	return `{"lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],"kwargs":{"status":"` + status +
		`","content":` + string(quoteJSON(content)) + `,"name":"` + name + `","tool_call_id":"` + id + `"}}`
}

func span(s *synth, id, parent uint64, name string, start, end uint64, attrs map[string]any) ptrace.Span {
	sp := s.span(id, parent, name, attrs)
	sp.SetStartTimestamp(pcommon.Timestamp(start))
	sp.SetEndTimestamp(pcommon.Timestamp(end))
	return sp
}

// LangGraph traced by OpenLLMetry: tool spans named after the tool class,
// flat under the agent; a tool's name is in its ToolMessage, and a tool that
// threw is named by the error ToolMessage of the graph node around it.
func TestLangChainToolMessagesNameTools(t *testing.T) {
	s := newSynth("svc")
	tool := func(id uint64, start, end uint64, out string) ptrace.Span {
		attrs := map[string]any{"gen_ai.operation.name": "execute_tool", "traceloop.span.kind": "task",
			"traceloop.entity.name": "DynamicStructuredTool", "traceloop.entity.input": `{"args":["{\"sku\":\"B-7\"}"]}`}
		if out != "" {
			attrs["traceloop.entity.output"] = out
		}
		return span(s, id, 1, "execute_tool DynamicStructuredTool", start, end, attrs)
	}
	node := func(id uint64, start, end uint64, msgs ...string) {
		out := `{"messages":[`
		for i, m := range msgs {
			if i > 0 {
				out += ","
			}
			out += m
		}
		span(s, id, 1, "workflow RunnableSequence", start, end, map[string]any{"traceloop.span.kind": "workflow", "traceloop.entity.output": out + `]}`})
	}
	span(s, 1, 0, "stock.agent", 0, 10_000, map[string]any{"traceloop.span.kind": "agent", "traceloop.entity.name": "stock"})
	// Node 1: two tools at once; count_stock throws, price_lookup answers.
	fail(tool(2, 1_100, 1_400, ""), "inventory backend returned 503")
	tool(3, 1_150, 1_300, toolMsg("price_lookup", "c2", "success", `{"price":4}`))
	node(4, 1_000, 1_500,
		toolMsg("count_stock", "c1", "error", "Error: inventory backend returned 503\n Please fix your mistakes."),
		toolMsg("price_lookup", "c2", "success", `{"price":4}`))
	// Node 2: the retry succeeds.
	tool(5, 2_100, 2_200, toolMsg("count_stock", "c3", "success", `{"on_hand":12}`))
	node(6, 2_000, 2_300, toolMsg("count_stock", "c3", "success", `{"on_hand":12}`))
	// The whole graph's output repeats every message.
	node(7, 500, 9_000,
		toolMsg("count_stock", "c1", "error", "Error: inventory backend returned 503\n Please fix your mistakes."),
		toolMsg("price_lookup", "c2", "success", `{"price":4}`), toolMsg("count_stock", "c3", "success", `{"on_hand":12}`))
	r := Build(s.td)[0]
	eq(t, "steps", stepKinds(&r), "tool,tool,tool")
	byID := map[pcommon.SpanID]*Step{}
	for i := range r.Steps {
		byID[r.Steps[i].SpanID] = &r.Steps[i]
	}
	failed, price, retry := byID[sid(2)], byID[sid(3)], byID[sid(5)]
	eq(t, "failed tool named by its node", failed.ToolName, "count_stock")
	eq(t, "failed tool call id", failed.ToolCallID, "c1")
	eq(t, "still failed", failed.Failed(), true)
	eq(t, "named by its own output", price.ToolName, "price_lookup")
	eq(t, "own call id", price.ToolCallID, "c2")
	eq(t, "result unwrapped", price.Result, `{"price":4}`)
	eq(t, "retry", retry.ToolName, "count_stock")

	// A failed tool outside any node that reports it keeps its span's name.
	s = newSynth("svc")
	span(s, 1, 0, "a.agent", 0, 10_000, map[string]any{"traceloop.span.kind": "agent"})
	fail(span(s, 2, 1, "execute_tool DynamicStructuredTool", 100, 200, map[string]any{"gen_ai.operation.name": "execute_tool",
		"traceloop.span.kind": "task", "traceloop.entity.name": "DynamicStructuredTool"}), "boom")
	span(s, 3, 1, "workflow RunnableSequence", 300, 400, map[string]any{"traceloop.span.kind": "workflow",
		"traceloop.entity.output": `{"messages":[` + toolMsg("other", "x9", "error", "Error: boom") + `]}`})
	r = Build(s.td)[0]
	eq(t, "not enclosed: not named", r.Steps[0].ToolName, "DynamicStructuredTool")
	eq(t, "no call id", r.Steps[0].ToolCallID, "")
}

// The chat spans record fed-back results as bare text; the node's
// ToolMessage with the same text names them.
func TestLangChainToolMessagesNameFedBackResults(t *testing.T) {
	s := newSynth("svc")
	span(s, 1, 0, "desk.agent", 0, 10_000, map[string]any{"traceloop.span.kind": "agent"})
	span(s, 2, 1, "chat m", 100, 200, map[string]any{"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": []string{"tool_call"}})
	span(s, 3, 1, "workflow RunnableSequence", 300, 400, map[string]any{"traceloop.span.kind": "workflow",
		"traceloop.entity.output": `{"messages":[` + toolMsg("open_ticket", "k1", "error", "Error: Tool \"open_ticket\" not found.") + `]}`})
	span(s, 4, 1, "chat m", 500, 600, map[string]any{"gen_ai.operation.name": "chat",
		"gen_ai.input.messages": `[{"role":"assistant","parts":[{"type":"text","content":""}]},{"role":"tool","parts":[{"type":"text","content":"Error: Tool \"open_ticket\" not found."}]}]`})
	r := Build(s.td)[0]
	eq(t, "steps", stepKinds(&r), "llm,llm")
	in := r.Steps[1].InputResults
	if len(in) != 1 || in[0].Name != "open_ticket" || in[0].CallID != "k1" || !in[0].IsError {
		t.Errorf("fed-back result %+v", in)
	}
}

// TestLangChainFailedToolNamedByShortestWrapper: a failed tool step takes
// its name from the shortest wrapper around it that outputs ToolMessages,
// whatever the order of the spans (wrappers are read shortest first).
func TestLangChainFailedToolNamedByShortestWrapper(t *testing.T) {
	s := newSynth("svc")
	wrapper := func(id uint64, start, end uint64, out string) {
		span(s, id, 1, "workflow RunnableSequence", start, end, map[string]any{"traceloop.span.kind": "workflow", "traceloop.entity.output": out})
	}
	span(s, 1, 0, "stock.agent", 0, 10_000, map[string]any{"traceloop.span.kind": "agent", "traceloop.entity.name": "stock"})
	// The outer wrapper comes first and reports another failed call.
	wrapper(2, 500, 9_000, `{"messages":[`+toolMsg("price_lookup", "c9", "error", "Error: price backend down")+`]}`)
	fail(span(s, 3, 1, "execute_tool DynamicStructuredTool", 1_100, 1_400, map[string]any{"gen_ai.operation.name": "execute_tool",
		"traceloop.span.kind": "task", "traceloop.entity.name": "DynamicStructuredTool"}), "inventory backend returned 503")
	wrapper(4, 1_000, 1_500, `{"messages":[`+toolMsg("count_stock", "c1", "error", "Error: inventory backend returned 503")+`]}`)
	// The shortest wrapper around the tool outputs no ToolMessage.
	wrapper(5, 1_050, 1_450, `{"messages":[]}`)
	r := Build(s.td)[0]
	var failed *Step
	for i := range r.Steps {
		if r.Steps[i].SpanID == sid(3) {
			failed = &r.Steps[i]
		}
	}
	if failed == nil {
		t.Fatalf("no step for the failed tool span: %s", stepKinds(&r))
	}
	eq(t, "named by the shortest reporting wrapper", failed.ToolName, "count_stock")
	eq(t, "its call id", failed.ToolCallID, "c1")
}
