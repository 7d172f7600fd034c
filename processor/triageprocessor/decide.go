package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/trajectory"
	"github.com/triage-otel/triage/wire"
)

// Attribute names written on forwarded spans (defined in package wire).
const (
	attrVerdict        = wire.AttrVerdict
	attrFailureType    = wire.AttrFailureType
	attrSignal         = wire.AttrSignal
	attrRule           = wire.AttrRule
	attrConfidence     = wire.AttrConfidence
	attrEvidenceSpanID = wire.AttrEvidenceSpanID
	attrReason         = wire.AttrReason
	attrRecovered      = wire.AttrRecovered
	attrRuleError      = wire.AttrRuleError
	attrRootMissing    = wire.AttrRootMissing
)

// sharedKeys are written both on run roots and on incident spans.
var sharedKeys = []string{attrFailureType, attrSignal, attrRule, attrReason}

// annotation is one attribute to set on a span.
type annotation struct {
	key  string
	kind pcommon.ValueType
	str  string
	num  float64
	i    int64
	flag bool
}

func strAnn(k, v string) annotation { return annotation{key: k, kind: pcommon.ValueTypeStr, str: v} }
func numAnn(k string, v float64) annotation {
	return annotation{key: k, kind: pcommon.ValueTypeDouble, num: v}
}
func intAnn(k string, v int64) annotation {
	return annotation{key: k, kind: pcommon.ValueTypeInt, i: v}
}
func boolAnn(k string, v bool) annotation {
	return annotation{key: k, kind: pcommon.ValueTypeBool, flag: v}
}

func (a annotation) apply(m pcommon.Map) {
	switch a.kind {
	case pcommon.ValueTypeDouble:
		m.PutDouble(a.key, a.num)
	case pcommon.ValueTypeInt:
		m.PutInt(a.key, a.i)
	case pcommon.ValueTypeBool:
		m.PutBool(a.key, a.flag)
	default:
		m.PutStr(a.key, a.str)
	}
}

// traceAnnotations are the annotations of the spans a trace held when it
// was decided.
type traceAnnotations struct {
	// incident and root annotations by span ID; root annotations are
	// applied after incident ones so a span that is both shows its run's
	// verdict.
	incident map[pcommon.SpanID][]annotation
	root     map[pcommon.SpanID][]annotation
}

// annotate sets the trace's attributes on span.
func (t *traceAnnotations) annotate(span ptrace.Span) {
	id := span.SpanID()
	inc, hasInc := t.incident[id]
	root, hasRoot := t.root[id]
	if !hasInc && !hasRoot {
		return
	}
	attrs := span.Attributes()
	for _, a := range inc {
		a.apply(attrs)
	}
	if len(inc) > 0 && len(root) > 0 {
		// The span is a run root and an incident: the keys they share
		// describe the run, none may be left over from the incident.
		for _, k := range sharedKeys {
			attrs.Remove(k)
		}
	}
	for _, a := range root {
		a.apply(attrs)
	}
}

// decide classifies the runs of a trace that left the buffer, annotates its
// spans in place and returns what the decision cache keeps of it. A
// failure inside the library never stops the spans from being forwarded:
// the trace then goes on unannotated.
func (p *triageProcessor) decide(ctx context.Context, h *heldTrace) (d *decided) {
	start := time.Now()
	d = &decided{cutBy: h.cutBy}
	defer func() {
		if r := recover(); r != nil {
			p.logger.Error("triage decision panicked; forwarding the trace unannotated",
				zap.String("trace_id", h.id.String()), p.out.panicValue(r), zap.ByteString("stack", debug.Stack()))
			d = &decided{cutBy: h.cutBy}
		}
		p.tb.ProcessorTriageDecisionLatency.Record(ctx, float64(time.Since(start))/float64(time.Millisecond))
		p.tb.ProcessorTriageTraceHoldDuration.Record(ctx, p.now().Sub(h.firstSeen).Seconds())
		p.tb.ProcessorTriageTracesDecided.Add(ctx, 1, metric.WithAttributes(attribute.String("trigger", h.trigger)))
	}()

	runs := trajectory.Build(h.td)
	ruleIncidents, ruleErr := p.evalRules(ctx, h.td)
	ruleErrText := ""
	if ruleErr != nil {
		ruleErrText = p.out.text(ruleErr.Error()) // OTTL errors can quote span data
	}

	t := traceAnnotations{
		incident: make(map[pcommon.SpanID][]annotation),
		root:     make(map[pcommon.SpanID][]annotation),
	}
	var lateRootOutcome string
	var parents map[pcommon.SpanID]pcommon.SpanID
	spans := &spanIndex{td: h.td}
	for i := range runs {
		run := &runs[i]
		extra := incidentsOfRun(run, ruleIncidents)
		v := p.classifiers.forService(run.Service).Classify(run, extra...)

		var rootAnns []annotation
		outcome := string(v.Outcome)
		if reason := incompleteReason(h, run, &v); reason != "" {
			// Partial evidence that does not settle the run: no verdict,
			// no incidents (whether they were recovered is unknown), no
			// decision.
			outcome = verdictIncomplete
			rootAnns = p.incompleteAnnotations(run, reason)
		} else {
			for _, inc := range v.Incidents {
				if inc.SpanID.IsEmpty() {
					continue
				}
				t.incident[inc.SpanID] = append(t.incident[inc.SpanID], incidentAnnotations(inc)...)
			}
			rootAnns = rootAnnotations(v, ruleErrText)
			// Asked once per run here; a root annotated later from the
			// decision cache gets these same annotations, so the decision
			// (and its attempt in the session) is never taken twice.
			rootAnns = append(rootAnns, p.runAnnotations(ctx, h.id, run, &v, spans)...)
		}
		rootAnns = append(rootAnns, p.contentAnnotations(ctx, run)...)
		failureType := ""
		if outcome == string(classifier.OutcomeFailed) {
			failureType = string(v.FailureType)
		}
		p.tb.ProcessorTriageDecisions.Add(ctx, 1, metric.WithAttributes(
			attribute.String("verdict", outcome), attribute.String("failure_type", failureType)))
		if run.RootFound {
			t.root[run.RootSpanID] = rootAnns
			continue
		}
		// The root never arrived: the run's top spans stand in for it so
		// the verdict is visible, and the root still gets it by span ID
		// if it arrives late.
		if !run.RootSpanID.IsEmpty() {
			d.roots = append(d.roots, missingRoot{id: run.RootSpanID, anns: rootAnns})
		}
		if parents == nil {
			parents = parentsOf(h.td)
		}
		standIn := append(rootAnns[:len(rootAnns):len(rootAnns)], boolAnn(attrRootMissing, true))
		for _, id := range run.SpanIDs {
			if _, parentHere := parents[parents[id]]; !parentHere {
				t.root[id] = standIn
			}
		}
		if lateRootOutcome == "" || worse(outcome, lateRootOutcome) {
			lateRootOutcome = outcome
			d.lateRoot = rootAnns
		}
	}
	trajectory.ForEachSpan(h.td, t.annotate)
	return d
}

// parentsOf maps each span ID of td to its parent span ID.
func parentsOf(td ptrace.Traces) map[pcommon.SpanID]pcommon.SpanID {
	out := make(map[pcommon.SpanID]pcommon.SpanID, td.SpanCount())
	trajectory.ForEachSpan(td, func(span ptrace.Span) {
		out[span.SpanID()] = span.ParentSpanID()
	})
	return out
}

// worse orders run verdicts failed > incomplete > recovered > ok: the
// verdict a parentless late span gets when several runs lacked their root.
func worse(a, b string) bool {
	rank := func(o string) int {
		switch o {
		case string(classifier.OutcomeFailed):
			return 3
		case verdictIncomplete:
			return 2
		case string(classifier.OutcomeRecovered):
			return 1
		}
		return 0
	}
	return rank(a) > rank(b)
}

// rootAnnotations are the verdict annotations of a run root; ruleErr is the
// redacted text of the rule error that stopped OTTL rules, if any.
func rootAnnotations(v classifier.Verdict, ruleErr string) []annotation {
	anns := []annotation{strAnn(attrVerdict, string(v.Outcome))}
	if v.FailureType != "" {
		anns = append(anns, strAnn(attrFailureType, string(v.FailureType)))
	}
	if v.Signal != classifier.SignalNone {
		anns = append(anns, strAnn(attrSignal, string(v.Signal)))
	}
	if v.Rule != "" {
		anns = append(anns, strAnn(attrRule, v.Rule))
	}
	if v.Outcome != classifier.OutcomeOK || v.Confidence > 0 {
		anns = append(anns, numAnn(attrConfidence, v.Confidence))
	}
	if !v.EvidenceSpanID.IsEmpty() {
		anns = append(anns, strAnn(attrEvidenceSpanID, v.EvidenceSpanID.String()))
	}
	if v.Reason != "" {
		anns = append(anns, strAnn(attrReason, v.Reason))
	}
	if ruleErr != "" {
		anns = append(anns, strAnn(attrRuleError, ruleErr))
	}
	return anns
}

func incidentAnnotations(inc classifier.Incident) []annotation {
	anns := []annotation{
		strAnn(attrFailureType, string(inc.FailureType)),
		strAnn(attrSignal, string(inc.Signal)),
		boolAnn(attrRecovered, inc.Recovered),
	}
	if inc.Rule != "" {
		anns = append(anns, strAnn(attrRule, inc.Rule))
	}
	if inc.Reason != "" {
		anns = append(anns, strAnn(attrReason, inc.Reason))
	}
	return anns
}

// incidentsOfRun returns the rule incidents on the run's spans, with their
// step index and tool filled in from the run.
func incidentsOfRun(run *trajectory.Run, bySpan map[pcommon.SpanID][]classifier.Incident) []classifier.Incident {
	if len(bySpan) == 0 {
		return nil
	}
	var out []classifier.Incident
	for _, id := range run.SpanIDs {
		incs, ok := bySpan[id]
		if !ok {
			continue
		}
		step := -1
		tool := ""
		for i := range run.Steps {
			if run.Steps[i].SpanID == id {
				step, tool = i, run.Steps[i].ToolName
				break
			}
		}
		for _, inc := range incs {
			inc.StepIndex, inc.Tool = step, tool
			out = append(out, inc)
		}
	}
	return out
}

// classifierSet holds one classifier per service with per-service
// constraints, and one for every other service.
type classifierSet struct {
	global     *classifier.Classifier
	perService map[string]*classifier.Classifier
}

func newClassifierSet(cfg *Config) (classifierSet, error) {
	global, err := classifier.New(cfg.classifierOptions(cfg.Constraints.Global))
	if err != nil {
		return classifierSet{}, fmt.Errorf("classifier: %w", err)
	}
	set := classifierSet{global: global, perService: make(map[string]*classifier.Classifier, len(cfg.Constraints.PerService))}
	for svc, list := range cfg.Constraints.PerService {
		constraints := append(append([]string(nil), cfg.Constraints.Global...), list...)
		c, err := classifier.New(cfg.classifierOptions(constraints))
		if err != nil {
			return classifierSet{}, fmt.Errorf("constraints.per_service[%s]: %w", svc, err)
		}
		set.perService[svc] = c
	}
	return set, nil
}

func (s classifierSet) forService(svc string) *classifier.Classifier {
	if c, ok := s.perService[svc]; ok {
		return c
	}
	return s.global
}
