package recovery

import (
	"bytes"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/classifier"
)

// Evidence is what a classification rests on. In the decision document
// SpanID is 16 lowercase hex digits, or "" when not tied to a span.
type Evidence struct {
	SpanID pcommon.SpanID
	Signal string // manifest, json_schema, http_status, text_rule:<name>, ...
	Rule   string
	Reason string
}

// evidenceJSON is Evidence as the decision document writes it.
type evidenceJSON struct {
	SpanID string `json:"span_id"`
	Signal string `json:"signal"`
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
}

// MarshalJSON writes the span ID in hex ("" for none).
func (e Evidence) MarshalJSON() ([]byte, error) {
	w := evidenceJSON{Signal: e.Signal, Rule: e.Rule, Reason: e.Reason}
	if !e.SpanID.IsEmpty() {
		w.SpanID = e.SpanID.String()
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes; a span ID that is not 16 hex
// digits is an error.
func (e *Evidence) UnmarshalJSON(b []byte) error {
	var w evidenceJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = Evidence{Signal: w.Signal, Rule: w.Rule, Reason: w.Reason}
	if w.SpanID == "" {
		return nil
	}
	raw, err := hex.DecodeString(w.SpanID)
	if err != nil || len(raw) != len(e.SpanID) {
		return fmt.Errorf("evidence span_id %q: want 16 hex digits", truncateBytes(w.SpanID, 64))
	}
	copy(e.SpanID[:], raw)
	return nil
}

// Input describes one failed run.
type Input struct {
	// FailureType is the classifier's; a value the classifier does not
	// define is treated as unknown (saying so in the reason).
	FailureType classifier.FailureType
	Confidence  float64
	// Evidence is read, never written, by the engine; a decision may
	// share it (Decide copies what the redactor changes).
	Evidence []Evidence
	TraceID  pcommon.TraceID // required
	SpanID   pcommon.SpanID  // required: the run's root (or evidence) span
	// SessionID keys the attempt history (gen_ai.conversation.id,
	// session.id, ...). Empty: the trace is the session.
	SessionID string
	Service   string
	Agent     string
	Tool      string
	// Reason is the classifier's reason (e.g. why an unknown failure is not
	// retryable); it reaches the decision redacted and truncated.
	Reason string
	// CheckpointID and Subgoal, when the run names them, feed
	// rollback_to_checkpoint and resume_from_subgoal.
	CheckpointID string
	Subgoal      string

	// Phase is PhaseFinal (the run ended; the default) or PhaseInFlight (a
	// guard tripped while the run is still going).
	Phase string
	// Guard names the in-flight guard that tripped (in-flight decisions).
	Guard string
	// NonIdempotent, when set, says why the failing tool is known not to be
	// idempotent from the trace itself (its MCP annotations); the engine
	// also matches Options.NonIdempotentTools against Tool.
	NonIdempotent string
	// InFlight is the in-flight decision already taken for this run, on
	// its final decision: the final decision references it and, for the
	// same failure type, counts it as the run's attempt instead of deciding
	// again.
	InFlight *Decision
}

// Decision phases.
const (
	PhaseInFlight = "in_flight"
	PhaseFinal    = "final"
)

// DecisionVersion is the version of the decision document's shape (the
// version field). 2 added version, phase, guard and in_flight_decision_id.
const DecisionVersion = 2

// Decision is the document an agent runtime consumes. Its JSON Schema is
// DecisionSchema (decision.schema.json).
type Decision struct {
	Version int `json:"version"`
	// Phase is "in_flight" (an in-flight guard tripped while the run is
	// still going) or "final" (the run ended).
	Phase string `json:"phase"`
	// Guard names the guard of an in-flight decision; "" on final ones.
	Guard string `json:"guard"`
	// InFlightDecisionID, on a final decision, is the in-flight decision
	// already taken for the same run; "" when there was none.
	InFlightDecisionID string `json:"in_flight_decision_id"`

	DecisionID  string     `json:"decision_id"`
	TraceID     string     `json:"trace_id"`
	SpanID      string     `json:"span_id"`
	SessionID   string     `json:"session_id"`
	Service     string     `json:"service"`
	Agent       string     `json:"agent"`
	Tool        string     `json:"tool"`
	FailureType string     `json:"failure_type"`
	Confidence  float64    `json:"confidence"`
	Evidence    []Evidence `json:"evidence"`
	Action      Action     `json:"action"`
	// Attempt is the number of this failure type's failures in the session
	// so far (this one included); MaxAttempts is the policy's budget for
	// them, 0 when unlimited (escalate, abort).
	Attempt     int `json:"attempt"`
	MaxAttempts int `json:"max_attempts"`
	// Policy names the strategy that answered: "<path>:<kind>", e.g.
	// "external_fault.steps[1]:replan" or "timeout:exhausted".
	Policy  string         `json:"policy"`
	Breaker *BreakerReport `json:"breaker,omitempty"`
	Time    string         `json:"time"` // RFC 3339, UTC
}

// JSON encodes the decision (the bytes json.Marshal writes, without its
// reflection: decision_json.go).
func (d Decision) JSON() ([]byte, error) { return d.AppendJSON(make([]byte, 0, d.jsonSize())) }

// DecisionSchema is the JSON Schema (draft 2020-12) of the decision document.
//
//go:embed decision.schema.json
var DecisionSchema []byte

var (
	schemaOnce     sync.Once
	compiledSchema *jsonschema.Schema
	schemaErr      error
)

// ValidateDecisionJSON checks a decision document against DecisionSchema.
func ValidateDecisionJSON(doc []byte) error {
	schemaOnce.Do(func() {
		s, err := jsonschema.UnmarshalJSON(bytes.NewReader(DecisionSchema))
		if err != nil {
			schemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		if err := c.AddResource("decision.schema.json", s); err != nil {
			schemaErr = err
			return
		}
		compiledSchema, schemaErr = c.Compile("decision.schema.json")
	})
	if schemaErr != nil {
		return fmt.Errorf("decision schema: %w", schemaErr)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("decision document: %w", err)
	}
	return compiledSchema.Validate(v)
}
