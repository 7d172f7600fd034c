package recoverystreamexporter

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"

	"github.com/triage-otel/triage/exporter/recoverystreamexporter/internal/metadata"
)

func loadConfig(t *testing.T, name string) (*Config, error) {
	t.Helper()
	resolver, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs:              []string{"file:" + filepath.Join("testdata", "config.yaml")},
		ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
		DefaultScheme:     "env",
	})
	require.NoError(t, err)
	conf, err := resolver.Resolve(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = resolver.Shutdown(context.Background()) })

	id := component.NewIDWithName(metadata.Type, name)
	if name == "" {
		id = component.NewID(metadata.Type)
	}
	sub, err := conf.Sub(id.String())
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg, confmap.Validate(cfg)
}

func TestLoadConfigDefaults(t *testing.T) {
	cfg, err := loadConfig(t, "")
	require.NoError(t, err)
	assert.Equal(t, "localhost:6379", cfg.Endpoint)
	assert.Equal(t, DefaultStream, cfg.Stream)
	assert.Equal(t, int64(DefaultMaxLen), cfg.MaxLen)
	assert.True(t, cfg.TLS.Insecure, "plaintext unless TLS is asked for")
	assert.Equal(t, 5*time.Second, cfg.Timeout)
	assert.True(t, cfg.RetryConfig.Enabled)
	assert.True(t, cfg.QueueConfig.HasValue())
}

func TestLoadConfigFull(t *testing.T) {
	t.Setenv("TRIAGE_REDIS_PASSWORD", "pw-from-env")
	cfg, err := loadConfig(t, "full")
	require.NoError(t, err)
	assert.Equal(t, "redis.internal:6380", cfg.Endpoint)
	assert.Equal(t, "triage", cfg.Username)
	assert.Equal(t, configopaque.String("pw-from-env"), cfg.Password)
	assert.Equal(t, 2, cfg.DB)
	assert.Equal(t, 2*time.Second, cfg.Timeout)
	assert.False(t, cfg.TLS.Insecure)
	assert.Equal(t, "/etc/ssl/redis-ca.pem", cfg.TLS.CAFile)
	assert.Equal(t, "agents:recovery", cfg.Stream)
	assert.Equal(t, int64(5000), cfg.MaxLen)
	assert.Equal(t, 30*time.Minute, cfg.RetryConfig.MaxElapsedTime)
	q := cfg.QueueConfig.Get()
	require.NotNil(t, q)
	require.NotNil(t, q.StorageID)
	assert.Equal(t, "file_storage", q.StorageID.String())
}

func TestLoadConfigNoTrim(t *testing.T) {
	cfg, err := loadConfig(t, "no_trim")
	require.NoError(t, err)
	assert.Zero(t, cfg.MaxLen)
}

func TestLoadConfigInvalid(t *testing.T) {
	for name, want := range map[string]string{
		"empty_stream":    "stream: must not be empty",
		"negative_maxlen": "maxlen: must be >= 0",
		"bad_endpoint":    "endpoint: must be host:port",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadConfig(t, name)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Endpoint = ""
	cfg.DB = -1
	err := cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "endpoint: required")
	assert.Contains(t, err.Error(), "db: must be >= 0")
}
