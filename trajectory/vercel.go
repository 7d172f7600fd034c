package trajectory

import (
	"strings"
)

// Vercel AI SDK telemetry (ai.*).
//
// Spans (named by ai.operationId, or the span name): ai.generateText,
// ai.streamText, ai.generateObject, ai.streamObject are agent runs;
// ai.*.doGenerate / ai.*.doStream are LLM steps with ai.prompt.messages
// (incl. tool-result parts whose output is error-text/error-json, v4
// isError, and tool-error parts), ai.prompt.tools (JSON strings with
// inputSchema or parameters), ai.response.toolCalls, ai.response.text,
// ai.response.finishReason, ai.usage.*; ai.toolCall spans are tool steps
// with ai.toolCall.{name,id,args,result}.

func vercelOperation(c *spanCtx) string {
	if op := attrStr(c.attrs, "ai.operationId"); op != "" {
		return op
	}
	return vercelSpanOperation(c)
}

// vercelSpanOperation is the operation the span's name gives ("" none).
func vercelSpanOperation(c *spanCtx) string {
	if n := c.sp.Name(); strings.HasPrefix(n, "ai.") {
		// Span names are "<operationId> <functionId>" in some versions.
		if i := strings.IndexByte(n, ' '); i > 0 {
			n = n[:i]
		}
		return n
	}
	return ""
}

func vercelDetect(c *spanCtx, p *roleAttrs) (spanRole, bool) {
	op := p.str(rkAIOperation)
	if op == "" {
		op = vercelSpanOperation(c)
	}
	if op == "" {
		return roleNone, false
	}
	switch {
	case op == "ai.toolCall":
		return roleTool, true
	case strings.HasSuffix(op, ".doGenerate") || strings.HasSuffix(op, ".doStream"):
		if strings.HasPrefix(op, "ai.embed") {
			return roleNone, true
		}
		return roleLLM, true
	case op == "ai.generateText" || op == "ai.streamText" || op == "ai.generateObject" || op == "ai.streamObject":
		return roleAgent, true
	}
	return roleNone, true
}

func vercelFill(c *spanCtx, st *Step) {
	a := c.attrs
	if st.Kind == StepTool {
		if st.ToolName == "" {
			st.ToolName = attrStr(a, "ai.toolCall.name")
		}
		if st.ToolCallID == "" {
			st.ToolCallID = attrStr(a, "ai.toolCall.id")
		}
		if st.Arguments == "" {
			st.Arguments = firstStr(a, "ai.toolCall.args", "ai.toolCall.input")
		}
		if st.Result == "" {
			st.Result = firstStr(a, "ai.toolCall.result", "ai.toolCall.output")
		}
		if !st.ResultIsError && looksJSON(st.Result) {
			st.ResultIsError = mcpResultIsError(bytesOf(st.Result))
		}
		return
	}
	if st.Model == "" {
		st.Model = firstStr(a, "ai.response.model", "ai.model.id")
	}
	if st.Provider == "" {
		st.Provider = attrStr(a, "ai.model.provider")
	}
	if len(st.FinishReasons) == 0 {
		if fr := attrStr(a, "ai.response.finishReason"); fr != "" {
			st.FinishReasons = []string{fr}
		}
	}
	if st.InputTokens == 0 {
		st.InputTokens, _ = firstInt(a, "ai.usage.inputTokens", "ai.usage.promptTokens")
	}
	if st.OutputTokens == 0 {
		st.OutputTokens, _ = firstInt(a, "ai.usage.outputTokens", "ai.usage.completionTokens")
	}
	if len(st.Offered) == 0 {
		for _, t := range attrStrings(a, "ai.prompt.tools") {
			if d := c.toolDefs(t); len(d) > 0 {
				st.Offered = append(st.Offered, d...)
			}
		}
	}
	if len(st.InputResults) == 0 {
		applyInputJSON(st, attrStr(a, "ai.prompt.messages"), c.inputs, c.memo)
	}
	if len(st.Requested) == 0 {
		// [{toolCallId, toolName, input|args}], input being a JSON string.
		if s, ok := validText(attrStr(a, "ai.response.toolCalls")); ok && looksJSON(s) {
			var calls []jsonToolCall
			setSliceAt(&calls, s, decodeToolCallAt)
			for _, jc := range calls {
				if tc := jc.toToolCall(); tc.Name != "" || tc.ID != "" {
					st.Requested = append(st.Requested, tc)
				}
			}
		}
	}
	if st.OutputText == "" {
		st.OutputText = firstStr(a, "ai.response.text", "ai.response.object")
	}
}
