package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"strconv"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/xpdata"

	"github.com/triage-otel/triage/classifier"
)

// The GenAI conventions' evaluation event (Development stability), written
// beside the triage.* attributes so that GenAI-aware backends show the
// verdict without knowing them: a gen_ai.evaluation.result span event on
// each decided run's root span (or the spans standing in for a missing
// root) and on each incident span. The conventions define it with
// gen_ai.evaluation.name (required), gen_ai.evaluation.score.value and
// .score.label (conditionally required: when applicable) and
// gen_ai.evaluation.explanation (recommended), and ask that it be parented
// to the span evaluated, which a span event is.
const (
	eventEvaluationResult = "gen_ai.evaluation.result"

	attrEvaluationName        = "gen_ai.evaluation.name"
	attrEvaluationScoreLabel  = "gen_ai.evaluation.score.label"
	attrEvaluationScoreValue  = "gen_ai.evaluation.score.value"
	attrEvaluationExplanation = "gen_ai.evaluation.explanation"

	// evaluationName names this evaluator.
	evaluationName = "triage"
)

// evaluation is one gen_ai.evaluation.result event to add to a span.
type evaluation struct {
	label       string  // ok, recovered, or the failure type
	score       float64 // the confidence
	hasScore    bool
	explanation string
}

// evaluationBytes is what the decision cache accounts for an evaluation
// kept for a late root, besides its strings' bytes.
const evaluationBytes = int(unsafe.Sizeof(evaluation{})) + 2*stringBytes

// runEvaluation is the event of a run: label = verdict for ok and recovered
// runs, the failure type for failed ones; score = the confidence (none for
// an ok run the classifier gave none); explanation = signal, rule, evidence
// span (and reason).
func runEvaluation(t *traceAnnotations, v *classifier.Verdict) evaluation {
	e := evaluation{label: string(v.Outcome), score: v.Confidence, hasScore: v.Outcome != classifier.OutcomeOK || v.Confidence > 0}
	if v.Outcome == classifier.OutcomeFailed && v.FailureType != "" {
		e.label = string(v.FailureType)
	}
	n := len(v.Incidents)
	b := t.newText(runExplanationLen(v))
	b = append(b, "verdict "...)
	b = append(b, v.Outcome...)
	if v.Outcome == classifier.OutcomeFailed {
		b = append(b, " ("...)
		b = append(b, v.FailureType...)
		b = append(b, ")"...)
	}
	if v.Outcome == classifier.OutcomeOK && n == 0 {
		b = append(b, ": no incident"...)
	}
	b = explain(b, string(v.Signal), v.Rule, v.EvidenceSpanID, v.Reason)
	if n > 0 {
		b = append(b, "; incidents "...)
		b = strconv.AppendInt(b, int64(n), 10)
	}
	e.explanation = textString(b)
	return e
}

// runExplanationLen is the length of a run evaluation's explanation.
func runExplanationLen(v *classifier.Verdict) int {
	n := len(v.Incidents)
	size := len("verdict ") + len(v.Outcome) + explainLen(string(v.Signal), v.Rule, v.EvidenceSpanID, v.Reason)
	if v.Outcome == classifier.OutcomeFailed {
		size += len(" ()") + len(v.FailureType)
	}
	if v.Outcome == classifier.OutcomeOK && n == 0 {
		size += len(": no incident")
	}
	if n > 0 {
		size += len("; incidents ") + decimalLen(n)
	}
	return size
}

// incidentExplanationLen is the length of an incident evaluation's
// explanation.
func incidentExplanationLen(inc *classifier.Incident) int {
	size := len("incident ") + len(inc.FailureType) + explainLen(string(inc.Signal), inc.Rule, inc.SpanID, inc.Reason)
	if inc.Recovered {
		return size + len(", recovered")
	}
	return size + len(", not recovered")
}

// incidentEvaluation is the event of an incident span: label = the
// incident's failure type, score = its confidence.
func incidentEvaluation(t *traceAnnotations, inc *classifier.Incident) evaluation {
	b := t.newText(incidentExplanationLen(inc))
	b = append(b, "incident "...)
	b = append(b, inc.FailureType...)
	if inc.Recovered {
		b = append(b, ", recovered"...)
	} else {
		b = append(b, ", not recovered"...)
	}
	b = explain(b, string(inc.Signal), inc.Rule, inc.SpanID, inc.Reason)
	return evaluation{label: string(inc.FailureType), score: inc.Confidence, hasScore: true, explanation: textString(b)}
}

// explainLen is the length of what explain writes: the explanations are
// sized exactly, so each is carved from the trace's text block at its own
// length (and never moves while it is written).
func explainLen(signal, rule string, evidence pcommon.SpanID, reason string) int {
	n := 0
	if signal != "" {
		n += len("; signal ") + len(signal)
	}
	if rule != "" {
		n += len("; rule ") + len(rule)
	}
	if !evidence.IsEmpty() {
		n += len("; evidence span ") + 2*len(evidence)
	}
	if reason != "" {
		n += len("; reason ") + len(reason)
	}
	return n
}

// decimalLen is the number of digits of n >= 0.
func decimalLen(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

func explain(b []byte, signal, rule string, evidence pcommon.SpanID, reason string) []byte {
	if signal != "" {
		b = append(b, "; signal "...)
		b = append(b, signal...)
	}
	if rule != "" {
		b = append(b, "; rule "...)
		b = append(b, rule...)
	}
	if !evidence.IsEmpty() {
		b = append(b, "; evidence span "...)
		for _, c := range evidence {
			b = append(b, hexDigits[c>>4], hexDigits[c&0xF])
		}
	}
	if reason != "" {
		b = append(b, "; reason "...)
		b = append(b, reason...)
	}
	return b
}

const hexDigits = "0123456789abcdef"

// addEvaluations adds the evaluation events among anns to span, stamped at
// the span's end (the evaluation is of what the span did). An event's
// attributes are a new map of distinct keys, so they are laid out with b
// (empty; left empty) instead of Put, which scans the map for each key:
// the same entries in the same order (TestEvaluationEventsMatchPut).
func addEvaluations(b *xpdata.MapBuilder, span ptrace.Span, anns ...[]annotation) {
	n := 0
	for _, list := range anns {
		n += len(list) - attributeCount(list)
	}
	if n == 0 {
		return
	}
	ts := span.EndTimestamp()
	if ts == 0 {
		ts = span.StartTimestamp()
	}
	events := span.Events()
	events.EnsureCapacity(events.Len() + n)
	for _, list := range anns {
		for _, a := range list {
			if a.eval == nil {
				continue
			}
			ev := events.AppendEmpty()
			ev.SetName(eventEvaluationResult)
			ev.SetTimestamp(ts)
			b.EnsureCapacity(4)
			b.AppendEmpty(attrEvaluationName).SetStr(evaluationName)
			b.AppendEmpty(attrEvaluationScoreLabel).SetStr(a.eval.label)
			if a.eval.hasScore {
				b.AppendEmpty(attrEvaluationScoreValue).SetDouble(a.eval.score)
			}
			b.AppendEmpty(attrEvaluationExplanation).SetStr(a.eval.explanation)
			b.UnsafeIntoMap(ev.Attributes())
		}
	}
}
