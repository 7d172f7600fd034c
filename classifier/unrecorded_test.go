package classifier

import (
	"testing"

	"github.com/triage-otel/triage/trajectory"
)

// bareTool is a tool span as an instrumentation with content capture off
// records it: the tool's name and call id, no arguments, no result.
func (b *runBuilder) bareTool(name, id string) *runBuilder {
	return b.add(trajectory.Step{Kind: trajectory.StepTool, ToolName: name, ToolCallID: id})
}

// bareLLM is a model step asking for tools whose calls were not recorded.
func (b *runBuilder) bareLLM(calls ...trajectory.ToolCall) *runBuilder {
	return b.add(trajectory.Step{Kind: trajectory.StepLLM, Requested: calls, FinishReasons: []string{"tool_calls"}})
}

// A step-limit stop after the same tool was called again and again: with
// the arguments recorded the calls say loop or plan; without them, neither
// can be told, so the answer is unknown, never one of the two guessed.
func TestStepLimitWithUnrecordedCalls(t *testing.T) {
	c := mustNew(t, Options{})
	queries := []string{"refunds", "returns", "shipping", "warranty", "exchanges"}

	// Recorded, different queries: an unfinished plan.
	b := newRun()
	for i, q := range queries {
		id := string(rune('a' + i))
		args := `{"query":"` + q + `"}`
		b.llm(tc(id, "search", args)).tool("search", id, args)
	}
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, PlanIncomplete)

	// The same run with content capture off: not a loop.
	for _, stopped := range []bool{false, true} {
		b = newRun()
		for i := range queries {
			id := string(rune('a' + i))
			b.bareLLM(tc(id, "search", "")).bareTool("search", id)
		}
		if stopped {
			b.rootError("MaxStepsExceededError", "Agent stopped after 5 steps without producing a final answer")
		}
		v := c.Classify(&b.run)
		wantVerdict(t, v, OutcomeFailed, Unknown)
		if v.Reason != ReasonCallsUnrecorded {
			t.Errorf("stopped by an error %v: reason %q, want %q", stopped, v.Reason, ReasonCallsUnrecorded)
		}
	}

	// Different tools each time: no loop is possible whatever the
	// arguments were, so the plan did not finish.
	b = newRun()
	for i, name := range []string{"search", "lookup", "convert", "search", "lookup"} {
		id := string(rune('a' + i))
		b.bareLLM(tc(id, name, "")).bareTool(name, id)
	}
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, PlanIncomplete)

	// No call recorded at all while every model step asked for tools,
	// stopped by a step-limit error: unknown.
	b = newRun()
	for range 5 {
		b.bareLLM()
	}
	b.rootError("MaxStepsExceededError", "Agent stopped after 5 steps without producing a final answer")
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, Unknown)
	if v.Reason != ReasonCallsUnrecorded {
		t.Errorf("no calls: reason %q", v.Reason)
	}
}

// Calls identified by their results still make a loop when their
// arguments were not recorded.
func TestUnrecordedArgumentsLoopByResult(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun()
	for i := range 4 {
		id := string(rune('a' + i))
		b.bareLLM(tc(id, "search", ""))
		if i > 0 {
			// the previous call's result, fed back
			b.run.Steps[len(b.run.Steps)-1].InputResults = []trajectory.ToolResult{{CallID: string(rune('a' + i - 1)), Name: "search", Content: `{"hits":0}`}}
		}
		b.bareTool("search", id)
	}
	b.answer("", trajectory.ToolResult{CallID: "d", Name: "search", Content: `{"hits":0}`})
	b.run.Steps[len(b.run.Steps)-1].FinishReasons = []string{"tool_calls"}
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, LoopDetected)
}

// The streaming detector applies the same rule: calls without arguments
// or results are never loop steps.
func TestLoopDetectorIgnoresUnrecordedCalls(t *testing.T) {
	d := mustNew(t, Options{}).NewLoopDetector()
	for i := range 6 {
		if l, ok := d.Add("search", "", nil, false); ok {
			t.Fatalf("call %d: loop %+v from calls without arguments or results", i, l)
		}
	}
	d = mustNew(t, Options{}).NewLoopDetector()
	found := false
	for range 3 {
		_, found = d.Add("search", `{"query":"refunds"}`, nil, false)
	}
	if !found {
		t.Error("three equal recorded calls: no loop")
	}
}
