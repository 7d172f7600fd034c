// Package trajectory turns OTLP spans emitted by agent frameworks into
// per-run trajectories: the ordered LLM and tool steps of one agent
// invocation, normalised across the instrumentation conventions.
//
// Conventions read (one file each; a span may be read by several and the
// readers merge into one step):
//   - OTel GenAI semconv (genai.go): gen_ai.operation.name, gen_ai.tool.*,
//     gen_ai.input/output.messages JSON parts, gen_ai.tool.definitions,
//     gen_ai.response.finish_reasons, usage.
//   - OpenInference (openinference.go): openinference.span.kind LLM/TOOL/AGENT,
//     flattened llm.input_messages / llm.output_messages / llm.tools
//     attributes, completed from LangChain's serialized input/output values.
//   - OpenLLMetry / Traceloop (traceloop.go): traceloop.span.kind,
//     traceloop.entity.*, legacy gen_ai.prompt/completion.N.* and
//     llm.request.functions.N.*.
//   - Vercel AI SDK (vercel.go): ai.generateText/streamText runs,
//     ai.*.doGenerate/doStream LLM calls, ai.toolCall tool calls.
//   - MCP (mcp.go): mcp.method.name=tools/call, error.type, JSON-RPC codes,
//     isError results, and @traceloop/instrumentation-mcp tool spans;
//     tools/list answers (Run.ListedTools) with their tool annotations.
//   - Mastra AI tracing (mastra.go): mastra.span.type agent_run /
//     model_generation / model_step / model_chunk / tool_call, input and
//     output attributes; errors of model calls only in error chunks.
//
// Error evidence common to all (errors.go): status, exception events,
// error.type, http.response.status_code / http.status_code, JSON-RPC codes,
// provider error codes in OpenAI/Anthropic-style error bodies.
//
// Runs. Spans are grouped by trace and linked by parent span ID. A run is
// one agent invocation:
//   - A trace with one root whose tree holds at most one top-level agent span
//     (gen_ai invoke_agent, OpenInference AGENT, traceloop agent, Vercel
//     ai.generateText/streamText/generateObject/streamObject) is one run
//     rooted at the trace's root (a workflow wrapper around one agent is part
//     of that run).
//   - When a tree holds several top-level agent spans side by side, each
//     agent subtree is a run. Agent spans nested inside an agent (sub-agents,
//     agents used as tools) belong to the outer agent's run. Spans outside
//     every agent subtree become their own run when they contain steps;
//     otherwise they join the agent run that ended last.
//   - Orphans (parent not in the input) join the trace's run when the trace
//     has exactly one root; otherwise all the orphans of a trace form one run
//     with RootFound=false whose RootSpanID is the missing parent they share
//     (when they do not share one, the missing parent of the orphan that
//     started first, so the ID does not depend on the order the spans
//     arrive in).
//   - Several roots in one trace (unusual) give one run each.
//   - A tree (a trace, or a group of its orphans) in which no span is
//     recognised by any convention reader below is not an agent run and
//     gives no Run: plain HTTP or database traces of other services, or an
//     agent's tool call traced outside the agent's trace context.
//
// Streamed parts of a call recorded as spans of their own (Mastra's model
// chunks) are folded into the step they belong to; parts whose step span
// never arrived form one LLM step per missing parent.
//
// Steps are LLM and tool calls, ordered by end time. A step span nested in a
// step span of the same kind (a framework LLM span around an SDK chat span,
// an MCP client span under a framework tool span with the same tool name or
// call ID) is merged into the outer step. Spans nested in a step that are not
// steps (HTTP client spans) contribute their error evidence to that step.
// Other non-step spans (chains, workflows, MCP initialize/tools/list) are not
// steps; their errors are in Run.SpanErrors.
//
// Span by span: SpanReader reads one span as Build does (read_span.go), for
// consumers that see a trace while it is still arriving; Build takes over
// their readings (WithReadSteps, readsteps.go) so that a trace is read once.
// A reader resumes the scan of a chat span's input messages where a list it
// scanned before ends (inputprefix.go): the conversation so far is resent on
// every call.
//
// Exported API: Build with its options (Option: WithLogs, WithIndex,
// WithSessionKeys, WithReadSteps and its ReadSteps) and what it returns (Run, Step, StepKind, ToolCall,
// ToolResult, ToolDef, ToolHints, ErrorInfo, SpanError, Content,
// Convention, SpanIndex, IndexedSpan); the span-by-span reader (SpanReader,
// SpanRead, SpanRole, SpanRoleOf, IsLLMSpan, SameCall, MergeNested,
// OutermostSpan, Outermost); GenAI log events (EventName, IsGenAIEvent,
// IsOutputEvent, ForEachLogRecord); ForEachSpan; finish reasons
// (NormFinishReason, FinishReasonClass and the Finish* classes).
//
// The package depends on pdata only, so it can be used outside a collector.
package trajectory

import (
	"encoding/json"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// StepKind says what a step is: a call to a model or a call to a tool.
type StepKind string

const (
	StepLLM  StepKind = "llm"
	StepTool StepKind = "tool"
)

// Convention names the instrumentation convention a span was read with.
type Convention string

const (
	ConventionGenAI         Convention = "genai"
	ConventionOpenInference Convention = "openinference"
	ConventionTraceloop     Convention = "traceloop"
	ConventionVercel        Convention = "vercel"
	ConventionMCP           Convention = "mcp"
	ConventionMastra        Convention = "mastra"
	ConventionUnknown       Convention = ""
)

// ToolCall is a tool call an LLM step asked for.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // raw JSON as emitted; may be malformed
}

// ToolDef is a tool the model was offered on an LLM step (or that an MCP
// server listed).
type ToolDef struct {
	Name   string
	Schema json.RawMessage // JSON Schema of the parameters; nil when not recorded
	// Hints are the MCP tool annotations the definition carries, when it
	// carries any.
	Hints ToolHints
}

// ToolHints are MCP tool annotations (annotations.readOnlyHint,
// destructiveHint, idempotentHint). A nil field was not stated: MCP's
// defaults (destructive, not idempotent) are not assumed, since most
// definitions state nothing.
type ToolHints struct {
	ReadOnly    *bool
	Destructive *bool
	Idempotent  *bool
}

// NonIdempotent reports whether the hints say that calling the tool again
// may not be the same as calling it once: a tool that is not stated
// read-only and is stated destructive or not idempotent. reason names the
// annotation.
func (h ToolHints) NonIdempotent() (reason string, ok bool) {
	if h.ReadOnly != nil && *h.ReadOnly {
		return "", false
	}
	switch {
	case h.Destructive != nil && *h.Destructive:
		return "MCP annotation destructiveHint: true", true
	case h.Idempotent != nil && !*h.Idempotent:
		return "MCP annotation idempotentHint: false", true
	}
	return "", false
}

// ToolResult is a tool result fed back to the model in an LLM step's input
// messages. Frameworks that catch tool errors (unknown tool, invalid
// arguments, tool exceptions) and return them to the model leave this as the
// only evidence: there may be no tool span at all.
type ToolResult struct {
	CallID  string
	Name    string
	Content string
	IsError bool // the convention marked the result as an error (tool-error part, isError, status=error)
}

// ErrorInfo is one piece of error evidence on a span: an exception event,
// the span status, or error.type.
type ErrorInfo struct {
	Type    string // exception.type or error.type
	Message string // exception.message or status description
	Code    string // provider error code when recorded (context_length_exceeded, rate_limit_exceeded, ...)
}

// Step is one LLM call or tool call of a run.
type Step struct {
	Kind       StepKind
	Convention Convention
	SpanID     pcommon.SpanID
	ParentID   pcommon.SpanID
	Name       string // span name
	Start, End pcommon.Timestamp

	// Tool steps.
	ToolName   string
	ToolCallID string
	Arguments  string // raw JSON
	Result     string

	// Error evidence on the span (with StatusError and HasJSONRPC below).
	StatusMessage string
	Errors        []ErrorInfo
	HTTPStatus    int // http.response.status_code (or legacy http.status_code); 0 = none
	JSONRPCCode   int // rpc.jsonrpc.error_code or numeric MCP error.type; 0 = none

	// LLM steps.
	Model         string
	Provider      string // gen_ai.provider.name (or the deprecated gen_ai.system, llm.provider, ...)
	FinishReasons []string
	Requested     []ToolCall   // tool calls the model asked for in this step's output
	Offered       []ToolDef    // tool definitions the model was given (shared between steps, runs and traces: read-only)
	InputResults  []ToolResult // tool results in this step's input messages
	// ToolResults are results of this step's own tool calls that the
	// framework recorded as part of the step (streamed tool-result chunks):
	// what the model is given on its next call.
	ToolResults  []ToolResult
	OutputText   string // the model's text output (for constraint checks)
	InputTokens  int64
	OutputTokens int64
	// Cost is the call's cost as the instrumentation recorded it
	// (gen_ai.usage.cost, OpenInference llm.cost.total); 0 when not recorded.
	Cost float64

	// The flags are kept together so that they share one word (a held
	// trace keeps a Step per step span until its root arrives).

	// ResultIsError (tool steps) is set when the tool result itself says
	// it failed (MCP isError, a tool-error part) even when the span status
	// is OK.
	ResultIsError bool
	StatusError   bool // error evidence: the span status is Error
	HasJSONRPC    bool // error evidence: JSONRPCCode is set
	// OutputEmpty (LLM steps): the instrumentation recorded the call's
	// output and it held nothing (no text, no tool call) — unlike an
	// output that was not recorded at all.
	OutputEmpty bool
}

// Failed reports whether the span itself carries error evidence.
func (s *Step) Failed() bool {
	return s.StatusError || len(s.Errors) > 0 || s.HTTPStatus >= 400 || s.HasJSONRPC || s.ResultIsError
}

// Run is one agent invocation: the trace's local root, or an agent subtree
// when a trace holds several.
type Run struct {
	TraceID    pcommon.TraceID
	RootSpanID pcommon.SpanID
	RootName   string
	// RootFound is false when the run was assembled from orphan spans whose
	// root never arrived (some instrumentations lose it on failure).
	RootFound bool

	Service string
	// Agent is the run's agent: an explicit name (gen_ai.agent.name,
	// agent.name, ...) or the name of the agent span, read first on the
	// agent span that encloses the run's first model call (an outer agent
	// span can be a workflow wrapper), then on the run's top agent span,
	// its root and the rest; else a weak name (function or workflow id).
	Agent   string
	Session string // gen_ai.conversation.id, session.id, ...

	Start, End pcommon.Timestamp

	// Steps are the run's LLM and tool calls ordered by end time.
	Steps []Step
	// Root is the error evidence of the run's root span and of other
	// non-step spans of the run (chains, workflows), in end-time order.
	// A step's own errors are on the step.
	SpanErrors []SpanError
	// Content says whether the run's spans carry message content (model
	// messages, tool arguments and results); see content.go.
	Content Content
	// FinishReason is the final finish reason the run reported, if any
	// (e.g. a Vercel ai.generateText span's ai.response.finishReason).
	FinishReason string
	// ListedTools are the tool definitions recorded on the run's non-step
	// spans: what an MCP server listed (tools/list results), which carry
	// its tool annotations.
	ListedTools []ToolDef

	// SpanIDs lists every span of the trace that belongs to this run, so
	// callers can annotate them.
	SpanIDs []pcommon.SpanID
	// TopSpanIDs are the run's spans without a parent in the input: its
	// root (and orphans that joined it), or, when the root never arrived,
	// the spans that stand in for it.
	TopSpanIDs []pcommon.SpanID
	// SessionKey is the value of the first WithSessionKeys attribute set on
	// the run's root, else on its other spans, else on the resource; ""
	// without that option or when none is set (Session is then the
	// session by convention).
	SessionKey string
	// Orphans counts spans whose parent was not in the input (or whose
	// parent chain looped and was cut there).
	Orphans int
	// Duplicates counts spans dropped because their span ID repeated an
	// earlier span of the same trace (the first one is kept). Counted on the
	// first run built from the trace.
	Duplicates int
}

// SpanError is error evidence on a span that is not a step.
type SpanError struct {
	SpanID        pcommon.SpanID
	Name          string
	IsRoot        bool
	End           pcommon.Timestamp
	StatusError   bool
	StatusMessage string
	Errors        []ErrorInfo
	HTTPStatus    int
	JSONRPCCode   int
	HasJSONRPC    bool
}
