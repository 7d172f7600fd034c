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
	if call.Request == nil && call.Tool == nil && call.Result == nil {
		return Incident{}, false, false
	}
	// The classification, and the run made of the call's parts, are lent
	// by the Classifier's pool (classify.go): the guards read every call
	// again each time one of its parts arrives.
	cl, _ := c.scratch.Get().(*classification)
	if cl == nil {
		cl = &classification{}
	}
	if cl.one == nil {
		cl.one = &oneCall{}
	}
	one := cl.one
	steps := one.steps[:0]
	id, name := "", ""
	if call.Request != nil {
		id, name = call.Request.ID, call.Request.Name
		one.req[0] = *call.Request
		steps = append(steps, trajectory.Step{Kind: trajectory.StepLLM, SpanID: call.RequestSpanID,
			Requested: one.req[:], Offered: call.Offered})
	}
	if call.Tool != nil {
		steps = append(steps, *call.Tool)
		t := &steps[len(steps)-1]
		// The caller linked the parts: make the run link them the same way.
		if call.Request != nil {
			t.ToolCallID = id
			if t.ToolName == "" {
				t.ToolName = name
			}
		}
		id, name = t.ToolCallID, t.ToolName
	}
	if call.Result != nil {
		r := &one.res[0]
		*r = *call.Result
		if len(steps) > 0 {
			r.CallID = id
			if r.Name == "" {
				r.Name = name
			}
		}
		steps = append(steps, trajectory.Step{Kind: trajectory.StepLLM, SpanID: call.ResultSpanID,
			InputResults: one.res[:]})
	}
	one.run = trajectory.Run{Steps: steps, RootFound: true}
	cl.c, cl.run, cl.steps, cl.schemas, cl.resultMode = c, &one.run, steps, c.schemas, resultsKeep
	cl.memo.shared, cl.memo.mode = c.texts, resultsKeep
	cl.collectCalls()
	cl.callIncidents()
	switch {
	case len(cl.calls) == 0:
	default:
		first := &cl.calls[0]
		failed, ok = first.failed, first.ok
		for i := range cl.inc {
			if cl.inc[i].kind == kindCall && cl.inc[i].callIx == 0 {
				inc, failed, ok = cl.inc[i].Incident, true, false
				break
			}
		}
	}
	*one = oneCall{}
	cl.release()
	c.scratch.Put(cl)
	return inc, failed, ok
}

// oneCall is the run ClassifyCall makes of a call's parts (kept with a
// pooled classification, emptied after each use).
type oneCall struct {
	steps [3]trajectory.Step
	req   [1]trajectory.ToolCall
	res   [1]trajectory.ToolResult
	run   trajectory.Run
}
