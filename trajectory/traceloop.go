package trajectory

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// OpenLLMetry / Traceloop conventions.
//
// Spans: traceloop.span.kind = tool (tool steps), agent (agent runs),
// workflow / task / session (wrappers); LLM spans carry llm.request.type
// (chat, completion) or the legacy indexed prompt/completion attributes.
// Tool fields: traceloop.entity.name (tool name), traceloop.entity.input
// ({"args": [...], "kwargs": {...}} → the kwargs, or the single positional
// argument; {"arguments": ...} as recorded for MCP calls),
// traceloop.entity.output (result).
// LLM fields (legacy form): gen_ai.prompt.N.{role,content,name,tool_call_id,
// tool_calls.M.{id,name,arguments}}, gen_ai.completion.N.{role,content,
// finish_reason,tool_calls.M.{id,name,arguments},function_call.{name,arguments}},
// llm.request.functions.N.{name,parameters}, llm.usage.total_tokens,
// gen_ai.usage.{prompt,completion}_tokens. The newer JSON forms
// (gen_ai.input/output.messages, gen_ai.tool.definitions) are read by the
// GenAI reader, which also sees these spans.

func tlDetect(_ *spanCtx, p *roleAttrs) (spanRole, bool) {
	if k, ok := p.get(rkTLKind); ok {
		switch strings.ToLower(k.AsString()) {
		case "tool":
			return roleTool, true
		case "agent":
			return roleAgent, true
		}
		return roleNone, true
	}
	if t := p.str(rkLLMRequestType); t != "" {
		switch strings.ToLower(t) {
		case "chat", "completion", "completions":
			return roleLLM, true
		}
		return roleNone, true
	}
	if _, ok := p.get(rkCompletionRole); ok {
		return roleLLM, true
	}
	if _, ok := p.get(rkCompletionContent); ok {
		return roleLLM, true
	}
	if _, ok := p.get(rkTLEntityName); ok {
		return roleNone, true
	}
	return roleNone, false
}

func tlFill(c *spanCtx, st *Step) {
	a := c.attrs
	if st.Kind == StepTool {
		// A LangChain tool's output names the tool; the entity name is
		// its class (langchain.go).
		if r, ok := toolMessage(c.memo, attrStr(a, "traceloop.entity.output")); ok {
			applyToolMessage(st, r)
		}
		if st.ToolName == "" {
			st.ToolName = attrStr(a, "traceloop.entity.name")
		}
		if st.Arguments == "" {
			st.Arguments = tlArguments(attrStr(a, "traceloop.entity.input"))
		}
		if st.Result == "" {
			st.Result = attrStr(a, "traceloop.entity.output")
		}
		return
	}
	if st.Model == "" {
		st.Model = firstStr(a, "gen_ai.response.model", "gen_ai.request.model", "llm.response.model", "llm.request.model")
	}
	if st.InputTokens == 0 {
		st.InputTokens, _ = firstInt(a, "gen_ai.usage.prompt_tokens", "llm.usage.prompt_tokens")
	}
	if st.OutputTokens == 0 {
		st.OutputTokens, _ = firstInt(a, "gen_ai.usage.completion_tokens", "llm.usage.completion_tokens")
	}
	var in, out flatMsgs
	funcs := map[int]*ToolDef{}
	a.Range(func(k string, v pcommon.Value) bool {
		switch {
		case strings.HasPrefix(k, "gen_ai.prompt."):
			tlMessage(&in, k[len("gen_ai.prompt."):], v)
		case strings.HasPrefix(k, "gen_ai.completion."):
			tlMessage(&out, k[len("gen_ai.completion."):], v)
		case strings.HasPrefix(k, "llm.request.functions."):
			n, field, ok := splitIndex(k[len("llm.request.functions."):])
			if !ok {
				break
			}
			d := funcs[n]
			if d == nil {
				d = &ToolDef{}
				funcs[n] = d
			}
			switch field {
			case "name":
				d.Name = v.AsString()
			case "parameters":
				if s := strings.TrimSpace(v.AsString()); strings.HasPrefix(s, "{") && json.Valid([]byte(s)) {
					d.Schema = json.RawMessage(s)
				}
			}
		}
		return true
	})
	if len(st.Offered) == 0 && len(funcs) > 0 {
		for _, i := range slices.Sorted(maps.Keys(funcs)) {
			if funcs[i].Name != "" {
				st.Offered = append(st.Offered, *funcs[i])
			}
		}
	}
	applyInput(st, in.messages())
	outMsgs := out.messages()
	applyOutput(st, outMsgs)
}

// tlMessage applies one legacy attribute "N.<field>" to msgs.
func tlMessage(msgs *flatMsgs, rest string, v pcommon.Value) {
	n, field, ok := splitIndex(rest)
	if !ok {
		return
	}
	m := msgs.at(n)
	if m.setField(field, v) {
		return
	}
	switch field {
	case "function_call.name":
		m.call(0).Name = v.AsString()
		return
	case "function_call.arguments":
		m.call(0).Arguments = v.AsString()
		return
	}
	if r, ok := strings.CutPrefix(field, "tool_calls."); ok {
		k, f, ok := splitIndex(r)
		if !ok {
			return
		}
		tc := m.call(k)
		switch f {
		case "id":
			tc.ID = v.AsString()
		case "name":
			tc.Name = v.AsString()
		case "arguments":
			tc.Arguments = v.AsString()
		}
	}
}

// tlArguments extracts the tool arguments from traceloop.entity.input.
func tlArguments(in string) string {
	if !looksJSON(in) {
		return in
	}
	t, ok := validText(in)
	if !ok {
		return in
	}
	var w tlEntityInput
	w.decodeValid(t)
	if k := trimJSON(w.Kwargs); len(k) >= 2 && k[0] == '{' && (len(k) > 2 || len(w.Args) == 0) {
		return string(k)
	}
	if s := rawJSONText(w.Arguments); s != "" {
		return s
	}
	if len(w.Args) == 1 {
		return rawJSONText(w.Args[0])
	}
	return in
}

// tlEntityInput is a tool span's traceloop.entity.input, decoded with
// lenientUnmarshal's rules (decodeValid, msgdecode.go).
type tlEntityInput struct {
	Args      []json.RawMessage `json:"args"`
	Kwargs    json.RawMessage   `json:"kwargs"`
	Arguments json.RawMessage   `json:"arguments"`
}

var tlEntityInputFields = []string{"args", "kwargs", "arguments"}

func (w *tlEntityInput) decodeValid(v string) {
	eachField(v, tlEntityInputFields, func(i int, val string) {
		switch i {
		case 0:
			setSlice(&w.Args, val, func(ev string, r *json.RawMessage) { setRaw(r, ev) })
		case 1:
			setRaw(&w.Kwargs, val)
		case 2:
			setRaw(&w.Arguments, val)
		}
	})
}
