package triageconnector // import "github.com/triage-otel/triage/connector/triageconnector"

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/confmap"
)

// Config configures both sides of the connector. Fields under metrics only
// matter for traces to metrics; decision_dedup_cache_size is used by both.
type Config struct {
	// MetricsFlushInterval is how often the cumulative metrics are emitted
	// (every series, each time, so that exporters which expire idle series,
	// like the Prometheus exporter, keep them). A final flush happens on
	// shutdown.
	MetricsFlushInterval time.Duration `mapstructure:"metrics_flush_interval"`
	// MaxCardinality bounds the number of series of each metric. Beyond it,
	// new attribute sets are recorded in an overflow series (see README).
	MaxCardinality int `mapstructure:"max_cardinality"`
	// MaxAttributeLength truncates the free-form metric attribute values
	// (service, agent, tool) to this many bytes, on a UTF-8 boundary.
	MaxAttributeLength int `mapstructure:"max_attribute_length"`
	// RunDurationBuckets are the explicit bucket boundaries of
	// triage.run.duration (the histogram is in seconds).
	RunDurationBuckets []time.Duration `mapstructure:"run_duration_buckets"`
	// DecisionDedupCacheSize is how many recent decision ids are remembered
	// so that a decision carried by several spans (stand-ins for a missing
	// root, a late root) yields one log record and is counted once.
	DecisionDedupCacheSize int `mapstructure:"decision_dedup_cache_size"`
	// DecisionRetry bounds the retry of decisions the logs pipeline
	// refused; the traces pipeline never sees the refusal.
	DecisionRetry DecisionRetryConfig `mapstructure:"decision_retry"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ confmap.Validator = (*Config)(nil)

// Validate checks the configuration; each error names its field.
func (c *Config) Validate() error {
	var errs []error
	if c.MetricsFlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("metrics_flush_interval must be positive, got %s", c.MetricsFlushInterval))
	}
	if c.MaxCardinality < 1 {
		errs = append(errs, fmt.Errorf("max_cardinality must be at least 1, got %d", c.MaxCardinality))
	}
	if c.MaxAttributeLength < 1 {
		errs = append(errs, fmt.Errorf("max_attribute_length must be at least 1, got %d", c.MaxAttributeLength))
	}
	if c.DecisionDedupCacheSize < 1 {
		errs = append(errs, fmt.Errorf("decision_dedup_cache_size must be at least 1, got %d", c.DecisionDedupCacheSize))
	}
	if c.DecisionRetry.QueueSize < 1 {
		errs = append(errs, fmt.Errorf("decision_retry.queue_size must be at least 1, got %d", c.DecisionRetry.QueueSize))
	}
	if c.DecisionRetry.InitialInterval <= 0 {
		errs = append(errs, fmt.Errorf("decision_retry.initial_interval must be positive, got %s", c.DecisionRetry.InitialInterval))
	}
	if c.DecisionRetry.MaxInterval < c.DecisionRetry.InitialInterval {
		errs = append(errs, fmt.Errorf("decision_retry.max_interval (%s) must not be less than decision_retry.initial_interval (%s)", c.DecisionRetry.MaxInterval, c.DecisionRetry.InitialInterval))
	}
	if c.DecisionRetry.MaxElapsedTime < 0 {
		errs = append(errs, fmt.Errorf("decision_retry.max_elapsed_time must not be negative, got %s", c.DecisionRetry.MaxElapsedTime))
	}
	if len(c.RunDurationBuckets) == 0 {
		errs = append(errs, errors.New("run_duration_buckets must not be empty"))
	}
	for i, b := range c.RunDurationBuckets {
		if b <= 0 {
			errs = append(errs, fmt.Errorf("run_duration_buckets[%d] must be positive, got %s", i, b))
		}
		if i > 0 && b <= c.RunDurationBuckets[i-1] {
			errs = append(errs, fmt.Errorf("run_duration_buckets[%d] (%s) must be greater than run_duration_buckets[%d] (%s)", i, b, i-1, c.RunDurationBuckets[i-1]))
		}
	}
	return errors.Join(errs...)
}

// bucketBounds returns the histogram bounds in seconds.
func (c *Config) bucketBounds() []float64 {
	out := make([]float64, len(c.RunDurationBuckets))
	for i, b := range c.RunDurationBuckets {
		out[i] = b.Seconds()
	}
	return slices.Clip(out)
}
