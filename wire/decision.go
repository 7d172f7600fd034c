package wire

import (
	"bytes"
	"encoding/json"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Decision is a recovery decision as its consumers see it: the document,
// byte for byte, and the fields they route on.
type Decision struct {
	// Body is the decision document (a JSON object) exactly as produced.
	Body        string
	ID          string
	FailureType string
	ActionKind  string
	Agent       string
	SessionID   string
	// Phase is PhaseInFlight or PhaseFinal; Guard names the guard of an
	// in-flight decision ("" on final ones).
	Phase string
	Guard string
}

// Problem is what was wrong with a decision's input, reported by
// ReadDecision.
type Problem int

const (
	// NotObject: the body is not a JSON object (the decision is unusable).
	NotObject Problem = iota + 1
	// WrongType: an attribute is not a string; its string form is used.
	WrongType
	// Missing: no decision id in the attributes nor in the document.
	Missing
)

// Reporter receives the problems found while reading, with the attribute
// they concern. It may be nil.
type Reporter func(p Problem, key string)

// ReadOptions tune ReadDecision.
type ReadOptions struct {
	// Validate makes ReadDecision check that the body is valid JSON, for a
	// consumer that hands it outside the collector. The body is scanned at
	// most once: when a routing field has to be read from the document,
	// that parse is the check.
	Validate bool
}

// PutAttributes writes the routing fields that are set, under their span
// attribute names: what a decision log record carries beside its body.
func (d *Decision) PutAttributes(m pcommon.Map) {
	m.EnsureCapacity(m.Len() + 7)
	for _, f := range [...]struct{ key, v string }{
		{AttrDecisionID, d.ID}, {AttrFailureType, d.FailureType}, {AttrActionKind, d.ActionKind},
		{AttrAgent, d.Agent}, {AttrSessionID, d.SessionID}, {AttrPhase, d.Phase}, {AttrGuard, d.Guard},
	} {
		if f.v != "" {
			m.PutStr(f.key, f.v)
		}
	}
}

// ReadDecision reads the decision whose document is body and whose routing
// fields are flattened in attrs (a run root's span attributes, or a
// decision log record's attributes). ok is false, with NotObject reported,
// when body is not a JSON object.
//
// Each routing field is its attribute when set and not empty (a value that
// is not a string is used through its string form and reported as
// WrongType); else the document's field of the same meaning, for producers
// that only fill the document. The triage processor always writes the
// attributes, so on its output the document is never parsed.
func ReadDecision(attrs pcommon.Map, body string, report Reporter, opts ReadOptions) (Decision, bool) {
	if report == nil {
		report = func(Problem, string) {}
	}
	trimmed := strings.TrimSpace(body)
	if len(trimmed) < 2 || trimmed[0] != '{' || trimmed[len(trimmed)-1] != '}' {
		report(NotObject, AttrDecision)
		return Decision{}, false
	}
	d := Decision{Body: body}
	// The document is parsed at most once, and only when an attribute is
	// missing.
	var doc *documentFields
	parsed := false
	for _, f := range [...]struct {
		key  string
		dst  *string
		pick func(*documentFields) json.RawMessage
	}{
		{AttrDecisionID, &d.ID, func(f *documentFields) json.RawMessage { return f.DecisionID }},
		{AttrFailureType, &d.FailureType, func(f *documentFields) json.RawMessage { return f.FailureType }},
		{AttrActionKind, &d.ActionKind, (*documentFields).actionKind},
		{AttrAgent, &d.Agent, func(f *documentFields) json.RawMessage { return f.Agent }},
		{AttrSessionID, &d.SessionID, func(f *documentFields) json.RawMessage { return f.SessionID }},
		{AttrPhase, &d.Phase, func(f *documentFields) json.RawMessage { return f.Phase }},
		{AttrGuard, &d.Guard, func(f *documentFields) json.RawMessage { return f.Guard }},
	} {
		if f.key == AttrGuard && d.Phase == PhaseFinal {
			continue // final decisions have no guard: no reason to parse
		}
		if v, ok := attrs.Get(f.key); ok {
			*f.dst = v.Str()
			if v.Type() != pcommon.ValueTypeStr {
				report(WrongType, f.key)
				*f.dst = v.AsString()
			}
		}
		if *f.dst != "" {
			continue
		}
		if !parsed {
			parsed = true
			var df documentFields
			if json.Unmarshal([]byte(trimmed), &df) != nil {
				report(NotObject, AttrDecision)
				return Decision{}, false
			}
			doc = &df
		}
		*f.dst = rawText(f.pick(doc))
	}
	if opts.Validate && !parsed && !json.Valid([]byte(trimmed)) {
		report(NotObject, AttrDecision)
		return Decision{}, false
	}
	if d.ID == "" {
		report(Missing, AttrDecisionID)
	}
	return d, true
}

// documentFields are the only document fields a consumer may fall back on.
// They are kept raw so that a field of an unexpected type does not reject
// the document.
type documentFields struct {
	DecisionID  json.RawMessage `json:"decision_id"`
	FailureType json.RawMessage `json:"failure_type"`
	Agent       json.RawMessage `json:"agent"`
	SessionID   json.RawMessage `json:"session_id"`
	Action      json.RawMessage `json:"action"`
	Phase       json.RawMessage `json:"phase"`
	Guard       json.RawMessage `json:"guard"`
}

func (f *documentFields) actionKind() json.RawMessage {
	a := bytes.TrimSpace(f.Action)
	if len(a) == 0 || a[0] != '{' {
		return nil
	}
	var action struct {
		Kind json.RawMessage `json:"kind"`
	}
	if json.Unmarshal(a, &action) != nil {
		return nil
	}
	return action.Kind
}

// rawText renders a document field: a string unquoted, null or absent as
// "", anything else as its JSON text.
func rawText(r json.RawMessage) string {
	r = bytes.TrimSpace(r)
	if len(r) == 0 || string(r) == "null" {
		return ""
	}
	if r[0] == '"' {
		var s string
		if json.Unmarshal(r, &s) == nil {
			return s
		}
	}
	return string(r)
}
