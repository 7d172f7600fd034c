package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/triage-otel/triage/internal/evalset"
)

// CapturesDir returns the shared captures folder (shared/fixtures/frameworks),
// found by walking up from the working directory like the repository's tests.
func CapturesDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	shared, err := evalset.FindShared(wd)
	if err != nil {
		return "", err
	}
	return filepath.Join(shared, "fixtures", "frameworks"), nil
}

// LoadCaptures reads every capture under dir (<stack>/<case>.json; labels
// and .logs.json files excluded) into a replay: one template per file, sent
// as one export request as the harness's exporter wrote it.
func LoadCaptures(dir string, seed uint64) (*Replay, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	r := NewReplay(seed)
	for _, f := range files {
		if strings.HasSuffix(f, ".logs.json") {
			continue
		}
		td, err := evalset.ReadTraces(f)
		if err != nil {
			return nil, err
		}
		if td.SpanCount() == 0 {
			continue
		}
		rel, _ := filepath.Rel(dir, f)
		r.Add(rel, td)
	}
	if r.Len() == 0 {
		return nil, fmt.Errorf("no captures under %s", dir)
	}
	return r, nil
}
