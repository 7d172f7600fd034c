package trajectory

import (
	"encoding/json"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// GenAI events on logs. Instrumentations that follow the current GenAI
// conventions (OTel's own openai instrumentation, EDOT, the Python
// opentelemetry-instrumentation-openai-v2, ...) record message content not on
// the span but in log records correlated to the LLM span by trace and span
// ID. Two generations of events are read:
//
//   - one event per message: gen_ai.system.message, gen_ai.user.message,
//     gen_ai.assistant.message and gen_ai.tool.message (the call's input, in
//     order; a tool message's body carries the call ID as "id") and
//     gen_ai.choice (one output choice: {index, finish_reason, message});
//   - one event per call: gen_ai.client.inference.operation.details, whose
//     attributes are those of the inference span (gen_ai.input.messages,
//     gen_ai.output.messages, gen_ai.tool.definitions,
//     gen_ai.response.finish_reasons).
//
// The event name is the log record's EventName or, for SDKs that predate
// that field, its event.name attribute. Bodies are decoded into the same
// message model the span readers use, and fill only what the span's readers
// left empty: content on the span wins over content on logs.

// GenAI log event names.
const (
	EventSystemMessage    = "gen_ai.system.message"
	EventUserMessage      = "gen_ai.user.message"
	EventAssistantMessage = "gen_ai.assistant.message"
	EventToolMessage      = "gen_ai.tool.message"
	EventChoice           = "gen_ai.choice"
	EventInferenceDetails = "gen_ai.client.inference.operation.details"

	// attrEventName is where SDKs without LogRecord.EventName put the name.
	attrEventName = "event.name"
)

// eventRoles maps the per-message input events to their message role.
var eventRoles = map[string]string{
	EventSystemMessage:    "system",
	EventUserMessage:      "user",
	EventAssistantMessage: "assistant",
	EventToolMessage:      "tool",
}

// EventName returns the log record's event name: its EventName field, else
// its event.name attribute.
func EventName(lr plog.LogRecord) string {
	if n := lr.EventName(); n != "" {
		return n
	}
	if v, ok := lr.Attributes().Get(attrEventName); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}

// IsGenAIEvent reports whether name is one of the GenAI events Build joins
// to spans.
func IsGenAIEvent(name string) bool {
	if _, ok := eventRoles[name]; ok {
		return true
	}
	return name == EventChoice || name == EventInferenceDetails
}

// IsOutputEvent reports whether name is an event that carries a call's
// output (a choice, or the per-call details event). A successful LLM call
// whose instrumentation records content on logs emits one; the processor
// uses it to tell when a call's events are complete.
func IsOutputEvent(name string) bool {
	return name == EventChoice || name == EventInferenceDetails
}

// Option configures Build.
type Option func(*buildOptions)

type buildOptions struct {
	logs        []plog.Logs
	sessionKeys []string   // session.go
	index       *SpanIndex // index.go
	readSteps   ReadSteps  // readsteps.go
}

// WithLogs joins the GenAI log events of ld (see IsGenAIEvent) to the spans
// they name by trace and span ID: input messages and tool results fed back,
// output text and tool calls, finish reasons and tool definitions complete
// the LLM step of that span. Records that name no span of the input, or a
// span that is not an LLM step, are ignored. May be given several times.
func WithLogs(ld plog.Logs) Option {
	return func(o *buildOptions) { o.logs = append(o.logs, ld) }
}

// spanKey identifies a span across traces.
type spanKey struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
}

// spanEvents are the GenAI events of one span, in arrival order.
type spanEvents struct {
	in      []message
	out     []message
	details []pcommon.Map
}

// logIndex holds the GenAI events of one Build call by span.
type logIndex struct {
	bySpan map[spanKey]*spanEvents
}

// newLogIndex indexes the GenAI events of the given logs; nil when there
// are none.
func newLogIndex(lds []plog.Logs) *logIndex {
	var ix *logIndex
	for _, ld := range lds {
		ForEachLogRecord(ld, func(lr plog.LogRecord) {
			name := EventName(lr)
			if !IsGenAIEvent(name) {
				return
			}
			tid, sid := lr.TraceID(), lr.SpanID()
			if tid.IsEmpty() || sid.IsEmpty() {
				return
			}
			if ix == nil {
				ix = &logIndex{bySpan: make(map[spanKey]*spanEvents)}
			}
			k := spanKey{tid, sid}
			ev := ix.bySpan[k]
			if ev == nil {
				ev = &spanEvents{}
				ix.bySpan[k] = ev
			}
			ev.add(name, lr)
		})
	}
	return ix
}

// ForEachLogRecord calls fn for every log record of ld.
func ForEachLogRecord(ld plog.Logs, fn func(plog.LogRecord)) {
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				fn(lrs.At(k))
			}
		}
	}
}

func (ev *spanEvents) add(name string, lr plog.LogRecord) {
	ev.addEvent(name, lr.Attributes(), lr.Body())
}

// addEvent adds one GenAI event given its attributes and body (a log
// record's, or a span event's: genai_events.go).
func (ev *spanEvents) addEvent(name string, attrs pcommon.Map, b pcommon.Value) {
	if name == EventInferenceDetails {
		// The convention puts the content in attributes; some SDKs put the
		// same keys in a map body.
		ev.details = append(ev.details, attrs)
		if b.Type() == pcommon.ValueTypeMap {
			ev.details = append(ev.details, b.Map())
		}
		return
	}
	body := eventBody(b)
	if name == EventChoice {
		// {index, finish_reason, message: {role, content, tool_calls}}
		var choice struct {
			FinishReason string      `json:"finish_reason"`
			Message      jsonMessage `json:"message"`
		}
		if body != "" && !lenientUnmarshal(bytesOf(body), &choice) {
			return
		}
		jm := choice.Message
		if jm.Role == "" {
			jm.Role = "assistant"
		}
		if jm.FinishReason == "" {
			jm.FinishReason = choice.FinishReason
		}
		if m, ok := messageFrom(&jm); ok {
			ev.out = append(ev.out, m)
		}
		return
	}
	var jm jsonMessage
	if body != "" && !lenientUnmarshal(bytesOf(body), &jm) {
		// A plain-text body is the message content.
		jm = jsonMessage{Content: quoteJSON(body)}
	}
	if jm.Role == "" {
		jm.Role = eventRoles[name]
	}
	if name == EventToolMessage && jm.ToolCallID == "" {
		// The event's body names the call it answers "id".
		jm.ToolCallID = strings.Trim(string(trimJSON(jm.ID)), `"`)
		jm.ID = nil
	}
	if m, ok := messageFrom(&jm); ok {
		ev.in = append(ev.in, m)
	}
}

// eventBody renders a log body as JSON text for the message decoder: a map
// as its JSON object, a string as is (it may hold JSON or plain text).
func eventBody(b pcommon.Value) string {
	switch b.Type() {
	case pcommon.ValueTypeEmpty:
		return ""
	case pcommon.ValueTypeStr:
		return b.Str()
	}
	return b.AsString()
}

// quoteJSON returns s as a JSON string literal.
func quoteJSON(s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// fill completes an LLM step from the GenAI events of its span. Only what
// the span readers left empty is set.
func (ix *logIndex) fill(c *spanCtx, st *Step) {
	if st.Kind != StepLLM {
		return
	}
	ev := ix.bySpan[spanKey{c.sp.TraceID(), c.sp.SpanID()}]
	if ev == nil {
		return
	}
	ev.fill(c, st)
}

// fill completes an LLM step from one span's GenAI events.
func (ev *spanEvents) fill(c *spanCtx, st *Step) {
	applyInput(st, ev.in)
	applyOutput(st, ev.out)
	for _, m := range ev.details {
		genaiFillMessages(c, st, anyAttrs(m))
		if len(st.FinishReasons) == 0 {
			st.FinishReasons = attrStrings(anyAttrs(m), "gen_ai.response.finish_reasons")
		}
	}
}

// IsLLMSpan reports whether a span is a model call under the conventions
// Build reads: the spans whose GenAI log events a consumer may wait for.
func IsLLMSpan(sp ptrace.Span, res pcommon.Resource, scope string) bool {
	return SpanRoleOf(sp, res, scope) == SpanLLM
}
