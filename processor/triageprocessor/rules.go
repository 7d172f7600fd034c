package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"context"
	"fmt"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl/contexts/ottlspan"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl/ottlfuncs"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/trajectory"
)

// newRuleParser returns the OTTL parser for rule conditions: the span
// context with context names required in paths (span.attributes["x"],
// resource.attributes["service.name"]) and the standard converters.
func newRuleParser(set component.TelemetrySettings) (ottl.Parser[*ottlspan.TransformContext], error) {
	return ottlspan.NewParser(ottlfuncs.StandardConverters[*ottlspan.TransformContext](), set, ottlspan.EnablePathContextNames())
}

// compiledRule is a parsed custom rule.
type compiledRule struct {
	name        string
	failureType classifier.FailureType
	conditions  []*ottl.Condition[*ottlspan.TransformContext]
}

func compileRules(cfg *Config, set component.TelemetrySettings) ([]compiledRule, error) {
	if len(cfg.Rules) == 0 {
		return nil, nil
	}
	parser, err := newRuleParser(set)
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	rules := make([]compiledRule, 0, len(cfg.Rules))
	for i, r := range cfg.Rules {
		ft, ok := classifier.ParseFailureType(r.FailureType)
		if !ok {
			return nil, fmt.Errorf("rules[%d] (%q).failure_type %q is not a known failure type", i, r.Name, r.FailureType)
		}
		conds, err := parser.ParseConditions(r.Conditions)
		if err != nil {
			return nil, fmt.Errorf("rules[%d] (%q).conditions: %w", i, r.Name, err)
		}
		rules = append(rules, compiledRule{name: r.Name, failureType: ft, conditions: conds})
	}
	return rules, nil
}

// evalRules evaluates the rules on every span of the trace Build indexed
// and returns the incidents by span ID. Errors are counted per rule and
// handled by error_mode; with propagate the first error stops rule
// evaluation for the trace and is returned so the run roots can carry it.
func (p *triageProcessor) evalRules(ctx context.Context, idx *trajectory.SpanIndex) (map[pcommon.SpanID][]classifier.Incident, error) {
	if len(p.rules) == 0 {
		return nil, nil
	}
	var out map[pcommon.SpanID][]classifier.Incident
	for _, e := range idx.Spans() {
		span := e.Span
		tctx := ottlspan.NewTransformContext(e.Resource, e.Scope, span)
		for _, r := range p.rules {
			matched, err := p.evalRule(ctx, r, tctx)
			if err != nil {
				tctx.Close()
				return out, err
			}
			if !matched {
				continue
			}
			if out == nil {
				out = make(map[pcommon.SpanID][]classifier.Incident)
			}
			out[span.SpanID()] = append(out[span.SpanID()], classifier.Incident{
				SpanID:      span.SpanID(),
				StepIndex:   -1,
				FailureType: r.failureType,
				Signal:      classifier.SignalOTTL,
				Rule:        r.name,
				// The user wrote the rule for exactly this evidence.
				Confidence: 1,
			})
		}
		tctx.Close()
	}
	return out, nil
}

// evalRule reports whether any condition of r matches. Only a propagated
// error is returned.
func (p *triageProcessor) evalRule(ctx context.Context, r compiledRule, tctx *ottlspan.TransformContext) (bool, error) {
	for _, c := range r.conditions {
		match, err := c.Eval(ctx, tctx)
		if err == nil {
			if match {
				return true, nil
			}
			continue
		}
		p.tb.ProcessorTriageRuleErrors.Add(ctx, 1, adds1("rule", r.name)...)
		switch p.cfg.ErrorMode {
		case ottl.PropagateError:
			err = fmt.Errorf("rule %q: condition %q: %w", r.name, c.String(), err)
			p.logger.Error("OTTL rule failed; rules skipped for this trace", p.out.err(err))
			return false, err
		case ottl.IgnoreError:
			p.logger.Warn("OTTL rule condition failed", zap.String("rule", r.name), zap.String("condition", c.String()), p.out.err(err))
		}
	}
	return false, nil
}
