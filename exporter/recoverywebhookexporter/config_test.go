package recoverywebhookexporter

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

	"github.com/triage-otel/triage/exporter/recoverywebhookexporter/internal/metadata"
)

// loadConfig resolves testdata/config.yaml the way the collector does (file
// and env providers), so ${env:...} is exercised for real.
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
	assert.Equal(t, "https://agents.example.com/hooks/recovery", cfg.ClientConfig.Endpoint)
	assert.Equal(t, 10*time.Second, cfg.ClientConfig.Timeout)
	assert.True(t, cfg.RetryConfig.Enabled)
	assert.Equal(t, time.Second, cfg.RetryConfig.InitialInterval)
	assert.True(t, cfg.QueueConfig.HasValue())
	assert.Nil(t, cfg.QueueConfig.Get().StorageID)

	key, err := signingKey(cfg.Secret)
	require.NoError(t, err)
	assert.Len(t, key, 24, "whsec_ secret is base64-decoded into the key")
}

func TestLoadConfigFull(t *testing.T) {
	t.Setenv("TRIAGE_WEBHOOK_SECRET", "from-the-environment")
	cfg, err := loadConfig(t, "full")
	require.NoError(t, err)
	assert.Equal(t, configopaque.String("from-the-environment"), cfg.Secret)
	assert.Equal(t, 3*time.Second, cfg.ClientConfig.Timeout)
	v, ok := cfg.ClientConfig.Headers.Get("X-Tenant")
	require.True(t, ok)
	assert.Equal(t, configopaque.String("team-a"), v)
	assert.Equal(t, 2*time.Second, cfg.RetryConfig.InitialInterval)
	assert.Equal(t, 15*time.Minute, cfg.RetryConfig.MaxElapsedTime)
	q := cfg.QueueConfig.Get()
	require.NotNil(t, q)
	require.NotNil(t, q.StorageID)
	assert.Equal(t, "file_storage", q.StorageID.String())
	assert.Equal(t, int64(5000), q.QueueSize)
	assert.Equal(t, 2, q.NumConsumers)

	key, err := signingKey(cfg.Secret)
	require.NoError(t, err)
	assert.Equal(t, []byte("from-the-environment"), key, "a secret without whsec_ is the raw key")
}

func TestLoadConfigUnsigned(t *testing.T) {
	cfg, err := loadConfig(t, "unsigned")
	require.NoError(t, err)
	assert.True(t, cfg.AllowUnsigned)
	assert.Empty(t, cfg.Secret)
}

func TestLoadConfigInvalid(t *testing.T) {
	for name, want := range map[string]string{
		"no_endpoint":     "endpoint: required",
		"bad_url":         "endpoint: scheme must be http or https",
		"no_secret":       "secret: required",
		"bad_whsec":       "secret: starts with whsec_",
		"reserved_header": `headers: "Webhook-Signature" is set by the exporter`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadConfig(t, name)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}

func TestValidateErrorsNeverContainTheSecret(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = "http://localhost:1/x"
	cfg.Secret = "whsec_THIS-IS-SECRET%%"
	err := cfg.Validate()
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "THIS-IS-SECRET")
}
