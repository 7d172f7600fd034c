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

// Config is the recovery section of the collector config. It is made of
// plain mapstructure-tagged structs so the collector can unmarshal it from
// YAML; Validate reports every mistake with the path of the entry.
type Config struct {
	// Policy maps a failure type (or "default") to a strategy. Entries
	// replace the same entries of DefaultPolicy; the others keep their
	// defaults unless DisableDefaultPolicy is set.
	Policy               map[string]StrategyConfig `mapstructure:"policy"`
	DisableDefaultPolicy bool                      `mapstructure:"disable_default_policy"`
	// GuardPolicy maps an in-flight guard (Input.Guard) to the strategy
	// that answers its trips; a guard without an entry is answered by the
	// Policy entry of its failure type. Keys are not checked here: the
	// caller that knows the guards does.
	GuardPolicy map[string]StrategyConfig `mapstructure:"guard_policy"`
	History     HistoryConfig             `mapstructure:"history"`

	// NonIdempotentTools are regular expressions matched against the whole
	// failing tool name (a plain name matches itself): such a tool is never
	// retried; the non_idempotent policy entry answers instead.
	NonIdempotentTools []string `mapstructure:"non_idempotent_tools"`
	// MaxTotalAttempts caps a session's failures of all types together;
	// past it every failure escalates (policy max_total_attempts). 0: no cap.
	MaxTotalAttempts int `mapstructure:"max_total_attempts"`
	// MaxRecoveryDuration caps how long a session may keep recovering,
	// from its first failure in the history; past it every failure
	// escalates (policy max_recovery_duration). 0: no cap.
	MaxRecoveryDuration time.Duration `mapstructure:"max_recovery_duration"`
}

// DefaultConfig is the config a collector component starts from: the
// default policy (applied at build time, so user entries replace single
// entries), bounded in-memory history, budgets reset by a successful run.
func DefaultConfig() Config {
	return Config{
		History: HistoryConfig{
			TTL:            time.Hour,
			MaxSessions:    10000,
			MaxBreakers:    1000,
			BreakerTTL:     24 * time.Hour,
			ResetOnSuccess: true,
			Redis: RedisConfig{
				KeyPrefix:       "triage:",
				Timeout:         100 * time.Millisecond,
				RecheckInterval: 5 * time.Second,
			},
		},
	}
}

// HistoryConfig configures the attempt history and breaker state.
type HistoryConfig struct {
	// TTL: a session's history is forgotten this long after its last failure.
	TTL time.Duration `mapstructure:"ttl"`
	// MaxSessions bounds the sessions held in memory (LRU eviction, counted).
	MaxSessions int `mapstructure:"max_sessions"`
	// MaxBreakers bounds the breaker states held in memory.
	MaxBreakers int `mapstructure:"max_breakers"`
	// BreakerTTL: idle breaker state is dropped (reads as closed) after this.
	BreakerTTL time.Duration `mapstructure:"breaker_ttl"`
	// ResetOnSuccess forgets a session's history when one of its runs
	// succeeds, so the budget counts consecutive failures.
	ResetOnSuccess bool `mapstructure:"reset_on_success"`
	// Redis, when Endpoint is set, shares history and breakers between
	// collectors.
	Redis RedisConfig `mapstructure:"redis"`
}

// RedisConfig configures the shared Redis history.
type RedisConfig struct {
	Endpoint  string `mapstructure:"endpoint"` // host:port; empty = memory only
	Username  string `mapstructure:"username"`
	Password  Secret `mapstructure:"password"`
	DB        int    `mapstructure:"db"`
	KeyPrefix string `mapstructure:"key_prefix"`
	// Timeout bounds every Redis call; past it the call is served from memory.
	Timeout time.Duration `mapstructure:"timeout"`
	// RecheckInterval: after a failure Redis is not tried again for this long.
	RecheckInterval time.Duration `mapstructure:"recheck_interval"`
}

// Secret is a string that does not print.
type Secret string

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[REDACTED]"
}

// MarshalText keeps the secret out of marshalled configs and logs.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// StrategyConfig declares one strategy. Kind selects which fields apply;
// a field set on a kind that does not use it is an error.
type StrategyConfig struct {
	Kind        string `mapstructure:"kind"`
	MaxAttempts int    `mapstructure:"max_attempts"`

	Hint           string `mapstructure:"hint"`
	Reason         string `mapstructure:"reason"`
	Target         string `mapstructure:"target"`
	CheckpointID   string `mapstructure:"checkpoint_id"`
	Subgoal        string `mapstructure:"subgoal"`
	RequireSubgoal bool   `mapstructure:"require_subgoal"`

	// backoff_and_retry
	BaseDelay  time.Duration `mapstructure:"base_delay"`
	MaxDelay   time.Duration `mapstructure:"max_delay"`
	Multiplier float64       `mapstructure:"multiplier"`
	Jitter     float64       `mapstructure:"jitter"`

	// sequence
	Steps []StrategyConfig `mapstructure:"steps"`
	// chain
	Primary  *StrategyConfig `mapstructure:"primary"`
	Fallback *StrategyConfig `mapstructure:"fallback"`

	// circuit_breaker
	Inner            *StrategyConfig `mapstructure:"inner"`
	Name             string          `mapstructure:"name"`
	FailureThreshold int             `mapstructure:"failure_threshold"`
	Window           time.Duration   `mapstructure:"window"`
	Cooldown         time.Duration   `mapstructure:"cooldown"`
	Scope            string          `mapstructure:"scope"`
	OpenAction       string          `mapstructure:"open_action"`
}

// DefaultEntry is the policy key used for failure types without an entry.
const DefaultEntry = "default"

// NonIdempotentEntry is the policy key of the strategy that answers, instead
// of a retry, the failures of a tool that is not idempotent (default
// escalate).
const NonIdempotentEntry = "non_idempotent"

// Kinds of strategies, as written in the config.
var strategyKinds = []string{
	"retry_with_tool_manifest", "backoff_and_retry", "replan", "resume_from_subgoal",
	"rollback_to_checkpoint", "fallback", "suspend", "escalate", "abort",
	"sequence", "chain", "circuit_breaker",
}

// fieldsByKind lists the optional fields each kind reads.
var fieldsByKind = map[string][]string{
	"retry_with_tool_manifest": {"max_attempts", "hint"},
	"backoff_and_retry":        {"max_attempts", "hint", "base_delay", "max_delay", "multiplier", "jitter"},
	"replan":                   {"max_attempts", "hint"},
	"resume_from_subgoal":      {"max_attempts", "hint", "subgoal", "require_subgoal"},
	"rollback_to_checkpoint":   {"max_attempts", "hint", "checkpoint_id"},
	"fallback":                 {"max_attempts", "hint", "target"},
	"suspend":                  {"max_attempts", "reason"},
	"escalate":                 {"reason"},
	"abort":                    {"reason"},
	"sequence":                 {"steps"},
	"chain":                    {"primary", "fallback"},
	"circuit_breaker":          {"inner", "name", "failure_threshold", "window", "cooldown", "scope", "open_action"},
}

// setFields names the fields of c that are set.
func (c *StrategyConfig) setFields() []string {
	var set []string
	add := func(name string, ok bool) {
		if ok {
			set = append(set, name)
		}
	}
	add("max_attempts", c.MaxAttempts != 0)
	add("hint", c.Hint != "")
	add("reason", c.Reason != "")
	add("target", c.Target != "")
	add("checkpoint_id", c.CheckpointID != "")
	add("subgoal", c.Subgoal != "")
	add("require_subgoal", c.RequireSubgoal)
	add("base_delay", c.BaseDelay != 0)
	add("max_delay", c.MaxDelay != 0)
	add("multiplier", c.Multiplier != 0)
	add("jitter", c.Jitter != 0)
	add("steps", len(c.Steps) > 0)
	add("primary", c.Primary != nil)
	add("fallback", c.Fallback != nil)
	add("inner", c.Inner != nil)
	add("name", c.Name != "")
	add("failure_threshold", c.FailureThreshold != 0)
	add("window", c.Window != 0)
	add("cooldown", c.Cooldown != 0)
	add("scope", c.Scope != "")
	add("open_action", c.OpenAction != "")
	return set
}

// Validate checks the config; errors name the entry, e.g.
// `policy.external_fault.steps[1]: unknown kind "replann"`.
func (c *Config) Validate() error {
	_, err := c.buildPolicy()
	if herr := c.History.validate(); herr != nil {
		err = errors.Join(err, herr)
	}
	if cerr := c.validateCaps(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	return err
}

func (h *HistoryConfig) validate() error {
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

// policyKeys are the valid keys of Config.Policy.
func policyKeys() []string {
	keys := make([]string, 0, len(classifier.FailureTypes)+2)
	for _, t := range classifier.FailureTypes {
		keys = append(keys, string(t))
	}
	return append(keys, DefaultEntry, NonIdempotentEntry)
}

// guardPolicyPath is the config path of Config.GuardPolicy.
const guardPolicyPath = "guard_policy"

// retriesIn reports whether a strategy may answer with a retry (itself or
// a strategy it nests), naming the kind that does.
func retriesIn(c StrategyConfig) (string, bool) {
	switch c.Kind {
	case "retry_with_tool_manifest", "backoff_and_retry":
		return c.Kind, true
	}
	nested := append([]StrategyConfig(nil), c.Steps...)
	for _, p := range []*StrategyConfig{c.Primary, c.Fallback, c.Inner} {
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
func (c *Config) buildPolicy() (*policy, error) {
	entries := map[string]StrategyConfig{}
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

func (b *builder) build(path string, c StrategyConfig) (Strategy, error) {
	return b.buildAt(path, c, 0)
}

func (b *builder) buildAt(path string, c StrategyConfig, depth int) (Strategy, error) {
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
	allowed, ok := fieldsByKind[c.Kind]
	if !ok {
		return nil, fmt.Errorf("%s: unknown kind %q (want one of %s)", where, c.Kind, strings.Join(strategyKinds, ", "))
	}
	var errs []error
	for _, f := range c.setFields() {
		if !slices.Contains(allowed, f) {
			errs = append(errs, fmt.Errorf("%s.%s: not used by kind %q", where, f, c.Kind))
		}
	}
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

func buildBackoff(where string, c StrategyConfig) (Strategy, error) {
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

func (b *builder) buildSequence(path, where string, c StrategyConfig, depth int) (Strategy, error) {
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

func (b *builder) buildChain(path, where string, c StrategyConfig, depth int) (Strategy, error) {
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

func (b *builder) buildBreaker(path, where string, c StrategyConfig, depth int) (Strategy, error) {
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
