package llm

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/triage-otel/triage/classifier"
)

// A Correction is a human's answer for a run or an error shape (the seed
// library's feedback.py): `triage eval --corrections` scores the
// classifier against them, and the processor applies those that name a
// signature as overrides of the answer cache — one correction fixes that
// error shape everywhere, without a model call.
type Correction struct {
	TraceID   string `json:"trace_id,omitempty"`
	RunSpanID string `json:"run_span_id,omitempty"`
	Signature string `json:"signature,omitempty"`
	// Expected is the failure type the run should have had; "unknown"
	// keeps an error shape unknown (and away from the model).
	Expected classifier.FailureType `json:"expected"`
	Note     string                 `json:"note,omitempty"`
	// Line is the line of the file the correction was read from.
	Line int `json:"-"`
}

// maxCorrectionLine bounds one line of a corrections file.
const maxCorrectionLine = 1 << 20

// ReadCorrections reads a JSONL file of corrections. Blank lines and lines
// starting with '#' are skipped; every bad line is reported with its
// number, and the good ones are still returned.
func ReadCorrections(path string) ([]Correction, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("corrections: %w", err)
	}
	defer f.Close()
	cs, err := ParseCorrections(f)
	if err != nil {
		return cs, fmt.Errorf("corrections %s: %w", path, err)
	}
	return cs, nil
}

// ParseCorrections reads corrections from JSONL.
func ParseCorrections(r io.Reader) ([]Correction, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxCorrectionLine)
	var (
		out  []Correction
		errs []error
	)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var c Correction
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n, err))
			continue
		}
		c.Line = n
		if err := c.validate(); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n, err))
			continue
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("line %d: %w", n+1, err))
	}
	return out, errors.Join(errs...)
}

func (c *Correction) validate() error {
	if _, ok := classifier.ParseFailureType(string(c.Expected)); !ok {
		return fmt.Errorf("expected %q is not a failure type", c.Expected)
	}
	if c.Signature == "" && c.TraceID == "" {
		return errors.New("a correction needs a signature or a trace_id")
	}
	if c.Signature != "" && !strings.HasPrefix(c.Signature, SignaturePrefix) {
		return fmt.Errorf("signature %q does not start with %q (copy it from triage classify --explain)", c.Signature, SignaturePrefix)
	}
	if c.RunSpanID != "" && c.TraceID == "" {
		return errors.New("run_span_id needs a trace_id")
	}
	return nil
}

// overrides indexes the corrections that name a signature; a later line
// wins over an earlier one.
func overrides(cs []Correction) map[string]Correction {
	m := make(map[string]Correction)
	for _, c := range cs {
		if c.Signature != "" {
			m[c.Signature] = c
		}
	}
	return m
}
