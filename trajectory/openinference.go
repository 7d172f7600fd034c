package trajectory

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// OpenInference (Arize) conventions.
//
// Spans: openinference.span.kind = LLM (LLM steps), TOOL (tool steps), AGENT
// (agent runs); CHAIN, RETRIEVER, EMBEDDING, ... are wrappers.
// LLM fields: flattened indexed attributes
// llm.input_messages.N.message.{role,content,name,tool_call_id,
// tool_calls.M.tool_call.{id,function.name,function.arguments},
// contents.K.message_content.text} and the same under llm.output_messages,
// llm.tools.N.tool.json_schema, llm.finish_reason, llm.model_name,
// llm.token_count.{prompt,completion}. When the flattened attributes lack
// call IDs or the error status of tool results (LangChain records neither
// there), they are completed from input.value / output.value, which hold
// the framework's serialized messages (LangChain ToolMessage status "error").
// Tool fields: tool.name, tool_call.id, input.value (arguments), output.value
// (result; a LangChain ToolMessage is unwrapped).

func oiDetect(_ *spanCtx, p *roleAttrs) (spanRole, bool) {
	k, ok := p.get(rkOIKind)
	if !ok {
		return roleNone, false
	}
	switch strings.ToUpper(k.AsString()) {
	case "LLM":
		return roleLLM, true
	case "TOOL":
		return roleTool, true
	case "AGENT":
		return roleAgent, true
	}
	return roleNone, true
}

// flatMsg accumulates one indexed message of flattened attributes.
type flatMsg struct {
	role, content, name, callID, finish string
	texts                               *indexed[string]   // nil: none
	calls                               *indexed[ToolCall] // nil: none
}

// flatMsgs are the indexed messages of one list.
type flatMsgs struct{ indexed[flatMsg] }

// setField applies the message fields both flattened conventions name
// alike; it reports whether field was one of them.
func (m *flatMsg) setField(field string, v pcommon.Value) bool {
	switch field {
	case "role":
		m.role = v.AsString()
	case "content":
		m.content = v.AsString()
	case "name":
		m.name = v.AsString()
	case "tool_call_id":
		m.callID = v.AsString()
	case "finish_reason":
		m.finish = v.AsString()
	default:
		return false
	}
	return true
}

func (m *flatMsg) call(i int) *ToolCall {
	if m.calls == nil {
		m.calls = new(indexed[ToolCall])
	}
	return m.calls.at(i)
}

// messages orders the accumulated messages by index and converts them.
func (f *flatMsgs) messages() []message {
	if f.len() == 0 {
		return nil
	}
	out := make([]message, 0, f.len())
	f.each(func(fm *flatMsg) {
		m := message{Role: strings.ToLower(fm.role), Text: fm.content, FinishReason: fm.finish}
		if m.Text == "" && fm.texts != nil {
			var b strings.Builder
			fm.texts.each(func(t *string) { appendText(&b, *t) })
			m.Text = b.String()
		}
		if fm.calls != nil {
			m.Calls = make([]ToolCall, 0, fm.calls.len())
			fm.calls.each(func(c *ToolCall) { m.Calls = append(m.Calls, *c) })
		}
		if m.Role == "tool" || m.Role == "function" || fm.callID != "" {
			m.Results = append(m.Results, ToolResult{CallID: fm.callID, Name: fm.name, Content: m.Text})
			m.Text = ""
		}
		out = append(out, m)
	})
	return out
}

// oiMessage applies one flattened attribute "N.message.<field>" to msgs.
func oiMessage(msgs *flatMsgs, rest string, v pcommon.Value) {
	n, rest, ok := splitIndex(rest)
	if !ok {
		return
	}
	rest, ok = strings.CutPrefix(rest, "message.")
	if !ok {
		return
	}
	m := msgs.at(n)
	if m.setField(rest, v) {
		return
	}
	if r, ok := strings.CutPrefix(rest, "tool_calls."); ok {
		k, field, ok := splitIndex(r)
		if !ok {
			return
		}
		tc := m.call(k)
		switch field {
		case "tool_call.id":
			tc.ID = v.AsString()
		case "tool_call.function.name":
			tc.Name = v.AsString()
		case "tool_call.function.arguments":
			tc.Arguments = v.AsString()
		}
		return
	}
	if r, ok := strings.CutPrefix(rest, "contents."); ok {
		k, field, ok := splitIndex(r)
		if ok && field == "message_content.text" {
			if m.texts == nil {
				m.texts = new(indexed[string])
			}
			*m.texts.at(k) = v.AsString()
		}
	}
}

func oiFill(c *spanCtx, st *Step) {
	a := c.attrs
	if st.Kind == StepTool {
		oiFillTool(c, st)
		return
	}
	if st.Model == "" {
		st.Model = attrStr(a, "llm.model_name")
	}
	if st.Provider == "" {
		st.Provider = firstStr(a, "llm.provider", "llm.system")
	}
	if len(st.FinishReasons) == 0 {
		if fr := attrStr(a, "llm.finish_reason"); fr != "" {
			st.FinishReasons = []string{fr}
		}
	}
	if st.InputTokens == 0 {
		st.InputTokens, _ = attrInt(a, "llm.token_count.prompt")
	}
	if st.OutputTokens == 0 {
		st.OutputTokens, _ = attrInt(a, "llm.token_count.completion")
	}
	if st.Cost == 0 {
		st.Cost = attrCost(a, "llm.cost.total")
	}
	var in, out flatMsgs
	var tools indexed[string]
	a.Range(func(k string, v pcommon.Value) bool {
		switch {
		case strings.HasPrefix(k, "llm.input_messages."):
			oiMessage(&in, k[len("llm.input_messages."):], v)
		case strings.HasPrefix(k, "llm.output_messages."):
			oiMessage(&out, k[len("llm.output_messages."):], v)
		case strings.HasPrefix(k, "llm.tools."):
			if n, field, ok := splitIndex(k[len("llm.tools."):]); ok && field == "tool.json_schema" {
				*tools.at(n) = v.AsString()
			}
		}
		return true
	})
	if len(st.Offered) == 0 && tools.len() > 0 {
		tools.each(func(t *string) { st.Offered = append(st.Offered, c.toolDefs(*t)...) })
	}
	inMsgs, outMsgs := in.messages(), out.messages()
	// The serialized framework messages carry what the flattened form
	// drops: tool-call IDs and tool results' error status.
	if needsSerialized(inMsgs) {
		if len(inMsgs) == 0 {
			inMsgs = decodeMessagesAsMemo(attrStr(a, "input.value"), false, c.memo)
		} else {
			// Only the calls and results complete the flattened
			// messages: the history's text is not decoded.
			completeMessages(inMsgs, decodeMessagesAsMemo(attrStr(a, "input.value"), true, c.memo))
		}
	}
	if needsSerialized(outMsgs) {
		if len(outMsgs) == 0 {
			outMsgs = decodeGenerations(attrStr(a, "output.value"), false)
		} else {
			completeMessages(outMsgs, decodeGenerations(attrStr(a, "output.value"), true))
		}
	}
	applyInput(st, inMsgs)
	applyOutput(st, outMsgs)
}

// needsSerialized reports whether flattened messages miss call IDs (or are
// absent) so the serialized input/output value is worth decoding.
func needsSerialized(ms []message) bool {
	if len(ms) == 0 {
		return true
	}
	for _, m := range ms {
		for _, c := range m.Calls {
			if c.ID == "" {
				return true
			}
		}
		if len(m.Results) > 0 {
			return true // the error status is never flattened
		}
	}
	return false
}

// completeMessages fills missing call IDs, result IDs/names and result error
// flags of the flattened messages from the serialized ones. The two lists
// describe the same conversation; tool calls and results are matched in
// order. Without flattened messages the serialized ones are used as they are.
func completeMessages(flat, ser []message) []message {
	if len(flat) == 0 {
		return ser
	}
	var serCalls []ToolCall
	var serResults []ToolResult
	for _, m := range ser {
		serCalls = append(serCalls, m.Calls...)
		serResults = append(serResults, m.Results...)
	}
	ci, ri := 0, 0
	for i := range flat {
		for j := range flat[i].Calls {
			c := &flat[i].Calls[j]
			if ci < len(serCalls) && (c.Name == "" || c.Name == serCalls[ci].Name) {
				if c.ID == "" {
					c.ID = serCalls[ci].ID
				}
				if c.Name == "" {
					c.Name = serCalls[ci].Name
				}
				if c.Arguments == "" {
					c.Arguments = serCalls[ci].Arguments
				}
			}
			ci++
		}
		for j := range flat[i].Results {
			r := &flat[i].Results[j]
			if ri < len(serResults) {
				s := serResults[ri]
				if r.CallID == "" {
					r.CallID = s.CallID
				}
				if r.Name == "" {
					r.Name = s.Name
				}
				r.IsError = r.IsError || s.IsError
			}
			ri++
		}
	}
	return flat
}

// decodeGenerations reads LangChain's LLM output value
// {"generations": [[{"text", "message": {...}}]]}; other shapes are tried as
// a message list. callsOnly is decodeMessageCalls': the messages' text and
// results' content are not decoded.
func decodeGenerations(s string, callsOnly bool) []message {
	if !looksJSON(s) || !strings.Contains(s, "generations") {
		return decodeMessagesAs(s, callsOnly)
	}
	text, ok := lenientText(bytesOf(s), false)
	if !ok {
		return nil
	}
	if out, ok := decodeGenerationMessages(text, callsOnly); ok {
		return out
	}
	var g jsonGenerations
	decodeGenerationsJSON(text, &g)
	var out []message
	for _, batch := range g.Generations {
		for _, gen := range batch {
			var m message
			var ok bool
			if len(gen.Message) > 0 {
				// gen.Message is raw text of the value validated above.
				m, ok = decodeValidMessage(gen.Message, callsOnly)
			}
			out = appendGeneration(out, gen.Text, m, ok, callsOnly)
		}
	}
	return out
}

// appendGeneration appends what a generation of text and message m says:
// m when it has one that decoded (ok), else its text.
func appendGeneration(out []message, text string, m message, ok bool, callsOnly bool) []message {
	if ok {
		if m.Role == "" {
			m.Role = "assistant"
		}
		return append(out, m)
	}
	if text != "" {
		m := message{Role: "assistant"}
		if !callsOnly {
			m.Text = text
		}
		out = append(out, m)
	}
	return out
}

// decodeGenerationMessages is what decodeGenerations makes of the valid
// JSON text of a generations object, each generation's message decoded
// where it is: decodeGenerationsJSON skipped it to keep its raw text,
// decoded then on its own (most of the text's bytes read twice). It reads
// one "generations" member; ok is false for an object with more, whose
// lists decode over the earlier ones' generations (decodeGenerationsJSON
// keeps encoding/json's rules for them).
func decodeGenerationMessages(text string, callsOnly bool) (out []message, ok bool) {
	if jsonKind(text) != '{' {
		return nil, true
	}
	members := 0
	eachMemberAt(text, func(key, rest string) int {
		if fieldIndex(key, generationsFields) != 0 {
			return validLen(rest)
		}
		if members++; members > 1 || jsonKind(rest) != '[' {
			// null or another type: no generations (the list left
			// alone, nil); a second list: decodeGenerationsJSON.
			return validLen(rest)
		}
		return eachElementAt(rest, func(_ int, br string) int {
			if jsonKind(br) != '[' {
				return validLen(br) // no generations in this batch
			}
			return eachElementAt(br, func(_ int, gv string) int {
				if jsonKind(gv) != '{' {
					return validLen(gv) // a zero generation: nothing
				}
				var genText string
				var m message
				var mOK bool
				n := eachMemberAt(gv, func(k, v string) int {
					switch fieldIndex(k, generationFields) {
					case 0:
						return setStringAt(&genText, v)
					case 1:
						// The last message member is the one kept
						// (json.RawMessage), null included.
						var jm, kw jsonMessage
						mn := decodeMessageKwAt(v, &jm, &kw)
						m, _, mOK = messageFromKwargs(&jm, &kw, callsOnly, false, nil)
						mOK = mOK && mn > 0
						return mn
					}
					return validLen(v)
				})
				out = appendGeneration(out, genText, m, mOK, callsOnly)
				return n
			})
		})
	})
	return out, members <= 1
}

func oiFillTool(c *spanCtx, st *Step) {
	a := c.attrs
	if st.ToolName == "" {
		st.ToolName = attrStr(a, "tool.name")
	}
	if st.ToolCallID == "" {
		st.ToolCallID = attrStr(a, "tool_call.id")
	}
	if st.Arguments == "" {
		st.Arguments = attrStr(a, "tool_call.function.arguments")
	}
	if st.Arguments == "" {
		// input.value is the tool's input as the framework passed it: JSON
		// arguments, or (mime text/plain) a bare value such as "Paris" that
		// is not the model's arguments. Only JSON is kept; otherwise
		// linkToolCalls takes the arguments from the model's request.
		if in := attrStr(a, "input.value"); looksJSON(in) && !strings.EqualFold(attrStr(a, "input.mime_type"), "text/plain") {
			st.Arguments = in
		}
	}
	out := attrStr(a, "output.value")
	if out == "" {
		return
	}
	// LangChain wraps the result in a serialized ToolMessage
	// (langchain.go).
	if r, ok := toolMessage(c.memo, out); ok {
		applyToolMessage(st, r)
		return
	}
	if st.Result == "" {
		st.Result = out
	}
	if !st.ResultIsError && looksJSON(out) {
		st.ResultIsError = mcpResultIsError(bytesOf(out))
	}
}
