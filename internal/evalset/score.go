package evalset

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/classifier/llm"
	"github.com/triage-otel/triage/trajectory"
)

// RunResult is one run of a trace and its verdict.
type RunResult struct {
	Run     trajectory.Run
	Verdict classifier.Verdict
	// Consultation is what the model was asked and answered, when a model
	// is set and the run was an unknown failure.
	Consultation *llm.Consultation
}

// ClassifyTraces is the one classification path: trajectory.Build, then
// Classify on every run. The CLI and the scorer both use it; opts are
// Build's (e.g. trajectory.WithLogs for a capture's log events).
func ClassifyTraces(c *classifier.Classifier, td ptrace.Traces, opts ...trajectory.Option) []RunResult {
	return ClassifyTracesWith(c, nil, td, opts...)
}

// ClassifyTracesWith is ClassifyTraces with a model consulted on the runs
// left unknown (nil: none).
func ClassifyTracesWith(c *classifier.Classifier, model *llm.Consultant, td ptrace.Traces, opts ...trajectory.Option) []RunResult {
	runs := trajectory.Build(td, opts...)
	out := make([]RunResult, len(runs))
	for i := range runs {
		out[i] = RunResult{Run: runs[i], Verdict: c.Classify(&runs[i])}
		if model != nil {
			out[i].Verdict, out[i].Consultation = model.Review(context.Background(), c, &out[i].Run, out[i].Verdict)
		}
	}
	return out
}

// Kind says how a scored item came out.
type Kind string

const (
	KindCorrect      Kind = "correct"       // labelled type (or no failure for a "none" label)
	KindUnknown      Kind = "unknown"       // answered unknown for a typed label
	KindMisroute     Kind = "misroute"      // a wrong type other than unknown
	KindFalseFailure Kind = "false_failure" // a failure on an ok/recovered run
	KindMissed       Kind = "missed"        // no failure found for a failed run
	KindConflict     Kind = "conflict"      // several failed runs with different types
	KindNotScorable  Kind = "not_scorable"  // the capture holds no spans
	KindError        Kind = "error"         // the capture could not be read
)

// Item is one scored capture or corpus entry.
type Item struct {
	Name string
	// Framework is the stack a capture was recorded on (labels.json
	// "framework"); empty for corpus entries.
	Framework string
	Label     string // "none" or a failure type
	// Predicted is "none" when no run failed, else the failure type of the
	// scored run (see Judge).
	Predicted string
	Kind      Kind
	Pass      bool
	Detail    string
	Runs      []RunResult
}

// Scorable reports whether the item counts in the figures.
func (it Item) Scorable() bool {
	return it.Kind != KindNotScorable && it.Kind != KindError
}

// Judge scores the runs classified from one labelled capture (or corpus
// entry).
//
// A capture holds one labelled run, but Build may return several runs for
// it (an agent subtree per invocation, or orphan spans whose root was lost).
// The rule: the capture failed when any of its runs failed; its predicted
// type is the failure type of the failed run that ended last (the terminal
// failure). It passes only when every failed run carries an accepted type,
// so a disagreeing run is never hidden behind the one that is scored.
//
// allowUnknown accepts unknown for a typed label (the corpus rule: a text
// the rules cannot place safely may fall to unknown, never to another type).
func Judge(label string, allowUnknown bool, runs []RunResult) Item {
	it := Item{Label: label, Runs: runs, Predicted: LabelNone}
	var failed []int
	for i, r := range runs {
		if r.Verdict.Outcome == classifier.OutcomeFailed {
			failed = append(failed, i)
		}
	}
	if len(failed) == 0 {
		if label == LabelNone {
			it.Kind, it.Pass = KindCorrect, true
		} else {
			it.Kind = KindMissed
			if len(runs) == 0 {
				it.Detail = "no run built from the spans"
			}
		}
		return it
	}
	scored := failed[0]
	for _, i := range failed[1:] {
		if runs[i].Run.End >= runs[scored].Run.End {
			scored = i
		}
	}
	it.Predicted = predictedType(runs[scored].Verdict)
	accepted := func(t string) bool {
		return t == label || (allowUnknown && t == string(classifier.Unknown))
	}
	switch {
	case label == LabelNone:
		it.Kind = KindFalseFailure
	case it.Predicted == label:
		it.Kind, it.Pass = KindCorrect, true
	case it.Predicted == string(classifier.Unknown):
		it.Kind, it.Pass = KindUnknown, allowUnknown
	default:
		it.Kind = KindMisroute
	}
	if it.Pass {
		for _, i := range failed {
			if t := predictedType(runs[i].Verdict); !accepted(t) {
				it.Kind, it.Pass = KindConflict, false
				it.Detail = fmt.Sprintf("another failed run (%s) is %s", runs[i].Run.RootSpanID, t)
				break
			}
		}
	}
	if len(failed) > 1 && it.Detail == "" {
		it.Detail = fmt.Sprintf("%d failed runs; scored the last one", len(failed))
	}
	return it
}

// predictedType is the failure type of a failed verdict; a failed verdict
// without a type is shown as such, not silently turned into unknown.
func predictedType(v classifier.Verdict) string {
	if v.FailureType == "" {
		return "(no type)"
	}
	return string(v.FailureType)
}

// ValidLabel reports whether s is "none" or a failure type.
func ValidLabel(s string) bool {
	if s == LabelNone {
		return true
	}
	_, ok := classifier.ParseFailureType(s)
	return ok
}
