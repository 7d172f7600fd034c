package evalset

import (
	"path/filepath"
	"testing"
)

// Toolset c (harness/toolsets/c.mjs): the twelve stacks on a third tool
// domain, a developer platform assistant (CI builds, code search, tickets,
// deploys: nested object, enum and array arguments, an axios-style tool
// error class, LLM errors worded as Anthropic, Google and Azure word them,
// a content filter answered as an HTTP 400). Scored once before any tuning
// on it: 228 of 237 scorable captures, 0 misroutes, 0 false failures, at
// 836ce44 (README, Evaluation). Same rule as the shared set.
func TestAcceptanceToolsetC(t *testing.T) {
	checkCaptureSet(t, filepath.Join("..", "..", "testdata", "frameworks-toolset-c", "labels.json"), evidenceAbsentToolsetC)
}

// Each entry checked against its capture by hand.
var evidenceAbsentToolsetC = map[string]string{
	"mcp-openllmetry/llm_503.json":          gapMCPLostChat,
	"mcp-openllmetry/llm_429.json":          gapMCPLostChat,
	"mcp-openllmetry/llm_timeout.json":      gapMCPLostChat,
	"mcp-openllmetry/context_overflow.json": gapLostOverflowChat + " (its complete 11.7 KB search_code result shows no overflow)",
	"openllmetry/context_overflow.json":     gapLostOverflowChat + " (its complete 10.5 KB search_code result shows no overflow)",
	// The bad call's arguments (severity "critical", labels "ci") are on
	// no span: LlamaIndex records the model's tool calls as empty text
	// parts, runs tools without spans and without validating their input.
	"llamaindex-openllmetry/bad_args.json": "LlamaIndex does not validate tool input and records no tool call arguments; the only trace of the bad call is the tool's own TypeError (labels.join is not a function) fed back as a user message, which a bug in the tool gives as well (unknown, program_error)",
}
