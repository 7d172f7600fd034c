package trajectory

import "strings"

// Finish-reason classes: what the spellings of the conventions and
// providers mean ("tool_calls", "tool-calls", "TOOL_CALLS", "tool_use",
// "max_tokens", "MAX_TOKENS", "end_turn", "SAFETY", ...). The classifier
// reads these classes; this is the only table of spellings.
const (
	FinishStop            = "stop"
	FinishLength          = "length"     // output token limit
	FinishToolCalls       = "tool_calls" // the model stopped to call tools
	FinishContentFilter   = "content_filter"
	FinishError           = "error"
	FinishContextOverflow = "context_overflow"        // the context window was exceeded
	FinishMalformedCall   = "malformed_function_call" // the provider could not parse the model's tool call
	FinishUnexpectedCall  = "unexpected_tool_call"    // the model called a tool it was not offered
)

// NormFinishReason lower-cases a finish reason and unifies its separators
// (tool-calls → tool_calls): the spelling classes and rules are named by.
func NormFinishReason(r string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(r)), "-", "_")
}

// FinishReasonClass returns the class of a finish reason (one of the
// Finish* constants), or NormFinishReason(r) when it is none of them.
func FinishReasonClass(r string) string {
	s := NormFinishReason(r)
	switch s {
	case "stop", "end_turn", "stop_sequence", "end", "complete", "completed", "finish_reason_stop":
		return FinishStop
	case "length", "max_tokens", "max_output_tokens", "token_limit", "model_length":
		return FinishLength
	case "tool_calls", "tool_call", "tool_use", "function_call", "function_calls", "tool", "tools":
		return FinishToolCalls
	case "content_filter", "content_filtered", "safety", "recitation", "blocklist", "prohibited_content", "spii",
		"image_safety", "refusal", "guardrail_intervened":
		return FinishContentFilter
	case "error":
		return FinishError
	case "model_context_window_exceeded", "context_length_exceeded":
		return FinishContextOverflow
	case "malformed_function_call":
		return FinishMalformedCall
	case "unexpected_tool_call":
		return FinishUnexpectedCall
	}
	return s
}
