package classifier

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/triage-otel/triage/trajectory"
)

// sharedDir finds the shared/ directory (corpora, fixtures) by walking up
// from the working directory. The corpora are the regression set of the
// text and exception rules, so their absence fails the test.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		cand := filepath.Join(dir, "shared")
		if st, err := os.Stat(filepath.Join(cand, "corpora")); err == nil && st.IsDir() {
			return cand
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("shared/corpora not found above the working directory")
		}
		dir = parent
	}
}

type corpusEntry struct {
	ExceptionType string `json:"exception_type"`
	Error         string `json:"error"`
	Label         string `json:"label"`
}

// corpusFile is one shared corpus.
type corpusFile struct {
	file    string
	entries []corpusEntry
}

// loadCorpora reads the shared corpora, in file order; their absence
// fails the test.
func loadCorpora(t testing.TB) []corpusFile {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(sharedDir(t), "corpora", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpora: %v", err)
	}
	var out []corpusFile
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var entries []corpusEntry
		if err := json.Unmarshal(data, &entries); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, corpusFile{f, entries})
	}
	return out
}

// TestCorpora puts each labelled error on a run's root span, as an
// instrumentation would, and classifies the run. Every entry must come out
// as labelled or unknown — never as a different type.
func TestCorpora(t *testing.T) {
	c := mustNew(t, Options{})
	type tally struct{ labelled, correct int }
	perType := map[FailureType]*tally{}
	total, correct := 0, 0
	for _, corpus := range loadCorpora(t) {
		f, entries := corpus.file, corpus.entries
		for i, e := range entries {
			want, ok := ParseFailureType(e.Label)
			if !ok {
				t.Fatalf("%s[%d]: unknown label %q", f, i, e.Label)
			}
			p, okP := classifyTextWith(e.Error, true)
			if full, okF := classifyTextWith(e.Error, false); p != full || okP != okF {
				t.Errorf("%s[%d]: prefilter changed the answer on %q", filepath.Base(f), i, e.Error)
			}
			run := trajectory.Run{RootFound: true, RootSpanID: sid(1), SpanErrors: []trajectory.SpanError{{
				SpanID: sid(1), IsRoot: true, StatusError: true, StatusMessage: e.Error,
				Errors: []trajectory.ErrorInfo{{Type: e.ExceptionType, Message: e.Error}},
			}}}
			v := c.Classify(&run)
			if v.Outcome != OutcomeFailed {
				t.Errorf("%s[%d] %s %q: outcome %s", filepath.Base(f), i, e.ExceptionType, e.Error, v.Outcome)
				continue
			}
			if v.FailureType != want && v.FailureType != Unknown {
				t.Errorf("%s[%d] misroute: %s %q labelled %s, got %s (%s)", filepath.Base(f), i, e.ExceptionType, e.Error, want, v.FailureType, Label(v.Signal, v.Rule))
			}
			tl := perType[want]
			if tl == nil {
				tl = &tally{}
				perType[want] = tl
			}
			tl.labelled++
			total++
			if v.FailureType == want {
				tl.correct++
				correct++
			}
		}
	}
	types := make([]string, 0, len(perType))
	for ft := range perType {
		types = append(types, string(ft))
	}
	sort.Strings(types)
	for _, ft := range types {
		tl := perType[FailureType(ft)]
		t.Logf("recall %-18s %d/%d", ft, tl.correct, tl.labelled)
	}
	t.Logf("recall overall %d/%d", correct, total)
}
