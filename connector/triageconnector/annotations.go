package triageconnector // import "github.com/triage-otel/triage/connector/triageconnector"

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/connector/triageconnector/internal/metadata"
	"github.com/triage-otel/triage/recovery"
)

// Span attributes written by the triage processor that the connector reads.
const (
	attrVerdict     = "triage.verdict"
	attrFailureType = "triage.failure_type"
	attrRecovered   = "triage.recovered"
	attrTool        = "triage.tool"
	attrAgent       = "triage.agent"
	attrSessionID   = "triage.session.id"
	attrDecision    = "triage.decision"
	attrDecisionID  = "triage.decision.id"
	attrActionKind  = "triage.action.kind"
	attrRootMissing = "triage.root_missing"
	attrLate        = "triage.late"

	// attrGenAIAgentName is read when the processor did not stamp
	// triage.agent: the GenAI semconv agent name on the run's root.
	attrGenAIAgentName = "gen_ai.agent.name"
	attrServiceName    = "service.name"

	// attrTimestamps names the span's start/end pair in the invalid-input
	// telemetry.
	attrTimestamps = "span.timestamps"
)

// Reasons reported in connector_triage_invalid_input.
const (
	reasonDecisionNotJSON  = "decision_not_json"
	reasonWrongType        = "wrong_type"
	reasonUnknownValue     = "unknown_value"
	reasonMissingAttribute = "missing_attribute"
	reasonBadTimestamps    = "bad_timestamps"
)

// verdictIncomplete is the verdict of a run the processor decided from a
// partial buffer whose evidence did not settle it.
const verdictIncomplete = "incomplete"

// isLate reports whether the processor annotated span from its decision
// cache after the trace was decided (triage.late): the run it carries was
// carried first by the stand-ins of its missing root.
func isLate(span ptrace.Span, r reporter) bool {
	v, ok := span.Attributes().Get(attrLate)
	if !ok {
		return false
	}
	if v.Type() != pcommon.ValueTypeBool {
		r.add(reasonWrongType, attrLate)
		return v.AsString() == "true"
	}
	return v.Bool()
}

// valueOther replaces an enumerated value outside its list, and free-form
// values in an overflow series.
const valueOther = "other"

var (
	verdictValues     = setOf(string(classifier.OutcomeOK), string(classifier.OutcomeRecovered), string(classifier.OutcomeFailed), verdictIncomplete)
	failureTypeValues = func() map[string]bool {
		m := make(map[string]bool, len(classifier.FailureTypes))
		for _, ft := range classifier.FailureTypes {
			m[string(ft)] = true
		}
		return m
	}()
	actionValues = func() map[string]bool {
		m := make(map[string]bool, len(recovery.ActionKinds))
		for _, k := range recovery.ActionKinds {
			m[string(k)] = true
		}
		return m
	}()
)

func setOf(vs ...string) map[string]bool {
	m := make(map[string]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}

type issue struct{ reason, attribute string }

// reporter collects the input problems of one batch, recorded once at the
// end of the batch.
type reporter map[issue]int64

func (r reporter) add(reason, attr string) { r[issue{reason, attr}]++ }

func (r reporter) record(ctx context.Context, tb *metadata.TelemetryBuilder) {
	for is, n := range r {
		tb.ConnectorTriageInvalidInput.Add(ctx, n, metric.WithAttributes(
			attribute.String("reason", is.reason), attribute.String("attribute", is.attribute)))
	}
}

// str reads a string attribute. A value of another type is counted as
// wrong_type and used through its string form.
func (r reporter) str(attrs pcommon.Map, key string) (string, bool) {
	v, ok := attrs.Get(key)
	if !ok {
		return "", false
	}
	if v.Type() != pcommon.ValueTypeStr {
		r.add(reasonWrongType, key)
		return v.AsString(), true
	}
	return v.Str(), true
}

// enum normalises an enumerated value: anything outside allowed becomes
// "other" and is counted.
func (r reporter) enum(value, key string, allowed map[string]bool) string {
	if allowed[value] {
		return value
	}
	r.add(reasonUnknownValue, key)
	return valueOther
}

// runRoot is what the connector reads from a span the processor marked as a
// run's root (or as a stand-in for a root that never arrived).
type runRoot struct {
	verdict     string // normalised
	failureType string // normalised; "" unless the run failed
	service     string
	agent       string
	tool        string
	rootMissing bool
	// durationOK says whether the span's timestamps give a duration.
	durationOK bool
	duration   float64 // seconds
	decision   *decisionRef
}

// decisionRef is a recovery decision stamped on a run's root.
type decisionRef struct {
	doc         string // the document exactly as stamped
	id          string
	failureType string // raw (as stamped, or from the document)
	actionKind  string // raw
	agent       string
	sessionID   string
}

// decisionFields are the few document fields the connector falls back on
// when the span lacks the matching attribute. They are typed any so that a
// field of an unexpected type does not reject the document.
type decisionFields struct {
	DecisionID  any `json:"decision_id"`
	FailureType any `json:"failure_type"`
	Agent       any `json:"agent"`
	SessionID   any `json:"session_id"`
	Action      any `json:"action"`
}

// readDecision returns the decision stamped on span, or nil when there is
// none or it is unusable (counted).
func readDecision(span ptrace.Span, r reporter) *decisionRef {
	attrs := span.Attributes()
	v, ok := attrs.Get(attrDecision)
	if !ok {
		return nil
	}
	if v.Type() != pcommon.ValueTypeStr {
		r.add(reasonWrongType, attrDecision)
		return nil
	}
	doc := v.Str()
	trimmed := bytes.TrimSpace([]byte(doc))
	var fields decisionFields
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &fields) != nil {
		r.add(reasonDecisionNotJSON, attrDecision)
		return nil
	}
	d := &decisionRef{doc: doc}
	d.id = firstNonEmpty(r, attrs, attrDecisionID, fields.DecisionID)
	if d.id == "" {
		r.add(reasonMissingAttribute, attrDecisionID)
	}
	d.failureType = firstNonEmpty(r, attrs, attrFailureType, fields.FailureType)
	var kind any
	if action, ok := fields.Action.(map[string]any); ok {
		kind = action["kind"]
	}
	d.actionKind = firstNonEmpty(r, attrs, attrActionKind, kind)
	d.agent = firstNonEmpty(r, attrs, attrAgent, fields.Agent)
	d.sessionID = firstNonEmpty(r, attrs, attrSessionID, fields.SessionID)
	return d
}

// firstNonEmpty returns the span attribute key, else the document field.
func firstNonEmpty(r reporter, attrs pcommon.Map, key string, field any) string {
	if s, ok := r.str(attrs, key); ok && s != "" {
		return s
	}
	switch f := field.(type) {
	case string:
		return f
	case nil:
		return ""
	default:
		b, err := json.Marshal(f)
		if err != nil {
			return ""
		}
		return string(b)
	}
}

// readRunRoot returns the run read from span, ok false when span is not a
// run root (no triage.verdict).
func readRunRoot(span ptrace.Span, resource pcommon.Resource, r reporter) (runRoot, bool) {
	attrs := span.Attributes()
	verdict, ok := r.str(attrs, attrVerdict)
	if !ok {
		return runRoot{}, false
	}
	run := runRoot{verdict: r.enum(verdict, attrVerdict, verdictValues)}
	if run.verdict == string(classifier.OutcomeFailed) {
		if ft, ok := r.str(attrs, attrFailureType); ok {
			run.failureType = r.enum(ft, attrFailureType, failureTypeValues)
		} else {
			r.add(reasonMissingAttribute, attrFailureType)
			run.failureType = valueOther
		}
	}
	if v, ok := resource.Attributes().Get(attrServiceName); ok {
		run.service = v.AsString()
	}
	if agent, ok := r.str(attrs, attrAgent); ok {
		run.agent = agent
	} else if agent, ok := r.str(attrs, attrGenAIAgentName); ok {
		run.agent = agent
	}
	run.tool, _ = r.str(attrs, attrTool)
	if v, ok := attrs.Get(attrRootMissing); ok {
		if v.Type() == pcommon.ValueTypeBool {
			run.rootMissing = v.Bool()
		} else {
			r.add(reasonWrongType, attrRootMissing)
			run.rootMissing = v.AsString() == "true"
		}
	}
	start, end := span.StartTimestamp(), span.EndTimestamp()
	if start != 0 && end >= start {
		run.durationOK = true
		run.duration = float64(end-start) / 1e9
	} else if !run.rootMissing {
		r.add(reasonBadTimestamps, attrTimestamps)
	}
	run.decision = readDecision(span, r)
	return run, true
}

// readRecovered returns the triage.recovered value of an incident span as
// "true"/"false" (or "other"), ok false when span is not an incident.
func readRecovered(span ptrace.Span, r reporter) (string, bool) {
	v, ok := span.Attributes().Get(attrRecovered)
	if !ok {
		return "", false
	}
	switch {
	case v.Type() == pcommon.ValueTypeBool:
		if v.Bool() {
			return "true", true
		}
		return "false", true
	default:
		r.add(reasonWrongType, attrRecovered)
		if s := strings.ToLower(v.AsString()); s == "true" || s == "false" {
			return s, true
		}
		return valueOther, true
	}
}

// truncate makes s valid UTF-8 and cuts it to at most n bytes on a rune
// boundary, so that an agent or tool name cannot blow up label sizes.
func truncate(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
