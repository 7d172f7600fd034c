package trajectory

import (
	"maps"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Message content.
//
// Most GenAI instrumentations record message content (prompts, model
// output, tool arguments and results) only when asked to: the OTel GenAI
// conventions make it opt-in, and OpenLLMetry, OpenInference, EDOT and the
// AI SDK each have a switch to turn it off. Without it a run keeps its
// structure (steps, tool names, status, error types and codes, finish
// reasons) but loses the tool results fed back to the model, the model's
// requested calls and its text, which are much of what classification
// reads. Run.Content says which case a run is in, so the answer can be
// read as "classified blind" when it is absent.

// Content says whether a run's spans carry message content.
type Content string

const (
	// ContentPresent: some span of the run records model messages or tool
	// arguments/results (or a step got them from joined log events).
	ContentPresent Content = "present"
	// ContentAbsent: no span of the run records any (the instrumentation
	// was left at a content-off setting, or a redaction step removed it).
	ContentAbsent Content = "absent"
)

// contentKeys are the attributes that hold message content, per
// convention: a span carrying any of them (with a value that is not a
// redaction placeholder) records content.
var contentKeys = map[string]bool{
	// OTel GenAI semconv (v1.37+ and the older span attributes).
	"gen_ai.input.messages":      true,
	"gen_ai.output.messages":     true,
	"gen_ai.system_instructions": true,
	"gen_ai.tool.call.arguments": true,
	"gen_ai.tool.call.result":    true,
	"gen_ai.prompt":              true,
	"gen_ai.completion":          true,
	// Mastra's exporter (tool spans).
	"gen_ai.tool.input":  true,
	"gen_ai.tool.output": true,
	// OpenInference.
	"input.value":  true,
	"output.value": true,
	// OpenLLMetry / Traceloop entity spans (also its MCP spans).
	"traceloop.entity.input":  true,
	"traceloop.entity.output": true,
	// Vercel AI SDK.
	"ai.prompt":             true,
	"ai.prompt.messages":    true,
	"ai.response.text":      true,
	"ai.response.toolCalls": true,
	"ai.response.object":    true,
	"ai.toolCall.args":      true,
	"ai.toolCall.result":    true,
}

// contentPrefixes are flattened message attributes: OpenInference
// llm.input_messages.N.*, Traceloop's legacy gen_ai.prompt.N.* /
// gen_ai.completion.N.*.
var contentPrefixes = []string{
	"llm.input_messages.",
	"llm.output_messages.",
	"gen_ai.prompt.",
	"gen_ai.completion.",
}

// contentEventAttrs are content attributes on span events: the GenAI
// gen_ai.client.inference.operation.details event and the older
// gen_ai.content.prompt / gen_ai.content.completion events.
var contentEventAttrs = []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.prompt", "gen_ai.completion"}

// redactedPlaceholders are the values instrumentations write in place of
// hidden content (OpenInference's hideInputs/hideOutputs; Mastra's
// SensitiveDataFilter). A span whose content attributes hold only these
// records no content.
var redactedPlaceholders = map[string]bool{
	"__REDACTED__": true,
	"[REDACTED]":   true,
}

// spanHasContent reports whether the span records message content, on
// its attributes, its events or the GenAI log events joined to it.
func spanHasContent(c *spanCtx) bool {
	if c.logs != nil {
		if ev := c.logs.bySpan[spanKey{c.sp.TraceID(), c.sp.SpanID()}]; ev != nil && ev.hasContent() {
			return true
		}
	}
	found := false
	c.attrs.Range(func(k string, v pcommon.Value) bool {
		if !isContentKey(k, c.attrs) {
			return true
		}
		if hasContentValue(v) {
			found = true
			return false
		}
		return true
	})
	if found {
		return true
	}
	evs := c.sp.Events()
	for i := 0; i < evs.Len(); i++ {
		ea := evs.At(i).Attributes()
		for _, k := range contentEventAttrs {
			if v, ok := ea.Get(k); ok && hasContentValue(v) {
				return true
			}
		}
	}
	return false
}

// contentSig is the signature of contentKeys; contentPrefixGroups the
// contentPrefixes by first byte.
var (
	contentSig          = keySig(slices.Collect(maps.Keys(contentKeys))...)
	contentPrefixGroups = func() (t [256]prefixGroup) {
		for _, p := range contentPrefixes {
			g := &t[p[0]]
			if len(g.prefixes) == 0 {
				g.common = p
			}
			for !strings.HasPrefix(p, g.common) {
				g.common = g.common[:len(g.common)-1]
			}
			g.prefixes = append(g.prefixes, p)
		}
		return t
	}()
)

// prefixGroup is the prefixes that start with one byte and the prefix
// they share: most keys of a span start with the byte of a group
// ("gen_ai.", "llm.") and hold no prefix of it, which the byte after the
// shared part tells for each without a string compare.
type prefixGroup struct {
	common   string
	prefixes []string
}

// prefixOf is the group's prefix k starts with ("" when none does).
func (g *prefixGroup) prefixOf(k string) string {
	c := len(g.common)
	for _, p := range g.prefixes {
		// A prefix longer than the shared part (two prefixes cannot be
		// the same) is told first by its byte after it.
		if len(k) >= len(p) && (len(p) == c || k[c] == p[c]) && k[:len(p)] == p {
			return p
		}
	}
	return ""
}

func isContentKey(k string, attrs attrMap) bool {
	if contentSig.hasBit(keyBit(k)) && contentKeys[k] {
		return true
	}
	if k != "" && contentPrefixGroups[k[0]].prefixOf(k) != "" {
		// Token counts and roles are not content: the message text,
		// tool-call arguments and tool results are.
		return strings.HasSuffix(k, ".content") || strings.HasSuffix(k, ".arguments") ||
			strings.Contains(k, ".contents.") || strings.HasSuffix(k, ".text")
	}
	if k == "input" || k == "output" {
		// Mastra AI tracing's own input/output attributes.
		_, mastra := attrs.Get("mastra.span.type")
		return mastra
	}
	return false
}

// isContentText reports whether s is recorded content: not empty and not a
// redaction placeholder.
func isContentText(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && !redactedPlaceholders[s]
}

func hasContentValue(v pcommon.Value) bool {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return isContentText(v.Str())
	case pcommon.ValueTypeEmpty:
		return false
	case pcommon.ValueTypeSlice:
		return v.Slice().Len() > 0
	case pcommon.ValueTypeMap:
		return v.Map().Len() > 0
	case pcommon.ValueTypeBytes:
		return v.Bytes().Len() > 0
	}
	return true
}

// stepHasContent reports whether a step carries content however it got it
// (span attributes, or log events joined to the span).
func stepHasContent(s *Step) bool {
	if s.OutputText != "" || len(s.InputResults) > 0 {
		return true
	}
	if s.Kind == StepTool && (isContentText(s.Arguments) || isContentText(s.Result)) {
		return true
	}
	for _, rc := range s.Requested {
		if isContentText(rc.Arguments) {
			return true
		}
	}
	return false
}

// runContent decides Run.Content once the steps are built; spanContent
// says whether a span of the run records content.
func runContent(r *Run, spanContent bool) Content {
	if spanContent {
		return ContentPresent
	}
	for i := range r.Steps {
		if stepHasContent(&r.Steps[i]) {
			return ContentPresent
		}
	}
	return ContentAbsent
}

// dropRedacted clears the step fields that hold only a redaction
// placeholder: hidden content is absent content, not a tool result or an
// answer that reads "__REDACTED__".
func dropRedacted(s *Step) {
	for _, f := range []*string{&s.Arguments, &s.Result, &s.OutputText} {
		if *f != "" && !isContentText(*f) {
			*f = ""
		}
	}
	for i := range s.Requested {
		if a := &s.Requested[i].Arguments; *a != "" && !isContentText(*a) {
			*a = ""
		}
	}
	for i := range s.InputResults {
		if c := &s.InputResults[i].Content; *c != "" && !isContentText(*c) {
			*c = ""
		}
	}
}

// hasContent reports whether a span's GenAI log events carry content:
// instrumentations with content off still emit the events, with the
// messages' roles and the calls' ids and names only.
func (ev *spanEvents) hasContent() bool {
	for _, ms := range [][]message{ev.in, ev.out} {
		for i := range ms {
			m := &ms[i]
			if isContentText(m.Text) {
				return true
			}
			for _, tc := range m.Calls {
				if isContentText(tc.Arguments) {
					return true
				}
			}
			for _, r := range m.Results {
				if isContentText(r.Content) {
					return true
				}
			}
		}
	}
	for _, d := range ev.details {
		for _, k := range contentEventAttrs {
			if v, ok := d.Get(k); ok && hasContentValue(v) {
				return true
			}
		}
	}
	return false
}
