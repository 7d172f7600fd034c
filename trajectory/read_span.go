package trajectory

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// SpanRole is what one span is to a trajectory.
type SpanRole uint8

const (
	SpanOther SpanRole = SpanRole(roleNone)  // wrapper, chain, HTTP span, MCP tools/list, ...
	SpanLLM   SpanRole = SpanRole(roleLLM)   // a model call
	SpanTool  SpanRole = SpanRole(roleTool)  // a tool call
	SpanAgent SpanRole = SpanRole(roleAgent) // an agent invocation
	// SpanPart is a streamed part of the model call that encloses it (a
	// chunk span): Build folds it into that call's step.
	SpanPart SpanRole = SpanRole(rolePart)
)

// SpanRead is what the convention readers make of one span on its own,
// without the rest of its trace: what a consumer that sees a trace span by
// span (the processor's in-flight guards) needs, with no re-reading of the
// spans it saw before.
type SpanRead struct {
	Role SpanRole
	// Step is the span's step when Role is SpanLLM or SpanTool (for
	// SpanPart: what the part adds to its model call's step), read as
	// Build reads it (error evidence, then every convention reader that
	// recognises the span). Build then merges the nested span of one call
	// into the outer step, links tool steps to the calls models requested
	// and completes Offered from the agent span; the caller does that (or
	// not) itself.
	Step Step
	// Tools are the tool definitions a span that is not an LLM step
	// records: gen_ai.tool.definitions on an agent span, the answer of an
	// MCP tools/list span (Run.ListedTools).
	Tools []ToolDef
	// Session and Agent are the session (conversation) id and the agent
	// name this span names by convention, "" when it names none.
	Session string
	Agent   string
	// KeyedSession is the session id the reader's SessionKeys name on the
	// span, "" when none does.
	KeyedSession string
}

// SpanReader reads spans one at a time. Tool definition lists are decoded
// once per distinct text, for every reader and Build (tooldefs.go); the
// scan of a chat span's input messages resumes where one of the last lists
// it read ends (inputprefix.go: it keeps those spans' texts referenced, so
// a reader is meant for a batch or a trace, not for ever). It is not safe
// for concurrent use; the Tools and Step.Offered slices it returns are
// shared and must not be modified.
type SpanReader struct {
	// SessionKeys are attributes a caller reads a session id from, in
	// order of preference (the processor's configured ones): ReadTo sets
	// SpanRead.KeyedSession to the value of the first of them the span
	// has with a non-empty value, as recovery.SessionKey reads the span's
	// attributes. Nil: none.
	SessionKeys []string

	inputs inputLists // the message lists read so far (inputprefix.go)
	// n is the node of the span being read. The convention readers take
	// it (and the step) through function values, so a node of each Read's
	// own would move to the heap on every span; the reader's is reused.
	n node
}

// Read reads one span; res and scope are its resource and the name of its
// instrumentation scope.
func (r *SpanReader) Read(sp ptrace.Span, res pcommon.Resource, scope string) SpanRead {
	var out SpanRead
	r.ReadTo(&out, sp, res, scope)
	return out
}

// ReadTo is Read into out (all of it is written): a caller that keeps the
// readings of a batch reads each into its place, with no reading of its
// own moved to the heap and copied.
func (r *SpanReader) ReadTo(out *SpanRead, sp ptrace.Span, res pcommon.Resource, scope string) {
	roles := roleAttrs{mcpScope: isMCPScope(scope)}
	r.n = node{c: spanCtx{sp: sp, attrs: spanAttrsRoles(sp.Attributes(), &roles), res: res, scope: scope, inputs: &r.inputs}}
	n := &r.n
	detectRole(n, &roles)
	*out = SpanRead{Role: SpanRole(n.role)}
	switch n.role {
	case roleLLM, roleTool:
		ev := readErrors(sp, n.c.attrs)
		readStep(n, &ev, &out.Step)
	case rolePart:
		// What the part adds to its model call, as a step of its own.
		ev := readErrors(sp, n.c.attrs)
		out.Step = Step{Kind: StepLLM, Convention: n.conv, SpanID: sp.SpanID(), ParentID: sp.ParentSpanID(),
			Name: sp.Name(), Start: sp.StartTimestamp(), End: sp.EndTimestamp()}
		readPart(n, &ev, &out.Step)
	default:
		out.Tools = listedToolDefs(&n.c)
		if len(out.Tools) == 0 {
			out.Tools = n.c.toolDefs(attrStr(n.c.attrs, "gen_ai.tool.definitions"))
		}
	}
	out.Agent = agentName(&n.c, n.role == roleAgent)
	out.Session = firstStr(n.c.attrs, sessionKeys...)
	if (out.Agent == "" || out.Session == "") && n.c.attrs.Len() > 0 {
		if md, ok := spanMetadata(&n.c); ok {
			out.Agent = firstNonEmpty(out.Agent, md.AgentName)
			out.Session = firstNonEmpty(out.Session, md.SessionID, md.ConversationID, md.ThreadID)
		}
	}
	if len(r.SessionKeys) > 0 {
		// The span's key signature answers most keys without a scan of
		// its attributes (firstStr renders a value as AsString does).
		out.KeyedSession = firstStr(n.c.attrs, r.SessionKeys...)
	}
}

// SameCall reports whether inner, a step span below the step span outer
// (directly or through spans that are not steps), is the same call seen by
// a second instrumentation, which Build merges into outer's step: an SDK
// LLM span under a framework LLM span, an MCP client span under the
// framework's tool span of the same tool or call ID.
func SameCall(outer, inner *Step) bool {
	return outer.Kind == inner.Kind && sameTool(outer, inner)
}

// MergeNested folds inner, a span of the same call nested in outer (see
// SameCall), into outer as Build does: empty fields are completed, and the
// inner span's errors count unless outer's span (whose status code is
// outerStatus) ended with an explicit OK.
func MergeNested(outer *Step, outerStatus ptrace.StatusCode, inner *Step) {
	mergeStep(outer, inner, outerStatus)
}

// ToolHints returns the MCP annotations stated for tool name in the run:
// on the definitions its model steps were offered, else on what an MCP
// server listed.
func (r *Run) ToolHints(name string) ToolHints {
	if name == "" {
		return ToolHints{}
	}
	var seen *ToolDef // Offered slices are shared between steps: check each once
	for i := range r.Steps {
		defs := r.Steps[i].Offered
		if len(defs) == 0 || &defs[0] == seen {
			continue
		}
		seen = &defs[0]
		for k := range defs {
			if defs[k].Name == name && defs[k].Hints != (ToolHints{}) {
				return defs[k].Hints
			}
		}
	}
	for k := range r.ListedTools {
		if r.ListedTools[k].Name == name && r.ListedTools[k].Hints != (ToolHints{}) {
			return r.ListedTools[k].Hints
		}
	}
	return ToolHints{}
}
