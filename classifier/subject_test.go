package classifier

import (
	"testing"
	"time"

	"github.com/triage-otel/triage/trajectory"
)

func TestSubjectOfAToolCall(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun().
		llm(tc("1", "lookup", `{"city":"Paris"}`)).
		toolErr("lookup", "1", `{"city":"Paris"}`, "Error", "the frobnicator declined").
		answer("Sorry")
	v := c.Classify(&b.run)
	s, skip := c.Subject(&b.run, &v)
	if skip != "" {
		t.Fatalf("skip %q", skip)
	}
	if s.Kind != SubjectToolCall || s.Tool != "lookup" || s.CallID != "1" || !s.ToolRan || !s.ToolOffered || !s.ArgsChecked || !s.ArgsValid {
		t.Errorf("subject %+v", s)
	}
	if s.SpanID != sid(2) || s.StepIndex != 1 || v.Incidents[s.Incident].SpanID != sid(2) {
		t.Errorf("subject span %v step %d incident %d", s.SpanID, s.StepIndex, s.Incident)
	}
	if s.Duration != 500*time.Nanosecond || len(s.Offered) != 2 {
		t.Errorf("duration %v offered %d", s.Duration, len(s.Offered))
	}
	if got := s.ErrorTexts(); len(got) != 3 || got[0] != "Error" || got[1] != "the frobnicator declined" {
		t.Errorf("texts %q", got)
	}
}

func TestSubjectOfAFedBackResultWithInvalidArguments(t *testing.T) {
	// No tool span: the framework fed the error back to the model. With
	// arguments that fail the offered schema the structure types the
	// call: no subject.
	c := mustNew(t, Options{})
	b := newRun().
		llm(tc("1", "lookup", `{"town":"Paris"}`)).
		answer("Sorry", trajectory.ToolResult{CallID: "1", Content: "Error: the frobnicator declined"})
	v := c.Classify(&b.run)
	if _, skip := c.Subject(&b.run, &v); skip != SkipTyped {
		t.Fatalf("typed run: skip %q (verdict %+v)", skip, v)
	}
	// Valid arguments: unknown, and the subject carries the fed-back text.
	b = newRun().
		llm(tc("1", "lookup", `{"city":"Paris"}`)).
		answer("Sorry", trajectory.ToolResult{CallID: "1", Content: "Error: the frobnicator declined"})
	v = c.Classify(&b.run)
	s, skip := c.Subject(&b.run, &v)
	if skip != "" {
		t.Fatalf("skip %q (verdict %+v)", skip, v)
	}
	if s.ToolRan || !s.ToolOffered || !s.ArgsValid || len(s.Results) != 1 || s.Results[0] != "Error: the frobnicator declined" {
		t.Errorf("subject %+v", s)
	}
}

func TestSubjectOfTheRoot(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun().llm().rootError("AgentError", "the frobnicator declined")
	b.run.Steps[0].FinishReasons = []string{"stop"}
	v := c.Classify(&b.run)
	s, skip := c.Subject(&b.run, &v)
	if skip != "" || s.Kind != SubjectRun || s.SpanID != b.run.RootSpanID || s.StepIndex != -1 {
		t.Fatalf("subject %+v skip %q", s, skip)
	}
}

func TestSubjectSkips(t *testing.T) {
	c := mustNew(t, Options{})
	ok := newRun().llm().answer("fine")
	v := c.Classify(&ok.run)
	if _, skip := c.Subject(&ok.run, &v); skip != SkipNotFailed {
		t.Errorf("ok run: %q", skip)
	}
	auth := newRun().llm(tc("1", "lookup", `{"city":"Paris"}`)).
		toolErr("lookup", "1", `{"city":"Paris"}`, "Error", "Your account has been suspended").answer("Sorry")
	v = c.Classify(&auth.run)
	if _, skip := c.Subject(&auth.run, &v); skip != SkipNotRetryable {
		t.Errorf("not retryable: %q (verdict %+v)", skip, v)
	}
	typed := newRun().llm(tc("1", "lookup", `{"city":"Paris"}`)).
		toolErr("lookup", "1", `{"city":"Paris"}`, "Error", "503 Service Unavailable").answer("Sorry")
	v = c.Classify(&typed.run)
	if _, skip := c.Subject(&typed.run, &v); skip != SkipTyped {
		t.Errorf("typed: %q", skip)
	}
	rule := newRun().llm().answer("fine")
	extra := Incident{SpanID: sid(2), StepIndex: -1, FailureType: Unknown, Signal: SignalOTTL, Rule: "mine"}
	v = c.Classify(&rule.run, extra)
	if _, skip := c.Subject(&rule.run, &v, extra); skip != SkipRule {
		t.Errorf("rule: %q (verdict %+v)", skip, v)
	}
	// A step-limit stop after one tool turn, root lost: nothing to ask.
	lost := newRun().llm(tc("1", "lookup", `{"city":"Paris"}`)).tool("lookup", "1", `{"city":"Paris"}`).llm(tc("2", "lookup", `{"city":"Rome"}`))
	lost.run.RootFound = false
	v = c.Classify(&lost.run)
	if _, skip := c.Subject(&lost.run, &v); skip != SkipNoEvidence {
		t.Errorf("no evidence: %q (verdict %+v)", skip, v)
	}
}
