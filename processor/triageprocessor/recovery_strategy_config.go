package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"time"

	"github.com/go-viper/mapstructure/v2"

	"github.com/triage-otel/triage/recovery"
)

// StrategyConfig is one strategy of the recovery policy as the YAML writes
// it: kind, and the fields of that kind. The fields are decoded into the
// kind's own block (below), so mapstructure decides what a kind reads: a
// key the kind's block does not have is reported by Validate with its path
// (`recovery.policy.timeout.target: not used by kind "replan"`), no field
// list is kept by hand. The recovery library gets a recovery.StrategySpec.
type StrategyConfig struct {
	Kind string
	// block is the kind's fields (a pointer to one of the *Block types),
	// nil when the kind is missing or unknown (the library reports it).
	block strategyBlock
	// unused are the keys set that the kind does not read.
	unused []string
	// raw is the entry as written, for Marshal (print-config).
	raw map[string]any
}

// strategyBlock is the fields of one kind.
type strategyBlock interface {
	spec(kind string) recovery.StrategySpec
}

// newBlock returns the empty block of a kind, nil for an unknown one.
func newBlock(kind string) strategyBlock {
	switch kind {
	case "retry_with_tool_manifest", "replan":
		return &hintBlock{}
	case "backoff_and_retry":
		return &backoffBlock{}
	case "resume_from_subgoal":
		return &resumeBlock{}
	case "rollback_to_checkpoint":
		return &rollbackBlock{}
	case "fallback":
		return &fallbackBlock{}
	case "suspend":
		return &suspendBlock{}
	case "escalate", "abort":
		return &reasonBlock{}
	case "sequence":
		return &sequenceBlock{}
	case "chain":
		return &chainBlock{}
	case "circuit_breaker":
		return &breakerBlock{}
	}
	return nil
}

// hintBlock: retry_with_tool_manifest, replan.
type hintBlock struct {
	MaxAttempts int    `mapstructure:"max_attempts"`
	Hint        string `mapstructure:"hint"`
}

func (b *hintBlock) spec(kind string) recovery.StrategySpec {
	return recovery.StrategySpec{Kind: kind, MaxAttempts: b.MaxAttempts, Hint: b.Hint}
}

type backoffBlock struct {
	MaxAttempts int           `mapstructure:"max_attempts"`
	Hint        string        `mapstructure:"hint"`
	BaseDelay   time.Duration `mapstructure:"base_delay"`
	MaxDelay    time.Duration `mapstructure:"max_delay"`
	Multiplier  float64       `mapstructure:"multiplier"`
	Jitter      float64       `mapstructure:"jitter"`
}

func (b *backoffBlock) spec(kind string) recovery.StrategySpec {
	return recovery.StrategySpec{Kind: kind, MaxAttempts: b.MaxAttempts, Hint: b.Hint,
		BaseDelay: b.BaseDelay, MaxDelay: b.MaxDelay, Multiplier: b.Multiplier, Jitter: b.Jitter}
}

type resumeBlock struct {
	MaxAttempts    int    `mapstructure:"max_attempts"`
	Hint           string `mapstructure:"hint"`
	Subgoal        string `mapstructure:"subgoal"`
	RequireSubgoal bool   `mapstructure:"require_subgoal"`
}

func (b *resumeBlock) spec(kind string) recovery.StrategySpec {
	return recovery.StrategySpec{Kind: kind, MaxAttempts: b.MaxAttempts, Hint: b.Hint, Subgoal: b.Subgoal, RequireSubgoal: b.RequireSubgoal}
}

type rollbackBlock struct {
	MaxAttempts  int    `mapstructure:"max_attempts"`
	Hint         string `mapstructure:"hint"`
	CheckpointID string `mapstructure:"checkpoint_id"`
}

func (b *rollbackBlock) spec(kind string) recovery.StrategySpec {
	return recovery.StrategySpec{Kind: kind, MaxAttempts: b.MaxAttempts, Hint: b.Hint, CheckpointID: b.CheckpointID}
}

type fallbackBlock struct {
	MaxAttempts int    `mapstructure:"max_attempts"`
	Hint        string `mapstructure:"hint"`
	Target      string `mapstructure:"target"`
}

func (b *fallbackBlock) spec(kind string) recovery.StrategySpec {
	return recovery.StrategySpec{Kind: kind, MaxAttempts: b.MaxAttempts, Hint: b.Hint, Target: b.Target}
}

type suspendBlock struct {
	MaxAttempts int    `mapstructure:"max_attempts"`
	Reason      string `mapstructure:"reason"`
}

func (b *suspendBlock) spec(kind string) recovery.StrategySpec {
	return recovery.StrategySpec{Kind: kind, MaxAttempts: b.MaxAttempts, Reason: b.Reason}
}

// reasonBlock: escalate, abort (they never exhaust: no max_attempts).
type reasonBlock struct {
	Reason string `mapstructure:"reason"`
}

func (b *reasonBlock) spec(kind string) recovery.StrategySpec {
	return recovery.StrategySpec{Kind: kind, Reason: b.Reason}
}

type sequenceBlock struct {
	Steps []StrategyConfig `mapstructure:"steps"`
}

func (b *sequenceBlock) spec(kind string) recovery.StrategySpec {
	s := recovery.StrategySpec{Kind: kind}
	for i := range b.Steps {
		s.Steps = append(s.Steps, b.Steps[i].spec())
	}
	return s
}

type chainBlock struct {
	Primary  *StrategyConfig `mapstructure:"primary"`
	Fallback *StrategyConfig `mapstructure:"fallback"`
}

func (b *chainBlock) spec(kind string) recovery.StrategySpec {
	return recovery.StrategySpec{Kind: kind, Primary: specPtr(b.Primary), Fallback: specPtr(b.Fallback)}
}

type breakerBlock struct {
	Inner            *StrategyConfig `mapstructure:"inner"`
	Name             string          `mapstructure:"name"`
	FailureThreshold int             `mapstructure:"failure_threshold"`
	Window           time.Duration   `mapstructure:"window"`
	Cooldown         time.Duration   `mapstructure:"cooldown"`
	Scope            string          `mapstructure:"scope"`
	OpenAction       string          `mapstructure:"open_action"`
}

func (b *breakerBlock) spec(kind string) recovery.StrategySpec {
	return recovery.StrategySpec{Kind: kind, Inner: specPtr(b.Inner), Name: b.Name, FailureThreshold: b.FailureThreshold,
		Window: b.Window, Cooldown: b.Cooldown, Scope: b.Scope, OpenAction: b.OpenAction}
}

func specPtr(c *StrategyConfig) *recovery.StrategySpec {
	if c == nil {
		return nil
	}
	s := c.spec()
	return &s
}

// spec is the recovery library's declaration of the strategy.
func (c *StrategyConfig) spec() recovery.StrategySpec {
	if c.block == nil {
		return recovery.StrategySpec{Kind: c.Kind}
	}
	return c.block.spec(c.Kind)
}

// unusedErrors names, with their config path, the keys of c and of the
// strategies it nests that their kind does not read.
func (c *StrategyConfig) unusedErrors(where string) []error {
	var errs []error
	for _, k := range c.unused {
		errs = append(errs, fmt.Errorf("%s.%s: not used by kind %q", where, k, c.Kind))
	}
	nested := func(path string, n *StrategyConfig) {
		if n != nil {
			errs = append(errs, n.unusedErrors(where+path)...)
		}
	}
	switch b := c.block.(type) {
	case *sequenceBlock:
		for i := range b.Steps {
			nested(fmt.Sprintf(".steps[%d]", i), &b.Steps[i])
		}
	case *chainBlock:
		nested(".primary", b.Primary)
		nested(".fallback", b.Fallback)
	case *breakerBlock:
		nested(".inner", b.Inner)
	}
	return errs
}

var strategyConfigType = reflect.TypeOf(StrategyConfig{})

// decodeStrategy decodes one strategy (a YAML map) into its kind's block.
func decodeStrategy(raw any) (StrategyConfig, error) {
	if raw == nil {
		return StrategyConfig{}, nil // an empty entry: the library says kind is required
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return StrategyConfig{}, fmt.Errorf("a strategy is a map with a kind, got %T", raw)
	}
	c := StrategyConfig{raw: m}
	if k, ok := m["kind"]; ok {
		if c.Kind, ok = k.(string); !ok {
			return c, fmt.Errorf("kind: want a string, got %T", k)
		}
	}
	if c.block = newBlock(c.Kind); c.block == nil {
		return c, nil
	}
	fields := make(map[string]any, len(m))
	for k, v := range m {
		if k != "kind" {
			fields[k] = v
		}
	}
	var md mapstructure.Metadata
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		DecodeHook: mapstructure.ComposeDecodeHookFunc(mapstructure.StringToTimeDurationHookFunc(), strategyHook),
		Result:     c.block,
		Metadata:   &md,
		TagName:    "mapstructure",
	})
	if err != nil {
		return c, err
	}
	if err := dec.Decode(fields); err != nil {
		return c, err
	}
	c.unused = md.Unused
	sort.Strings(c.unused)
	return c, nil
}

// strategyHook decodes the strategies a strategy nests (steps, primary,
// fallback, inner) with decodeStrategy.
func strategyHook(from, to reflect.Type, data any) (any, error) {
	if to != strategyConfigType {
		return data, nil
	}
	return decodeStrategy(data)
}

// strategyEntries decodes a map of strategies (a policy), naming the entry
// of a decoding error.
func strategyEntries(raw map[string]any) (map[string]StrategyConfig, error) {
	entries := make(map[string]StrategyConfig, len(raw))
	var errs []error
	for k, v := range raw {
		c, err := decodeStrategy(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
			continue
		}
		entries[k] = c
	}
	return entries, errors.Join(errs...)
}
