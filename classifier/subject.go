package classifier

import (
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/trajectory"
)

// A Subject is a failed run's terminal incident that structure, codes and
// rules left unknown without a reason, with its error evidence verbatim
// and the structure around it: what a second opinion (a model) may be
// asked about, and what its answer is checked against.

// SubjectKind says what failed.
type SubjectKind string

const (
	SubjectToolCall SubjectKind = "tool_call" // a tool call: its span, its fed-back result, or both
	SubjectLLMCall  SubjectKind = "llm_call"  // a model call
	SubjectSpan     SubjectKind = "span"      // another span of the run (chain, workflow)
	SubjectRun      SubjectKind = "run"       // the run's root span
)

// Skip reasons: why a run has no subject.
const (
	SkipNotFailed    = "not_failed"    // the run did not fail
	SkipTyped        = "typed"         // the run already has a failure type
	SkipNotRetryable = "not_retryable" // unknown with a reason: final, never second-guessed
	SkipNoEvidence   = "no_evidence"   // nothing failed visibly (no error text or code)
	SkipRule         = "rule"          // the verdict rests on a caller-supplied rule
)

// Subject is the evidence of the incident a run's unknown verdict rests on.
type Subject struct {
	// Incident is the index in Verdict.Incidents of the incident.
	Incident int
	SpanID   pcommon.SpanID
	Kind     SubjectKind
	SpanName string

	// The error evidence, verbatim.
	Errors        []trajectory.ErrorInfo
	StatusMessage string
	HTTPStatus    int
	JSONRPCCode   int
	HasJSONRPC    bool
	// Results are error results of the call: what the tool returned and
	// what was fed back to the model, when they differ.
	Results []string

	// The call, for tool calls.
	Tool      string
	CallID    string
	Arguments string
	// Offered are the tool definitions the model was given on the step
	// that asked for the call (or on the failing model step).
	Offered []trajectory.ToolDef
	// ToolOffered: Tool is among Offered by name. ToolRan: a tool span
	// executed the call.
	ToolOffered bool
	ToolRan     bool
	// ArgsChecked: the offered definition has a schema the arguments were
	// validated against; ArgsValid is the outcome.
	ArgsChecked bool
	ArgsValid   bool

	// Duration of the failing step; 0 when unknown (not a step).
	Duration time.Duration
	// Model and FinishReasons of the model step that asked for the call,
	// or of the failing model step.
	Model         string
	FinishReasons []string
	// StepIndex is the failing step in Run.Steps, -1 when not a step.
	StepIndex int
}

// ErrorTexts are the subject's error texts in the order they are shown:
// exception types and messages, codes, the status message, results.
func (s *Subject) ErrorTexts() []string {
	var out []string
	for _, e := range s.Errors {
		for _, t := range []string{e.Type, e.Message, e.Code} {
			if strings.TrimSpace(t) != "" {
				out = append(out, t)
			}
		}
	}
	if strings.TrimSpace(s.StatusMessage) != "" {
		out = append(out, s.StatusMessage)
	}
	for _, r := range s.Results {
		if strings.TrimSpace(r) != "" {
			out = append(out, r)
		}
	}
	return out
}

func (s *Subject) hasEvidence() bool {
	return len(s.ErrorTexts()) > 0 || s.HTTPStatus > 0 || s.HasJSONRPC
}

// Subject returns the subject of a run whose verdict v (from Classify with
// the same extra incidents) is a failure of type unknown without a reason,
// or why there is none. It classifies the run again to find the call
// behind the incident; call it only for such runs.
func (c *Classifier) Subject(run *trajectory.Run, v *Verdict, extra ...Incident) (Subject, string) {
	switch {
	case run == nil || v.Outcome != OutcomeFailed:
		return Subject{}, SkipNotFailed
	case v.FailureType != Unknown:
		return Subject{}, SkipTyped
	case NotRetryable(v.Reason):
		return Subject{}, SkipNotRetryable
	case v.Reason != "":
		// The run did not finish and nothing says why.
		return Subject{}, SkipNoEvidence
	}
	cl := c.incidents(run, extra)
	cl.verdict()
	pick := cl.terminal()
	if pick < 0 {
		return Subject{}, SkipNotFailed
	}
	in := &cl.inc[pick]
	s := Subject{Incident: pick, SpanID: in.SpanID, StepIndex: in.StepIndex, Tool: in.Tool}
	switch in.kind {
	case kindCall:
		cl.callSubject(&s, &cl.calls[in.callIx])
	case kindLLM:
		st := &cl.steps[in.pos]
		s.Kind, s.SpanName = SubjectLLMCall, st.Name
		s.setStepEvidence(st)
		s.Model, s.FinishReasons, s.Offered = st.Model, st.FinishReasons, st.Offered
	case kindSpan, kindRoot:
		s.Kind = SubjectSpan
		if in.kind == kindRoot {
			s.Kind = SubjectRun
		}
		for i := range run.SpanErrors {
			se := &run.SpanErrors[i]
			if se.SpanID != in.SpanID {
				continue
			}
			s.SpanName = se.Name
			s.Errors, s.StatusMessage = se.Errors, se.StatusMessage
			s.HTTPStatus, s.JSONRPCCode, s.HasJSONRPC = se.HTTPStatus, se.JSONRPCCode, se.HasJSONRPC
			break
		}
	case kindExtra:
		return Subject{}, SkipRule
	default:
		return Subject{}, SkipNoEvidence
	}
	if !s.hasEvidence() {
		return Subject{}, SkipNoEvidence
	}
	return s, ""
}

func (s *Subject) setStepEvidence(st *trajectory.Step) {
	s.Errors, s.StatusMessage = st.Errors, st.StatusMessage
	s.HTTPStatus, s.JSONRPCCode, s.HasJSONRPC = st.HTTPStatus, st.JSONRPCCode, st.HasJSONRPC
	if st.End > st.Start {
		s.Duration = time.Duration(st.End - st.Start)
	}
}

// callSubject fills s from a failing tool call.
func (cl *classification) callSubject(s *Subject, c *call) {
	s.Kind = SubjectToolCall
	s.Tool, s.CallID, s.Arguments = c.name, c.id, c.args
	if c.toolIx >= 0 {
		st := &cl.steps[c.toolIx]
		s.ToolRan = true
		s.SpanName = st.Name
		s.setStepEvidence(st)
		if st.Result != "" && (st.ResultIsError || resultIsError(&trajectory.ToolResult{Content: st.Result}) || st.Failed()) {
			s.Results = append(s.Results, st.Result)
		}
	}
	if c.result != nil && c.result.Content != "" && (len(s.Results) == 0 || s.Results[0] != c.result.Content) {
		s.Results = append(s.Results, c.result.Content)
	}
	if c.llmIx >= 0 {
		st := &cl.steps[c.llmIx]
		if s.SpanName == "" {
			s.SpanName = st.Name
		}
		s.Model, s.FinishReasons, s.Offered = st.Model, st.FinishReasons, st.Offered
		if c.name != "" {
			idx := offeredIndex{defs: st.Offered}
			if def, ok, _ := idx.lookup(c.name); ok {
				s.ToolOffered = true
				s.ArgsChecked, s.ArgsValid = cl.schemas.argumentsValid(def, c.args)
			}
		}
	}
}

// argumentsValid validates arguments against a tool definition's schema;
// checked is false when the definition has no usable schema.
func (sc *schemaCache) argumentsValid(def *trajectory.ToolDef, args string) (checked, valid bool) {
	rc := trajectory.ToolCall{Name: def.Name, Arguments: args}
	one := [1]trajectory.ToolDef{*def}
	idx := offeredIndex{defs: one[:]}
	if _, bad := sc.checkCall(&rc, &idx); bad {
		return true, false
	}
	if sc.get(def.Schema) == nil {
		return false, false
	}
	return true, true
}
