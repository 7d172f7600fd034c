package llm

import (
	"fmt"
	"strings"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/recovery"
	"github.com/triage-otel/triage/trajectory"
)

// Prompt is what is sent to the model for one subject, already redacted.
type Prompt struct {
	System string
	User   string
	// Evidence are the error texts as sent (redacted, truncated): an
	// answer's quote must occur in one of them.
	Evidence []string
}

// systemPrompt states the task, the taxonomy and the answer format. The
// types the trace's structure decides are named so the model leaves them.
const systemPrompt = `You classify why one step of an AI agent run failed, for a system that routes the agent to a recovery strategy. A wrong type sends the agent to the wrong recovery; "unknown" is always safe.

Failure types:
- wrong_tool_called: the agent called a tool, function, model or target that does not exist or was not offered.
- schema_mismatch: the arguments, input or output did not match the expected schema, type or format (validation or parse errors).
- external_fault: a dependency failed transiently: server errors, overloaded, unavailable, rate limits.
- timeout: a call or the run ran out of time.
- context_overflow: the input did not fit the model's context window.
- unknown: anything else, or when the evidence does not clearly show one of the types above (permission, billing, policy, bugs in code, cancellations are unknown).
- loop_detected, constraint_ignored, plan_incomplete: decided from the trace's structure, never from one error; do not answer them.

Answer with exactly one JSON object and nothing else:
{"failure_type": "<one of the types>", "confidence": <number 0..1>, "evidence": "<a short verbatim quote from ERROR EVIDENCE that shows the type>"}
The evidence must be copied exactly from one ERROR EVIDENCE line (not from CONTEXT). If no quote there supports a type, answer {"failure_type": "unknown", "confidence": 0, "evidence": ""}.`

// maxNeighbours is how many steps on each side of the failing one are
// summarised.
const maxNeighbours = 2

// Section headers of the user message.
const (
	headStep     = "FAILING STEP"
	headEvidence = "ERROR EVIDENCE"
	headContext  = "CONTEXT"
)

// EvidenceSection returns the ERROR EVIDENCE lines of a user message built
// by BuildPrompt ("" when there are none): what a quote must come from.
func EvidenceSection(user string) string {
	i := strings.Index(user, "\n"+headEvidence+"\n")
	if i < 0 {
		return ""
	}
	rest := user[i+len(headEvidence)+2:]
	if j := strings.Index(rest, "\n"+headContext+"\n"); j >= 0 {
		rest = rest[:j]
	}
	return strings.TrimSpace(rest)
}

// BuildPrompt is what is sent to the model about a subject, redacted and
// truncated by red.
func BuildPrompt(run *trajectory.Run, s *classifier.Subject, red *recovery.Redactor) Prompt {
	return buildPrompt(run, s, red)
}

// buildPrompt writes the subject's evidence verbatim (redacted, truncated)
// and its structural context. Never sent: prompts and completions of the
// agent's model calls, tool results other than the failing call's error,
// resource and span attributes, the session id.
func buildPrompt(run *trajectory.Run, s *classifier.Subject, red *recovery.Redactor) Prompt {
	w := promptWriter{red: red}
	w.line(headStep)
	w.line("kind: %s", s.Kind)
	if s.SpanName != "" {
		w.line("span: %s", red.Text(s.SpanName))
	}
	if s.Tool != "" {
		w.line("tool: %s", red.Text(s.Tool))
	}
	if s.Duration > 0 {
		w.line("duration_ms: %.1f", float64(s.Duration.Microseconds())/1000)
	}
	w.line("")
	w.line(headEvidence)
	w.writeEvidence(s)
	w.line("")
	w.line(headContext)
	w.writeContext(run, s)
	return Prompt{System: systemPrompt, User: w.b.String(), Evidence: w.evidence}
}

// promptWriter writes the user prompt, every quoted text redacted, and
// numbers the evidence it quotes.
type promptWriter struct {
	b        strings.Builder
	evidence []string
	red      *recovery.Redactor
}

func (w *promptWriter) line(format string, a ...any) { fmt.Fprintf(&w.b, format+"\n", a...) }

// ev quotes one piece of evidence, numbered, unless it is blank once
// redacted.
func (w *promptWriter) ev(label, text string) {
	t := w.red.Text(text)
	if strings.TrimSpace(t) == "" {
		return
	}
	w.evidence = append(w.evidence, t)
	w.line("[%d] %s: %s", len(w.evidence), label, oneLine(t))
}

// writeEvidence quotes the subject's errors, status, codes and tool results.
func (w *promptWriter) writeEvidence(s *classifier.Subject) {
	for _, e := range s.Errors {
		if e.Type != "" {
			w.ev("error type", e.Type)
		}
		if e.Message != "" {
			w.ev("error message", e.Message)
		}
		if e.Code != "" {
			w.ev("error code", e.Code)
		}
	}
	if s.StatusMessage != "" && !sameAsAnError(s.StatusMessage, s.Errors) {
		w.ev("status message", s.StatusMessage)
	}
	if s.HTTPStatus > 0 {
		w.ev("http status", fmt.Sprint(s.HTTPStatus))
	}
	if s.HasJSONRPC {
		w.ev("json-rpc error code", fmt.Sprint(s.JSONRPCCode))
	}
	for _, r := range s.Results {
		w.ev("tool result", r)
	}
}

// writeContext describes what the trace shows around the subject: the
// tools offered, the call against them, the model, the neighbouring steps.
func (w *promptWriter) writeContext(run *trajectory.Run, s *classifier.Subject) {
	red := w.red
	if len(s.Offered) > 0 {
		names := make([]string, 0, len(s.Offered))
		for _, d := range s.Offered {
			if d.Name != "" {
				names = append(names, red.Text(d.Name))
			}
		}
		w.line("tools offered to the model: %s", strings.Join(names, ", "))
	}
	if s.Kind == classifier.SubjectToolCall {
		w.writeToolCall(s)
	}
	if s.Model != "" || len(s.FinishReasons) > 0 {
		w.line("model: %s; finish reasons: %s", orNone(red.Text(s.Model)), orNone(strings.Join(s.FinishReasons, ",")))
	}
	if s.StepIndex >= 0 && len(run.Steps) > 0 {
		w.line("steps around the failing one:")
		lo, hi := max(0, s.StepIndex-maxNeighbours), min(len(run.Steps)-1, s.StepIndex+maxNeighbours)
		for i := lo; i <= hi; i++ {
			w.line("  %s", stepSummary(i, &run.Steps[i], i == s.StepIndex, red))
		}
	}
}

// writeToolCall describes a tool call against the offered tools: offered
// or not, executed or not, its schema and arguments, whether they validate.
func (w *promptWriter) writeToolCall(s *classifier.Subject) {
	red := w.red
	switch {
	case s.ToolOffered:
		w.line("the tool %q was among the offered tools", red.Text(s.Tool))
	case len(s.Offered) > 0:
		w.line("the tool %q was NOT among the offered tools", red.Text(s.Tool))
	}
	if s.ToolRan {
		w.line("a tool span executed the call")
	} else {
		w.line("no tool span executed the call")
	}
	for _, d := range s.Offered {
		if d.Name == s.Tool && len(d.Schema) > 0 {
			w.line("schema of %s: %s", red.Text(d.Name), oneLine(red.JSON(string(d.Schema))))
		}
	}
	if s.Arguments != "" {
		w.line("arguments requested: %s", oneLine(red.JSON(s.Arguments)))
	}
	switch {
	case s.ArgsChecked && s.ArgsValid:
		w.line("the arguments validate against the schema")
	case s.ArgsChecked:
		w.line("the arguments do NOT validate against the schema")
	}
}

func sameAsAnError(msg string, errs []trajectory.ErrorInfo) bool {
	for _, e := range errs {
		if e.Message == msg {
			return true
		}
	}
	return false
}

// stepSummary is one line per neighbouring step: kind, tool or model,
// outcome, finish reasons. No content.
func stepSummary(i int, st *trajectory.Step, failing bool, red *recovery.Redactor) string {
	s := fmt.Sprintf("#%d %s", i, st.Kind)
	switch st.Kind {
	case trajectory.StepTool:
		s += " " + red.Text(st.ToolName)
	default:
		if st.Model != "" {
			s += " " + red.Text(st.Model)
		}
		if len(st.Requested) > 0 {
			names := make([]string, len(st.Requested))
			for j, rc := range st.Requested {
				names[j] = red.Text(rc.Name)
			}
			s += " requested " + strings.Join(names, ",")
		}
		if len(st.FinishReasons) > 0 {
			s += " finish=" + strings.Join(st.FinishReasons, ",")
		}
	}
	if st.Failed() {
		s += " FAILED"
	} else {
		s += " ok"
	}
	if failing {
		s += "  <- this step"
	}
	return s
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
