package trajectory

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// OpenTelemetry GenAI semantic conventions (gen_ai.*).
//
// Spans: gen_ai.operation.name = chat | text_completion | generate_content
// (LLM steps), execute_tool (tool steps), invoke_agent (agent runs).
// LLM fields: gen_ai.request/response.model, gen_ai.response.finish_reasons,
// gen_ai.usage.{input,output}_tokens (and the older prompt/completion
// names), gen_ai.usage.cost, gen_ai.input.messages / gen_ai.output.messages (JSON parts incl.
// tool_call and tool_call_response), gen_ai.tool.definitions.
// Tool fields: gen_ai.tool.name, gen_ai.tool.call.{id,arguments,result}.

func genaiDetect(c *spanCtx) (spanRole, bool) {
	op := attrStr(c.attrs, "gen_ai.operation.name")
	switch strings.ToLower(op) {
	case "chat", "text_completion", "generate_content", "completion", "responses":
		return roleLLM, true
	case "execute_tool":
		return roleTool, true
	case "invoke_agent":
		return roleAgent, true
	case "":
		// Tool spans that predate gen_ai.operation.name still name the tool.
		if _, ok := c.attrs.Get("gen_ai.tool.call.id"); ok {
			return roleTool, true
		}
		_, hasMsgs := c.attrs.Get("gen_ai.output.messages")
		_, hasSys := c.attrs.Get("gen_ai.system")
		return roleNone, hasMsgs || hasSys
	}
	return roleNone, true
}

func genaiFill(c *spanCtx, st *Step) {
	a := c.attrs
	if st.Kind == StepTool {
		if st.ToolName == "" {
			st.ToolName = attrStr(a, "gen_ai.tool.name")
		}
		if st.ToolCallID == "" {
			st.ToolCallID = attrStr(a, "gen_ai.tool.call.id")
		}
		if st.Arguments == "" {
			st.Arguments = attrStr(a, "gen_ai.tool.call.arguments")
		}
		if st.Result == "" {
			st.Result = attrStr(a, "gen_ai.tool.call.result")
		}
		if !st.ResultIsError && st.Result != "" && looksJSON(st.Result) {
			st.ResultIsError = mcpResultIsError([]byte(st.Result))
		}
		return
	}
	if st.Model == "" {
		st.Model = firstStr(a, "gen_ai.response.model", "gen_ai.request.model")
	}
	if len(st.FinishReasons) == 0 {
		st.FinishReasons = attrStrings(a, "gen_ai.response.finish_reasons")
	}
	if st.InputTokens == 0 {
		st.InputTokens, _ = firstInt(a, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
	}
	if st.OutputTokens == 0 {
		st.OutputTokens, _ = firstInt(a, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
	}
	if st.Cost == 0 {
		st.Cost = attrCost(a, "gen_ai.usage.cost")
	}
	// Message content is on the span, or on the span's
	// gen_ai.client.inference.operation.details event.
	for _, m := range []pcommon.Map{a, genaiDetailsEvent(c)} {
		if m == (pcommon.Map{}) {
			continue
		}
		genaiFillMessages(c, st, m)
	}
}

// genaiFillMessages completes an LLM step from GenAI inference attributes
// (gen_ai.tool.definitions, gen_ai.input/output.messages) found on the
// span, on its details event, or on a details log record (logs.go).
func genaiFillMessages(c *spanCtx, st *Step, m pcommon.Map) {
	if len(st.Offered) == 0 {
		st.Offered = c.toolDefs(attrStr(m, "gen_ai.tool.definitions"))
	}
	if len(st.InputResults) == 0 {
		applyInput(st, decodeMessages(attrStr(m, "gen_ai.input.messages")))
	}
	if len(st.Requested) == 0 || st.OutputText == "" {
		out := decodeMessages(attrStr(m, "gen_ai.output.messages"))
		applyOutput(st, out)
		if len(out) > 0 && st.OutputText == "" && len(st.Requested) == 0 {
			st.OutputEmpty = true
		}
	}
}

// genaiDetailsEvent returns the attributes of the span's
// gen_ai.client.inference.operation.details event (the semconv event that
// carries messages and tool definitions when they are not span attributes),
// or the zero Map.
func genaiDetailsEvent(c *spanCtx) pcommon.Map {
	evs := c.sp.Events()
	for i := 0; i < evs.Len(); i++ {
		if evs.At(i).Name() == "gen_ai.client.inference.operation.details" {
			return evs.At(i).Attributes()
		}
	}
	return pcommon.Map{}
}
