package trajectory

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Mastra AI tracing (@mastra/otel-exporter, scope "@mastra/otel").
//
// Every span carries mastra.span.type. The span tree of one agent call is
// agent_run → model_generation (the model loop of one generate/stream call)
// → model_step (one model call, "step: N") → model_chunk ("chunk: '<type>'":
// the streamed parts of that call) and tool_call ("tool.execute <tool>").
// Older releases name the LLM types llm_generation / llm_step / llm_chunk.
//
// Fields: 0.x exports the span's input and output as "input" / "output"
// (JSON text), tool spans also as gen_ai.tool.input / gen_ai.tool.output;
// 1.x exports them as mastra.<span type>.input / .output, and tool spans
// with the GenAI names gen_ai.tool.call.{id,arguments,result}. A model
// step's output is {text, toolCalls: [{toolCallId, toolName, args}]}; its
// input is {body: "<the provider request>"} and its "body" attribute the
// raw provider response (both may be cut with "…[truncated]"). The model
// generation carries the final gen_ai.response.finish_reasons ("stop",
// "tool-calls", "length", "content-filter", "error").
//
// Errors: only a throwing tool span gets status ERROR (error.type,
// error.message). A failed model call leaves every span OK and shows up as
// a chunk whose output is {error: {name, message}}; a tool the model may
// not call ("Tool x not found") as such a chunk too. When the agent call
// throws, the enclosing spans are never ended: the chunks then arrive
// without their step (see rolePart in build.go).
//
// The reader is exclusive: Mastra also sets gen_ai.operation.name (chat on
// the model generation), which the GenAI reader would read as one model
// call for the whole loop.

const mastraSpanTypeKey = "mastra.span.type"

func mastraDetect(_ *spanCtx, p *roleAttrs) (spanRole, bool) {
	v, ok := p.get(rkMastraType)
	if !ok {
		return roleNone, false
	}
	switch strings.ToLower(v.AsString()) {
	case "agent_run":
		return roleAgent, true
	case "model_generation", "llm_generation":
		// The loop of model calls of one generate/stream call: a run
		// boundary when the agent span above it is missing.
		return roleAgent, true
	case "model_step", "llm_step":
		return roleLLM, true
	case "model_chunk", "llm_chunk":
		return rolePart, true
	case "tool_call", "mcp_tool_call", "provider_tool_call":
		return roleTool, true
	}
	return roleNone, true
}

// mastraIO returns the span's input or output ("input"/"output" in 0.x,
// mastra.<type>.input/output in 1.x).
func mastraIO(c *spanCtx, which string) string {
	if s := attrStr(c.attrs, which); s != "" {
		return s
	}
	t := strings.ToLower(attrStr(c.attrs, mastraSpanTypeKey))
	return attrStr(c.attrs, "mastra."+t+"."+which)
}

func mastraFill(c *spanCtx, st *Step) {
	if st.Kind == StepTool {
		mastraFillTool(c, st)
		return
	}
	a := c.attrs
	if st.Model == "" {
		st.Model = firstStr(a, "gen_ai.response.model", "modelId", "gen_ai.request.model")
	}
	if st.Provider == "" {
		st.Provider = firstStr(a, "gen_ai.provider.name", "modelProvider")
		if md := attrStr(a, "modelMetadata"); st.Provider == "" && looksJSON(md) {
			if t, ok := validText(md); ok {
				var m mastraModelMetadata
				m.decodeValid(t)
				st.Provider = m.ModelProvider
			}
		}
	}
	mastraFillOutput(c, st)
	// The raw provider response: finish reason and usage, read by pattern
	// because the exporter cuts long values.
	body := attrStr(a, "body")
	if len(st.FinishReasons) == 0 {
		if fr := scanJSONString(body, finishReasonRe); fr != "" {
			st.FinishReasons = []string{fr}
		}
	}
	if st.InputTokens == 0 {
		st.InputTokens = scanJSONInt(body, inputTokensRe)
	}
	if st.OutputTokens == 0 {
		st.OutputTokens = scanJSONInt(body, outputTokensRe)
	}
	mastraFillRequest(c, st)
}

// mastraFillTool reads a tool span: 1.x the GenAI names; 0.x
// gen_ai.tool.input/output, input/output.
func mastraFillTool(c *spanCtx, st *Step) {
	a := c.attrs
	genaiFillTool(a, st)
	if st.Arguments == "" {
		st.Arguments = attrStr(a, "gen_ai.tool.input")
		if st.Arguments == "" {
			st.Arguments = mastraIO(c, "input")
		}
	}
	if st.Result == "" {
		st.Result = attrStr(a, "gen_ai.tool.output")
		if st.Result == "" {
			st.Result = mastraIO(c, "output")
		}
	}
	if !st.ResultIsError && looksJSON(st.Result) {
		st.ResultIsError = mcpResultIsError(bytesOf(st.Result))
	}
	if msg := attrStr(a, "error.message"); msg != "" && st.StatusMessage == "" {
		st.StatusMessage = msg
	}
}

// mastraFillOutput reads a model span's output: text, tool calls and
// finish reason.
func mastraFillOutput(c *spanCtx, st *Step) {
	if s, ok := validText(mastraIO(c, "output")); ok && looksJSON(s) {
		var out mastraOutput
		out.decodeValid(s)
		if st.OutputText == "" {
			st.OutputText = out.Text
		}
		if len(st.Requested) == 0 {
			for _, jc := range out.ToolCalls {
				if tc := jc.toToolCall(); tc.Name != "" || tc.ID != "" {
					st.Requested = appendCall(st.Requested, tc)
				}
			}
		}
		if len(st.FinishReasons) == 0 && out.FinishReason != "" {
			st.FinishReasons = []string{out.FinishReason}
		}
		st.OutputEmpty = st.OutputText == "" && len(st.Requested) == 0
	}
}

// mastraFillRequest reads the provider request: the messages and tool
// definitions the model was given, when the exporter kept the body whole.
func mastraFillRequest(c *spanCtx, st *Step) {
	if in := mastraIO(c, "input"); looksJSON(in) && len(in) <= MaxParsedJSONBytes && (len(st.Offered) == 0 || len(st.InputResults) == 0) {
		// A cut body, the common case, makes the input say nothing,
		// whether or not it is valid JSON: it is told before the input
		// is validated (validText's check, most of reading an input
		// whose body is then found cut). On text that is not JSON the
		// body may be misread, which only leaves it to the check to
		// say nothing.
		t := stringOf(trimJSON(bytesOf(in)))
		var w mastraInput
		w.decodeValid(t)
		if unpairedText(w.Body) {
			return
		}
		if validJSON(t) {
			req := rawJSONText(w.Body)
			if rt, ok := validText(req); ok && looksJSON(req) {
				var r mastraRequest
				r.decodeValid(rt)
				if len(st.Offered) == 0 && len(r.Tools) > 0 {
					st.Offered = c.toolDefs(string(r.Tools))
				}
				if len(st.InputResults) == 0 && len(r.Messages) > 0 {
					applyInputJSON(st, string(r.Messages), c.inputs, c.memo)
				}
			}
		}
	}
}

// unpairedText reports whether r is a JSON string whose text opens with one
// kind of bracket and closes with the other: the exporter's cut body
// ("{... …[truncated]"), which is not JSON. It is told from the literal's
// first and last bytes without unquoting it (an escape neither starts with
// a bracket nor ends with one, and r is valid JSON), so that a cut body,
// the common case, is neither copied nor validated.
func unpairedText(r json.RawMessage) bool {
	r = trimJSON(r)
	if len(r) < 4 || r[0] != '"' || r[len(r)-1] != '"' {
		return false
	}
	open, end := r[1], r[len(r)-2]
	return open == '{' && end == ']' || open == '[' && end == '}'
}

// mastraChunkKind reads the chunk type from the span name "chunk: '<type>'".
func mastraChunkKind(name string) string {
	rest, ok := strings.CutPrefix(name, "chunk: ")
	if !ok {
		return ""
	}
	return strings.Trim(strings.TrimSpace(rest), `'"`)
}

// mastraPart adds one streamed chunk of a model call to its step: a tool
// call the model asked for, the result the framework fed back for it, the
// call's text, or the error that ended it. The chunk's shape decides; its
// type in the span name only separates a tool error from a result.
func mastraPart(c *spanCtx, st *Step) {
	s := mastraIO(c, "output")
	if !looksJSON(s) {
		return
	}
	t, ok := validText(s)
	if !ok {
		return
	}
	var ch mastraChunk
	ch.decodeValid(t)
	kind := strings.ToLower(mastraChunkKind(c.sp.Name()))
	switch {
	case len(ch.Error) > 0 && ch.ToolCallID == "":
		// The call failed: {error: {name, message}} or {error: "text"}.
		st.Errors = appendErrorInfo(st.Errors, errorInfoFromJSON(ch.Error))
	case ch.ToolCallID != "" && (len(ch.Result) > 0 || len(ch.Output) > 0 || len(ch.Error) > 0):
		res := ToolResult{CallID: ch.ToolCallID, Name: ch.ToolName, IsError: kind == "tool-error" || len(ch.Error) > 0}
		switch {
		case len(ch.Error) > 0:
			res.Content = contentText(ch.Error)
		case len(ch.Result) > 0:
			res.Content = rawJSONText(ch.Result)
			res.IsError = res.IsError || mcpResultIsError(ch.Result)
		default:
			res.Content, res.IsError = vercelOutput(ch.Output, res.IsError)
		}
		st.ToolResults = append(st.ToolResults, res)
	case ch.ToolName != "" || ch.ToolCallID != "":
		tc := ToolCall{ID: ch.ToolCallID, Name: ch.ToolName}
		for _, r := range []json.RawMessage{ch.ToolInput, ch.Args, ch.Input} {
			if a := rawJSONText(r); a != "" {
				tc.Arguments = a
				break
			}
		}
		st.Requested = appendCall(st.Requested, tc)
	case len(ch.Text) > 0:
		// The step's own output holds the whole text; a step assembled
		// from chunks gets it chunk by chunk.
		if t := rawJSONText(ch.Text); t != "" && !strings.Contains(st.OutputText, t) {
			st.OutputText += t
		}
	}
	if ch.FinishReason != "" && len(st.FinishReasons) == 0 {
		st.FinishReasons = []string{ch.FinishReason}
	}
}

// errorInfoFromJSON reads a serialized error: {name, message, code} (a
// JavaScript Error, an SDK error), {type, message}, or a plain string.
func errorInfoFromJSON(r json.RawMessage) ErrorInfo {
	r = trimJSON(r)
	if len(r) > 0 && r[0] == '{' {
		var e jsonErrorObject
		if t, ok := validText(stringOf(r)); ok {
			e.decodeValid(t)
		}
		if e.Message != "" || e.Name != "" {
			info := ErrorInfo{Type: firstNonEmpty(e.Name, e.Type), Message: e.Message}
			if len(info.Message) > maxErrorTextScan {
				info.Message = info.Message[:maxErrorTextScan]
			}
			info.Code = providerCode(info.Message)
			if info.Code == "" {
				if code := rawJSONText(e.Code); isCodeLike(code) {
					info.Code = code
				}
			}
			return info
		}
	}
	msg := rawJSONText(r)
	if len(msg) > maxErrorTextScan {
		msg = msg[:maxErrorTextScan]
	}
	return ErrorInfo{Message: msg, Code: providerCode(msg)}
}

// appendErrorInfo adds e unless it is empty, already there, or the step
// holds as many as readErrors keeps for a span.
func appendErrorInfo(errs []ErrorInfo, e ErrorInfo) []ErrorInfo {
	if e.Type == "" && e.Message == "" || len(errs) >= MaxExceptionsPerSpan {
		return errs
	}
	for _, x := range errs {
		if x == e {
			return errs
		}
	}
	return append(errs, e)
}

// The provider response's finish reason and token counts, each a quoted
// key (one of several spellings) and its value, found where a key occurs
// (keyedRule).
var (
	// "(?:finish_reason|finishReason|stop_reason)"\s*:\s*"([A-Za-z_\-]{1,40})"
	finishReasonRe = keyedRule{keys: []string{`finish_reason"`, `finishReason"`, `stop_reason"`}, open: `"`,
		value: valueRule{kind: tokenValue, quotes: `"`, class: bytesOfClass("A-Z", "a-z", "_", "-"), min: 1, max: 40}}
	// "(?:prompt_tokens|input_tokens|inputTokens|promptTokens)"\s*:\s*(\d{1,12})\b
	inputTokensRe = keyedRule{keys: []string{`prompt_tokens"`, `input_tokens"`, `inputTokens"`, `promptTokens"`}, open: `"`,
		value: valueRule{kind: digitsValue, max: 12}}
	// "(?:completion_tokens|output_tokens|outputTokens|completionTokens)"\s*:\s*(\d{1,12})\b
	outputTokensRe = keyedRule{keys: []string{`completion_tokens"`, `output_tokens"`, `outputTokens"`, `completionTokens"`}, open: `"`,
		value: valueRule{kind: digitsValue, max: 12}}
)

// scanJSONString returns the group of the first match of rule in the
// first maxErrorTextScan bytes of s.
func scanJSONString(s string, rule keyedRule) string {
	if len(s) > maxErrorTextScan {
		s = s[:maxErrorTextScan]
	}
	if _, v, ok := rule.find(s, 0); ok {
		return v
	}
	return ""
}

func scanJSONInt(s string, re keyedRule) int64 {
	n, _ := strconv.ParseInt(scanJSONString(s, re), 10, 64)
	return n
}

// The JSON shapes Mastra records, decoded by the scanner with
// lenientUnmarshal's rules (decodeValid, msgdecode.go); the tags are what
// encoding/json would read, which FuzzMessageDecode holds them to.

// mastraModelMetadata is a model span's modelMetadata.
type mastraModelMetadata struct {
	ModelProvider string `json:"modelProvider"`
}

var mastraModelMetadataFields = []string{"modelProvider"}

func (m *mastraModelMetadata) decodeValid(v string) {
	eachField(v, mastraModelMetadataFields, func(_ int, val string) { setString(&m.ModelProvider, val) })
}

// mastraOutput is a model span's output.
type mastraOutput struct {
	Text         string         `json:"text"`
	ToolCalls    []jsonToolCall `json:"toolCalls"`
	FinishReason string         `json:"finishReason"`
}

var mastraOutputFields = []string{"text", "toolCalls", "finishReason"}

func (o *mastraOutput) decodeValid(v string) {
	eachField(v, mastraOutputFields, func(i int, val string) {
		switch i {
		case 0:
			setString(&o.Text, val)
		case 1:
			setSliceAt(&o.ToolCalls, val, decodeToolCallAt)
		case 2:
			setString(&o.FinishReason, val)
		}
	})
}

// mastraInput is a model span's input: {body: "<the provider request>"}.
type mastraInput struct {
	Body json.RawMessage `json:"body"`
}

var mastraInputFields = []string{"body"}

func (w *mastraInput) decodeValid(v string) {
	eachField(v, mastraInputFields, func(_ int, val string) { setRaw(&w.Body, val) })
}

// mastraRequest is the provider request of a model span's input.
type mastraRequest struct {
	Messages json.RawMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools"`
}

var mastraRequestFields = []string{"messages", "tools"}

func (r *mastraRequest) decodeValid(v string) {
	eachField(v, mastraRequestFields, func(i int, val string) {
		if i == 0 {
			setRaw(&r.Messages, val)
		} else {
			setRaw(&r.Tools, val)
		}
	})
}

// mastraChunk is a chunk span's output.
type mastraChunk struct {
	Text         json.RawMessage `json:"text"`
	ToolName     string          `json:"toolName"`
	ToolCallID   string          `json:"toolCallId"`
	ToolInput    json.RawMessage `json:"toolInput"`
	Args         json.RawMessage `json:"args"`
	Input        json.RawMessage `json:"input"`
	Result       json.RawMessage `json:"result"`
	Output       json.RawMessage `json:"output"`
	Error        json.RawMessage `json:"error"`
	FinishReason string          `json:"finishReason"`
}

var mastraChunkFields = []string{"text", "toolName", "toolCallId", "toolInput", "args", "input", "result", "output", "error", "finishReason"}

func (ch *mastraChunk) decodeValid(v string) {
	raws := [...]*json.RawMessage{0: &ch.Text, 3: &ch.ToolInput, 4: &ch.Args, 5: &ch.Input, 6: &ch.Result, 7: &ch.Output, 8: &ch.Error}
	eachField(v, mastraChunkFields, func(i int, val string) {
		switch i {
		case 1:
			setString(&ch.ToolName, val)
		case 2:
			setString(&ch.ToolCallID, val)
		case 9:
			setString(&ch.FinishReason, val)
		default:
			setRaw(raws[i], val)
		}
	})
}

// jsonErrorObject is a serialized error (errorInfoFromJSON).
type jsonErrorObject struct {
	Name    string          `json:"name"`
	Type    string          `json:"type"`
	Message string          `json:"message"`
	Code    json.RawMessage `json:"code"`
}

var jsonErrorObjectFields = []string{"name", "type", "message", "code"}

func (e *jsonErrorObject) decodeValid(v string) {
	strs := [...]*string{&e.Name, &e.Type, &e.Message}
	eachField(v, jsonErrorObjectFields, func(i int, val string) {
		if i == 3 {
			setRaw(&e.Code, val)
		} else {
			setString(strs[i], val)
		}
	})
}
