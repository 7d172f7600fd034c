package evalset

import (
	"os"
	"path/filepath"
	"testing"
)

// sharedDir locates the shared/ folder (fixtures and corpora) beside the
// repository. It fails the test when there is none: the acceptance sets are
// part of what CI must check.
func sharedDir(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := FindShared(wd)
	if err != nil {
		t.Fatalf("acceptance sets not found: %v", err)
	}
	return dir
}

// Every labelled capture with spans: a failed run gets its labelled type,
// an ok or recovered run gets no failure.
func TestAcceptanceCaptures(t *testing.T) {
	labels := filepath.Join(sharedDir(t), "fixtures", "frameworks", "labels.json")
	caps, err := LoadLabels(labels)
	if err != nil {
		t.Fatal(err)
	}
	if len(caps) == 0 {
		t.Fatalf("%s holds no captures", labels)
	}
	for _, c := range caps {
		t.Run(c.Name(), func(t *testing.T) {
			it := ScoreCapture(c)
			switch {
			case it.Kind == KindNotScorable:
				t.Logf("not scorable: %s", it.Detail)
			case !it.Pass:
				t.Errorf("%s: want %s, got %s (%s) %s", c.CaptureFile, c.Label, it.Predicted, it.Kind, it.Detail)
			}
		})
	}
}

// Every corpus entry is classified as its labelled type or unknown, never
// as another type, and never as "no failure" (the span has status ERROR).
func TestAcceptanceCorpora(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(sharedDir(t), "corpora", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no corpus found in shared/corpora")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			set, err := ScoreCorpus(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(set.Items) == 0 {
				t.Fatalf("%s holds no entries", f)
			}
			for _, it := range set.Items {
				if !it.Pass {
					t.Errorf("%s: want %s (or unknown), got %s (%s) %s", it.Name, it.Label, it.Predicted, it.Kind, it.Detail)
				}
			}
		})
	}
}
