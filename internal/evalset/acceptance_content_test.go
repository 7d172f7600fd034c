package evalset

import (
	"path/filepath"
	"testing"
)

// The same scenarios captured with each instrumentation's default content
// setting and with content capture off (testdata/, harness/README.md), under
// the rule of the content-on set: a capture passes unless its failure is
// absent from its spans (listed below, checked by hand), and a listed one may
// be unknown or missed, never misrouted, never a false failure.

func contentSetLabels(mode string) string {
	return filepath.Join("..", "..", "testdata", "frameworks-content-"+mode, "labels.json")
}

func TestAcceptanceContentDefault(t *testing.T) {
	checkSameLabels(t, contentSetLabels("default"))
	checkCaptureSet(t, contentSetLabels("default"), evidenceAbsentContentDefault)
}

func TestAcceptanceContentOff(t *testing.T) {
	checkSameLabels(t, contentSetLabels("off"))
	checkCaptureSet(t, contentSetLabels("off"), evidenceAbsentContentOff)
}

// checkSameLabels: the set holds the content-on set's captures, each with
// the same ground truth.
func checkSameLabels(t *testing.T, labels string) {
	t.Helper()
	on, err := LoadLabels(filepath.Join(sharedDir(t), "fixtures", "frameworks", "labels.json"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := LoadLabels(labels)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, c := range on {
		want[c.Name()] = c.Label
	}
	for _, c := range set {
		l, ok := want[c.Name()]
		switch {
		case !ok:
			t.Errorf("%s: %s is not in the content-on set", labels, c.Name())
		case l != c.Label:
			t.Errorf("%s: %s is labelled %s, %s in the content-on set", labels, c.Name(), c.Label, l)
		}
		delete(want, c.Name())
	}
	for n := range want {
		t.Errorf("%s lacks %s", labels, n)
	}
}

// Reasons shared by several captures.
const (
	// The stacks that record content by default: the spans are the
	// content-on set's, and so are these gaps.
	gapMCPLostChat      = "the failing chat span and the root were never ended; only MCP initialize/tools/list/session spans remain, none with an error"
	gapLostOverflowChat = "the chat span that got the 400 context-length error and the root were never ended; the spans end after a successful tool call"

	gapOTelNoAnswer = "captureMessageContent off (the instrumentation's default): the model's answer is on no span, and the log events carry no content"
	gapOTelLoop     = "captureMessageContent off: the execute_tool spans (no opt-in gen_ai.tool.call.arguments/result) and the log events name get_weather five times without arguments or results, so the MaxStepsExceededError stop cannot tell a loop from an unfinished plan (unknown, calls_unrecorded)"

	gapNoAnswer = "content off: no span records the model's answer"

	gapAISDKRejected = "AI SDK recordInputs/recordOutputs off: the rejected call gets no ai.toolCall span, and ai.prompt.tools, ai.response.toolCalls and the tool-error part fed back in ai.prompt.messages are not recorded; no span has an error"
	gapAISDKLoop     = "AI SDK recordInputs/recordOutputs off: a silent step-limit stop (finishReason tool-calls) whose get_weather tool spans carry neither arguments nor results: a loop cannot be told from an unfinished plan (unknown, calls_unrecorded)"
	gapAISDKThenFail = "AI SDK recordInputs/recordOutputs off: the only error is the 502 the run recovered from; the unknown tool that ended it gets no span and the call and its tool-error part are not recorded"

	gapOIRejected = "OpenInference hideInputs/hideOutputs: LangGraph's ToolNode answers the rejected call without a TOOL span; the error ToolMessage would be in the next LLM span's input messages, which are dropped"
	gapOIThenFail = "OpenInference hideInputs/hideOutputs: the only error is the recovered 502 on a TOOL span; the unknown tool that ended the run gets no span and its error ToolMessage is in dropped input messages"
	gapOILoop     = "OpenInference hideInputs/hideOutputs: the step-limit error stands after five get_weather TOOL spans whose input.value/output.value are __REDACTED__: a loop cannot be told from an unfinished plan (unknown, calls_unrecorded)"

	gapTLFedBack    = "traceContent off: the error is fed back to the model and was visible only in the next chat span's gen_ai.input.messages, which are not recorded; no span has an error (the throwing tool's span is never exported)"
	gapTLLoop       = "traceContent off: the chat and tool spans carry no arguments, results or messages, so the MaxStepsExceededError stop after five get_weather calls cannot tell a loop from an unfinished plan (unknown, calls_unrecorded)"
	gapLlamaFedBack = "traceContent off: LlamaIndex runs tools without spans and marks no error; the tool's error (or the unknown tool, or the unvalidated input) was visible only as a user message in the next chat span's input, which is not recorded"
	gapLlamaLimit   = "traceContent off: no tool call is recorded at all (LlamaIndex has no tool spans, chat spans lose their messages), so the step-limit error cannot tell a loop from an unfinished plan (unknown, calls_unrecorded)"
)

// evidenceAbsentContentDefault: the default-settings captures whose failure
// cannot be told from their spans (and log events). The list only shrinks.
var evidenceAbsentContentDefault = map[string]string{
	"mcp-openllmetry/llm_503.json":          gapMCPLostChat,
	"mcp-openllmetry/llm_429.json":          gapMCPLostChat,
	"mcp-openllmetry/llm_timeout.json":      gapMCPLostChat,
	"mcp-openllmetry/context_overflow.json": gapLostOverflowChat,
	"openllmetry/context_overflow.json":     gapLostOverflowChat + " whose complete 5.7 KB result shows no overflow",
	"openai-otel/constraint_leak.json":      gapOTelNoAnswer,
	"openai-edot/constraint_leak.json":      gapOTelNoAnswer,
	"openai-otel/loop.json":                 gapOTelLoop,
	"openai-edot/loop.json":                 gapOTelLoop,
}

// evidenceAbsentContentOff: the content-off captures whose failure cannot
// be told from their spans. The list only shrinks.
var evidenceAbsentContentOff = map[string]string{
	"mcp-openllmetry/llm_503.json":          gapMCPLostChat,
	"mcp-openllmetry/llm_429.json":          gapMCPLostChat,
	"mcp-openllmetry/llm_timeout.json":      gapMCPLostChat,
	"mcp-openllmetry/context_overflow.json": gapLostOverflowChat,
	"openllmetry/context_overflow.json":     gapLostOverflowChat + " (its result is not recorded either)",
	"openai-otel/constraint_leak.json":      gapOTelNoAnswer,
	"openai-edot/constraint_leak.json":      gapOTelNoAnswer,
	"openai-otel/loop.json":                 gapOTelLoop,
	"openai-edot/loop.json":                 gapOTelLoop,

	"vercel-ai/wrong_tool.json":                gapAISDKRejected,
	"vercel-ai/bad_args.json":                  gapAISDKRejected,
	"vercel-ai/loop.json":                      gapAISDKLoop,
	"vercel-ai/constraint_leak.json":           gapNoAnswer + " (ai.response.text is an output)",
	"vercel-ai/recovered_then_fail.json":       gapAISDKThenFail,
	"vercel-ai-genai/wrong_tool.json":          gapAISDKRejected,
	"vercel-ai-genai/bad_args.json":            gapAISDKRejected,
	"vercel-ai-genai/loop.json":                gapAISDKLoop,
	"vercel-ai-genai/constraint_leak.json":     gapNoAnswer + " (the AI SDK recorded none, so OpenLLMetry's rewrite has no gen_ai.output.messages)",
	"vercel-ai-genai/recovered_then_fail.json": gapAISDKThenFail,

	"langchain-openinference/wrong_tool.json":          gapOIRejected,
	"langchain-openinference/bad_args.json":            gapOIRejected,
	"langchain-openinference/loop.json":                gapOILoop,
	"langchain-openinference/constraint_leak.json":     gapNoAnswer + " (output.value is __REDACTED__, llm.output_messages dropped)",
	"langchain-openinference/recovered_then_fail.json": gapOIThenFail,
	"openai-agents-openinference/loop.json":            gapOILoop,
	"openai-agents-openinference/constraint_leak.json": gapNoAnswer + " (output.value is __REDACTED__, llm.output_messages dropped)",

	"openllmetry/wrong_tool.json":                gapTLFedBack,
	"openllmetry/bad_args.json":                  gapTLFedBack,
	"openllmetry/tool_upstream_502.json":         gapTLFedBack,
	"openllmetry/tool_timeout.json":              gapTLFedBack,
	"openllmetry/recovered_then_fail.json":       gapTLFedBack,
	"openllmetry/loop.json":                      gapTLLoop + "; the workflow and agent spans were never ended",
	"openllmetry/constraint_leak.json":           gapNoAnswer + " (no gen_ai.output.messages, no traceloop.entity.output)",
	"openllmetry-defensive/loop.json":            gapTLLoop,
	"openllmetry-defensive/constraint_leak.json": gapNoAnswer + " (no gen_ai.output.messages, no traceloop.entity.output)",
	"mcp-openllmetry/constraint_leak.json":       gapNoAnswer + "; the MCP tool span still records the search result (the MCP instrumentation ignores traceContent), which is the tool's data, not the answer",

	"llamaindex-openllmetry/wrong_tool.json":          gapLlamaFedBack,
	"llamaindex-openllmetry/bad_args.json":            gapLlamaFedBack,
	"llamaindex-openllmetry/tool_upstream_502.json":   gapLlamaFedBack,
	"llamaindex-openllmetry/tool_timeout.json":        gapLlamaFedBack,
	"llamaindex-openllmetry/recovered_then_fail.json": gapLlamaFedBack,
	"llamaindex-openllmetry/loop.json":                gapLlamaLimit,
	"llamaindex-openllmetry/max_steps_distinct.json":  gapLlamaLimit,
	"llamaindex-openllmetry/constraint_leak.json": "traceContent off: the chat spans lose the answer; it survives only in the agent span's traceloop.entity.output, " +
		"the wrapped function's return value, which triage does not read as model output (such a value can hold the prompt too, e.g. a LangGraph state)",
}
