package classifier

import (
	"encoding/json"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/trajectory"
)

// runBuilder builds hand-made runs: steps get increasing end times and
// distinct span ids.
type runBuilder struct {
	run trajectory.Run
	n   byte
}

func newRun() *runBuilder {
	return &runBuilder{run: trajectory.Run{RootFound: true, RootSpanID: sid(200)}}
}

func sid(b byte) pcommon.SpanID { return pcommon.SpanID{0, 0, 0, 0, 0, 0, 1, b} }

func (b *runBuilder) add(s trajectory.Step) *runBuilder {
	b.n++
	s.SpanID = sid(b.n)
	s.End = pcommon.Timestamp(uint64(b.n) * 1000)
	s.Start = s.End - 500
	b.run.Steps = append(b.run.Steps, s)
	return b
}

var weatherSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)

var offered = []trajectory.ToolDef{
	{Name: "lookup", Schema: weatherSchema},
	{Name: "convert", Schema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"},"to":{"type":"string","maxLength":3}},"required":["amount","to"]}`)},
}

// llm adds a model step asking for calls (name, id, args triples).
func (b *runBuilder) llm(calls ...trajectory.ToolCall) *runBuilder {
	fr := "stop"
	if len(calls) > 0 {
		fr = "tool_calls"
	}
	return b.add(trajectory.Step{Kind: trajectory.StepLLM, Offered: offered, Requested: calls, FinishReasons: []string{fr}})
}

// answer adds a final model answer, with the results fed back.
func (b *runBuilder) answer(text string, results ...trajectory.ToolResult) *runBuilder {
	return b.add(trajectory.Step{Kind: trajectory.StepLLM, Offered: offered, OutputText: text, InputResults: results, FinishReasons: []string{"stop"}})
}

func (b *runBuilder) tool(name, id, args string) *runBuilder {
	return b.add(trajectory.Step{Kind: trajectory.StepTool, ToolName: name, ToolCallID: id, Arguments: args, Result: `{"ok":true}`})
}

func (b *runBuilder) toolErr(name, id, args, typ, msg string) *runBuilder {
	return b.add(trajectory.Step{Kind: trajectory.StepTool, ToolName: name, ToolCallID: id, Arguments: args,
		StatusError: true, StatusMessage: msg, Errors: []trajectory.ErrorInfo{{Type: typ, Message: msg}}})
}

func (b *runBuilder) rootError(typ, msg string) *runBuilder {
	b.run.SpanErrors = append(b.run.SpanErrors, trajectory.SpanError{SpanID: b.run.RootSpanID, IsRoot: true,
		End: pcommon.Timestamp(uint64(b.n+1) * 1000), StatusError: true, StatusMessage: msg,
		Errors: []trajectory.ErrorInfo{{Type: typ, Message: msg}}})
	return b
}

func tc(id, name, args string) trajectory.ToolCall {
	return trajectory.ToolCall{ID: id, Name: name, Arguments: args}
}

func mustNew(t testing.TB, o Options) *Classifier {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantVerdict(t *testing.T, v Verdict, outcome Outcome, ft FailureType) {
	t.Helper()
	if v.Outcome != outcome || v.FailureType != ft {
		t.Fatalf("got %s/%q (signal %s rule %s), want %s/%q; incidents %+v", v.Outcome, v.FailureType, v.Signal, v.Rule, outcome, ft, v.Incidents)
	}
}
