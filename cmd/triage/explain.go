package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/classifier/llm"
	"github.com/triage-otel/triage/internal/evalset"
	"github.com/triage-otel/triage/trajectory"
)

// maxShown bounds how much of an argument, result or message is printed.
const maxShown = 160

// explainFile prints, for humans, each run's trajectory and the reasoning
// that led to its verdict.
func explainFile(w io.Writer, file string, spans, logRecords int, results []evalset.RunResult, model *llm.Consultant) {
	fmt.Fprintf(w, "%s: spans %d, runs %d", file, spans, len(results))
	if logRecords > 0 {
		fmt.Fprintf(w, ", log records %d", logRecords)
	}
	fmt.Fprintln(w)
	for i, r := range results {
		run := r.Run
		fmt.Fprintf(w, "\nrun %d/%d  trace %s  root span %s %q", i+1, len(results), run.TraceID, run.RootSpanID, run.RootName)
		if !run.RootFound {
			fmt.Fprint(w, " (root span missing: assembled from orphans)")
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  service=%s agent=%s session=%s spans=%d orphans=%d\n",
			orDash(run.Service), orDash(run.Agent), orDash(run.Session), len(run.SpanIDs), run.Orphans)
		if run.FinishReason != "" {
			fmt.Fprintf(w, "  run finish reason: %s\n", run.FinishReason)
		}
		fmt.Fprintf(w, "  trajectory (%d steps):\n", len(run.Steps))
		for j := range run.Steps {
			explainStep(w, j, &run.Steps[j])
		}
		for _, se := range run.SpanErrors {
			fmt.Fprintf(w, "  error on %s span %s %q:%s\n", rootOrSpan(se.IsRoot), se.SpanID, se.Name, errorSummary(se.StatusError, se.StatusMessage, se.Errors, se.HTTPStatus, se.HasJSONRPC, se.JSONRPCCode))
		}
		explainVerdict(w, r.Verdict)
		if model != nil {
			explainConsultation(w, model.Model(), r.Consultation)
		}
	}
	fmt.Fprintln(w)
}

func explainStep(w io.Writer, j int, s *trajectory.Step) {
	head := fmt.Sprintf("    #%d %-4s span %s", j, s.Kind, s.SpanID)
	if s.Convention != trajectory.ConventionUnknown {
		head += " [" + string(s.Convention) + "]"
	}
	switch s.Kind {
	case trajectory.StepTool:
		head += " tool=" + orDash(s.ToolName)
		if s.ToolCallID != "" {
			head += " call=" + s.ToolCallID
		}
	default:
		if s.Provider != "" {
			head += " provider=" + s.Provider
		}
		if s.Model != "" {
			head += " model=" + s.Model
		}
		if len(s.FinishReasons) > 0 {
			head += " finish=" + strings.Join(s.FinishReasons, ",")
		}
	}
	fmt.Fprintln(w, head)
	if len(s.Offered) > 0 {
		names := make([]string, len(s.Offered))
		for k, d := range s.Offered {
			names[k] = d.Name
			if len(d.Schema) == 0 {
				names[k] += "(no schema)"
			}
		}
		fmt.Fprintf(w, "        offered: %s\n", strings.Join(names, ", "))
	}
	for _, tc := range s.Requested {
		fmt.Fprintf(w, "        requested: %s(%s)\n", tc.Name, clip(tc.Arguments))
	}
	for _, set := range []struct {
		label   string
		results []trajectory.ToolResult
	}{{"tool result in input", s.InputResults}, {"tool result recorded", s.ToolResults}} {
		for _, tr := range set.results {
			mark := ""
			if tr.IsError {
				mark = " [error]"
			}
			fmt.Fprintf(w, "        %s: %s%s %s\n", set.label, orDash(tr.Name), mark, clip(tr.Content))
		}
	}
	if s.Kind == trajectory.StepTool {
		if s.Arguments != "" {
			fmt.Fprintf(w, "        arguments: %s\n", clip(s.Arguments))
		}
		if s.Result != "" {
			mark := ""
			if s.ResultIsError {
				mark = " [error result]"
			}
			fmt.Fprintf(w, "        result%s: %s\n", mark, clip(s.Result))
		}
	}
	if s.OutputText != "" {
		fmt.Fprintf(w, "        output: %s\n", clip(s.OutputText))
	}
	if s.Failed() {
		fmt.Fprintf(w, "        error:%s\n", errorSummary(s.StatusError, s.StatusMessage, s.Errors, s.HTTPStatus, s.HasJSONRPC, s.JSONRPCCode))
	}
}

func errorSummary(status bool, msg string, errs []trajectory.ErrorInfo, http int, hasRPC bool, rpc int) string {
	var b strings.Builder
	if status {
		b.WriteString(" status=ERROR")
		if msg != "" {
			b.WriteString(" " + quote(msg))
		}
	}
	if http != 0 {
		fmt.Fprintf(&b, " http=%d", http)
	}
	if hasRPC {
		fmt.Fprintf(&b, " jsonrpc=%d", rpc)
	}
	for _, e := range errs {
		b.WriteString(" |")
		if e.Type != "" {
			b.WriteString(" " + e.Type)
		}
		if e.Code != "" {
			b.WriteString(" code=" + e.Code)
		}
		// The status description often repeats the exception message.
		if e.Message != "" && !(status && e.Message == msg) {
			b.WriteString(" " + quote(e.Message))
		}
	}
	return b.String()
}

func explainVerdict(w io.Writer, v classifier.Verdict) {
	fmt.Fprintf(w, "  incidents (%d):\n", len(v.Incidents))
	for _, in := range v.Incidents {
		where := "span " + in.SpanID.String()
		if in.StepIndex >= 0 {
			where = fmt.Sprintf("step #%d %s", in.StepIndex, where)
		}
		rec := "not recovered"
		if in.Recovered {
			rec = "recovered later in the run"
		}
		line := fmt.Sprintf("    - %s: %s by %s, confidence %.2f, %s", where, in.FailureType, signalText(in.Signal, in.Rule), in.Confidence, rec)
		if in.Tool != "" {
			line += ", tool " + in.Tool
		}
		if in.Reason != "" {
			line += " — " + in.Reason
		}
		fmt.Fprintln(w, line)
	}
	switch v.Outcome {
	case classifier.OutcomeFailed:
		fmt.Fprintf(w, "  verdict: failed, %s (by %s, confidence %.2f, evidence span %s)",
			v.FailureType, signalText(v.Signal, v.Rule), v.Confidence, orDash(v.EvidenceSpanID.String()))
		if v.Reason != "" {
			fmt.Fprintf(w, " — %s", v.Reason)
		}
		fmt.Fprintln(w)
	case classifier.OutcomeRecovered:
		fmt.Fprintln(w, "  verdict: recovered (every incident was superseded by a later successful step)")
	default:
		fmt.Fprintf(w, "  verdict: %s\n", orDash(string(v.Outcome)))
	}
}

func rootOrSpan(root bool) string {
	if root {
		return "root"
	}
	return "run"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clip shortens s to maxShown runes on one line.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= maxShown {
		return s
	}
	return string(r[:maxShown]) + "…"
}

// quote clips s and puts it between quotes without escaping, for reading.
func quote(s string) string {
	return "\u201c" + clip(s) + "\u201d"
}

// signalText is the signal as written in evidence, or says there is none
// (an unknown with only a reason, e.g. a lost root span).
func signalText(s classifier.Signal, rule string) string {
	if l := classifier.Label(s, rule); l != "" {
		return l
	}
	return "no signal"
}
