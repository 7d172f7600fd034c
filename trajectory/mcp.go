package trajectory

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Model Context Protocol.
//
// OTel MCP semantic conventions: mcp.method.name = tools/call spans (client
// or server) are tool steps named by gen_ai.tool.name (or mcp.tool.name);
// error.type is the JSON-RPC error code or "tool_error" (a CallToolResult
// with isError), rpc.response.status_code / deprecated
// rpc.jsonrpc.error_code carry the JSON-RPC code. Other methods
// (initialize, tools/list, ...) are wrappers.
//
// @traceloop/instrumentation-mcp: "<tool>.tool" spans with
// traceloop.span.kind = tool, traceloop.entity.input {"tool_name",
// "arguments"} and traceloop.entity.output {"result", "is_error"}; the
// JSON-RPC code only appears in the status description ("MCP error -32602:
// ..."), which errors.go reads for every span.

// isMCPScope reports whether scope is OpenLLMetry's MCP instrumentation,
// whose spans mcpDetect reads by their Traceloop kind.
func isMCPScope(scope string) bool { return strings.Contains(scope, "instrumentation-mcp") }

func mcpDetect(_ *spanCtx, p *roleAttrs) (spanRole, bool) {
	if m := p.str(rkMCPMethod); m != "" {
		if m == "tools/call" {
			return roleTool, true
		}
		return roleNone, true
	}
	if p.mcpScope {
		if strings.EqualFold(p.str(rkTLKind), "tool") {
			return roleTool, true
		}
		return roleNone, true
	}
	return roleNone, false
}

func mcpFill(c *spanCtx, st *Step) {
	a := c.attrs
	if st.Kind != StepTool {
		return
	}
	if st.ToolName == "" {
		st.ToolName = firstStr(a, "gen_ai.tool.name", "mcp.tool.name")
	}
	if st.ToolName == "" {
		// Span names are "tools/call <tool>".
		if n, ok := strings.CutPrefix(c.sp.Name(), "tools/call "); ok {
			st.ToolName = strings.TrimSpace(n)
		}
	}
	if st.ToolCallID == "" {
		st.ToolCallID = attrStr(a, "gen_ai.tool.call.id")
	}
	if st.Arguments == "" {
		st.Arguments = attrStr(a, "gen_ai.tool.call.arguments")
	}
	if st.Result == "" {
		st.Result = attrStr(a, "gen_ai.tool.call.result")
		if looksJSON(st.Result) {
			st.ResultIsError = st.ResultIsError || mcpResultIsError(bytesOf(st.Result))
		}
	}
	if strings.EqualFold(attrStr(a, "error.type"), "tool_error") {
		st.ResultIsError = true
	}
	if !st.HasJSONRPC {
		if s := attrStr(a, "rpc.response.status_code"); s != "" {
			if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n != 0 {
				st.JSONRPCCode, st.HasJSONRPC = n, true
			}
		}
	}
	// Traceloop's MCP spans.
	if in := attrStr(a, "traceloop.entity.input"); st.Arguments == "" && looksJSON(in) {
		if t, ok := validText(in); ok {
			var w mcpEntityInput
			w.decodeValid(t)
			if st.ToolName == "" {
				st.ToolName = firstNonEmpty(w.ToolName, w.Name)
			}
			st.Arguments = rawJSONText(w.Arguments)
		}
	}
	if out := attrStr(a, "traceloop.entity.output"); st.Result == "" && looksJSON(out) {
		if t, ok := validText(out); ok {
			var w mcpEntityOutput
			w.decodeValid(t)
			switch {
			case len(w.Result) > 0:
				st.Result = rawJSONText(w.Result)
			case len(w.Content) > 0: // a raw CallToolResult
				st.Result = contentText(w.Content)
			default:
				st.Result = out
			}
			if (w.IsError != nil && *w.IsError) || (w.IsErrorCC != nil && *w.IsErrorCC) {
				st.ResultIsError = true
			}
		}
	}
}

// listedToolDefs returns the tool definitions an MCP tools/list span
// recorded: the server's answer, whose definitions carry its tool
// annotations (@traceloop/instrumentation-mcp records it as
// traceloop.entity.output; a gen_ai.tool.definitions attribute is read
// too).
func listedToolDefs(c *spanCtx) []ToolDef {
	if !isToolsList(c) {
		return nil
	}
	if d := c.toolDefs(attrStr(c.attrs, "gen_ai.tool.definitions")); len(d) > 0 {
		return d
	}
	return c.toolDefs(attrStr(c.attrs, "traceloop.entity.output"))
}

func isToolsList(c *spanCtx) bool {
	if m := attrStr(c.attrs, "mcp.method.name"); m != "" {
		return m == "tools/list"
	}
	return strings.Contains(c.scope, "instrumentation-mcp") && strings.HasPrefix(c.sp.Name(), "tools/list")
}

// mcpEntityInput is Traceloop's traceloop.entity.input of an MCP span,
// decoded with lenientUnmarshal's rules (decodeValid, msgdecode.go).
type mcpEntityInput struct {
	ToolName  string          `json:"tool_name"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

var mcpEntityInputFields = []string{"tool_name", "name", "arguments"}

func (w *mcpEntityInput) decodeValid(v string) {
	eachField(v, mcpEntityInputFields, func(i int, val string) {
		switch i {
		case 0:
			setString(&w.ToolName, val)
		case 1:
			setString(&w.Name, val)
		case 2:
			setRaw(&w.Arguments, val)
		}
	})
}

// mcpEntityOutput is its traceloop.entity.output.
type mcpEntityOutput struct {
	Result    json.RawMessage `json:"result"`
	IsError   *bool           `json:"is_error"`
	IsErrorCC *bool           `json:"isError"`
	Content   json.RawMessage `json:"content"`
}

var mcpEntityOutputFields = []string{"result", "is_error", "isError", "content"}

func (w *mcpEntityOutput) decodeValid(v string) {
	eachField(v, mcpEntityOutputFields, func(i int, val string) {
		switch i {
		case 0:
			setRaw(&w.Result, val)
		case 1:
			setBoolPtr(&w.IsError, val)
		case 2:
			setBoolPtr(&w.IsErrorCC, val)
		case 3:
			setRaw(&w.Content, val)
		}
	})
}
