package classifier

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/trajectory"
)

// Call is one tool call as seen so far by a caller that watches a run while
// it is still going: any of its parts may be missing.
type Call struct {
	// Request is the call as the model asked for it; nil when no model
	// step asking for it was seen.
	Request *trajectory.ToolCall
	// RequestSpanID is the span of the model step that asked.
	RequestSpanID pcommon.SpanID
	// Offered are the tool definitions the model was given when it asked.
	Offered []trajectory.ToolDef
	// Tool is the tool step that executed the call; nil when none was seen.
	Tool *trajectory.Step
	// Result is the result fed back to the model; nil when none was seen.
	Result *trajectory.ToolResult
	// ResultSpanID is the span of the model step the result was fed to.
	ResultSpanID pcommon.SpanID
}

// ClassifyCall reads one tool call on its own, exactly as Classify reads
// each call of a run (the same code: the call is classified as the only
// call of a run made of its parts). failed reports whether the call failed
// — error evidence on its tool span, a result that reads as an error, a
// requested tool that was not offered, arguments that fail the offered
// schema — and inc is the incident it then makes (FailureType unknown when
// the evidence names no class). ok reports whether the call is known to
// have succeeded (it ran or was answered, without failing).
func (c *Classifier) ClassifyCall(call Call) (inc Incident, failed, ok bool) {
	steps := make([]trajectory.Step, 0, 3)
	id, name := "", ""
	if call.Request != nil {
		id, name = call.Request.ID, call.Request.Name
		steps = append(steps, trajectory.Step{Kind: trajectory.StepLLM, SpanID: call.RequestSpanID,
			Requested: []trajectory.ToolCall{*call.Request}, Offered: call.Offered})
	}
	if call.Tool != nil {
		t := *call.Tool
		// The caller linked the parts: make the run link them the same way.
		if call.Request != nil {
			t.ToolCallID = id
			if t.ToolName == "" {
				t.ToolName = name
			}
		}
		id, name = t.ToolCallID, t.ToolName
		steps = append(steps, t)
	}
	if call.Result != nil {
		r := *call.Result
		if len(steps) > 0 {
			r.CallID = id
			if r.Name == "" {
				r.Name = name
			}
		}
		steps = append(steps, trajectory.Step{Kind: trajectory.StepLLM, SpanID: call.ResultSpanID,
			InputResults: []trajectory.ToolResult{r}})
	}
	if len(steps) == 0 {
		return Incident{}, false, false
	}
	run := &trajectory.Run{Steps: steps, RootFound: true}
	cl := &classification{c: c, run: run, steps: steps, schemas: c.schemas, resultMode: resultsKeep}
	cl.collectCalls()
	cl.callIncidents()
	if len(cl.calls) == 0 {
		return Incident{}, false, false
	}
	first := &cl.calls[0]
	for i := range cl.inc {
		if cl.inc[i].kind == kindCall && cl.inc[i].callIx == 0 {
			return cl.inc[i].Incident, true, false
		}
	}
	return Incident{}, first.failed, first.ok
}
