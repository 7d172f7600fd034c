package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.uber.org/zap"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/guard"
)

// Config is the configuration of the triage processor.
type Config struct {
	// DecisionWait is how long a trace whose root span has not arrived is
	// held after its last span before it is decided anyway.
	DecisionWait time.Duration `mapstructure:"decision_wait"`
	// RootWait, when > 0, keeps a trace that much longer after its root
	// span arrived, for spans exported later by other services (an MCP
	// server, a remote tool) to join the classification. 0 decides at once.
	RootWait time.Duration `mapstructure:"root_wait"`
	// NumTraces is the maximum number of traces held at once; when a new
	// trace would exceed it the least recently active trace is decided and
	// forwarded early (counted as evicted).
	NumTraces int `mapstructure:"num_traces"`
	// MaxSpansPerTrace caps the spans held for one trace. Reaching it
	// decides the trace at once; spans beyond it are counted as cut and
	// forwarded, annotated from the decision.
	MaxSpansPerTrace int `mapstructure:"max_spans_per_trace"`
	// MaxTraceBytes caps the bytes held for one trace, with the same effect
	// as MaxSpansPerTrace: the protobuf size of its spans plus the in-flight
	// guards' estimate of their state for them (guard.Read.Bytes,
	// Guards.RunBytes; chargeGuardState).
	MaxTraceBytes int `mapstructure:"max_trace_bytes"`
	// MaxBytes caps the bytes held for all traces (counted as for
	// MaxTraceBytes); exceeding it evicts the least recently active traces.
	// 0 disables the global cap.
	MaxBytes int `mapstructure:"max_bytes"`
	// DecisionCacheSize is the number of decided traces remembered so that
	// spans arriving after the decision are annotated consistently.
	DecisionCacheSize int `mapstructure:"decision_cache_size"`
	// DecisionCacheBytes bounds the memory of the decision cache as well:
	// entries are evicted, oldest first, while their accounted size exceeds
	// it. An entry keeps only what a late span can need (about 200 bytes,
	// more when the trace was decided without a run's root: that root's
	// annotations, decision included).
	DecisionCacheBytes int `mapstructure:"decision_cache_bytes"`

	// SettleWait, when > 0, decides a trace whose root has not arrived as
	// soon as its runs show they are over and no span of it arrived for
	// this long (early.go); decision_wait stays the backstop. 0 waits for
	// decision_wait.
	SettleWait time.Duration `mapstructure:"settle_wait"`
	// LogsWait bounds how long a trace whose root arrived waits for the
	// GenAI log events (message content) of its LLM spans when the
	// processor is also in a logs pipeline (see logs.go). 0 never waits.
	LogsWait time.Duration `mapstructure:"logs_wait"`
	// MaxLogRecordsPerTrace caps the GenAI log records held for one trace;
	// later ones are not joined (counted) but still forwarded.
	MaxLogRecordsPerTrace int `mapstructure:"max_log_records_per_trace"`
	// MaxLogBytes caps the protobuf size of all GenAI log records held
	// (with their trace, or waiting for its first span).
	MaxLogBytes int `mapstructure:"max_log_bytes"`

	// EvaluationEvents adds the GenAI conventions' gen_ai.evaluation.result
	// span event to each decided run's root span and to each incident span
	// (evaluation.go), beside the triage.* attributes.
	EvaluationEvents bool `mapstructure:"evaluation_events"`

	// ErrorMode says what an error evaluating a rule condition does:
	// ignore (log, count, go on), silent (count, go on) or propagate (log
	// at error level, count, stop evaluating rules for that trace and mark
	// its run roots with triage.rule_error).
	ErrorMode ottl.ErrorMode `mapstructure:"error_mode"`
	// Rules are custom OTTL rules: a span matching any condition of a rule
	// is an incident of the rule's failure type.
	Rules []RuleConfig `mapstructure:"rules"`
	// Constraints are forbidden strings checked in the runs' LLM output.
	Constraints ConstraintsConfig `mapstructure:"constraints"`
	// Loop tunes the classifier's loop detection; zero values keep the
	// classifier's defaults.
	Loop LoopConfig `mapstructure:"loop"`
	// Recovery configures the recovery decision stamped on failed runs.
	Recovery RecoveryConfig `mapstructure:"recovery"`
	// Evidence says what is written about the evidence of a decision
	// (content.go).
	Evidence EvidenceConfig `mapstructure:"evidence"`
	// LLM configures the optional model asked about runs left unknown.
	LLM LLMConfig `mapstructure:"llm"`
	// Guards configures the in-flight guards: checks on the spans of a
	// run that arrive before its root, which trip an in-flight decision
	// (see the guard package). They need recovery.enabled.
	Guards guard.Config `mapstructure:"guards"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// RuleConfig is one custom OTTL rule.
type RuleConfig struct {
	// Name identifies the rule; a match is reported with signal ottl and
	// triage.rule = Name.
	Name string `mapstructure:"name"`
	// FailureType is the failure type of a matching span (a classifier
	// failure type such as external_fault).
	FailureType string `mapstructure:"failure_type"`
	// Conditions are OTTL span conditions (ottlspan context, paths with
	// context names such as span.attributes["x"]). They are ORed: the rule
	// matches a span when any condition is true.
	Conditions []string `mapstructure:"conditions"`
}

// ConstraintsConfig holds forbidden strings, for every service and per
// service (by service.name). A service's constraints are added to the
// global ones.
type ConstraintsConfig struct {
	Global     []string            `mapstructure:"global"`
	PerService map[string][]string `mapstructure:"per_service"`
}

// LoopConfig tunes loop detection (see classifier.Options).
type LoopConfig struct {
	Threshold  int     `mapstructure:"threshold"`
	Window     int     `mapstructure:"window"`
	Similarity float64 `mapstructure:"similarity"`
}

var _ confmap.Validator = (*Config)(nil)

// Validate checks the configuration; each error names the offending field.
func (c *Config) Validate() error {
	errs := c.validateLimits()
	switch c.ErrorMode {
	case ottl.IgnoreError, ottl.PropagateError, ottl.SilentError:
	default:
		errs = append(errs, fmt.Errorf("error_mode must be one of ignore, propagate, silent, got %q", c.ErrorMode))
	}
	if c.Loop.Threshold < 0 {
		errs = append(errs, fmt.Errorf("loop.threshold must not be negative, got %d", c.Loop.Threshold))
	}
	if c.Loop.Window < 0 {
		errs = append(errs, fmt.Errorf("loop.window must not be negative, got %d", c.Loop.Window))
	}
	if c.Loop.Similarity < 0 || c.Loop.Similarity > 1 {
		errs = append(errs, fmt.Errorf("loop.similarity must be within 0..1, got %v", c.Loop.Similarity))
	}
	errs = append(errs, c.Constraints.validate()...)
	if _, err := classifier.New(c.classifierOptions(c.Constraints.Global)); err != nil {
		errs = append(errs, fmt.Errorf("loop: %w", err))
	}
	errs = append(errs, c.validateRules()...)
	errs = append(errs, c.Recovery.validate()...)
	errs = append(errs, c.LLM.validate(&c.Recovery)...)
	for _, err := range leafErrors(c.Guards.Validate()) {
		errs = append(errs, fmt.Errorf("guards.%w", err))
	}
	return errors.Join(errs...)
}

// validateLimits checks the buffer's waits, bounds and caches.
func (c *Config) validateLimits() []error {
	var errs []error
	if c.DecisionWait <= 0 {
		errs = append(errs, fmt.Errorf("decision_wait must be greater than 0, got %v", c.DecisionWait))
	}
	if c.RootWait < 0 {
		errs = append(errs, fmt.Errorf("root_wait must not be negative, got %v", c.RootWait))
	}
	if c.NumTraces <= 0 {
		errs = append(errs, fmt.Errorf("num_traces must be greater than 0, got %d", c.NumTraces))
	}
	if c.MaxSpansPerTrace <= 0 {
		errs = append(errs, fmt.Errorf("max_spans_per_trace must be greater than 0, got %d", c.MaxSpansPerTrace))
	}
	if c.MaxTraceBytes <= 0 {
		errs = append(errs, fmt.Errorf("max_trace_bytes must be greater than 0, got %d", c.MaxTraceBytes))
	}
	if c.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("max_bytes must not be negative, got %d", c.MaxBytes))
	}
	if c.MaxBytes > 0 && c.MaxTraceBytes > c.MaxBytes {
		errs = append(errs, fmt.Errorf("max_trace_bytes (%d) must not exceed max_bytes (%d)", c.MaxTraceBytes, c.MaxBytes))
	}
	if c.DecisionCacheSize <= 0 {
		errs = append(errs, fmt.Errorf("decision_cache_size must be greater than 0, got %d", c.DecisionCacheSize))
	}
	if c.DecisionCacheBytes <= 0 {
		errs = append(errs, fmt.Errorf("decision_cache_bytes must be greater than 0, got %d", c.DecisionCacheBytes))
	}
	if c.SettleWait < 0 {
		errs = append(errs, fmt.Errorf("settle_wait must not be negative, got %v", c.SettleWait))
	}
	if c.LogsWait < 0 {
		errs = append(errs, fmt.Errorf("logs_wait must not be negative, got %v", c.LogsWait))
	}
	if c.MaxLogRecordsPerTrace <= 0 {
		errs = append(errs, fmt.Errorf("max_log_records_per_trace must be greater than 0, got %d", c.MaxLogRecordsPerTrace))
	}
	if c.MaxLogBytes <= 0 {
		errs = append(errs, fmt.Errorf("max_log_bytes must be greater than 0, got %d", c.MaxLogBytes))
	}
	return errs
}

func (cc *ConstraintsConfig) validate() []error {
	var errs []error
	for i, s := range cc.Global {
		if strings.TrimSpace(s) == "" {
			errs = append(errs, fmt.Errorf("constraints.global[%d] must not be empty", i))
		}
	}
	for svc, list := range cc.PerService {
		if svc == "" {
			errs = append(errs, errors.New("constraints.per_service: service name must not be empty"))
		}
		for i, s := range list {
			if strings.TrimSpace(s) == "" {
				errs = append(errs, fmt.Errorf("constraints.per_service[%s][%d] must not be empty", svc, i))
			}
		}
	}
	return errs
}

func (c *Config) validateRules() []error {
	var errs []error
	seen := make(map[string]int, len(c.Rules))
	// Conditions are parsed here too so that `validate` reports OTTL
	// syntax errors before the collector starts.
	parser, perr := newRuleParser(component.TelemetrySettings{Logger: zap.NewNop()})
	if perr != nil {
		return []error{fmt.Errorf("rules: %w", perr)}
	}
	for i, r := range c.Rules {
		field := fmt.Sprintf("rules[%d] (%q)", i, r.Name)
		if strings.TrimSpace(r.Name) == "" {
			errs = append(errs, fmt.Errorf("rules[%d].name must not be empty", i))
		} else if j, dup := seen[r.Name]; dup {
			errs = append(errs, fmt.Errorf("%s.name duplicates rules[%d]", field, j))
		} else {
			seen[r.Name] = i
		}
		if _, ok := classifier.ParseFailureType(r.FailureType); !ok {
			errs = append(errs, fmt.Errorf("%s.failure_type %q is not a known failure type (%s)", field, r.FailureType, knownFailureTypes()))
		}
		if len(r.Conditions) == 0 {
			errs = append(errs, fmt.Errorf("%s.conditions must not be empty", field))
		}
		for j, cond := range r.Conditions {
			if _, err := parser.ParseCondition(cond); err != nil {
				errs = append(errs, fmt.Errorf("%s.conditions[%d]: %w", field, j, err))
			}
		}
	}
	return errs
}

func knownFailureTypes() string {
	names := make([]string, len(classifier.FailureTypes))
	for i, t := range classifier.FailureTypes {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

// classifierOptions returns the classifier options for a set of
// constraints.
func (c *Config) classifierOptions(constraints []string) classifier.Options {
	return classifier.Options{
		Constraints:    constraints,
		LoopThreshold:  c.Loop.Threshold,
		LoopWindow:     c.Loop.Window,
		LoopSimilarity: c.Loop.Similarity,
	}
}
