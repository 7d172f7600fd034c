package strategy

import (
	"context"
	"strconv"

	"github.com/triage-otel/triage/classifier"
)

// RetryWithToolManifest retries with a hint to call only the tools of the
// current manifest, with arguments that match their schemas: the answer to a
// wrong tool or a schema mismatch, which a blind retry would repeat.
type RetryWithToolManifest struct {
	Max  int    // attempts before exhausted; default 3
	Hint string // default: a manifest (or schema) reminder naming the failed tool
}

func (s RetryWithToolManifest) Kind() string     { return "retry_with_tool_manifest" }
func (s RetryWithToolManifest) MaxAttempts() int { return orDefault(s.Max, 3) }

func (s RetryWithToolManifest) Decide(_ context.Context, env *Env, path string, attempt int) (Result, error) {
	hint := s.Hint
	if hint == "" {
		hint = manifestHint(env.FailureType, env.Tool)
	}
	l := leaf{kind: s.Kind(), max: s.MaxAttempts()}
	return l.result(path, attempt, Action{Kind: ActionRetry, Hint: hint}), nil
}

func manifestHint(failureType classifier.FailureType, tool string) string {
	var hint string
	if failureType == classifier.SchemaMismatch {
		hint = "Call the tool again with arguments that match its JSON Schema exactly: required fields, types and enum values."
	} else {
		hint = "Call only tools listed in the current tool manifest, spelled exactly as declared, with arguments that match each tool's JSON Schema."
	}
	if tool != "" {
		hint = "The previous call to tool " + strconv.Quote(tool) + " was rejected. " + hint // fmt's %q is strconv.Quote
	}
	return hint
}
