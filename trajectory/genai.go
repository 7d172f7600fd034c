package trajectory

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// OpenTelemetry GenAI semantic conventions (gen_ai.*), as published in
// their own repository (v1.41+) and the releases before.
//
// Spans by gen_ai.operation.name (genaiOperations): chat, text_completion,
// generate_content (LLM steps); execute_tool (tool steps); invoke_agent
// (agent runs); invoke_workflow (a workflow of several agents), plan (the
// planning phase, whose model call is a child span), create_agent,
// embeddings, retrieval and the memory operations (create/search/update/
// upsert/delete_memory, create/delete_memory_store) are recognised but are
// not steps: their errors are the run's span errors, or the enclosing
// step's.
// LLM fields: gen_ai.provider.name (deprecated: gen_ai.system),
// gen_ai.request/response.model, gen_ai.response.finish_reasons,
// gen_ai.usage.{input,output}_tokens (and the older prompt/completion
// names), gen_ai.usage.cost, gen_ai.input.messages / gen_ai.output.messages
// (JSON parts incl. tool_call and tool_call_response; as a JSON string or
// structured), gen_ai.tool.definitions (also on invoke_agent spans, see
// Build); message content on span events too: the
// gen_ai.client.inference.operation.details event, and the per-message
// events gen_ai.{system,user,assistant,tool}.message / gen_ai.choice
// (genai_events.go).
// Tool fields: gen_ai.tool.name, gen_ai.tool.call.{id,arguments,result},
// the arguments and result as JSON strings or structured values.

// GenAI operation names (gen_ai.operation.name).
const (
	OpChat              = "chat"
	OpTextCompletion    = "text_completion"
	OpGenerateContent   = "generate_content"
	OpExecuteTool       = "execute_tool"
	OpInvokeAgent       = "invoke_agent"
	OpInvokeWorkflow    = "invoke_workflow"
	OpPlan              = "plan"
	OpCreateAgent       = "create_agent"
	OpEmbeddings        = "embeddings"
	OpRetrieval         = "retrieval"
	OpCreateMemory      = "create_memory"
	OpSearchMemory      = "search_memory"
	OpUpdateMemory      = "update_memory"
	OpUpsertMemory      = "upsert_memory"
	OpDeleteMemory      = "delete_memory"
	OpCreateMemoryStore = "create_memory_store"
	OpDeleteMemoryStore = "delete_memory_store"
)

// genaiOperations says what each operation is to the trajectory. Names an
// instrumentation uses for the same operations are read as them
// ("completion", "responses").
var genaiOperations = map[string]spanRole{
	OpChat: roleLLM, OpTextCompletion: roleLLM, OpGenerateContent: roleLLM, "completion": roleLLM, "responses": roleLLM,
	OpExecuteTool:    roleTool,
	OpInvokeAgent:    roleAgent,
	OpInvokeWorkflow: roleNone, OpPlan: roleNone, OpCreateAgent: roleNone, OpEmbeddings: roleNone, OpRetrieval: roleNone,
	OpCreateMemory: roleNone, OpSearchMemory: roleNone, OpUpdateMemory: roleNone, OpUpsertMemory: roleNone,
	OpDeleteMemory: roleNone, OpCreateMemoryStore: roleNone, OpDeleteMemoryStore: roleNone,
}

func genaiDetect(_ *spanCtx, p *roleAttrs) (spanRole, bool) {
	op := strings.ToLower(p.str(rkGenAIOperation))
	if op == "" {
		// Tool spans that predate gen_ai.operation.name still name the tool.
		if _, ok := p.get(rkGenAIToolCallID); ok {
			return roleTool, true
		}
		_, hasMsgs := p.get(rkGenAIOutputMessages)
		return roleNone, hasMsgs || p.str(rkGenAIProvider) != "" || p.str(rkGenAISystem) != "" // genaiProvider
	}
	// Operations the conventions do not name are still GenAI spans.
	return genaiOperations[op], true
}

// genaiFillTool reads the GenAI tool attributes (gen_ai.tool.name,
// gen_ai.tool.call.{id,arguments,result}; arguments and result as JSON
// text whether recorded as strings or structured) into empty fields.
func genaiFillTool(a attrMap, st *Step) {
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
}

// genaiProvider is the model provider: gen_ai.provider.name, else the
// deprecated gen_ai.system.
func genaiProvider(a attrMap) string {
	return firstStr(a, "gen_ai.provider.name", "gen_ai.system")
}

func genaiFill(c *spanCtx, st *Step) {
	a := c.attrs
	if st.Kind == StepTool {
		genaiFillTool(a, st)
		if !st.ResultIsError && st.Result != "" && looksJSON(st.Result) {
			st.ResultIsError = mcpResultIsError(bytesOf(st.Result))
		}
		return
	}
	if st.Model == "" {
		st.Model = firstStr(a, "gen_ai.response.model", "gen_ai.request.model")
	}
	if st.Provider == "" {
		st.Provider = genaiProvider(a)
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
	// gen_ai.client.inference.operation.details event, or on its
	// per-message events.
	for _, m := range []attrMap{a, anyAttrs(genaiDetailsEvent(c))} {
		if m.Map == (pcommon.Map{}) {
			continue
		}
		genaiFillMessages(c, st, m)
	}
	genaiMessageEvents(c, st)
}

// genaiFillMessages completes an LLM step from GenAI inference attributes
// (gen_ai.tool.definitions, gen_ai.input/output.messages) found on the
// span, on its details event, or on a details log record (logs.go).
func genaiFillMessages(c *spanCtx, st *Step, m attrMap) {
	if len(st.Offered) == 0 {
		st.Offered = c.toolDefs(attrStr(m, "gen_ai.tool.definitions"))
	}
	if len(st.InputResults) == 0 {
		applyInputJSON(st, attrStr(m, "gen_ai.input.messages"), c.inputs, c.memo)
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
		if evs.At(i).Name() == EventInferenceDetails {
			return evs.At(i).Attributes()
		}
	}
	return pcommon.Map{}
}
