package evalset

import (
	"fmt"
	"path/filepath"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/classifier/llm"
)

// Set is a scored evaluation set.
type Set struct {
	Name string // as shown in reports
	// AllowUnknown is set for corpora: unknown is an accepted answer.
	AllowUnknown bool
	Items        []Item
}

// ScoreCaptures classifies every capture of a labels file and judges it.
// Captures that cannot be read are items of kind error (they fail); a
// capture without spans is not scorable.
func ScoreCaptures(labelsPath string) (Set, error) {
	return ScoreCapturesWith(labelsPath, nil)
}

// ScoreCapturesWith is ScoreCaptures with a model consulted on the runs
// left unknown (nil: none).
func ScoreCapturesWith(labelsPath string, model *llm.Consultant) (Set, error) {
	caps, err := LoadLabels(labelsPath)
	if err != nil {
		return Set{}, err
	}
	set := Set{Name: labelsPath}
	for _, c := range caps {
		set.Items = append(set.Items, ScoreCaptureWith(c, model))
	}
	return set, nil
}

// ScoreCapture classifies and judges one capture.
func ScoreCapture(c Capture) Item {
	return ScoreCaptureWith(c, nil)
}

// ScoreCaptureWith is ScoreCapture with a model (nil: none).
func ScoreCaptureWith(c Capture, model *llm.Consultant) Item {
	fail := func(kind Kind, detail string) Item {
		return Item{Name: c.Name(), Framework: c.Framework, Label: c.Label, Kind: kind, Detail: detail}
	}
	if !ValidLabel(c.Label) {
		return fail(KindError, fmt.Sprintf("label %q is neither %q nor a failure type", c.Label, LabelNone))
	}
	td, err := ReadTraces(c.Path)
	if err != nil {
		return fail(KindError, err.Error())
	}
	if td.SpanCount() == 0 {
		return fail(KindNotScorable, "capture holds no spans")
	}
	opts, err := captureLogs(c.Path)
	if err != nil {
		return fail(KindError, err.Error())
	}
	cl, err := classifier.New(classifier.Options{Constraints: c.Constraints})
	if err != nil {
		return fail(KindError, "classifier: "+err.Error())
	}
	it := Judge(c.Label, false, ClassifyTracesWith(cl, model, td, opts...))
	it.Name = c.Name()
	it.Framework = c.Framework
	return it
}

// ScoreCorpus turns every entry of a string corpus into a trace, classifies
// it and judges it, accepting unknown.
func ScoreCorpus(path string) (Set, error) {
	return ScoreCorpusWith(path, nil)
}

// ScoreCorpusWith is ScoreCorpus with a model (nil: none).
func ScoreCorpusWith(path string, model *llm.Consultant) (Set, error) {
	entries, err := LoadCorpus(path)
	if err != nil {
		return Set{}, err
	}
	cl, err := classifier.New(classifier.Options{})
	if err != nil {
		return Set{}, fmt.Errorf("classifier: %w", err)
	}
	base := filepath.Base(path)
	set := Set{Name: path, AllowUnknown: true}
	for i, e := range entries {
		name := fmt.Sprintf("%s#%d %s", base, i, e.ExceptionType)
		if !ValidLabel(e.Label) {
			set.Items = append(set.Items, Item{Name: name, Label: e.Label, Kind: KindError,
				Detail: fmt.Sprintf("label %q is neither %q nor a failure type", e.Label, LabelNone)})
			continue
		}
		it := Judge(e.Label, true, ClassifyTracesWith(cl, model, CorpusTrace(e, corpusKey(base, i))))
		it.Name = name
		it.Detail = joinDetail(it.Detail, truncate(e.Error, 100))
		set.Items = append(set.Items, it)
	}
	return set, nil
}

func joinDetail(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
