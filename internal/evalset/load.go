// Package evalset loads the labelled evaluation sets (framework captures with
// a labels.json, and labelled error-string corpora) and scores the one
// classification path, trajectory.Build then classifier.Classify, against
// them.
package evalset

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// LabelNone is the label of a capture whose run did not fail (it succeeded,
// possibly after recovering from incidents).
const LabelNone = "none"

// Capture is one labelled capture file of a labels.json.
type Capture struct {
	Framework   string   `json:"framework"`
	Scenario    string   `json:"scenario"`
	Label       string   `json:"label"`
	Constraints []string `json:"constraints"`
	CaptureFile string   `json:"capture_file"` // relative to the labels file
	// Path is CaptureFile resolved against the labels file's folder.
	Path string `json:"-"`
}

// Name identifies the capture in reports.
func (c Capture) Name() string {
	if c.Framework != "" || c.Scenario != "" {
		return c.Framework + "/" + c.Scenario
	}
	return c.CaptureFile
}

// LoadLabels reads a labels.json: a JSON array of captures.
func LoadLabels(path string) ([]Capture, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var caps []Capture
	if err := json.Unmarshal(data, &caps); err != nil {
		return nil, fmt.Errorf("%s: not a labels file (JSON array of captures): %w", path, err)
	}
	dir := filepath.Dir(path)
	for i := range caps {
		c := &caps[i]
		if c.CaptureFile == "" {
			return nil, fmt.Errorf("%s: entry %d has no capture_file", path, i)
		}
		if c.Label == "" {
			return nil, fmt.Errorf("%s: entry %d (%s) has no label", path, i, c.CaptureFile)
		}
		c.Path = c.CaptureFile
		if !filepath.IsAbs(c.Path) {
			c.Path = filepath.Join(dir, c.CaptureFile)
		}
	}
	return caps, nil
}

// CorpusEntry is one labelled error string.
type CorpusEntry struct {
	ExceptionType string `json:"exception_type"`
	Error         string `json:"error"`
	Label         string `json:"label"`
	Provenance    string `json:"provenance,omitempty"`
	// Optional metadata, put on the span when present.
	HTTPStatus  int  `json:"http_status,omitempty"`
	JSONRPCCode *int `json:"jsonrpc_code,omitempty"`
}

// UnmarshalJSON accepts the metadata under the names the corpora and the
// semantic conventions use for it.
func (e *CorpusEntry) UnmarshalJSON(data []byte) error {
	var raw struct {
		ExceptionType string `json:"exception_type"`
		Error         string `json:"error"`
		Label         string `json:"label"`
		Provenance    string `json:"provenance"`

		HTTPStatus         *int `json:"http_status"`
		HTTPStatusCode     *int `json:"http_status_code"`
		StatusCode         *int `json:"status_code"`
		HTTPResponseStatus *int `json:"http.response.status_code"`
		JSONRPCCode        *int `json:"jsonrpc_code"`
		JSONRPCErrorCode   *int `json:"jsonrpc_error_code"`
		RPCJSONRPCCode     *int `json:"rpc.jsonrpc.error_code"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*e = CorpusEntry{
		ExceptionType: raw.ExceptionType,
		Error:         raw.Error,
		Label:         raw.Label,
		Provenance:    raw.Provenance,
	}
	if p := firstSet(raw.HTTPStatus, raw.HTTPStatusCode, raw.StatusCode, raw.HTTPResponseStatus); p != nil {
		e.HTTPStatus = *p
	}
	e.JSONRPCCode = firstSet(raw.JSONRPCCode, raw.JSONRPCErrorCode, raw.RPCJSONRPCCode)
	return nil
}

func firstSet(ps ...*int) *int {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

// LoadCorpus reads a labelled string corpus: a JSON array of entries.
func LoadCorpus(path string) ([]CorpusEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entries []CorpusEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("%s: not a corpus (JSON array of entries): %w", path, err)
	}
	for i, e := range entries {
		if e.Label == "" {
			return nil, fmt.Errorf("%s: entry %d has no label", path, i)
		}
	}
	return entries, nil
}

// ReadTraces reads an OTLP/JSON ExportTraceServiceRequest file. Errors name
// the file.
func ReadTraces(path string) (ptrace.Traces, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return ptrace.Traces{}, err
	}
	return ParseTraces(path, data)
}

// ErrSharedNotFound is returned by FindShared when no shared/ folder is found.
var ErrSharedNotFound = errors.New("shared/DESIGN.md not found in any parent folder")

// FindShared walks up from start and returns the first <dir>/shared that
// holds DESIGN.md. The repository is cloned beside a copy of shared/, under
// any folder name, so the walk looks for a sibling shared/ at every level.
func FindShared(start string) (string, error) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", err
	}
	for {
		cand := filepath.Join(dir, "shared")
		if st, err := os.Stat(filepath.Join(cand, "DESIGN.md")); err == nil && !st.IsDir() {
			return cand, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w (started at %s)", ErrSharedNotFound, start)
		}
		dir = parent
	}
}
