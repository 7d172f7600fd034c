package triageconnector

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/triage-otel/triage/connector/triageconnector/internal/metadata"
)

func loadConfig(t *testing.T, name string) (*Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig()
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	if err := sub.Unmarshal(cfg); err != nil {
		return nil, err
	}
	return cfg.(*Config), nil
}

func TestLoadConfig(t *testing.T) {
	def, err := loadConfig(t, "")
	require.NoError(t, err)
	assert.Equal(t, createDefaultConfig(), def)
	require.NoError(t, def.Validate())

	custom, err := loadConfig(t, "custom")
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, custom.MetricsFlushInterval)
	assert.Equal(t, 50, custom.MaxCardinality)
	assert.Equal(t, 32, custom.MaxAttributeLength)
	assert.Equal(t, []time.Duration{time.Second, 10 * time.Second, time.Minute, 10 * time.Minute}, custom.RunDurationBuckets)
	assert.Equal(t, []float64{1, 10, 60, 600}, custom.bucketBounds())
	assert.Equal(t, 500, custom.DecisionDedupCacheSize)
	assert.Equal(t, DecisionRetryConfig{QueueSize: 100, InitialInterval: 2 * time.Second, MaxInterval: time.Minute}, custom.DecisionRetry)
	require.NoError(t, custom.Validate())
}

func TestConfigValidateNamesFields(t *testing.T) {
	bad, err := loadConfig(t, "bad")
	require.NoError(t, err)
	err = bad.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"metrics_flush_interval must be positive",
		"max_cardinality must be at least 1",
		"max_attribute_length must be at least 1",
		"decision_dedup_cache_size must be at least 1",
		"run_duration_buckets[1] (5s) must be greater than run_duration_buckets[0] (10s)",
		"run_duration_buckets[2] must be positive",
		"decision_retry.queue_size must be at least 1",
		"decision_retry.initial_interval must be positive",
		"decision_retry.max_interval (-1s) must not be less than decision_retry.initial_interval (0s)",
		"decision_retry.max_elapsed_time must not be negative",
	} {
		assert.ErrorContains(t, err, want)
	}

	empty := createDefaultConfig().(*Config)
	empty.RunDurationBuckets = nil
	assert.ErrorContains(t, empty.Validate(), "run_duration_buckets must not be empty")
}

func TestConfigUnknownFieldRejected(t *testing.T) {
	_, err := loadConfig(t, "unknown_field")
	assert.ErrorContains(t, err, "flush_interval")
}

func TestDefaultBucketsAscending(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, cfg.Validate())
	// The default must not alias the package-level slice.
	cfg.RunDurationBuckets[0] = time.Hour
	assert.NotEqual(t, time.Hour, createDefaultConfig().(*Config).RunDurationBuckets[0])
}
