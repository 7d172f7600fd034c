package triageconnector // import "github.com/triage-otel/triage/connector/triageconnector"

import (
	"context"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/connector/triageconnector/internal/metadata"
	"github.com/triage-otel/triage/guard"
	"github.com/triage-otel/triage/recovery"
	"github.com/triage-otel/triage/wire"
)

// Span attributes written by the triage processor that the connector reads
// (defined in package wire).
const (
	attrVerdict     = wire.AttrVerdict
	attrFailureType = wire.AttrFailureType
	attrRecovered   = wire.AttrRecovered
	attrTool        = wire.AttrTool
	attrAgent       = wire.AttrAgent
	attrService     = wire.AttrService
	attrSessionID   = wire.AttrSessionID
	attrDecision    = wire.AttrDecision
	attrDecisionID  = wire.AttrDecisionID
	attrActionKind  = wire.AttrActionKind
	attrRootMissing = wire.AttrRootMissing
	attrLate        = wire.AttrLate
	// attrPhase = in_flight marks the processor's in-flight decision span
	// (a guard tripped before the run's root arrived); attrGuard names the
	// guard.
	attrPhase = wire.AttrPhase
	attrGuard = wire.AttrGuard

	// attrServiceName is read when the processor did not stamp
	// triage.service (an older processor).
	attrServiceName = "service.name"

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
const verdictIncomplete = wire.VerdictIncomplete

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
	guardValues = func() map[string]bool {
		m := make(map[string]bool, len(guard.Names))
		for _, n := range guard.Names {
			m[string(n)] = true
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
	decision   *wire.Decision
}

// readDecision returns the decision stamped on span, or nil when there is
// none or it is unusable (counted). The routing fields are read from the
// span's attributes (wire.ReadDecision); the document is passed on as it is.
func readDecision(span ptrace.Span, r reporter) *wire.Decision {
	attrs := span.Attributes()
	v, ok := attrs.Get(attrDecision)
	if !ok {
		return nil
	}
	if v.Type() != pcommon.ValueTypeStr {
		r.add(reasonWrongType, attrDecision)
		return nil
	}
	d, ok := wire.ReadDecision(attrs, v.Str(), r.decisionProblem, wire.ReadOptions{})
	if !ok {
		return nil
	}
	return &d
}

// readInFlight returns the in-flight decision a span carries (the
// processor's decision span: triage.phase in_flight and a decision), or
// nil.
func readInFlight(span ptrace.Span, r reporter) *wire.Decision {
	v, ok := span.Attributes().Get(attrPhase)
	if !ok || v.AsString() != wire.PhaseInFlight {
		return nil
	}
	return readDecision(span, r)
}

// decisionProblem counts a problem wire.ReadDecision found.
func (r reporter) decisionProblem(p wire.Problem, key string) {
	switch p {
	case wire.NotObject:
		r.add(reasonDecisionNotJSON, key)
	case wire.WrongType:
		r.add(reasonWrongType, key)
	case wire.Missing:
		r.add(reasonMissingAttribute, key)
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
	// Names are read from the processor's triage.* attributes, which are
	// redacted there (the one redaction point), never from the span's own
	// attributes: an agent name can carry a key.
	if svc, ok := r.str(attrs, attrService); ok {
		run.service = svc
	} else if v, ok := resource.Attributes().Get(attrServiceName); ok {
		run.service = v.AsString()
	}
	run.agent, _ = r.str(attrs, attrAgent)
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
