package evalset

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/triage-otel/triage/classifier"
)

// TypeStats are the figures of one failure type in a set.
type TypeStats struct {
	Type      string
	Labelled  int // items labelled with the type
	Predicted int // items predicted as the type
	Correct   int // both
}

// Precision is Correct/Predicted; ok is false when nothing was predicted.
func (s TypeStats) Precision() (float64, bool) { return ratio(s.Correct, s.Predicted) }

// Recall is Correct/Labelled; ok is false when nothing was labelled.
func (s TypeStats) Recall() (float64, bool) { return ratio(s.Correct, s.Labelled) }

func ratio(a, b int) (float64, bool) {
	if b == 0 {
		return 0, false
	}
	return float64(a) / float64(b), true
}

// Stats are the figures of a set.
type Stats struct {
	Types         []TypeStats // failure types labelled or predicted, in taxonomy order
	Scored        int
	NotScorable   int
	Errors        int
	OKRuns        int // items labelled none
	FalseFailures int
	Misroutes     int
	Unknown       int // typed labels answered unknown
	Missed        int
	Conflicts     int
	Passed        int
	Failed        int
}

// Stats computes the set's figures. Not scorable items are only counted;
// unreadable items count as failed.
func (s Set) Stats() Stats {
	var st Stats
	byType := map[string]*TypeStats{}
	get := func(t string) *TypeStats {
		if byType[t] == nil {
			byType[t] = &TypeStats{Type: t}
		}
		return byType[t]
	}
	for _, it := range s.Items {
		switch it.Kind {
		case KindNotScorable:
			st.NotScorable++
			continue
		case KindError:
			st.Errors++
			st.Failed++
			continue
		}
		st.Scored++
		if it.Pass {
			st.Passed++
		} else {
			st.Failed++
		}
		if it.Label == LabelNone {
			st.OKRuns++
		} else {
			get(it.Label).Labelled++
		}
		if it.Predicted != LabelNone {
			get(it.Predicted).Predicted++
			if it.Predicted == it.Label {
				get(it.Label).Correct++
			}
		}
		switch it.Kind {
		case KindFalseFailure:
			st.FalseFailures++
		case KindMisroute:
			st.Misroutes++
		case KindUnknown:
			st.Unknown++
		case KindMissed:
			st.Missed++
		case KindConflict:
			st.Conflicts++
		}
	}
	for _, t := range classifier.FailureTypes {
		if ts, ok := byType[string(t)]; ok {
			st.Types = append(st.Types, *ts)
			delete(byType, string(t))
		}
	}
	// Predictions outside the taxonomy (a failed verdict without a type).
	for _, ts := range byType {
		st.Types = append(st.Types, *ts)
	}
	return st
}

// WriteReport prints each set: the items that failed (all items when
// verbose), the per-type table and the set's counts; then the plain closing
// line "N passed, N failed". It returns the totals.
func WriteReport(w io.Writer, sets []Set, verbose bool) (passed, failed int) {
	for _, s := range sets {
		st := s.Stats()
		kind := "captures"
		if s.AllowUnknown {
			kind = "corpus (unknown accepted)"
		}
		fmt.Fprintf(w, "== %s: %s — %d items, %d scored, %d not scorable\n",
			kind, s.Name, len(s.Items), st.Scored, st.NotScorable)
		for _, it := range s.Items {
			if !verbose && (it.Pass || it.Kind == KindNotScorable) {
				continue
			}
			mark := "FAIL"
			switch {
			case it.Pass:
				mark = "ok  "
			case it.Kind == KindNotScorable:
				mark = "skip"
			}
			line := fmt.Sprintf("%s %-44s want %-18s got %-18s %s", mark, it.Name, it.Label, it.Predicted, it.Kind)
			if it.Detail != "" {
				line += "  (" + oneLine(it.Detail) + ")"
			}
			fmt.Fprintln(w, strings.TrimRight(line, " "))
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  type\tlabelled\tpredicted\tcorrect\tprecision\trecall")
		for _, ts := range st.Types {
			p, pok := ts.Precision()
			r, rok := ts.Recall()
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%s\t%s\n", ts.Type, ts.Labelled, ts.Predicted, ts.Correct, pct(p, pok), pct(r, rok))
		}
		tw.Flush()
		fmt.Fprintf(w, "misroutes %d, unknown %d, missed %d, conflicts %d, false failures %d of %d ok/recovered, not scorable %d, unreadable %d\n",
			st.Misroutes, st.Unknown, st.Missed, st.Conflicts, st.FalseFailures, st.OKRuns, st.NotScorable, st.Errors)
		fmt.Fprintf(w, "in this set: passed %d, failed %d\n\n", st.Passed, st.Failed)
		passed += st.Passed
		failed += st.Failed
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", passed, failed)
	return passed, failed
}

func pct(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
