package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/internal/evalset"
)

// runJSON is the line printed per run by "triage classify".
type runJSON struct {
	TraceID        string         `json:"trace_id"`
	RunSpanID      string         `json:"run_span_id"`
	Service        string         `json:"service"`
	Agent          string         `json:"agent"`
	Session        string         `json:"session"`
	Verdict        string         `json:"verdict"`
	FailureType    string         `json:"failure_type"`
	Signal         string         `json:"signal"`
	Rule           string         `json:"rule"`
	Confidence     float64        `json:"confidence"`
	EvidenceSpanID string         `json:"evidence_span_id"`
	Reason         string         `json:"reason,omitempty"`
	Incidents      []incidentJSON `json:"incidents"`
	// Model is set when a model is configured and the run was an unknown
	// failure: what the consultation did.
	Model *modelJSON `json:"model,omitempty"`
}

type modelJSON struct {
	Outcome   string `json:"outcome"`
	Gate      string `json:"gate,omitempty"`
	Source    string `json:"source,omitempty"`
	Signature string `json:"signature,omitempty"`
}

type incidentJSON struct {
	SpanID      string `json:"span_id"`
	FailureType string `json:"failure_type"`
	Signal      string `json:"signal"`
	Rule        string `json:"rule,omitempty"`
	Recovered   bool   `json:"recovered"`
}

// toJSON maps a classified run to its output line. failure_type is empty
// unless the run failed, whatever the verdict carries.
func toJSON(r evalset.RunResult) runJSON {
	v := r.Verdict
	out := runJSON{
		TraceID:        r.Run.TraceID.String(),
		RunSpanID:      r.Run.RootSpanID.String(),
		Service:        r.Run.Service,
		Agent:          r.Run.Agent,
		Session:        r.Run.Session,
		Verdict:        string(v.Outcome),
		Signal:         string(v.Signal),
		Rule:           v.Rule,
		Confidence:     v.Confidence,
		EvidenceSpanID: v.EvidenceSpanID.String(),
		Reason:         v.Reason,
		Incidents:      make([]incidentJSON, 0, len(v.Incidents)),
	}
	if v.Outcome == classifier.OutcomeFailed {
		out.FailureType = string(v.FailureType)
	}
	if c := r.Consultation; c != nil {
		out.Model = &modelJSON{Outcome: c.Outcome, Gate: c.Gate, Source: c.Source, Signature: c.Signature}
	}
	for _, in := range v.Incidents {
		out.Incidents = append(out.Incidents, incidentJSON{
			SpanID:      in.SpanID.String(),
			FailureType: string(in.FailureType),
			Signal:      string(in.Signal),
			Rule:        in.Rule,
			Recovered:   in.Recovered,
		})
	}
	return out
}

func runClassify(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("classify", stderr)
	var constraints stringList
	fs.Var(&constraints, "constraint", "forbidden `string`: found in an LLM output it is a constraint_ignored incident (repeatable)")
	explain := fs.Bool("explain", false, "print the trajectory and the reasoning for humans instead of JSON lines")
	lf := addLLMFlags(fs, true)
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "triage classify: no FILE given")
		return exitUsage
	}
	cl, err := classifier.New(classifier.Options{Constraints: constraints})
	if err != nil {
		fmt.Fprintf(stderr, "triage classify: %v\n", err)
		return exitUsage
	}
	model, ok := lf.consultant("classify", stderr)
	if !ok {
		return exitUsage
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	code := exitOK
	for _, f := range files {
		td, err := evalset.ReadTraces(f)
		if err != nil {
			fmt.Fprintf(stderr, "triage classify: %v\n", err)
			code = exitFailed
			continue
		}
		if td.SpanCount() == 0 {
			fmt.Fprintf(stderr, "triage classify: %s holds no spans\n", f)
		}
		results := evalset.ClassifyTracesWith(cl, model, td)
		if *explain {
			explainFile(stdout, f, td.SpanCount(), results, model)
			continue
		}
		for _, r := range results {
			if err := enc.Encode(toJSON(r)); err != nil {
				fmt.Fprintf(stderr, "triage classify: %s: %v\n", f, err)
				return exitFailed
			}
		}
	}
	return code
}
