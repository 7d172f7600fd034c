package recovery

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/recovery/internal/breaker"
	"github.com/triage-otel/triage/recovery/internal/strategy"
)

// Options configure an Engine: plain values, like classifier.Options (the
// collector component owns the YAML, its secrets and its per-kind strategy
// blocks, and converts them to these). Validate reports every mistake with
// the path of the entry as the collector config writes it.
type Options struct {
	// Policy maps a failure type (or "default") to a strategy. Entries
	// replace the same entries of DefaultPolicy; the others keep their
	// defaults unless DisableDefaultPolicy is set.
	Policy               map[string]StrategySpec
	DisableDefaultPolicy bool
	// GuardPolicy maps an in-flight guard (Input.Guard) to the strategy
	// that answers its trips; a guard without an entry is answered by the
	// Policy entry of its failure type. Keys are not checked here: the
	// caller that knows the guards does.
	GuardPolicy map[string]StrategySpec
	History     HistoryOptions

	// NonIdempotentTools are regular expressions matched against the whole
	// failing tool name (a plain name matches itself): such a tool is never
	// retried; the non_idempotent policy entry answers instead.
	NonIdempotentTools []string
	// MaxTotalAttempts caps a session's failures of all types together;
	// past it every failure escalates (policy max_total_attempts). 0: no cap.
	MaxTotalAttempts int
	// MaxRecoveryDuration caps how long a session may keep recovering,
	// from its first failure in the history; past it every failure
	// escalates (policy max_recovery_duration). 0: no cap.
	MaxRecoveryDuration time.Duration
}

// DefaultOptions is the config a collector component starts from: the
// default policy (applied at build time, so user entries replace single
// entries), bounded in-memory history, budgets reset by a successful run.
func DefaultOptions() Options {
	return Options{
		History: HistoryOptions{
			TTL:            time.Hour,
			MaxSessions:    10000,
			MaxBreakers:    1000,
			BreakerTTL:     24 * time.Hour,
			ResetOnSuccess: true,
			Redis: RedisOptions{
				KeyPrefix:       "triage:",
				Timeout:         100 * time.Millisecond,
				RecheckInterval: 5 * time.Second,
			},
		},
	}
}

// HistoryOptions configures the attempt history and breaker state.
type HistoryOptions struct {
	// TTL: a session's history is forgotten this long after its last failure.
	TTL time.Duration
	// MaxSessions bounds the sessions held in memory (LRU eviction, counted).
	MaxSessions int
	// MaxBreakers bounds the breaker states held in memory.
	MaxBreakers int
	// BreakerTTL: idle breaker state is dropped (reads as closed) after this.
	BreakerTTL time.Duration
	// ResetOnSuccess forgets a session's history when one of its runs
	// succeeds, so the budget counts consecutive failures.
	ResetOnSuccess bool
	// Redis, when Endpoint is set, shares history and breakers between
	// collectors.
	Redis RedisOptions
}

// RedisOptions configures the shared Redis history.
type RedisOptions struct {
	Endpoint  string // host:port; empty = memory only
	Username  string
	Password  string
	DB        int
	KeyPrefix string
	// Timeout bounds every Redis call; past it the call is served from memory.
	Timeout time.Duration
	// RecheckInterval: after a failure Redis is not tried again for this long.
	RecheckInterval time.Duration
}

// StrategySpec declares one strategy. Kind selects which fields apply (see
// the policy table of README.md); the others are ignored — the collector
// component's per-kind config blocks reject them where the YAML sets them.
type StrategySpec struct {
	Kind        string
	MaxAttempts int

	Hint           string
	Reason         string
	Target         string
	CheckpointID   string
	Subgoal        string
	RequireSubgoal bool

	// backoff_and_retry
	BaseDelay  time.Duration
	MaxDelay   time.Duration
	Multiplier float64
	Jitter     float64

	// sequence
	Steps []StrategySpec
	// chain
	Primary  *StrategySpec
	Fallback *StrategySpec

	// circuit_breaker
	Inner            *StrategySpec
	Name             string
	FailureThreshold int
	Window           time.Duration
	Cooldown         time.Duration
	Scope            string
	OpenAction       string
}

// DefaultEntry is the policy key used for failure types without an entry.
const DefaultEntry = "default"

// NonIdempotentEntry is the policy key of the strategy that answers, instead
// of a retry, the failures of a tool that is not idempotent (default
// escalate).
const NonIdempotentEntry = "non_idempotent"

// strategyKinds are the kinds of the built-in strategies (StrategySpec.Kind).
var strategyKinds = []string{
	"retry_with_tool_manifest", "backoff_and_retry", "replan", "resume_from_subgoal",
	"rollback_to_checkpoint", "fallback", "suspend", "escalate", "abort",
	"sequence", "chain", "circuit_breaker",
}

// Validate checks the config; errors name the entry, e.g.
// `policy.external_fault.steps[1]: unknown kind "replann"`.
func (c *Options) Validate() error {
	_, err := c.buildPolicy()
	if herr := c.History.validate(); herr != nil {
		err = errors.Join(err, herr)
	}
	if cerr := c.validateCaps(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	return err
}

func (h *HistoryOptions) validate() error {
	var errs []error
	if h.TTL < 0 {
		errs = append(errs, errors.New("history.ttl: must not be negative"))
	}
	if h.MaxSessions < 0 {
		errs = append(errs, errors.New("history.max_sessions: must not be negative"))
	}
	if h.MaxBreakers < 0 {
		errs = append(errs, errors.New("history.max_breakers: must not be negative"))
	}
	if h.BreakerTTL < 0 {
		errs = append(errs, errors.New("history.breaker_ttl: must not be negative"))
	}
	if h.Redis.Timeout < 0 {
		errs = append(errs, errors.New("history.redis.timeout: must not be negative"))
	}
	if h.Redis.RecheckInterval < 0 {
		errs = append(errs, errors.New("history.redis.recheck_interval: must not be negative"))
	}
	if h.Redis.DB < 0 {
		errs = append(errs, errors.New("history.redis.db: must not be negative"))
	}
	return errors.Join(errs...)
}

// policyKeys are the valid keys of Options.Policy.
func policyKeys() []string {
	keys := make([]string, 0, len(classifier.FailureTypes)+2)
	for _, t := range classifier.FailureTypes {
		keys = append(keys, string(t))
	}
	return append(keys, DefaultEntry, NonIdempotentEntry)
}

// guardPolicyPath is the config path of Options.GuardPolicy.
const guardPolicyPath = "guard_policy"

// retriesIn reports whether a strategy may answer with a retry (itself or
// a strategy it nests), naming the kind that does.
func retriesIn(c StrategySpec) (string, bool) {
	switch c.Kind {
	case "retry_with_tool_manifest", "backoff_and_retry":
		return c.Kind, true
	}
	nested := append([]StrategySpec(nil), c.Steps...)
	for _, p := range []*StrategySpec{c.Primary, c.Fallback, c.Inner} {
		if p != nil {
			nested = append(nested, *p)
		}
	}
	for _, n := range nested {
		if k, ok := retriesIn(n); ok {
			return k, true
		}
	}
	return "", false
}

// buildPolicy validates the config and builds the policy.
func (c *Options) buildPolicy() (*policy, error) {
	entries := map[string]StrategySpec{}
	if !c.DisableDefaultPolicy {
		for k, v := range DefaultPolicy() {
			entries[k] = v
		}
	}
	valid := policyKeys()
	var errs []error
	for k, v := range c.Policy {
		if !slices.Contains(valid, k) {
			errs = append(errs, fmt.Errorf("policy.%s: unknown failure type (want one of %s)", k, strings.Join(valid, ", ")))
			continue
		}
		entries[k] = v
	}
	if v, ok := entries[NonIdempotentEntry]; ok {
		if kind, retries := retriesIn(v); retries {
			errs = append(errs, fmt.Errorf("policy.%s: kind %q retries; it answers the failures that must not be retried", NonIdempotentEntry, kind))
		}
	}
	b := &builder{breakers: map[string]breakerDecl{}}
	p := &policy{entries: map[string]Strategy{}}
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s, err := b.build(k, entries[k])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.entries[k] = s
	}
	gkeys := make([]string, 0, len(c.GuardPolicy))
	for k := range c.GuardPolicy {
		gkeys = append(gkeys, k)
	}
	sort.Strings(gkeys)
	for _, k := range gkeys {
		s, err := b.buildAt(guardPolicyPath+"."+k, c.GuardPolicy[k], 0)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if p.guards == nil {
			p.guards = map[string]Strategy{}
		}
		p.guards[k] = s
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if _, ok := p.entries[DefaultEntry]; !ok {
		p.entries[DefaultEntry] = strategy.Escalate{}
	}
	if _, ok := p.entries[NonIdempotentEntry]; !ok {
		p.entries[NonIdempotentEntry] = strategy.Escalate{}
	}
	for _, d := range b.order {
		p.breakers = append(p.breakers, b.breakers[d].cb)
	}
	return p, nil
}

type breakerDecl struct {
	path string
	cb   strategy.CircuitBreaker
}

type builder struct {
	breakers map[string]breakerDecl
	order    []string
}

// maxFailureThreshold bounds the failure times a breaker keeps in its state.
const maxFailureThreshold = 10000

// maxDepth bounds nesting so a pathological config cannot recurse forever.
const maxDepth = 16

func (b *builder) build(path string, c StrategySpec) (Strategy, error) {
	return b.buildAt(path, c, 0)
}

func (b *builder) buildAt(path string, c StrategySpec, depth int) (Strategy, error) {
	where := "policy." + path
	if strings.HasPrefix(path, guardPolicyPath+".") {
		where = path
	}
	if depth > maxDepth {
		return nil, fmt.Errorf("%s: nested more than %d levels", where, maxDepth)
	}
	if c.Kind == "" {
		return nil, fmt.Errorf("%s: kind is required (one of %s)", where, strings.Join(strategyKinds, ", "))
	}
	if !slices.Contains(strategyKinds, c.Kind) {
		return nil, fmt.Errorf("%s: unknown kind %q (want one of %s)", where, c.Kind, strings.Join(strategyKinds, ", "))
	}
	var errs []error
	if c.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("%s.max_attempts: must not be negative", where))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	switch c.Kind {
	case "retry_with_tool_manifest":
		return strategy.RetryWithToolManifest{Max: c.MaxAttempts, Hint: c.Hint}, nil
	case "backoff_and_retry":
		return buildBackoff(where, c)
	case "replan":
		return strategy.Replan{Max: c.MaxAttempts, Hint: c.Hint}, nil
	case "resume_from_subgoal":
		return strategy.ResumeFromSubgoal{Max: c.MaxAttempts, Subgoal: c.Subgoal, Hint: c.Hint, RequireSubgoal: c.RequireSubgoal}, nil
	case "rollback_to_checkpoint":
		return strategy.RollbackToCheckpoint{Max: c.MaxAttempts, CheckpointID: c.CheckpointID, Hint: c.Hint}, nil
	case "fallback":
		return strategy.Fallback{Max: c.MaxAttempts, Target: c.Target, Hint: c.Hint}, nil
	case "suspend":
		return strategy.Suspend{Max: c.MaxAttempts, Reason: c.Reason}, nil
	case "escalate":
		return strategy.Escalate{Reason: c.Reason}, nil
	case "abort":
		return strategy.Abort{Reason: c.Reason}, nil
	case "sequence":
		return b.buildSequence(path, where, c, depth)
	case "chain":
		return b.buildChain(path, where, c, depth)
	case "circuit_breaker":
		return b.buildBreaker(path, where, c, depth)
	}
	return nil, fmt.Errorf("%s: unknown kind %q", where, c.Kind)
}

func buildBackoff(where string, c StrategySpec) (Strategy, error) {
	var errs []error
	if c.BaseDelay < 0 {
		errs = append(errs, fmt.Errorf("%s.base_delay: must not be negative", where))
	}
	if c.MaxDelay < 0 || (c.MaxDelay > 0 && c.MaxDelay < c.BaseDelay) {
		errs = append(errs, fmt.Errorf("%s.max_delay: must be at least base_delay", where))
	}
	if c.Multiplier != 0 && c.Multiplier < 1 {
		errs = append(errs, fmt.Errorf("%s.multiplier: must be at least 1", where))
	}
	if c.Jitter < 0 || c.Jitter > 1 {
		errs = append(errs, fmt.Errorf("%s.jitter: must be between 0 and 1", where))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return strategy.BackoffAndRetry{Max: c.MaxAttempts, BaseDelay: c.BaseDelay, MaxDelay: c.MaxDelay,
		Multiplier: c.Multiplier, Jitter: c.Jitter, Hint: c.Hint}, nil
}

func (b *builder) buildSequence(path, where string, c StrategySpec, depth int) (Strategy, error) {
	if len(c.Steps) == 0 {
		return nil, fmt.Errorf("%s.steps: a sequence needs at least one step", where)
	}
	var errs []error
	seq := strategy.Sequence{}
	for i, st := range c.Steps {
		s, err := b.buildAt(fmt.Sprintf("%s.steps[%d]", path, i), st, depth+1)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		seq.Steps = append(seq.Steps, s)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return seq, nil
}

func (b *builder) buildChain(path, where string, c StrategySpec, depth int) (Strategy, error) {
	var errs []error
	if c.Primary == nil {
		errs = append(errs, fmt.Errorf("%s.primary: required", where))
	}
	if c.Fallback == nil {
		errs = append(errs, fmt.Errorf("%s.fallback: required", where))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	p, perr := b.buildAt(path+".primary", *c.Primary, depth+1)
	f, ferr := b.buildAt(path+".fallback", *c.Fallback, depth+1)
	if err := errors.Join(perr, ferr); err != nil {
		return nil, err
	}
	return strategy.Chain{Primary: p, Fallback: f}, nil
}

func (b *builder) buildBreaker(path, where string, c StrategySpec, depth int) (Strategy, error) {
	var errs []error
	if c.Inner == nil {
		errs = append(errs, fmt.Errorf("%s.inner: required", where))
	}
	if c.FailureThreshold < 0 || c.FailureThreshold > maxFailureThreshold {
		errs = append(errs, fmt.Errorf("%s.failure_threshold: must be between 1 and %d", where, maxFailureThreshold))
	}
	if c.Window < 0 {
		errs = append(errs, fmt.Errorf("%s.window: must not be negative", where))
	}
	if c.Cooldown < 0 {
		errs = append(errs, fmt.Errorf("%s.cooldown: must not be negative", where))
	}
	switch c.Scope {
	case "", breaker.ScopeGlobal, breaker.ScopeService, breaker.ScopeAgent, breaker.ScopeTool:
	default:
		errs = append(errs, fmt.Errorf("%s.scope: unknown scope %q (want global, service, agent or tool)", where, c.Scope))
	}
	switch ActionKind(c.OpenAction) {
	case "", ActionEscalate, ActionAbort, ActionSuspend:
	default:
		errs = append(errs, fmt.Errorf("%s.open_action: %q is not escalate, abort or suspend", where, c.OpenAction))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	inner, err := b.buildAt(path+".inner", *c.Inner, depth+1)
	if err != nil {
		return nil, err
	}
	name := c.Name
	if name == "" {
		name = path
	}
	cb := strategy.CircuitBreaker{
		Name: name,
		Settings: breaker.Settings{
			Threshold: cmp.Or(c.FailureThreshold, 5),
			Window:    cmp.Or(c.Window, time.Minute),
			Cooldown:  cmp.Or(c.Cooldown, 30*time.Second),
		},
		Scope:      c.Scope,
		OpenAction: ActionKind(c.OpenAction),
		Inner:      inner,
	}
	if prev, ok := b.breakers[name]; ok {
		if prev.cb.Settings != cb.Settings || breaker.NormScope(prev.cb.Scope) != breaker.NormScope(cb.Scope) {
			return nil, fmt.Errorf("%s.name: breaker %q is declared at policy.%s with other settings", where, name, prev.path)
		}
	} else {
		b.breakers[name] = breakerDecl{path: path, cb: cb}
		b.order = append(b.order, name)
	}
	return cb, nil
}
