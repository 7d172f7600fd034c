package trajectory

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

const fixturesDir = "/work/shared/fixtures/frameworks"

func loadFixture(tb testing.TB, path string) ptrace.Traces {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Skipf("fixture not available: %v", err)
	}
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(data)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return td
}

// fixtureRun builds "<stack>/<scenario>" and returns its only run.
func fixtureRun(t *testing.T, name string) Run {
	t.Helper()
	runs := Build(loadFixture(t, filepath.Join(fixturesDir, name+".json")))
	if len(runs) != 1 {
		t.Fatalf("%s: want 1 run, got %d", name, len(runs))
	}
	return runs[0]
}

func stepKinds(r *Run) string {
	var b strings.Builder
	for i, s := range r.Steps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(string(s.Kind))
	}
	return b.String()
}

func offeredNames(st *Step) []string {
	var out []string
	for _, d := range st.Offered {
		out = append(out, d.Name)
	}
	return out
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func eqJSON(t *testing.T, what, got, want string) {
	t.Helper()
	var g, w any
	if json.Unmarshal([]byte(got), &g) != nil || json.Unmarshal([]byte(want), &w) != nil {
		t.Errorf("%s = %q, want JSON %s", what, got, want)
		return
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

var travelTools = "get_weather,get_local_time,convert_currency,search_docs"

func checkOffered(t *testing.T, st *Step) {
	t.Helper()
	eq(t, "offered tools", strings.Join(offeredNames(st), ","), travelTools)
	for _, d := range st.Offered {
		var schema struct {
			Type       string         `json:"type"`
			Properties map[string]any `json:"properties"`
		}
		if json.Unmarshal(d.Schema, &schema) != nil || schema.Type != "object" || len(schema.Properties) == 0 {
			t.Errorf("tool %s: schema not an object schema: %s", d.Name, d.Schema)
		}
	}
}

// The labels say how many spans each capture holds and how many lost their
// parent; every span must land in a run, and captures with orphans must be
// reported as runs whose root was not found.
func TestFixturesStructureMatchesLabels(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(fixturesDir, "labels.json"))
	if err != nil {
		t.Skipf("labels not available: %v", err)
	}
	var labels []struct {
		CaptureFile string   `json:"capture_file"`
		SpanCount   int      `json:"span_count"`
		Orphans     int      `json:"orphan_span_count"`
		TraceIDs    []string `json:"trace_ids"`
		Service     string   `json:"service_name"`
	}
	if err := json.Unmarshal(data, &labels); err != nil {
		t.Fatal(err)
	}
	if len(labels) < 100 {
		t.Fatalf("only %d labels", len(labels))
	}
	for _, l := range labels {
		runs := Build(loadFixture(t, filepath.Join(fixturesDir, l.CaptureFile)))
		spans, orphans, notFound := 0, 0, 0
		for _, r := range runs {
			spans += len(r.SpanIDs)
			orphans += r.Orphans
			if !r.RootFound {
				notFound++
			}
			if r.Service != l.Service {
				t.Errorf("%s: service %q, want %q", l.CaptureFile, r.Service, l.Service)
			}
			found := false
			for _, id := range l.TraceIDs {
				found = found || id == r.TraceID.String()
			}
			if !found {
				t.Errorf("%s: run trace %s not in %v", l.CaptureFile, r.TraceID, l.TraceIDs)
			}
		}
		if spans != l.SpanCount {
			t.Errorf("%s: %d spans in runs, labels say %d", l.CaptureFile, spans, l.SpanCount)
		}
		if orphans != l.Orphans {
			t.Errorf("%s: %d orphans, labels say %d", l.CaptureFile, orphans, l.Orphans)
		}
		if (l.Orphans > 0) != (notFound > 0) {
			t.Errorf("%s: %d runs without root, labels say %d orphans", l.CaptureFile, notFound, l.Orphans)
		}
	}
}

func TestVercelWrongToolLeavesNoToolSpan(t *testing.T) {
	r := fixtureRun(t, "vercel-ai/wrong_tool")
	eq(t, "steps", stepKinds(&r), "llm,llm")
	eq(t, "root found", r.RootFound, true)
	eq(t, "root name", r.RootName, "ai.generateText")
	eq(t, "service", r.Service, "vercel-ai-agent")
	eq(t, "agent", r.Agent, "travel-assistant")
	eq(t, "session", r.Session, "conv-0001")
	eq(t, "finish", r.FinishReason, "stop")
	s0, s1 := &r.Steps[0], &r.Steps[1]
	eq(t, "convention", s0.Convention, ConventionVercel)
	eq(t, "model", s0.Model, "gpt-4o-mini")
	eq(t, "step0 finish", strings.Join(s0.FinishReasons, ","), "tool-calls")
	checkOffered(t, s0)
	if len(s0.Requested) != 1 {
		t.Fatalf("requested: %+v", s0.Requested)
	}
	eq(t, "requested name", s0.Requested[0].Name, "get_forecast")
	eq(t, "requested id", s0.Requested[0].ID, "call_I75sPAozDIjCY4VwFtIOxTWq")
	eqJSON(t, "requested args", s0.Requested[0].Arguments, `{"city":"Berlin","days":3}`)
	eq(t, "tokens", s0.InputTokens, int64(55))
	if len(s1.InputResults) != 1 {
		t.Fatalf("input results: %+v", s1.InputResults)
	}
	res := s1.InputResults[0]
	eq(t, "result call id", res.CallID, "call_I75sPAozDIjCY4VwFtIOxTWq")
	eq(t, "result name", res.Name, "get_forecast")
	eq(t, "result is error", res.IsError, true)
	if !strings.Contains(res.Content, "unavailable tool") {
		t.Errorf("result content %q", res.Content)
	}
	eq(t, "output text", s1.OutputText, "I'm sorry, I wasn't able to retrieve the forecast for Berlin.")
	eq(t, "span errors", len(r.SpanErrors), 0)
}

func TestVercelToolErrorAndRetries(t *testing.T) {
	r := fixtureRun(t, "vercel-ai/tool_upstream_502")
	eq(t, "steps", stepKinds(&r), "llm,tool,llm")
	tool := &r.Steps[1]
	eq(t, "tool name", tool.ToolName, "get_weather")
	eq(t, "tool call id", tool.ToolCallID, "call_dZeJQfSgIEemXHjBOPOSXS28")
	eqJSON(t, "tool args", tool.Arguments, `{"city":"Madrid"}`)
	eq(t, "tool failed", tool.Failed(), true)
	if len(tool.Errors) != 1 || tool.Errors[0].Type != "UpstreamHTTPError" {
		t.Errorf("tool errors %+v", tool.Errors)
	}
	eq(t, "tool HTTP status (only mentioned in text)", tool.HTTPStatus, 0)
	if in := r.Steps[2].InputResults; len(in) != 1 || !in[0].IsError || in[0].CallID != tool.ToolCallID {
		t.Errorf("fed-back result %+v", in)
	}

	r = fixtureRun(t, "vercel-ai/llm_503")
	eq(t, "steps", stepKinds(&r), "llm,llm,llm")
	for _, s := range r.Steps {
		if !s.StatusError || len(s.Errors) != 1 || s.Errors[0].Type != "AI_APICallError" {
			t.Errorf("retry step %s: %+v", s.SpanID, s.Errors)
		}
	}
	if len(r.SpanErrors) != 1 || !r.SpanErrors[0].IsRoot || r.SpanErrors[0].Errors[0].Type != "AI_RetryError" {
		t.Errorf("span errors %+v", r.SpanErrors)
	}

	r = fixtureRun(t, "vercel-ai/loop")
	eq(t, "loop steps", len(r.Steps), 10)
	eq(t, "loop finish", r.FinishReason, "tool-calls")
	for i := 1; i < len(r.Steps); i++ {
		if r.Steps[i].End < r.Steps[i-1].End {
			t.Errorf("steps not in end order at %d", i)
		}
	}
}

func TestGenAIToolSpansAndProviderErrors(t *testing.T) {
	r := fixtureRun(t, "openai-otel/wrong_tool")
	eq(t, "steps", stepKinds(&r), "llm,tool,llm")
	eq(t, "root", r.RootName, "invoke_agent travel-assistant")
	eq(t, "agent", r.Agent, "travel-assistant")
	eq(t, "session", r.Session, "conv-0001")
	eq(t, "service", r.Service, "openai-otel-agent")
	eq(t, "finish", r.FinishReason, "stop")
	tool := &r.Steps[1]
	eq(t, "convention", tool.Convention, ConventionGenAI)
	eq(t, "tool", tool.ToolName, "get_forecast")
	eq(t, "call id", tool.ToolCallID, "call_EkywtmIj3Fp7dBr1Cbhyspgy")
	eqJSON(t, "args", tool.Arguments, `{"city":"Berlin","days":3}`)
	if len(tool.Errors) != 1 || tool.Errors[0].Type != "ToolNotFoundError" {
		t.Errorf("errors %+v", tool.Errors)
	}
	eq(t, "llm finish", strings.Join(r.Steps[0].FinishReasons, ","), "tool_calls")
	eq(t, "llm tokens", r.Steps[2].InputTokens, int64(157))

	r = fixtureRun(t, "openai-otel/context_overflow")
	eq(t, "steps", stepKinds(&r), "llm,tool,llm")
	last := &r.Steps[2]
	eq(t, "http from SDK message", last.HTTPStatus, 400)
	eq(t, "error type", last.Errors[0].Type, "BadRequestError")
	if len(r.SpanErrors) != 1 {
		t.Fatalf("span errors %+v", r.SpanErrors)
	}
	root := r.SpanErrors[0]
	eq(t, "root", root.IsRoot, true)
	codes := ""
	for _, e := range root.Errors {
		codes += e.Code + ";"
	}
	if !strings.Contains(codes, "context_length_exceeded") {
		t.Errorf("root error codes %q", codes)
	}

	r = fixtureRun(t, "openai-otel/llm_429")
	eq(t, "429 status", r.Steps[0].HTTPStatus, 429)
	r = fixtureRun(t, "openai-otel/truncated")
	eq(t, "truncated finish", r.FinishReason, "length")
	r = fixtureRun(t, "openai-otel/content_filter")
	eq(t, "content filter finish", FinishReasonClass(r.FinishReason), "content_filter")
}

func TestGenAIMessagePartsAndDefinitions(t *testing.T) {
	r := fixtureRun(t, "openllmetry-defensive/wrong_tool")
	eq(t, "steps", stepKinds(&r), "llm,tool,llm")
	s0 := &r.Steps[0]
	eq(t, "convention", s0.Convention, ConventionGenAI)
	checkOffered(t, s0)
	if len(s0.Requested) != 1 {
		t.Fatalf("requested %+v", s0.Requested)
	}
	eq(t, "req name", s0.Requested[0].Name, "get_forecast")
	eq(t, "req id", s0.Requested[0].ID, "call_JinXwWzJJhaSE27GJzxmCInF")
	eqJSON(t, "req args", s0.Requested[0].Arguments, `{"city":"Berlin","days":3}`)
	s2 := &r.Steps[2]
	if len(s2.InputResults) != 1 {
		t.Fatalf("input results %+v", s2.InputResults)
	}
	eq(t, "result id", s2.InputResults[0].CallID, "call_JinXwWzJJhaSE27GJzxmCInF")
	eq(t, "result name (from the assistant call)", s2.InputResults[0].Name, "get_forecast")
	if !strings.Contains(s2.InputResults[0].Content, "ToolNotFoundError") {
		t.Errorf("result content %q", s2.InputResults[0].Content)
	}
	eq(t, "output", s2.OutputText, "I'm sorry, I wasn't able to retrieve the forecast for Berlin.")
}

func TestOpenInferenceFlattenedAndSerialized(t *testing.T) {
	r := fixtureRun(t, "langchain-openinference/wrong_tool")
	eq(t, "steps (no tool span for an unknown tool)", stepKinds(&r), "llm,llm")
	eq(t, "root", r.RootName, "travel-assistant")
	eq(t, "agent (metadata lc_agent_name)", r.Agent, "travel-assistant")
	eq(t, "session (not recorded by this stack)", r.Session, "")
	s0, s1 := &r.Steps[0], &r.Steps[1]
	eq(t, "convention", s0.Convention, ConventionOpenInference)
	checkOffered(t, s0)
	eq(t, "finish", strings.Join(s0.FinishReasons, ","), "tool_calls")
	eq(t, "tokens", s0.InputTokens, int64(61))
	if len(s0.Requested) != 1 {
		t.Fatalf("requested %+v", s0.Requested)
	}
	eq(t, "req name", s0.Requested[0].Name, "get_forecast")
	eq(t, "req id (from output.value)", s0.Requested[0].ID, "call_tLcM2Ij0jClHs8Yywee7Aldx")
	eqJSON(t, "req args", s0.Requested[0].Arguments, `{"city":"Berlin","days":3}`)
	if len(s1.InputResults) != 1 {
		t.Fatalf("input results %+v", s1.InputResults)
	}
	res := s1.InputResults[0]
	eq(t, "result id", res.CallID, "call_tLcM2Ij0jClHs8Yywee7Aldx")
	eq(t, "result name", res.Name, "get_forecast")
	eq(t, "result error (ToolMessage status)", res.IsError, true)

	r = fixtureRun(t, "langchain-openinference/tool_upstream_502")
	eq(t, "steps", stepKinds(&r), "llm,tool,llm")
	tool := &r.Steps[1]
	eq(t, "tool", tool.ToolName, "get_weather")
	eq(t, "tool call id (linked to the request)", tool.ToolCallID, "call_ZKtUUbOQlzIIoz5qo24cZ7Cx")
	eqJSON(t, "tool args (request, not text/plain input)", tool.Arguments, `{"city":"Madrid"}`)
	eq(t, "tool failed", tool.StatusError, true)
	if len(tool.Errors) != 1 || !strings.Contains(tool.Errors[0].Message, "502 Bad Gateway") {
		t.Errorf("tool errors %+v", tool.Errors)
	}

	r = fixtureRun(t, "langchain-openinference/llm_503")
	eq(t, "steps", stepKinds(&r), "llm")
	eq(t, "503", r.Steps[0].HTTPStatus, 503)
	// LangChain records the exception on the LLM span and again on every
	// enclosing chain: the wrappers are span errors, not steps.
	if len(r.SpanErrors) != 2 || r.SpanErrors[0].Name != "model_request" || r.SpanErrors[0].IsRoot || !r.SpanErrors[1].IsRoot {
		t.Errorf("span errors %+v", r.SpanErrors)
	}

	r = fixtureRun(t, "langchain-openinference/ok_single_tool")
	tool = &r.Steps[1]
	eq(t, "tool id (ToolMessage in output.value)", tool.ToolCallID, "call_1RGT15PRQ8bGxTKEWC3SwxFv")
	if !strings.Contains(tool.Result, "temperature_c") || tool.ResultIsError {
		t.Errorf("tool result %q err=%v", tool.Result, tool.ResultIsError)
	}
}

func TestTraceloopWorkflowAgentTool(t *testing.T) {
	r := fixtureRun(t, "openllmetry-defensive/bad_args")
	eq(t, "root", r.RootName, "travel_request.workflow")
	eq(t, "agent (not the workflow)", r.Agent, "travel-assistant")
	eq(t, "session", r.Session, "conv-0001")
	eq(t, "steps", stepKinds(&r), "llm,tool,llm")
	tool := &r.Steps[1]
	eq(t, "convention", tool.Convention, ConventionTraceloop)
	eq(t, "tool", tool.ToolName, "convert_currency")
	eqJSON(t, "args (kwargs)", tool.Arguments, `{"amount":"one hundred","from":"US Dollar"}`)
	eq(t, "call id (linked)", tool.ToolCallID, r.Steps[0].Requested[0].ID)
	if len(tool.Errors) != 1 || tool.Errors[0].Type != "ZodError" {
		t.Errorf("errors %+v", tool.Errors)
	}

	// The LLM span of a failed call is lost: only the wrappers say so.
	r = fixtureRun(t, "openllmetry-defensive/llm_503")
	eq(t, "steps", len(r.Steps), 0)
	if len(r.SpanErrors) != 2 {
		t.Fatalf("span errors %+v", r.SpanErrors)
	}
	for _, e := range r.SpanErrors {
		eq(t, "http", e.HTTPStatus, 503)
	}
	r = fixtureRun(t, "openllmetry-defensive/context_overflow")
	eq(t, "code", r.SpanErrors[0].Errors[0].Code, "context_length_exceeded")
}

func TestMCPToolSpans(t *testing.T) {
	r := fixtureRun(t, "mcp-openllmetry/bad_args")
	eq(t, "steps (initialize/tools/list are not steps)", stepKinds(&r), "llm,tool,llm")
	tool := &r.Steps[1]
	eq(t, "convention", tool.Convention, ConventionMCP)
	eq(t, "tool", tool.ToolName, "convert_currency")
	eqJSON(t, "args", tool.Arguments, `{"amount":"one hundred","from":"US Dollar"}`)
	eq(t, "jsonrpc", tool.HasJSONRPC, true)
	eq(t, "jsonrpc code", tool.JSONRPCCode, -32602)
	eq(t, "isError", tool.ResultIsError, true)
	eq(t, "span errors", len(r.SpanErrors), 0)

	r = fixtureRun(t, "mcp-openllmetry/mcp_tool_error")
	tool = &r.Steps[1]
	eq(t, "isError without JSON-RPC error", tool.ResultIsError, true)
	eq(t, "no jsonrpc", tool.HasJSONRPC, false)
	eq(t, "result", tool.Result, "kb-search request failed: 503 Service Unavailable")

	r = fixtureRun(t, "mcp-openllmetry/loop")
	eq(t, "root found", r.RootFound, false)
	eq(t, "missing root id", r.RootSpanID.String(), "0102ee10b17cc48f")
	eq(t, "orphans", r.Orphans, 6)
	eq(t, "steps", len(r.Steps), 10)
	eq(t, "agent", r.Agent, "travel-assistant")
	eq(t, "session", r.Session, "conv-0001")
	eq(t, "finish", r.FinishReason, "tool_call")

	// The failed LLM span and the agent span are lost: nothing but the MCP
	// session span remains.
	r = fixtureRun(t, "mcp-openllmetry/llm_503")
	eq(t, "root found", r.RootFound, false)
	eq(t, "steps", len(r.Steps), 0)
	eq(t, "span errors", len(r.SpanErrors), 0)
}

// The new stacks' captures, read as the conventions say (the classifier's
// answers are checked by the acceptance test; these check the trajectory).

func TestMastraCaptures(t *testing.T) {
	// The step spans are steps, the model generation is not; the tool runs
	// inside the step that asked for it.
	r := fixtureRun(t, "mastra/ok_single_tool")
	eq(t, "steps", stepKinds(&r), "llm,tool,llm")
	eq(t, "requested", r.Steps[0].Requested[0].Name, r.Steps[1].ToolName)
	eq(t, "tool call id linked", r.Steps[1].ToolCallID, r.Steps[0].Requested[0].ID)
	eq(t, "result chunk recorded", len(r.Steps[0].ToolResults), 1)
	eq(t, "final answer", r.Steps[2].OutputText != "", true)
	eq(t, "run finish reason from the generation", r.FinishReason, "stop")

	// A tool the framework refuses: only two chunk spans arrive, their step
	// never ended.
	r = fixtureRun(t, "mastra/wrong_tool")
	eq(t, "root found", r.RootFound, false)
	eq(t, "steps", stepKinds(&r), "llm")
	eq(t, "the call is known", len(r.Steps[0].Requested), 1)
	eq(t, "the error chunk fails the step", r.Steps[0].Failed(), true)

	// Arguments the framework rejects: no tool span, the rejection is the
	// result chunk.
	r = fixtureRun(t, "mastra/bad_args")
	eq(t, "steps", stepKinds(&r), "llm,llm")
	if len(r.Steps[0].ToolResults) != 1 || !strings.Contains(r.Steps[0].ToolResults[0].Content, `"error":true`) {
		t.Errorf("tool results %+v", r.Steps[0].ToolResults)
	}

	// A model call aborted by the client: an empty step, no finish reason.
	r = fixtureRun(t, "mastra/llm_timeout")
	eq(t, "steps", stepKinds(&r), "llm")
	eq(t, "output recorded empty", r.Steps[0].OutputEmpty, true)
	eq(t, "no finish reason", len(r.Steps[0].FinishReasons)+len(r.FinishReason), 0)
}

func TestLangGraphOpenLLMetryCaptures(t *testing.T) {
	// The prebuilt ToolNode answers an unknown tool with an error
	// ToolMessage: no tool span, the text is in the next chat input.
	r := fixtureRun(t, "langgraph-openllmetry/wrong_tool")
	eq(t, "steps", stepKinds(&r), "llm,llm")
	in := r.Steps[1].InputResults
	if len(in) != 1 || !strings.HasPrefix(in[0].Content, "Error: Tool ") {
		t.Errorf("input results %+v", in)
	}
	eq(t, "the chat span does not record the call", len(r.Steps[0].Requested), 0)
}

func TestLlamaIndexOpenLLMetryCaptures(t *testing.T) {
	// No tool spans; tool outputs recorded as user messages after an empty
	// assistant turn.
	r := fixtureRun(t, "llamaindex-openllmetry/ok_multi_step")
	eq(t, "steps", stepKinds(&r), "llm,llm,llm,llm")
	for i, st := range r.Steps[1:] {
		if len(st.InputResults) != 1 {
			t.Errorf("step %d: input results %+v", i+1, st.InputResults)
		}
	}
	r = fixtureRun(t, "llamaindex-openllmetry/wrong_tool")
	if in := r.Steps[1].InputResults; len(in) != 1 || !strings.Contains(in[0].Content, "does not exist") {
		t.Errorf("input results %+v", in)
	}
}
