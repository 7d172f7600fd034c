package evalset

import (
	"path/filepath"
	"testing"
)

// Toolset b (harness/toolsets/b.mjs): the twelve stacks and the same
// scenarios on another tool domain (warehouse operations: other tool names,
// argument shapes, upstream error classes, prompts and LLM error wordings),
// written to check that what was built on the shared set (toolset a, a travel
// assistant) generalises. It was scored once before any tuning on it (226 of
// 237 scorable captures, 0 misroutes, 0 false failures, at 3363cfe's parent);
// the context-overflow phrasings of 3363cfe came from its misses. Same rule
// as the shared set: a capture passes unless its failure is absent from its
// spans (listed below, checked by hand), and a listed one may be unknown or
// missed, never misrouted, never a false failure.
func TestAcceptanceToolsetB(t *testing.T) {
	checkCaptureSet(t, filepath.Join("..", "..", "testdata", "frameworks-toolset-b", "labels.json"), evidenceAbsentToolsetB)
}

// The instrumentations lose the same spans on this domain as on the shared
// set (acceptance_test.go's evidenceAbsent); each entry was checked against
// its capture.
var evidenceAbsentToolsetB = map[string]string{
	"mcp-openllmetry/llm_503.json":          gapMCPLostChat,
	"mcp-openllmetry/llm_429.json":          gapMCPLostChat,
	"mcp-openllmetry/llm_timeout.json":      gapMCPLostChat,
	"mcp-openllmetry/context_overflow.json": gapLostOverflowChat,
	"openllmetry/context_overflow.json":     gapLostOverflowChat,
}
