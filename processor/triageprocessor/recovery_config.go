package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap"

	"github.com/triage-otel/triage/guard"
	"github.com/triage-otel/triage/recovery"
)

func guardNames() string {
	names := make([]string, len(guard.Names))
	for i, n := range guard.Names {
		names[i] = string(n)
	}
	return strings.Join(names, ", ")
}

// RecoveryConfig configures the recovery decision the processor stamps on
// each failed run (see the recovery package). The component owns this
// YAML: it converts the block to the library's plain recovery.Options
// (engineOptions); the Redis password is a configopaque.String so the
// collector never prints it.
type RecoveryConfig struct {
	// Enabled turns recovery decisions on (default true).
	Enabled bool `mapstructure:"enabled"`
	// SessionAttributes are the span (then resource) attributes that carry
	// the session id, in order of preference.
	SessionAttributes []string `mapstructure:"session_attributes"`
	// Timeout bounds one decision (or one success report). Redis calls are
	// each bounded by history.redis.timeout and then served from memory, so
	// this is only a backstop; past it the run gets no decision (counted).
	// Without Redis nothing waits, and no timer is set.
	Timeout time.Duration `mapstructure:"timeout"`
	// Policy maps failure types (and "default") to strategies; entries
	// replace the same entries of the default policy.
	Policy               PolicyConfig `mapstructure:"policy"`
	DisableDefaultPolicy bool         `mapstructure:"disable_default_policy"`
	// GuardPolicy maps in-flight guards (loop, repeated_failure, tokens,
	// cost, wall_clock) to the strategies that answer their trips; entries
	// replace the defaults (budget guards abort). A guard without an entry
	// is answered by the policy entry of its failure type.
	GuardPolicy PolicyConfig          `mapstructure:"guard_policy"`
	History     RecoveryHistoryConfig `mapstructure:"history"`
	Redaction   RedactionConfig       `mapstructure:"redaction"`
	// NonIdempotentTools are regular expressions matched against the whole
	// tool name (a plain name matches itself): a failure of such a tool
	// (or of one whose MCP annotations say destructiveHint: true or
	// idempotentHint: false) is never retried; policy.non_idempotent
	// answers instead (default escalate).
	NonIdempotentTools []string `mapstructure:"non_idempotent_tools"`
	// MaxTotalAttempts caps a session's failures of all types together;
	// past it every failure escalates. 0: no cap.
	MaxTotalAttempts int `mapstructure:"max_total_attempts"`
	// MaxRecoveryDuration caps how long a session may keep recovering from
	// its first failure; past it every failure escalates. 0: no cap.
	MaxRecoveryDuration time.Duration `mapstructure:"max_recovery_duration"`
}

// PolicyConfig holds the policy entries (failure type or "default" →
// StrategyConfig). The entries are kept behind an unexported field
// because strategies nest (sequence steps, chain, circuit breaker inner):
// the collector's config-struct check recurses into exported struct types
// without end, while unmarshalling works through Unmarshal below.
type PolicyConfig struct {
	entries map[string]StrategyConfig
}

// Entries returns the policy entries.
func (p PolicyConfig) Entries() map[string]StrategyConfig { return p.entries }

var (
	_ confmap.Unmarshaler = (*PolicyConfig)(nil)
	_ confmap.Marshaler   = PolicyConfig{}
)

// Unmarshal decodes the policy map, each strategy into its kind's block
// (see StrategyConfig).
func (p *PolicyConfig) Unmarshal(conf *confmap.Conf) error {
	entries, err := strategyEntries(conf.ToStringMap())
	if err != nil {
		return err
	}
	p.entries = entries
	return nil
}

// Marshal encodes the policy map as it was written (e.g. for print-config).
func (p PolicyConfig) Marshal(conf *confmap.Conf) error {
	if len(p.entries) == 0 {
		return nil
	}
	raw := make(map[string]any, len(p.entries))
	for k, e := range p.entries {
		raw[k] = e.raw
	}
	return conf.Marshal(raw)
}

// specs are the entries as the recovery library declares them.
func (p PolicyConfig) specs(into map[string]recovery.StrategySpec) map[string]recovery.StrategySpec {
	if into == nil && len(p.entries) > 0 {
		into = make(map[string]recovery.StrategySpec, len(p.entries))
	}
	for k, e := range p.entries {
		into[k] = e.spec()
	}
	return into
}

// unusedErrors names the keys of the entries their kind does not read.
func (p PolicyConfig) unusedErrors(where string) []error {
	keys := make([]string, 0, len(p.entries))
	for k := range p.entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		e := p.entries[k]
		errs = append(errs, e.unusedErrors(where+"."+k)...)
	}
	return errs
}

// RecoveryHistoryConfig configures the attempt history and breaker state
// (recovery.HistoryOptions), with a configopaque Redis password.
type RecoveryHistoryConfig struct {
	TTL            time.Duration       `mapstructure:"ttl"`
	MaxSessions    int                 `mapstructure:"max_sessions"`
	MaxBreakers    int                 `mapstructure:"max_breakers"`
	BreakerTTL     time.Duration       `mapstructure:"breaker_ttl"`
	ResetOnSuccess bool                `mapstructure:"reset_on_success"`
	Redis          RecoveryRedisConfig `mapstructure:"redis"`
}

// RecoveryRedisConfig shares history and breakers between collectors when
// Endpoint is set; otherwise history is kept in memory.
type RecoveryRedisConfig struct {
	Endpoint        string              `mapstructure:"endpoint"`
	Username        string              `mapstructure:"username"`
	Password        configopaque.String `mapstructure:"password"`
	DB              int                 `mapstructure:"db"`
	KeyPrefix       string              `mapstructure:"key_prefix"`
	Timeout         time.Duration       `mapstructure:"timeout"`
	RecheckInterval time.Duration       `mapstructure:"recheck_interval"`
}

// RedactionConfig extends the redaction of the free text a decision
// carries (reasons, hints, evidence).
type RedactionConfig struct {
	// MaxLength bounds each free-text field in bytes (default 512).
	MaxLength int `mapstructure:"max_length"`
	// ExtraPatterns are regular expressions whose matches are replaced by
	// [REDACTED], in addition to the built-in credential shapes.
	ExtraPatterns []string `mapstructure:"extra_patterns"`
}

const defaultRecoveryTimeout = time.Second

func defaultRecoveryConfig() RecoveryConfig {
	d := recovery.DefaultOptions()
	h := d.History
	return RecoveryConfig{
		Enabled:           true,
		SessionAttributes: slices.Clone(recovery.DefaultSessionAttributes),
		Timeout:           defaultRecoveryTimeout,
		History: RecoveryHistoryConfig{
			TTL:            h.TTL,
			MaxSessions:    h.MaxSessions,
			MaxBreakers:    h.MaxBreakers,
			BreakerTTL:     h.BreakerTTL,
			ResetOnSuccess: h.ResetOnSuccess,
			Redis: RecoveryRedisConfig{
				KeyPrefix:       h.Redis.KeyPrefix,
				Timeout:         h.Redis.Timeout,
				RecheckInterval: h.Redis.RecheckInterval,
			},
		},
		Redaction: RedactionConfig{MaxLength: 512},
	}
}

// engineOptions are the recovery.Options this block stands for.
func (c *RecoveryConfig) engineOptions() recovery.Options {
	h := c.History
	return recovery.Options{
		Policy:               c.Policy.specs(nil),
		DisableDefaultPolicy: c.DisableDefaultPolicy,
		GuardPolicy:          c.GuardPolicy.specs(guard.DefaultPolicy()),
		NonIdempotentTools:   c.NonIdempotentTools,
		MaxTotalAttempts:     c.MaxTotalAttempts,
		MaxRecoveryDuration:  c.MaxRecoveryDuration,
		History: recovery.HistoryOptions{
			TTL:            h.TTL,
			MaxSessions:    h.MaxSessions,
			MaxBreakers:    h.MaxBreakers,
			BreakerTTL:     h.BreakerTTL,
			ResetOnSuccess: h.ResetOnSuccess,
			Redis: recovery.RedisOptions{
				Endpoint:        h.Redis.Endpoint,
				Username:        h.Redis.Username,
				Password:        string(h.Redis.Password),
				DB:              h.Redis.DB,
				KeyPrefix:       h.Redis.KeyPrefix,
				Timeout:         h.Redis.Timeout,
				RecheckInterval: h.Redis.RecheckInterval,
			},
		},
	}
}

func (c *RecoveryConfig) redactor() (*recovery.Redactor, error) {
	return recovery.NewRedactorChecked(recovery.RedactorOptions{
		MaxLen:        c.Redaction.MaxLength,
		ExtraPatterns: c.Redaction.ExtraPatterns,
	})
}

// validate checks the block, also when disabled (a typo is reported before
// someone turns it on). Errors are prefixed with "recovery." so they name
// the field as written in the collector config.
func (c *RecoveryConfig) validate() []error {
	var errs []error
	for i, a := range c.SessionAttributes {
		if strings.TrimSpace(a) == "" {
			errs = append(errs, fmt.Errorf("recovery.session_attributes[%d] must not be empty", i))
		}
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("recovery.timeout must be greater than 0, got %v", c.Timeout))
	}
	if r := c.History.Redis; r.Endpoint != "" {
		if _, _, err := net.SplitHostPort(r.Endpoint); err != nil {
			errs = append(errs, fmt.Errorf("recovery.history.redis.endpoint %q: want host:port (%v)", r.Endpoint, err))
		}
		// Each Redis call degrades to memory after its own timeout; the
		// decision's bound must leave room for that.
		if r.Timeout > 0 && c.Timeout > 0 && c.Timeout <= r.Timeout {
			errs = append(errs, fmt.Errorf("recovery.timeout (%v) must be greater than recovery.history.redis.timeout (%v)", c.Timeout, r.Timeout))
		}
	}
	if c.Redaction.MaxLength < 0 {
		errs = append(errs, fmt.Errorf("recovery.redaction.max_length must not be negative, got %d", c.Redaction.MaxLength))
	}
	if _, err := c.redactor(); err != nil {
		errs = append(errs, fmt.Errorf("recovery.redaction.extra_patterns: %w", err))
	}
	for k := range c.GuardPolicy.entries {
		if !slices.Contains(guard.Names, guard.Name(k)) {
			errs = append(errs, fmt.Errorf("recovery.guard_policy.%s: unknown guard (want one of %s)", k, guardNames()))
		}
	}
	errs = append(errs, c.Policy.unusedErrors("recovery.policy")...)
	errs = append(errs, c.GuardPolicy.unusedErrors("recovery.guard_policy")...)
	rc := c.engineOptions()
	for _, err := range leafErrors(rc.Validate()) {
		errs = append(errs, fmt.Errorf("recovery.%w", err))
	}
	return errs
}

// leafErrors flattens errors.Join trees so each error gets its own prefix.
func leafErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leafErrors(e)...)
		}
		return out
	}
	return []error{err}
}
