package evalset

import (
	"fmt"
	"sort"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/classifier/llm"
)

// Coverage says how far a corrections file reaches (the seed library's
// fit()): how many corrections matched a run, how many the processor can
// apply as overrides (those naming a signature), and per expected type how
// many the classifier already gets right.
type Coverage struct {
	Total      int
	Matched    int
	Signatures int
	ByType     map[classifier.FailureType]TypeCoverage
}

// TypeCoverage counts corrections of one expected type.
type TypeCoverage struct {
	Correct, Wrong int
}

// ScoreCorrections scores the classifier (with the model when set) on a
// corrections file as a labelled set over the runs in files: a correction
// naming a trace (and run) is judged on that trace's runs, one naming a
// signature on the runs whose unknown failure has that signature. The
// corrections are not applied while scoring. Bad lines are returned as an
// error after the good ones are scored.
func ScoreCorrections(path string, files []string, model *llm.Consultant) (Set, Coverage, error) {
	cs, readErr := llm.ReadCorrections(path)
	if cs == nil && readErr != nil {
		return Set{}, Coverage{}, readErr
	}
	cl, err := classifier.New(classifier.Options{})
	if err != nil {
		return Set{}, Coverage{}, fmt.Errorf("classifier: %w", err)
	}
	set := Set{Name: path}
	var (
		byTrace = map[string][]RunResult{}
		bySig   = map[string][]RunResult{}
	)
	for _, f := range files {
		td, err := ReadTraces(f)
		if err != nil {
			set.Items = append(set.Items, Item{Name: f, Kind: KindError, Detail: err.Error()})
			continue
		}
		for _, r := range ClassifyTracesWith(cl, model, td) {
			tid := r.Run.TraceID.String()
			byTrace[tid] = append(byTrace[tid], r)
			// The signature of the run's unknown as the classifier alone
			// left it: what a processor override would match.
			v := cl.Classify(&r.Run)
			if s, skip := cl.Subject(&r.Run, &v); skip == "" {
				sig, _ := llm.Signature(&s)
				bySig[sig] = append(bySig[sig], r)
			}
		}
	}
	cov := Coverage{Total: len(cs), ByType: map[classifier.FailureType]TypeCoverage{}}
	for _, c := range cs {
		name := fmt.Sprintf("line %d", c.Line)
		var runs []RunResult
		switch {
		case c.TraceID != "":
			name += " trace " + c.TraceID
			for _, r := range byTrace[c.TraceID] {
				if c.RunSpanID == "" || r.Run.RootSpanID.String() == c.RunSpanID {
					runs = append(runs, r)
				}
			}
			if c.RunSpanID != "" {
				name += " run " + c.RunSpanID
			}
		default:
			name += " " + c.Signature
			runs = bySig[c.Signature]
		}
		if c.Signature != "" {
			cov.Signatures++
		}
		if len(runs) == 0 {
			set.Items = append(set.Items, Item{Name: name, Label: string(c.Expected), Kind: KindNotScorable, Detail: "no run in the files matches"})
			continue
		}
		cov.Matched++
		it := Judge(string(c.Expected), false, runs)
		it.Name = name
		it.Detail = joinDetail(it.Detail, c.Note)
		set.Items = append(set.Items, it)
		tc := cov.ByType[c.Expected]
		if it.Pass {
			tc.Correct++
		} else {
			tc.Wrong++
		}
		cov.ByType[c.Expected] = tc
	}
	return set, cov, readErr
}

// Types lists the expected types of the coverage in the taxonomy's order.
func (c Coverage) Types() []classifier.FailureType {
	var out []classifier.FailureType
	for ft := range c.ByType {
		out = append(out, ft)
	}
	order := map[classifier.FailureType]int{}
	for i, ft := range classifier.FailureTypes {
		order[ft] = i
	}
	sort.Slice(out, func(i, j int) bool { return order[out[i]] < order[out[j]] })
	return out
}
