package evalset

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// FrameworkStats are the figures of one framework (stack) in a capture set.
type FrameworkStats struct {
	Framework string
	Failed    int // scored items labelled with a failure type
	Found     int // of those, classified right
	Unknown   int
	Missed    int
	Misroutes int
	Conflicts int
	OKRuns    int // scored items labelled none
	// FalseFailures are failures reported on OKRuns.
	FalseFailures int
	NotScorable   int
	Errors        int
}

// ByFramework computes the figures per framework, in the order the
// frameworks first appear in the set. Corpus entries (no framework) are
// left out.
func (s Set) ByFramework() []FrameworkStats {
	var out []FrameworkStats
	index := map[string]int{}
	for _, it := range s.Items {
		if it.Framework == "" {
			continue
		}
		i, ok := index[it.Framework]
		if !ok {
			i = len(out)
			index[it.Framework] = i
			out = append(out, FrameworkStats{Framework: it.Framework})
		}
		fs := &out[i]
		switch it.Kind {
		case KindNotScorable:
			fs.NotScorable++
			continue
		case KindError:
			fs.Errors++
			continue
		}
		if it.Label == LabelNone {
			fs.OKRuns++
			if it.Kind == KindFalseFailure {
				fs.FalseFailures++
			}
			continue
		}
		fs.Failed++
		switch it.Kind {
		case KindCorrect:
			fs.Found++
		case KindUnknown:
			fs.Unknown++
		case KindMissed:
			fs.Missed++
		case KindMisroute:
			fs.Misroutes++
		case KindConflict:
			fs.Conflicts++
		}
	}
	return out
}

// cell renders one framework's figures: "found/failed", then what else
// happened to the failed runs, then false failures on the ok runs.
func (fs FrameworkStats) cell() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d", fs.Found, fs.Failed)
	var notes []string
	for _, n := range []struct {
		v    int
		what string
	}{
		{fs.Unknown, "unknown"}, {fs.Missed, "missed"}, {fs.Misroutes, "misrouted"}, {fs.Conflicts, "conflicting"},
		{fs.FalseFailures, "false failure"}, {fs.NotScorable, "not scorable"}, {fs.Errors, "unreadable"},
	} {
		switch {
		case n.v == 1 || (n.v > 1 && n.what != "false failure"):
			notes = append(notes, fmt.Sprintf("%d %s", n.v, n.what))
		case n.v > 1:
			notes = append(notes, fmt.Sprintf("%d %ss", n.v, n.what))
		}
	}
	if len(notes) > 0 {
		b.WriteString(" (" + strings.Join(notes, ", ") + ")")
	}
	return b.String()
}

// WriteByFramework prints the capture sets side by side, one row per
// framework: failed runs classified right out of those labelled failed,
// then the unknown, missed and misrouted ones, and the false failures on
// the ok/recovered runs. A set is headed by its labels file's folder name.
func WriteByFramework(w io.Writer, sets []Set) {
	var capSets []Set
	for _, s := range sets {
		if !s.AllowUnknown {
			capSets = append(capSets, s)
		}
	}
	if len(capSets) == 0 {
		return
	}
	var order []string
	seen := map[string]bool{}
	per := make([]map[string]FrameworkStats, len(capSets))
	for i, s := range capSets {
		per[i] = map[string]FrameworkStats{}
		for _, fs := range s.ByFramework() {
			per[i][fs.Framework] = fs
			if !seen[fs.Framework] {
				seen[fs.Framework] = true
				order = append(order, fs.Framework)
			}
		}
	}
	fmt.Fprintln(w, "== by framework: failed runs classified right / labelled failed (unknown, missed, misrouted; false failures on ok/recovered runs)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"framework"}
	for _, s := range capSets {
		head = append(head, setLabel(s))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, f := range order {
		row := []string{f}
		for i := range capSets {
			fs, ok := per[i][f]
			if !ok {
				row = append(row, "-")
				continue
			}
			row = append(row, fs.cell())
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	for _, s := range capSets {
		st := s.Stats()
		fmt.Fprintf(w, "%s: passed %d of %d scored (%d not scorable); misroutes %d, unknown %d, missed %d, false failures %d of %d ok/recovered\n",
			setLabel(s), st.Passed, st.Scored, st.NotScorable, st.Misroutes, st.Unknown, st.Missed, st.FalseFailures, st.OKRuns)
	}
	fmt.Fprintln(w)
}

// setLabel names a capture set by its labels file's folder.
func setLabel(s Set) string { return filepath.Base(filepath.Dir(s.Name)) }
