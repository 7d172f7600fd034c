package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/collector/config/configopaque"

	"github.com/triage-otel/triage/classifier/llm"
)

// LLMConfig configures the optional model asked about the runs structure,
// codes and rules left unknown (see classifier/llm). Off by default; the
// API key is a configopaque.String so the collector never prints it.
type LLMConfig struct {
	// Enabled turns the model on (default false).
	Enabled bool `mapstructure:"enabled"`
	// Endpoint is the base URL of an OpenAI-compatible API
	// (http://localhost:11434/v1 for Ollama, https://api.openai.com/v1).
	Endpoint string `mapstructure:"endpoint"`
	// Model is the model name; it is the triage.rule of accepted answers.
	Model  string              `mapstructure:"model"`
	APIKey configopaque.String `mapstructure:"api_key"`
	// Timeout bounds one consultation (the wait for a free slot, every
	// attempt, the back-off); the run waiting for it is decided at the
	// latest then.
	Timeout time.Duration `mapstructure:"timeout"`
	// MaxRetries is how many times a 429, 5xx or transport error is
	// retried (0: never).
	MaxRetries int `mapstructure:"max_retries"`
	// MaxTokens bounds the answer; reasoning models need more.
	MaxTokens int `mapstructure:"max_tokens"`
	// ConfidenceThreshold is the lowest confidence accepted.
	ConfidenceThreshold float64 `mapstructure:"confidence_threshold"`
	// ConfidenceCap bounds the confidence written for an accepted answer.
	ConfidenceCap float64 `mapstructure:"confidence_cap"`
	// MaxCallsPerSession and MaxCallsPerMinute cap model calls (0: no cap).
	MaxCallsPerSession int `mapstructure:"max_calls_per_session"`
	MaxCallsPerMinute  int `mapstructure:"max_calls_per_minute"`
	// MaxConcurrency bounds the calls in flight.
	MaxConcurrency int `mapstructure:"max_concurrency"`
	// MaxPending bounds the traces held while an answer is awaited; beyond
	// it a trace is decided without the model (counted).
	MaxPending int            `mapstructure:"max_pending"`
	Cache      LLMCacheConfig `mapstructure:"cache"`
	// Corrections is a JSONL file of corrections; those naming a signature
	// override the answer for that error shape (loaded at start).
	Corrections string `mapstructure:"corrections"`
}

// LLMCacheConfig bounds the answer cache and shares it through the Redis
// of recovery.history.redis.
type LLMCacheConfig struct {
	Size  int           `mapstructure:"size"`
	Redis bool          `mapstructure:"redis"`
	TTL   time.Duration `mapstructure:"ttl"`
}

// defaultLLMMaxPending bounds the traces held for an answer by default.
const defaultLLMMaxPending = 1000

func defaultLLMConfig() LLMConfig {
	return LLMConfig{
		Timeout:             llm.DefaultTimeout,
		MaxRetries:          llm.DefaultMaxRetries,
		MaxTokens:           llm.DefaultMaxTokens,
		ConfidenceThreshold: llm.DefaultConfidenceThreshold,
		ConfidenceCap:       llm.DefaultConfidenceCap,
		MaxCallsPerSession:  llm.DefaultMaxCallsPerSession,
		MaxCallsPerMinute:   llm.DefaultMaxCallsPerMinute,
		MaxConcurrency:      llm.DefaultMaxConcurrency,
		MaxPending:          defaultLLMMaxPending,
		Cache:               LLMCacheConfig{Size: llm.DefaultCacheSize, TTL: llm.DefaultCacheTTL},
	}
}

// validate checks the llm block; each error names its field. Nothing is
// checked while the model is off, so a disabled block may be incomplete.
func (c *LLMConfig) validate(rec *RecoveryConfig) []error {
	if !c.Enabled {
		return nil
	}
	var errs []error
	if u, err := url.Parse(strings.TrimSpace(c.Endpoint)); c.Endpoint == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("llm.endpoint must be an http(s) URL when llm.enabled is true, got %q", c.Endpoint))
	}
	if strings.TrimSpace(c.Model) == "" {
		errs = append(errs, errors.New("llm.model must be set when llm.enabled is true"))
	}
	positive := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("llm.%s must be greater than 0, got %d", name, v))
		}
	}
	notNegative := func(name string, v int) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("llm.%s must not be negative (0: no cap), got %d", name, v))
		}
	}
	unit := func(name string, v float64) {
		if v <= 0 || v > 1 || v != v {
			errs = append(errs, fmt.Errorf("llm.%s must be within (0, 1], got %v", name, v))
		}
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("llm.timeout must be greater than 0, got %v", c.Timeout))
	}
	if c.MaxRetries < 0 {
		errs = append(errs, fmt.Errorf("llm.max_retries must not be negative, got %d", c.MaxRetries))
	}
	positive("max_tokens", c.MaxTokens)
	unit("confidence_threshold", c.ConfidenceThreshold)
	unit("confidence_cap", c.ConfidenceCap)
	notNegative("max_calls_per_session", c.MaxCallsPerSession)
	notNegative("max_calls_per_minute", c.MaxCallsPerMinute)
	positive("max_concurrency", c.MaxConcurrency)
	positive("max_pending", c.MaxPending)
	positive("cache.size", c.Cache.Size)
	if c.Cache.TTL <= 0 {
		errs = append(errs, fmt.Errorf("llm.cache.ttl must be greater than 0, got %v", c.Cache.TTL))
	}
	if c.Cache.Redis && rec.History.Redis.Endpoint == "" {
		errs = append(errs, errors.New("llm.cache.redis shares answers through recovery.history.redis: set recovery.history.redis.endpoint"))
	}
	return errs
}

// options turns the block into consultant options; the caller adds the
// observer, the redactor and the shared cache.
func (c *LLMConfig) options() (llm.Options, error) {
	noCapIfZero := func(v int) int {
		if v == 0 {
			return -1
		}
		return v
	}
	o := llm.Options{
		Endpoint:            c.Endpoint,
		Model:               c.Model,
		APIKey:              string(c.APIKey),
		Timeout:             c.Timeout,
		MaxRetries:          noCapIfZero(c.MaxRetries),
		MaxTokens:           c.MaxTokens,
		ConfidenceThreshold: c.ConfidenceThreshold,
		ConfidenceCap:       c.ConfidenceCap,
		MaxCallsPerSession:  noCapIfZero(c.MaxCallsPerSession),
		MaxCallsPerMinute:   noCapIfZero(c.MaxCallsPerMinute),
		MaxConcurrency:      c.MaxConcurrency,
		CacheSize:           c.Cache.Size,
	}
	if c.Corrections != "" {
		cs, err := llm.ReadCorrections(c.Corrections)
		if err != nil {
			return llm.Options{}, fmt.Errorf("llm.corrections: %w", err)
		}
		o.Corrections = cs
	}
	return o, nil
}

// sharedCache is the Redis answer cache, nil when llm.cache.redis is off.
func (c *LLMConfig) sharedCache(rec *RecoveryConfig) llm.SharedCache {
	if !c.Cache.Redis {
		return nil
	}
	r := rec.History.Redis
	return llm.NewRedisCache(llm.RedisCacheOptions{
		Endpoint: r.Endpoint, Username: r.Username, Password: string(r.Password), DB: r.DB,
		KeyPrefix: r.KeyPrefix, Timeout: r.Timeout,
		TTL: c.Cache.TTL,
	})
}
