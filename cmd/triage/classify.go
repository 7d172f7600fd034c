package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"go.opentelemetry.io/collector/pdata/ptrace"

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

func runClassify(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("classify", stderr)
	var constraints stringList
	fs.Var(&constraints, "constraint", "forbidden `string`: found in an LLM output it is a constraint_ignored incident (repeatable)")
	explain := fs.Bool("explain", false, "print the trajectory and the reasoning for humans instead of JSON lines")
	skipEmpty := fs.Bool("skip-empty", false, "report a file without spans and go on, instead of exiting 1 for it")
	lf := addLLMFlags(fs, true)
	var logFiles stringList
	fs.Var(&logFiles, "logs", "OTLP/JSON logs `file` whose GenAI events are joined to the spans of every FILE (repeatable; NAME.logs.json beside NAME.json is joined without it)")
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
	extraLogs, err := readLogFiles(logFiles)
	if err != nil {
		fmt.Fprintf(stderr, "triage classify: --logs: %v\n", err)
		return exitFailed
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	code := exitOK
	for _, f := range files {
		if c := companionListed(f, files); c != "" {
			fmt.Fprintf(stderr, "triage classify: %s is joined to %s\n", f, c)
			continue
		}
		td, errs := readTracesArg(f, stdin)
		for _, err := range errs {
			fmt.Fprintf(stderr, "triage classify: %v\n", err)
			code = exitFailed
		}
		if td.SpanCount() == 0 {
			if len(errs) == 0 {
				// Nothing to classify is not a success: the file is not a
				// trace export, or its instrumentation exported nothing.
				fmt.Fprintf(stderr, "triage classify: %s holds no spans\n", argName(f))
				if !*skipEmpty {
					code = exitFailed
				}
			}
			continue
		}
		opts, records, err := logsOptions(f, extraLogs)
		if err != nil {
			fmt.Fprintf(stderr, "triage classify: %v\n", err)
			code = exitFailed
			continue
		}
		results := evalset.ClassifyTracesWith(cl, model, td, opts...)
		if *explain {
			explainFile(stdout, argName(f), td.SpanCount(), records, results, model)
			continue
		}
		for _, r := range results {
			if err := enc.Encode(toJSON(r)); err != nil {
				fmt.Fprintf(stderr, "triage classify: %s: %v\n", argName(f), err)
				return exitFailed
			}
		}
	}
	return code
}

// stdinArg is the FILE argument that reads standard input.
const stdinArg = "-"

// argName is how a FILE argument is named in messages.
func argName(f string) string {
	if f == stdinArg {
		return "stdin"
	}
	return f
}

// readTracesArg reads the spans of a FILE argument ("-": standard input).
// A request that cannot be read loses only itself: the spans of the
// others are returned with one error per bad request.
func readTracesArg(f string, stdin io.Reader) (ptrace.Traces, []error) {
	var data []byte
	var err error
	if f == stdinArg {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(f)
	}
	if err != nil {
		return ptrace.NewTraces(), []error{err}
	}
	return evalset.ParseTracesPartial(argName(f), data)
}
