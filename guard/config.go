package guard

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/triage-otel/triage/recovery"
)

// Config configures the guards. The loop and repeated-failure guards are
// on by default; budgets are off until a limit is set. Mapstructure tags
// let a collector component decode it from its config.
type Config struct {
	Loop            LoopConfig            `mapstructure:"loop"`
	RepeatedFailure RepeatedFailureConfig `mapstructure:"repeated_failure"`
	Tokens          TokensConfig          `mapstructure:"tokens"`
	Cost            CostConfig            `mapstructure:"cost"`
	WallClock       WallClockConfig       `mapstructure:"wall_clock"`
}

// LoopConfig: the loop rule's threshold, window and similarity are the
// classifier's (the processor's loop block), so that in-flight and final
// detection agree.
type LoopConfig struct {
	Enabled bool `mapstructure:"enabled"`
}

// RepeatedFailureConfig trips when one tool's last Threshold calls all
// failed (calls of other tools in between do not break the streak, a
// successful call of the same tool does).
type RepeatedFailureConfig struct {
	Enabled   bool `mapstructure:"enabled"`
	Threshold int  `mapstructure:"threshold"`
}

// TokensConfig caps input + output tokens; 0 disables a limit.
type TokensConfig struct {
	MaxPerRun     int64 `mapstructure:"max_per_run"`
	MaxPerSession int64 `mapstructure:"max_per_session"`
}

// CostConfig caps cost; 0 disables a limit. A step's cost is the one its
// span recorded (gen_ai.usage.cost, llm.cost.total), else its tokens
// priced by Prices (model → price per million tokens).
type CostConfig struct {
	MaxPerRun     float64          `mapstructure:"max_per_run"`
	MaxPerSession float64          `mapstructure:"max_per_session"`
	Prices        map[string]Price `mapstructure:"prices"`
}

// Price is what one million tokens of a model cost, in the unit of the
// limits (usually USD).
type Price struct {
	InputPerMillion  float64 `mapstructure:"input_per_million"`
	OutputPerMillion float64 `mapstructure:"output_per_million"`
}

// WallClockConfig caps how long a run may go on, from its first span's
// start to the latest span end seen; 0 disables it.
type WallClockConfig struct {
	MaxPerRun time.Duration `mapstructure:"max_per_run"`
}

// DefaultRepeatedFailureThreshold is the default N of repeated_failure.
const DefaultRepeatedFailureThreshold = 3

// DefaultConfig turns on the loop and repeated-failure guards.
func DefaultConfig() Config {
	return Config{
		Loop:            LoopConfig{Enabled: true},
		RepeatedFailure: RepeatedFailureConfig{Enabled: true, Threshold: DefaultRepeatedFailureThreshold},
	}
}

// DefaultPolicy is the recovery.guard_policy a collector starts from: the
// budget guards abort (the reason says which limit). The loop and
// repeated-failure guards have no entry, so the policy entry of their
// failure type answers them (loop_detected: replan), as it answers the
// final decision.
func DefaultPolicy() map[string]recovery.StrategySpec {
	return map[string]recovery.StrategySpec{
		string(Tokens):    {Kind: "abort"},
		string(Cost):      {Kind: "abort"},
		string(WallClock): {Kind: "abort"},
	}
}

// Enabled reports whether any guard is on.
func (c Config) Enabled() bool {
	return c.Loop.Enabled || c.RepeatedFailure.Enabled || c.Tokens.MaxPerRun > 0 || c.Tokens.MaxPerSession > 0 ||
		c.Cost.MaxPerRun > 0 || c.Cost.MaxPerSession > 0 || c.WallClock.MaxPerRun > 0
}

// SessionBudgets reports whether a per-session budget is set (the caller
// then keeps session usage).
func (c Config) SessionBudgets() bool { return c.Tokens.MaxPerSession > 0 || c.Cost.MaxPerSession > 0 }

// maxRepeatedFailureThreshold bounds N (the streak walk is O(N)).
const maxRepeatedFailureThreshold = 1000

// Validate checks the config; each error names its field relative to the
// block (e.g. "repeated_failure.threshold").
func (c *Config) Validate() error {
	var errs []error
	if c.RepeatedFailure.Enabled && (c.RepeatedFailure.Threshold < 2 || c.RepeatedFailure.Threshold > maxRepeatedFailureThreshold) {
		errs = append(errs, fmt.Errorf("repeated_failure.threshold must be between 2 and %d, got %d", maxRepeatedFailureThreshold, c.RepeatedFailure.Threshold))
	}
	if c.Tokens.MaxPerRun < 0 {
		errs = append(errs, fmt.Errorf("tokens.max_per_run must not be negative, got %d", c.Tokens.MaxPerRun))
	}
	if c.Tokens.MaxPerSession < 0 {
		errs = append(errs, fmt.Errorf("tokens.max_per_session must not be negative, got %d", c.Tokens.MaxPerSession))
	}
	if !validAmount(c.Cost.MaxPerRun) {
		errs = append(errs, fmt.Errorf("cost.max_per_run must be a non-negative number, got %v", c.Cost.MaxPerRun))
	}
	if !validAmount(c.Cost.MaxPerSession) {
		errs = append(errs, fmt.Errorf("cost.max_per_session must be a non-negative number, got %v", c.Cost.MaxPerSession))
	}
	for model, p := range c.Cost.Prices {
		if strings.TrimSpace(model) == "" {
			errs = append(errs, errors.New("cost.prices: model name must not be empty"))
		}
		if !validAmount(p.InputPerMillion) {
			errs = append(errs, fmt.Errorf("cost.prices[%s].input_per_million must be a non-negative number, got %v", model, p.InputPerMillion))
		}
		if !validAmount(p.OutputPerMillion) {
			errs = append(errs, fmt.Errorf("cost.prices[%s].output_per_million must be a non-negative number, got %v", model, p.OutputPerMillion))
		}
	}
	if c.WallClock.MaxPerRun < 0 {
		errs = append(errs, fmt.Errorf("wall_clock.max_per_run must not be negative, got %v", c.WallClock.MaxPerRun))
	}
	return errors.Join(errs...)
}

func validAmount(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) && f >= 0 }
