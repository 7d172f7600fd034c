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
	checkCaptureSet(t, filepath.Join(sharedDir(t), "fixtures", "frameworks", "labels.json"), evidenceAbsent)
}

// checkCaptureSet is the acceptance rule of a labelled capture set: every
// capture with spans passes, except the ones gaps names (capture file →
// why its failure is absent from the spans), which may be answered unknown
// or missed but never misrouted, and which must leave the list once they
// pass.
func checkCaptureSet(t *testing.T, labels string, gaps map[string]string) {
	t.Helper()
	caps, err := LoadLabels(labels)
	if err != nil {
		t.Fatal(err)
	}
	if len(caps) == 0 {
		t.Fatalf("%s holds no captures", labels)
	}
	seen := map[string]bool{}
	for _, c := range caps {
		t.Run(c.Name(), func(t *testing.T) {
			it := ScoreCapture(c)
			reason, gap := gaps[c.CaptureFile]
			seen[c.CaptureFile] = gap
			switch {
			case it.Kind == KindNotScorable:
				t.Logf("not scorable: %s", it.Detail)
			case gap && it.Pass:
				t.Errorf("%s is now classified right (%s): remove it from the evidence-absent list", c.CaptureFile, it.Predicted)
			case gap && (it.Kind == KindUnknown || it.Kind == KindMissed):
				t.Logf("known gap, evidence absent from the spans (%s): want %s, got %s", reason, c.Label, it.Predicted)
			case !it.Pass:
				t.Errorf("%s: want %s, got %s (%s) %s", c.CaptureFile, c.Label, it.Predicted, it.Kind, it.Detail)
			}
		})
	}
	for f := range gaps {
		if _, ok := seen[f]; !ok {
			t.Errorf("the evidence-absent list names %s, which %s does not hold", f, labels)
		}
	}
}

// evidenceAbsent lists the captures whose failure cannot be told from their
// spans, checked by hand against the spans (README, Evaluation). They may be
// answered unknown or missed, never misrouted: a misroute or a false failure
// still fails the test, and so does a capture that becomes right (so the list
// only shrinks). This is an expectation list for the test, not input to the
// classifier, which never sees capture names.
var evidenceAbsent = map[string]string{
	"mcp-openllmetry/llm_503.json":          "the failing chat span and the root were never ended; only MCP initialize/tools/list/session spans remain, none with an error",
	"mcp-openllmetry/llm_429.json":          "the failing chat span and the root were never ended; only MCP initialize/tools/list/session spans remain, none with an error",
	"mcp-openllmetry/llm_timeout.json":      "the failing chat span and the root were never ended; only MCP initialize/tools/list/session spans remain, none with an error",
	"mcp-openllmetry/context_overflow.json": "the chat span that got the 400 context-length error and the root were never ended; the spans end after a successful tool call",
	// Added with the 12-stack set (not a capture that passed before): the
	// same loss as mcp-openllmetry/context_overflow. The export holds the
	// first chat span (finish tool_call) and one successful search_docs
	// tool span whose output is complete, valid JSON of 5.7 KB (6 results,
	// nowhere near a context window); the chat span that got the 400, the
	// agent and the workflow spans were never ended; no .logs.json.
	"openllmetry/context_overflow.json": "the chat span that got the 400 context-length error and the root were never ended; the spans end after a successful tool call whose complete 5.7 KB result shows no overflow",
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
