package trajectory

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// fuzzKeys are the attributes the readers decode; the fuzzer puts its value
// under one of them (or under a key derived from the value itself).
var fuzzKeys = []string{
	"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.definitions",
	"gen_ai.response.finish_reasons", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
	"gen_ai.tool.name", "gen_ai.usage.input_tokens", "gen_ai.agent.name", "gen_ai.conversation.id",
	"llm.input_messages.0.message.content", "llm.input_messages.1.message.role",
	"llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
	"llm.tools.0.tool.json_schema", "input.value", "output.value", "metadata",
	"traceloop.entity.input", "traceloop.entity.output", "gen_ai.prompt.0.content",
	"gen_ai.completion.0.tool_calls.0.arguments", "llm.request.functions.0.parameters",
	"ai.prompt.messages", "ai.prompt.tools", "ai.response.toolCalls", "ai.toolCall.result",
	"ai.response.finishReason", "error.type", "http.response.status_code",
	"rpc.response.status_code", "rpc.jsonrpc.error_code", "mcp.method.name",
	"input", "output", "body", "modelMetadata", "mastra.model_step.output", "mastra.model_chunk.output",
	"gen_ai.tool.input", "gen_ai.tool.output", "gen_ai.provider.name", "gen_ai.system",
}

// fuzzRoles give a span a role under one of the conventions.
var fuzzRoles = []map[string]string{
	{},
	{"gen_ai.operation.name": "chat"},
	{"gen_ai.operation.name": "execute_tool"},
	{"gen_ai.operation.name": "invoke_agent"},
	{"openinference.span.kind": "LLM", "input.mime_type": "application/json"},
	{"openinference.span.kind": "TOOL"},
	{"openinference.span.kind": "AGENT"},
	{"traceloop.span.kind": "tool"},
	{"traceloop.span.kind": "agent"},
	{"llm.request.type": "chat"},
	{"ai.operationId": "ai.generateText.doGenerate"},
	{"ai.operationId": "ai.toolCall"},
	{"ai.operationId": "ai.streamText"},
	{"mcp.method.name": "tools/call"},
	{mastraSpanTypeKey: "agent_run"},
	{mastraSpanTypeKey: "model_generation", "gen_ai.operation.name": "chat"},
	{mastraSpanTypeKey: "model_step"},
	{mastraSpanTypeKey: "model_chunk"},
	{mastraSpanTypeKey: "tool_call"},
	{"gen_ai.operation.name": "plan"},
	{"gen_ai.operation.name": "invoke_workflow"},
	{"gen_ai.operation.name": "search_memory"},
}

// fuzzEvents are the GenAI message events a span may carry.
var fuzzEvents = []string{EventUserMessage, EventAssistantMessage, EventToolMessage, EventChoice, EventInferenceDetails}

// fuzzTraces builds a trace from shape: three bytes per span select the
// parent (root, another span, a missing span, itself), the role, where the
// value goes, and flags (error status, exception, duplicate or empty ID).
func fuzzTraces(shape []byte, value string) ptrace.Traces {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	n := len(shape) / 3
	if n > 64 {
		n = 64
	}
	for i := 0; i < n; i++ {
		b0, b1, b2 := shape[3*i], shape[3*i+1], shape[3*i+2]
		sp := spans.AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{byte(b2 & 1)})
		id := uint64(i + 1)
		if b2&2 != 0 && i > 0 {
			id = uint64(i) // duplicate of the previous span
		}
		if b2&4 == 0 {
			sp.SetSpanID(sid(id))
		}
		switch {
		case b0 == 0:
		case b0 == 255:
			sp.SetParentSpanID(sid(1000))
		default:
			sp.SetParentSpanID(sid(uint64(int(b0)%(n+1)) + 1)) // may be itself or later: cycles
		}
		sp.SetStartTimestamp(pcommon.Timestamp(uint64(b1) * 10))
		sp.SetEndTimestamp(pcommon.Timestamp(uint64(b0)*7 + uint64(b2)))
		sp.SetName(value)
		for k, v := range fuzzRoles[int(b1)%len(fuzzRoles)] {
			sp.Attributes().PutStr(k, v)
		}
		key := fuzzKeys[int(b1>>4)%len(fuzzKeys)]
		if b2&8 != 0 {
			key = "llm.input_messages." + value // fuzz the flattened key grammar
		}
		var structured any
		if b2&128 != 0 && json.Unmarshal([]byte(value), &structured) == nil {
			// The conventions record arguments, results, messages and
			// definitions as structured values too.
			putStructured(sp.Attributes(), key, structured)
			ev := sp.Events().AppendEmpty()
			ev.SetName(fuzzEvents[int(b0)%len(fuzzEvents)])
			putStructured(ev.Attributes(), "message", structured)
			ev.Attributes().PutStr(attrEventContent, value)
		} else if b2&16 != 0 {
			sp.Attributes().PutInt(key, int64(len(value))-3)
		} else {
			sp.Attributes().PutStr(key, value)
		}
		if b2&32 != 0 {
			sp.Status().SetCode(ptrace.StatusCodeError)
			sp.Status().SetMessage(value)
		}
		if b2&64 != 0 {
			ev := sp.Events().AppendEmpty()
			ev.SetName("exception")
			ev.Attributes().PutStr("exception.type", value)
			ev.Attributes().PutStr("exception.message", value)
		}
	}
	return td
}

// putStructured sets key to v as a structured value (map, slice, or
// scalar), as pcommon holds it.
func putStructured(m pcommon.Map, key string, v any) {
	switch x := v.(type) {
	case map[string]any:
		_ = m.PutEmptyMap(key).FromRaw(x)
	case []any:
		_ = m.PutEmptySlice(key).FromRaw(x)
	default:
		_ = m.PutEmpty(key).FromRaw(x)
	}
}

func FuzzBuild(f *testing.F) {
	// Seeds: attribute values of real captures of every stack.
	seeds := 0
	for _, name := range []string{
		"vercel-ai/wrong_tool", "vercel-ai/tool_upstream_502", "openai-otel/context_overflow",
		"langchain-openinference/wrong_tool", "openllmetry-defensive/bad_args", "mcp-openllmetry/bad_args",
		"mastra/recovered_then_fail", "mastra/bad_args", "langgraph-openllmetry/wrong_tool", "llamaindex-openllmetry/loop",
	} {
		data, err := os.ReadFile(filepath.Join(fixturesDir, name+".json"))
		if err != nil {
			continue
		}
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(data)
		if err != nil {
			continue
		}
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				sps := sss.At(j).Spans()
				for k := 0; k < sps.Len(); k++ {
					sps.At(k).Attributes().Range(func(key string, v pcommon.Value) bool {
						if s := v.AsString(); len(s) > 1 && len(s) < 8192 && seeds < 300 {
							b := byte(seeds)
							f.Add([]byte{0, b, 0, 1, b ^ 0x5a, b & 0x7f, 1, b << 1, 0x21}, s)
							seeds++
						}
						return true
					})
				}
			}
		}
	}
	f.Add([]byte{0, 1, 0, 2, 2, 0, 2, 3, 0x60, 3, 4, 2}, `[{"role":"assistant","parts":[{"type":"tool_call","id":"c","name":"t","arguments":{}}]}]`)
	f.Add([]byte{1, 1, 0, 2, 1, 0, 255, 5, 12}, "\xff\xfe\x00")
	// Structured values and message span events.
	f.Add([]byte{0, 2, 0x80, 1, 0x22, 0x80, 2, 0x51, 0xa0}, `{"location":"Paris","parts":[{"type":"tool_call","id":" c1","name":"t","arguments":{"a":[1,2]}}]}`)
	f.Add([]byte{255, 0x11, 0x80, 1, 0x12, 0x80, 1, 0x13, 0x80}, `{"toolName":"t","toolCallId":"c","toolInput":{},"error":{"name":"Error","message":"Tool t not found"}}`)
	f.Fuzz(func(t *testing.T, shape []byte, value string) {
		td := fuzzTraces(shape, value)
		runs := Build(td)
		total := 0
		for _, r := range runs {
			total += len(r.SpanIDs)
			for i := range r.Steps {
				if k := r.Steps[i].Kind; k != StepLLM && k != StepTool {
					t.Fatalf("step kind %q", k)
				}
				if i > 0 && r.Steps[i].End < r.Steps[i-1].End {
					t.Fatalf("steps out of end order")
				}
			}
		}
		if total > td.SpanCount() {
			t.Fatalf("%d spans in runs, %d in input", total, td.SpanCount())
		}
	})
}
