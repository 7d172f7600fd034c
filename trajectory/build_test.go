package trajectory

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestBuildEmpty(t *testing.T) {
	if runs := Build(ptrace.NewTraces()); len(runs) != 0 {
		t.Fatalf("runs from nothing: %+v", runs)
	}
	s := newSynth("svc")
	// an agent span with no IDs at all
	s.spans.AppendEmpty().Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	runs := Build(s.td)
	if len(runs) != 1 || len(runs[0].Steps) != 0 {
		t.Fatalf("runs %+v", runs)
	}
}

// A tree no convention reader recognises is not an agent run, even when
// it failed: here a billing service's own trace (an HTTP server span and a
// failed database query) beside an agent trace, and a tool's HTTP call the
// framework traced outside the agent's trace context.
func TestPlainTreesAreNotRuns(t *testing.T) {
	s := newSynth("billing")
	fail(s.span(1, 0, "POST /invoices", map[string]any{"http.request.method": "POST", "http.response.status_code": 500}), "")
	fail(s.span(2, 1, "INSERT invoices", map[string]any{"db.system.name": "postgresql", "db.operation.name": "INSERT"}), "deadlock detected")
	s.tid = pcommon.TraceID{4, 5, 6}
	s.span(10, 0, "invoke_agent billing-helper", map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "billing-helper"})
	s.span(11, 10, "chat m", map[string]any{"gen_ai.operation.name": "chat"})
	fail(s.span(12, 10, "execute_tool issue_refund", map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "issue_refund"}), "payments API answered 503")
	s.tid = pcommon.TraceID{7, 8, 9}
	fail(s.span(20, 0, "GET", map[string]any{"http.request.method": "GET", "http.response.status_code": 503}), "")
	runs := Build(s.td)
	if len(runs) != 1 {
		t.Fatalf("want only the agent run, got %d runs", len(runs))
	}
	eq(t, "root", runs[0].RootSpanID, sid(10))
	eq(t, "steps", len(runs[0].Steps), 2)

	// Orphans of a lost root count too: a group of plain orphans is no run,
	// one with a recognised span is.
	s = newSynth("svc")
	s.span(30, 99, "GET", map[string]any{"http.request.method": "GET"})
	if runs := Build(s.td); len(runs) != 0 {
		t.Fatalf("plain orphans: %d runs", len(runs))
	}
	s.span(31, 99, "chat m", map[string]any{"gen_ai.operation.name": "chat"})
	if runs := Build(s.td); len(runs) != 1 || len(runs[0].SpanIDs) != 2 {
		t.Fatalf("orphans with a chat span: %+v", runs)
	}
}

func TestOrphansJoinTheOnlyRoot(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "invoke_agent a", map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"})
	s.span(2, 99, "chat m", map[string]any{"gen_ai.operation.name": "chat"}) // parent 99 never exported
	runs := Build(s.td)
	if len(runs) != 1 {
		t.Fatalf("want 1 run, got %d", len(runs))
	}
	r := runs[0]
	eq(t, "root found", r.RootFound, true)
	eq(t, "root", r.RootSpanID, sid(1))
	eq(t, "orphans", r.Orphans, 1)
	eq(t, "steps", len(r.Steps), 1)
	eq(t, "agent", r.Agent, "a")
}

func TestOrphansWithoutRoot(t *testing.T) {
	s := newSynth("svc")
	s.span(2, 50, "chat m", map[string]any{"gen_ai.operation.name": "chat"})
	s.span(3, 50, "execute_tool t", map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"})
	s.span(4, 3, "http", nil)
	runs := Build(s.td)
	if len(runs) != 1 {
		t.Fatalf("want 1 run, got %d", len(runs))
	}
	r := runs[0]
	eq(t, "root found", r.RootFound, false)
	eq(t, "root id = shared missing parent", r.RootSpanID, sid(50))
	eq(t, "orphans", r.Orphans, 2)
	eq(t, "spans", len(r.SpanIDs), 3)
	eq(t, "steps", stepKinds(&r), "llm,tool")

	// Orphans with different missing parents: still one run, named after
	// the missing parent of the orphan that started first (never a span of
	// the run), whatever order they come in.
	for _, order := range [][]uint64{{2, 3}, {3, 2}} {
		s = newSynth("svc")
		for _, id := range order {
			sp := s.span(id, id*10+30, "chat m", map[string]any{"gen_ai.operation.name": "chat"})
			sp.SetStartTimestamp(pcommon.Timestamp(1000 * id)) // span 2 starts first
		}
		runs = Build(s.td)
		if len(runs) != 1 || runs[0].RootSpanID != sid(50) || runs[0].Orphans != 2 {
			t.Fatalf("order %v: runs %+v", order, runs)
		}
	}
}

func TestParentCyclesAreCut(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 2, "a", map[string]any{"gen_ai.operation.name": "chat"})
	s.span(2, 3, "b", nil)
	s.span(3, 1, "c", nil)
	s.span(4, 4, "self", map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "x"})
	s.span(5, 1, "child of cycle", nil)
	runs := Build(s.td)
	if len(runs) != 1 {
		t.Fatalf("want 1 run, got %d", len(runs))
	}
	r := runs[0]
	eq(t, "root found", r.RootFound, false)
	eq(t, "spans", len(r.SpanIDs), 5)
	eq(t, "steps", len(r.Steps), 2)
	if r.Orphans < 2 {
		t.Errorf("cycle and self-parent not counted: %d", r.Orphans)
	}
}

func TestDeepChainDoesNotRecurse(t *testing.T) {
	s := newSynth("svc")
	const depth = 100_000
	s.span(1, 0, "root", nil)
	for i := uint64(2); i <= depth; i++ {
		s.span(i, i-1, "n", nil)
	}
	s.span(depth+1, depth, "chat", map[string]any{"gen_ai.operation.name": "chat"})
	runs := Build(s.td)
	if len(runs) != 1 || len(runs[0].SpanIDs) != depth+1 || len(runs[0].Steps) != 1 {
		t.Fatalf("deep chain: %d runs", len(runs))
	}
}

func TestDuplicateSpanIDsKeepFirst(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "root", nil)
	s.span(2, 1, "chat first", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.response.model": "first"})
	s.span(2, 1, "chat again", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.response.model": "second"})
	s.span(2, 1, "chat again", map[string]any{"gen_ai.operation.name": "chat"})
	runs := Build(s.td)
	r := runs[0]
	eq(t, "duplicates", r.Duplicates, 2)
	eq(t, "spans", len(r.SpanIDs), 2)
	eq(t, "steps", len(r.Steps), 1)
	eq(t, "kept first", r.Steps[0].Model, "first")
}

// Span IDs are found by a scan up to linearSpanIDs spans and through a map
// past it: both keep the first of duplicate IDs and link each span to the
// kept span of its parent ID (a span without an ID among them), as a
// search of the kept spans finds it.
func TestLinkNodesEitherSideOfTheScan(t *testing.T) {
	for _, n := range []int{5, linearSpanIDs, linearSpanIDs + 1, 3 * linearSpanIDs} {
		s := newSynth("svc")
		s.span(1, 0, "root", nil)
		s.span(2, 1, "chat", nil)
		s.span(0, 1, "no id", nil)
		s.span(100, 99, "orphan", nil)
		for i := uint64(3); s.spans.Len() < n-1; i++ {
			s.span(i, i-1, "n", nil)
		}
		s.span(2, 1, "duplicate", nil)
		var nodes []node
		for i := 0; i < s.spans.Len(); i++ {
			nodes = append(nodes, node{c: spanCtx{sp: s.spans.At(i)}, parent: -1})
		}
		kept, dups := linkNodes(nodes, new(buildScratch))
		eq(t, "duplicates", dups, 1)
		eq(t, "kept", len(kept), n-1)
		for i, k := range kept {
			want := int32(-1)
			for j, p := range kept {
				if pid := k.c.sp.ParentSpanID(); !pid.IsEmpty() && p.c.sp.SpanID() == pid && j != i {
					want = int32(j)
					break
				}
			}
			if k.parent != want {
				t.Fatalf("%d spans: node %d (%s) has parent %d, want %d", n, i, k.c.sp.Name(), k.parent, want)
			}
		}
	}
}

func TestSeveralTracesAndResources(t *testing.T) {
	s := newSynth("svc-a")
	s.span(1, 0, "invoke_agent a", map[string]any{"gen_ai.operation.name": "invoke_agent"})
	s.span(2, 1, "chat", map[string]any{"gen_ai.operation.name": "chat"})
	// A second resource holds a child of the same trace and another trace.
	rs := s.td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "svc-b")
	s.spans = rs.ScopeSpans().AppendEmpty().Spans()
	s.span(3, 1, "execute_tool t", map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"})
	s.tid = [16]byte{9}
	s.span(10, 0, "invoke_agent b", map[string]any{"gen_ai.operation.name": "invoke_agent"})
	runs := Build(s.td)
	if len(runs) != 2 {
		t.Fatalf("want 2 runs, got %d", len(runs))
	}
	eq(t, "run 1 steps", stepKinds(&runs[0]), "llm,tool")
	eq(t, "run 1 service (root's resource)", runs[0].Service, "svc-a")
	eq(t, "run 2 service", runs[1].Service, "svc-b")
	eq(t, "run 2 trace", runs[1].TraceID, s.tid)
}

func TestSeveralAgentsSideBySide(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "workflow", map[string]any{"traceloop.span.kind": "workflow"})
	s.span(2, 1, "researcher.agent", map[string]any{"traceloop.span.kind": "agent", "traceloop.entity.name": "researcher"})
	s.span(3, 2, "chat", map[string]any{"gen_ai.operation.name": "chat"})
	// A sub-agent inside the researcher stays in the researcher's run.
	s.span(4, 2, "invoke_agent helper", map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"})
	s.span(5, 4, "chat", map[string]any{"gen_ai.operation.name": "chat"})
	s.span(6, 1, "writer.agent", map[string]any{"traceloop.span.kind": "agent", "traceloop.entity.name": "writer"})
	s.span(7, 6, "chat", map[string]any{"gen_ai.operation.name": "chat"})
	fail(s.span(8, 1, "publish", nil), "publish failed")
	fail(s.td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0), "workflow failed")
	runs := Build(s.td)
	if len(runs) != 2 {
		t.Fatalf("want 2 runs, got %d", len(runs))
	}
	eq(t, "first agent", runs[0].Agent, "researcher")
	eq(t, "first root", runs[0].RootSpanID, sid(2))
	eq(t, "first steps (incl. sub-agent)", len(runs[0].Steps), 2)
	eq(t, "second agent", runs[1].Agent, "writer")
	eq(t, "second steps", len(runs[1].Steps), 1)
	// The wrappers have no steps: they go with the run that ended last.
	eq(t, "wrapper spans joined the last run", len(runs[1].SpanIDs), 4)
	eq(t, "wrapper errors", len(runs[1].SpanErrors), 2)
	eq(t, "first run span count", len(runs[0].SpanIDs), 4)
}

func TestStepsOutsideAgentsFormTheirOwnRun(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "root", nil)
	s.span(2, 1, "invoke_agent a", map[string]any{"gen_ai.operation.name": "invoke_agent"})
	s.span(3, 2, "chat", map[string]any{"gen_ai.operation.name": "chat"})
	s.span(4, 1, "invoke_agent b", map[string]any{"gen_ai.operation.name": "invoke_agent"})
	s.span(5, 4, "chat", map[string]any{"gen_ai.operation.name": "chat"})
	s.span(6, 1, "chat (router)", map[string]any{"gen_ai.operation.name": "chat"})
	runs := Build(s.td)
	if len(runs) != 3 {
		t.Fatalf("want 3 runs, got %d", len(runs))
	}
	eq(t, "root run", runs[0].RootSpanID, sid(1))
	eq(t, "root run steps", len(runs[0].Steps), 1)
	eq(t, "root run spans", len(runs[0].SpanIDs), 2)
}

func TestNestedSpansOfOneCallMerge(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "agent", map[string]any{"openinference.span.kind": "AGENT"})
	// A framework LLM span around an SDK chat span: one step.
	s.span(2, 1, "ChatOpenAI", map[string]any{
		"openinference.span.kind":                                                 "LLM",
		"llm.output_messages.0.message.role":                                      "assistant",
		"llm.output_messages.0.message.tool_calls.0.tool_call.function.name":      "lookup",
		"llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": `{"q":"x"}`,
	})
	s.span(3, 2, "chat gpt", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.response.model": "gpt", "gen_ai.usage.input_tokens": 12})
	// A framework tool span around an MCP client span that failed.
	s.span(4, 1, "lookup.tool", map[string]any{"traceloop.span.kind": "tool", "traceloop.entity.name": "lookup"})
	fail(s.span(5, 4, "tools/call lookup", map[string]any{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "lookup", "error.type": "-32602",
	}), "MCP error -32602: invalid params")
	s.span(6, 5, "POST /mcp", map[string]any{"http.response.status_code": 200})
	runs := Build(s.td)
	r := runs[0]
	eq(t, "steps", stepKinds(&r), "llm,tool")
	llm, tool := &r.Steps[0], &r.Steps[1]
	eq(t, "merged model", llm.Model, "gpt")
	eq(t, "merged tokens", llm.InputTokens, int64(12))
	eq(t, "requested", llm.Requested[0].Name, "lookup")
	eq(t, "outer convention kept", tool.Convention, ConventionTraceloop)
	eq(t, "jsonrpc from inner span", tool.JSONRPCCode, -32602)
	eq(t, "failed", tool.Failed(), true)
	eq(t, "no span errors", len(r.SpanErrors), 0)
}

func TestHTTPChildSpanGivesStatusToFailedStep(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "invoke_agent", map[string]any{"gen_ai.operation.name": "invoke_agent"})
	llm := fail(s.span(2, 1, "chat", map[string]any{"gen_ai.operation.name": "chat"}), "upstream error")
	s.span(3, 2, "POST", map[string]any{"http.response.status_code": 503, "error.type": "503"})
	ok := s.span(4, 1, "chat", map[string]any{"gen_ai.operation.name": "chat"})
	ok.Status().SetCode(ptrace.StatusCodeOk)
	s.span(5, 4, "POST", map[string]any{"http.status_code": "429"}) // retried inside, call succeeded
	_ = llm
	r := Build(s.td)[0]
	eq(t, "failed step status", r.Steps[0].HTTPStatus, 503)
	eq(t, "succeeded step keeps no status", r.Steps[1].HTTPStatus, 0)
	eq(t, "no span errors", len(r.SpanErrors), 0)
}

func TestStepsOrderedByEnd(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "root", nil)
	endAt(s.span(2, 1, "late", map[string]any{"gen_ai.operation.name": "chat"}), 9_000_000)
	endAt(s.span(3, 1, "early", map[string]any{"gen_ai.operation.name": "chat"}), 2_000_000)
	endAt(s.span(4, 1, "middle", map[string]any{"gen_ai.operation.name": "execute_tool"}), 5_000_000)
	r := Build(s.td)[0]
	var names []string
	for _, st := range r.Steps {
		names = append(names, st.Name)
	}
	eq(t, "order", strings.Join(names, ","), "early,middle,late")
}

func TestMalformedAndNonUTF8Attributes(t *testing.T) {
	bad := "\xff\xfe{\"broken"
	s := newSynth("svc\xff")
	s.span(1, 0, "invoke_agent", map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a\xffb"})
	s.span(2, 1, "chat", map[string]any{
		"gen_ai.operation.name":          "chat",
		"gen_ai.input.messages":          `[{"role":"tool","parts":[{"type":"tool_call_response","id":1,"response":`,
		"gen_ai.output.messages":         `[{"role":"assistant","parts":[{"type":"tool_call","id":{"x":1},"name":["n"],"arguments":"{"}]}]`,
		"gen_ai.tool.definitions":        bad,
		"gen_ai.response.finish_reasons": "[not json",
		"gen_ai.usage.input_tokens":      "many",
	})
	s.span(3, 1, "execute_tool", map[string]any{
		"gen_ai.operation.name":      "execute_tool",
		"gen_ai.tool.name":           bad,
		"gen_ai.tool.call.arguments": bad,
		"gen_ai.tool.call.result":    `{"isError": "yes"`,
	})
	s.span(4, 1, "LLM", map[string]any{
		"openinference.span.kind":                      "LLM",
		"llm.input_messages.99999999999.message.role":  "user",
		"llm.input_messages.-1.message.role":           "user",
		"llm.input_messages.x.message.content":         "c",
		"llm.output_messages.0.message.tool_calls.a.b": "c",
		"llm.tools.0.tool.json_schema":                 `{"type":"function","function":{"name":"f","parameters":"{bad"}}`,
		"input.value":                                  `{"messages":[[{"lc":1,"id":"notalist","kwargs":[]}]]}`,
	})
	s.span(5, 1, "ai.generateText.doGenerate", map[string]any{
		"ai.operationId":        "ai.generateText.doGenerate",
		"ai.prompt.tools":       []string{bad, `{"name":"ok","inputSchema":{"type":"object"}}`},
		"ai.response.toolCalls": `[{"toolCallId":5}]`,
		"ai.prompt.messages":    `[{"role":"tool","content":[{"type":"tool-result","output":{"type":"error-text","value":`,
	})
	exception(fail(s.span(6, 1, "x", map[string]any{"error.type": bad}), bad), bad, "Error code: 999 - {'error': {'code': "+bad)
	runs := Build(s.td)
	if len(runs) != 1 {
		t.Fatalf("runs %d", len(runs))
	}
	r := runs[0]
	eq(t, "steps", len(r.Steps), 4)
	eq(t, "raw arguments kept", r.Steps[1].Arguments, bad)
	eq(t, "raw tool name kept", r.Steps[1].ToolName, bad)
	eq(t, "agent kept as is", r.Agent, "a\xffb")
	for _, st := range r.Steps {
		if st.Name == "ai.generateText.doGenerate" {
			eq(t, "valid vercel def survives the bad one", strings.Join(offeredNames(&st), ","), "ok")
		}
	}
	eq(t, "span error", len(r.SpanErrors), 1)
}

func TestLegacyTraceloopAttributes(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "wf", map[string]any{"traceloop.span.kind": "workflow", "traceloop.entity.name": "wf", "traceloop.workflow.name": "wf"})
	s.span(2, 1, "openai.chat", map[string]any{
		"llm.request.type":                           "chat",
		"gen_ai.system":                              "openai",
		"gen_ai.request.model":                       "gpt-4",
		"gen_ai.usage.prompt_tokens":                 30,
		"gen_ai.usage.completion_tokens":             7,
		"llm.request.functions.0.name":               "get_time",
		"llm.request.functions.0.parameters":         `{"type":"object","properties":{"tz":{"type":"string"}}}`,
		"llm.request.functions.1.name":               "noschema",
		"gen_ai.prompt.0.role":                       "user",
		"gen_ai.prompt.0.content":                    "time?",
		"gen_ai.prompt.1.role":                       "assistant",
		"gen_ai.prompt.1.tool_calls.0.id":            "c1",
		"gen_ai.prompt.1.tool_calls.0.name":          "get_tz",
		"gen_ai.prompt.2.role":                       "tool",
		"gen_ai.prompt.2.tool_call_id":               "c1",
		"gen_ai.prompt.2.content":                    "unknown tool get_tz",
		"gen_ai.completion.0.role":                   "assistant",
		"gen_ai.completion.0.finish_reason":          "tool_calls",
		"gen_ai.completion.0.tool_calls.0.id":        "c2",
		"gen_ai.completion.0.tool_calls.0.name":      "get_time",
		"gen_ai.completion.0.tool_calls.0.arguments": `{"tz":"UTC"}`,
	})
	s.span(3, 1, "get_time.tool", map[string]any{
		"traceloop.span.kind": "tool", "traceloop.entity.name": "get_time",
		"traceloop.entity.input":  `{"args":["UTC"],"kwargs":{}}`,
		"traceloop.entity.output": `"12:00"`,
	})
	r := Build(s.td)[0]
	eq(t, "steps", stepKinds(&r), "llm,tool")
	llm := &r.Steps[0]
	eq(t, "convention", llm.Convention, ConventionTraceloop)
	eq(t, "model", llm.Model, "gpt-4")
	eq(t, "tokens", llm.InputTokens, int64(30))
	eq(t, "out tokens", llm.OutputTokens, int64(7))
	eq(t, "offered", strings.Join(offeredNames(llm), ","), "get_time,noschema")
	eqJSON(t, "schema", string(llm.Offered[0].Schema), `{"type":"object","properties":{"tz":{"type":"string"}}}`)
	eq(t, "finish", strings.Join(llm.FinishReasons, ","), "tool_calls")
	if len(llm.Requested) != 1 || llm.Requested[0].ID != "c2" || llm.Requested[0].Name != "get_time" || llm.Requested[0].Arguments != `{"tz":"UTC"}` {
		t.Errorf("requested %+v", llm.Requested)
	}
	if len(llm.InputResults) != 1 || llm.InputResults[0].CallID != "c1" || llm.InputResults[0].Name != "get_tz" {
		t.Errorf("input results %+v", llm.InputResults)
	}
	tool := &r.Steps[1]
	eq(t, "positional arg", tool.Arguments, "UTC")
	eq(t, "linked id", tool.ToolCallID, "c2")
	eq(t, "agent falls back to workflow name", r.Agent, "wf")
}

func TestMCPSemanticConventions(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "invoke_agent", map[string]any{"gen_ai.operation.name": "invoke_agent"})
	s.span(2, 1, "initialize", map[string]any{"mcp.method.name": "initialize"})
	fail(s.span(3, 1, "tools/call search", map[string]any{
		"mcp.method.name": "tools/call", "rpc.response.status_code": "-32601",
	}), "")
	s.span(4, 1, "tools/call fetch", map[string]any{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "fetch", "error.type": "tool_error",
		"gen_ai.tool.call.result": `{"content":[{"type":"text","text":"boom"}],"isError":true}`,
	})
	s.span(5, 1, "tools/call old", map[string]any{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "old", "rpc.jsonrpc.error_code": -32000,
	})
	r := Build(s.td)[0]
	eq(t, "steps", stepKinds(&r), "tool,tool,tool")
	eq(t, "name from span name", r.Steps[0].ToolName, "search")
	eq(t, "status code", r.Steps[0].JSONRPCCode, -32601)
	eq(t, "tool_error", r.Steps[1].ResultIsError, true)
	eq(t, "tool_error jsonrpc", r.Steps[1].HasJSONRPC, false)
	eq(t, "deprecated code", r.Steps[2].JSONRPCCode, -32000)
	eq(t, "convention", r.Steps[2].Convention, ConventionMCP)
}

func TestProviderCodesAndHTTPStatusFromErrorText(t *testing.T) {
	cases := []struct {
		msg, typ string
		code     string
		http     int
	}{
		{"Error code: 400 - {'error': {'message': \"This model's maximum context length is 8192 tokens\", 'type': 'invalid_request_error', 'param': 'messages', 'code': 'context_length_exceeded'}}", "BadRequestError", "context_length_exceeded", 400},
		{`Error code: 529 - {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "APIStatusError", "overloaded_error", 529},
		{`429 {"error":{"message":"Rate limit","type":"requests","code":"rate_limit_exceeded"}}`, "RateLimitError", "rate_limit_exceeded", 429},
		{"weather-api request failed: 502 Bad Gateway", "UpstreamHTTPError", "", 0},
		{"[{\"code\": \"invalid_type\", \"path\": [\"amount\"]}]", "ZodError", "", 0},
		{"Error: 503 The server is overloaded", "", "", 503},
	}
	for _, c := range cases {
		s := newSynth("svc")
		exception(fail(s.span(1, 0, "chat", map[string]any{"gen_ai.operation.name": "chat"}), c.msg), c.typ, c.msg)
		st := Build(s.td)[0].Steps[0]
		eq(t, c.msg+": code", st.Errors[0].Code, c.code)
		eq(t, c.msg+": http", st.HTTPStatus, c.http)
	}
}

func TestFinishReasonClass(t *testing.T) {
	for in, want := range map[string]string{
		"tool-calls": "tool_calls", "TOOL_CALLS": "tool_calls", "tool_call": "tool_calls", "tool_use": "tool_calls",
		"max_tokens": "length", "MAX_TOKENS": "length", "length": "length",
		"end_turn": "stop", "STOP": "stop", "content-filter": "content_filter", "SAFETY": "content_filter",
		"weird": "weird",
	} {
		eq(t, in, FinishReasonClass(in), want)
	}
}

func TestGenAIDetailsEventAndAgentDefinitions(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "invoke_agent", map[string]any{
		"gen_ai.operation.name":   "invoke_agent",
		"gen_ai.tool.definitions": `[{"type":"function","name":"lookup","parameters":{"type":"object"}}]`,
	})
	chat := s.span(2, 1, "chat", map[string]any{"gen_ai.operation.name": "chat"})
	ev := chat.Events().AppendEmpty()
	ev.SetName("gen_ai.client.inference.operation.details")
	ev.Attributes().PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"hi"},{"type":"tool_call","id":"c9","name":"lookup","arguments":"{\"q\":1}"}],"finish_reason":"tool_call"}]`)
	r := Build(s.td)[0]
	st := &r.Steps[0]
	eq(t, "offered from agent span", strings.Join(offeredNames(st), ","), "lookup")
	eq(t, "output from event", st.OutputText, "hi")
	if len(st.Requested) != 1 || st.Requested[0].ID != "c9" || st.Requested[0].Arguments != `{"q":1}` {
		t.Errorf("requested %+v", st.Requested)
	}
	eq(t, "finish from message", strings.Join(st.FinishReasons, ","), "tool_call")
}

func TestHugeAttributesAndManyEvents(t *testing.T) {
	huge := `[{"role":"assistant","parts":[{"type":"tool_call","id":"c","name":"t","arguments":"` +
		strings.Repeat("x", MaxParsedJSONBytes) + `"}]}]`
	s := newSynth("svc")
	s.span(1, 0, "invoke_agent", map[string]any{"gen_ai.operation.name": "invoke_agent"})
	s.span(2, 1, "chat", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.output.messages": huge})
	s.span(3, 1, "execute_tool", map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": huge})
	sp := fail(s.span(4, 1, "chat", map[string]any{"gen_ai.operation.name": "chat"}), "x")
	for i := 0; i < 10_000; i++ {
		exception(sp, "Retry", "attempt")
	}
	exception(sp, "Final", "last attempt")
	// One message with many calls stays linear (the duplicate-ID check is
	// bounded).
	var b strings.Builder
	b.WriteString(`[{"role":"assistant","parts":[`)
	for i := 0; i < 50_000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"tool_call","id":"c%d","name":"t"}`, i)
	}
	b.WriteString(`]}]`)
	s.span(5, 1, "chat", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.output.messages": b.String()})
	r := Build(s.td)[0]
	eq(t, "huge output not parsed", len(r.Steps[0].Requested), 0)
	eq(t, "huge arguments kept raw", r.Steps[1].Arguments, huge)
	errs := r.Steps[2].Errors
	eq(t, "exceptions capped", len(errs), MaxExceptionsPerSpan)
	eq(t, "last exception kept", errs[len(errs)-1].Type, "Final")
	eq(t, "requested calls", len(r.Steps[3].Requested), 50_000)
}

func TestOtherMessageShapes(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "chat", map[string]any{
		"gen_ai.operation.name": "chat",
		// OpenAI chat, Anthropic blocks and Responses API items in one list.
		"gen_ai.input.messages": `[
			{"role":"assistant","tool_calls":[{"id":"a1","type":"function","function":{"name":"f","arguments":"{}"}}],
			 "content":[{"type":"tool_use","id":"b1","name":"g","input":{"x":1}}]},
			{"type":"function_call","id":"fc_1","call_id":"r1","name":"h","arguments":"{}"},
			{"role":"tool","tool_call_id":"a1","content":"ok"},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"b1","content":[{"type":"text","text":"bad"}],"is_error":true}]},
			{"type":"function_call_output","call_id":"r1","output":"done"}]`,
	})
	st := Build(s.td)[0].Steps[0]
	if len(st.InputResults) != 3 {
		t.Fatalf("results %+v", st.InputResults)
	}
	want := []ToolResult{{CallID: "a1", Name: "f", Content: "ok"}, {CallID: "b1", Name: "g", Content: "bad", IsError: true}, {CallID: "r1", Name: "h", Content: "done"}}
	for i, w := range want {
		eq(t, "result", st.InputResults[i], w)
	}
}

// stepsOf is a run's steps read from data, two bytes a step: LLM steps
// requesting up to three calls, tool steps with or without a call ID, tool
// name and arguments, from small pools so that IDs and names repeat.
func stepsOf(data []byte) []Step {
	names, ids := []string{"", "a", "b"}, []string{"", "c1", "c2", "c3"}
	var steps []Step
	for i := 0; i+1 < len(data); i += 2 {
		x, y := data[i], data[i+1]
		if x&1 == 0 {
			st := Step{Kind: StepLLM}
			for k := 0; k < int(x>>1)%4; k++ {
				st.Requested = append(st.Requested, ToolCall{ID: ids[int(y>>(2*k))%len(ids)], Name: names[int(y>>(2*k+1))%len(names)], Arguments: string(rune('p' + k))})
			}
			steps = append(steps, st)
			continue
		}
		st := Step{Kind: StepTool, ToolCallID: ids[int(x>>1)%len(ids)], ToolName: names[int(x>>3)%len(names)]}
		if y&1 == 1 {
			st.Arguments = "own"
		}
		steps = append(steps, st)
	}
	return steps
}

// FuzzLinkToolCalls holds the scan that links a short run's tool steps to
// the maps that link a long one's.
func FuzzLinkToolCalls(f *testing.F) {
	f.Add([]byte{6, 0x1b, 3, 0, 9, 1, 1, 0, 4, 0xff, 5, 0})
	f.Add([]byte{2, 0, 2, 0, 1, 0, 1, 0, 3, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		steps := stepsOf(data)
		if len(steps) > linearLinkSteps {
			steps = steps[:linearLinkSteps]
		}
		scan := slices.Clone(steps)
		for i := range scan {
			scan[i].Requested = slices.Clone(steps[i].Requested)
		}
		linkToolCallsScan(scan)
		linkToolCallsIndexed(steps)
		if !reflect.DeepEqual(scan, steps) {
			t.Fatalf("the scan links %+v, the maps %+v", scan, steps)
		}
	})
}
