package recovery

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/triage-otel/triage/recovery/internal/strategy"
)

// toolPattern is one non_idempotent_tools entry.
type toolPattern struct {
	src string
	re  *regexp.Regexp
}

// compileToolPatterns compiles non_idempotent_tools: each entry is a
// regular expression matched against the whole tool name, so a plain name
// matches itself only.
func compileToolPatterns(list []string) ([]toolPattern, error) {
	var out []toolPattern
	var errs []error
	for i, p := range list {
		if strings.TrimSpace(p) == "" {
			errs = append(errs, fmt.Errorf("non_idempotent_tools[%d]: must not be empty", i))
			continue
		}
		re, err := regexp.Compile(`^(?:` + p + `)$`)
		if err != nil {
			errs = append(errs, fmt.Errorf("non_idempotent_tools[%d] %q: %w", i, p, err))
			continue
		}
		out = append(out, toolPattern{src: p, re: re})
	}
	return out, errors.Join(errs...)
}

// nonIdempotent says why the failing tool must not be retried, if it must
// not: the configuration names it, or the trace says so (Input.NonIdempotent).
func (e *Engine) nonIdempotent(in Input) (string, bool) {
	if in.Tool != "" {
		for _, p := range e.nonIdempotentTools {
			if p.re.MatchString(in.Tool) {
				return fmt.Sprintf("tool %s is not idempotent (non_idempotent_tools: %s)", in.Tool, p.src), true
			}
		}
	}
	if in.NonIdempotent != "" {
		tool := in.Tool
		if tool == "" {
			tool = "the failing tool"
		}
		return fmt.Sprintf("tool %s is not idempotent (%s)", tool, in.NonIdempotent), true
	}
	return "", false
}

// noRetry answers, with the non_idempotent policy entry, a failure the
// policy would have retried: retrying a tool that is not idempotent may
// repeat its effect (a second payment, a second email).
func (e *Engine) noRetry(ctx context.Context, env *Env, attempt int, why string) (Result, error) {
	entry, s := NonIdempotentEntry, e.policy.entries[NonIdempotentEntry]
	if s == nil {
		s = strategy.Escalate{}
	}
	var res Result
	if attempt > s.MaxAttempts() {
		res = strategy.Exhausted(entry, attempt, s.MaxAttempts(), env.FailureType)
	} else {
		var err error
		if res, err = s.Decide(ctx, env, entry, attempt); err != nil {
			return Result{}, err
		}
	}
	res.MaxAttempts = s.MaxAttempts()
	reason := why + ": not retried"
	if res.Action.Reason != "" && res.Action.Kind != ActionEscalate {
		reason += "; " + res.Action.Reason
	}
	res.Action.Reason = reason
	return res, nil
}
