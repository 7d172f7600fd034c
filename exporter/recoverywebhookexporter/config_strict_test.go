package recoverywebhookexporter

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triage-otel/triage/exporter/recoverywebhookexporter/internal/metadata"
)

// Unknown keys are rejected like in every other component, also the ones
// confighttp's lenient decoding would swallow.
func TestUnknownKeysRejected(t *testing.T) {
	for name, want := range map[string][]string{
		"unknown_keys":       {"timout", "secrett"},
		"unknown_nested_key": {"insecure_skip_verfy"},
		"unknown_retry_key":  {"max_elapsed"},
	} {
		t.Run(name, func(t *testing.T) {
			err := unmarshalConfig(t, name)
			require.Error(t, err)
			for _, w := range want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "another-secret-value", "the error does not echo values")
		})
	}
	// Every key of the full example is still accepted.
	t.Setenv("TRIAGE_WEBHOOK_SECRET", "from-the-environment")
	_, err := loadConfig(t, "full")
	require.NoError(t, err)
}

// unmarshalConfig decodes one testdata entry and returns the decoding error.
func unmarshalConfig(t *testing.T, name string) error {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	return sub.Unmarshal(NewFactory().CreateDefaultConfig())
}

func TestShortSecretsRefused(t *testing.T) {
	for _, name := range []string{"short_secret", "short_whsec"} {
		t.Run(name, func(t *testing.T) {
			_, err := loadConfig(t, name)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "secret: the signing key is")
			assert.Contains(t, err.Error(), "use at least 16")
			assert.NotContains(t, err.Error(), "s3cret")
		})
	}
}

func TestInsecureConfigurationsWarned(t *testing.T) {
	cases := []struct {
		name     string
		endpoint string
		secret   string
		skip     bool
		want     []string // substrings, one warning each
	}{
		{"https remote signed", "https://agents.example.com/hooks", testSecret, false, nil},
		{"http loopback signed", "http://127.0.0.1:9000/decisions", testSecret, false, nil},
		{"http localhost unsigned", "http://localhost:9000/decisions", "", false, nil},
		{"http ipv6 loopback unsigned", "http://[::1]:9000/decisions", "", false, nil},
		{"http remote", "http://agents.internal:9000/decisions", testSecret, false, []string{"plain http:// to a host that is not loopback"}},
		{"unsigned remote", "https://agents.example.com/hooks", "", false, []string{"allow_unsigned"}},
		{"http remote unsigned", "http://10.0.0.7/hooks", "", false, []string{"plain http://", "allow_unsigned"}},
		{"insecure_skip_verify", "https://agents.example.com/hooks", testSecret, true, []string{"tls.insecure_skip_verify"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig().(*Config)
			cfg.ClientConfig.Endpoint = c.endpoint
			cfg.Secret = configopaque.String(c.secret)
			cfg.AllowUnsigned = c.secret == ""
			cfg.ClientConfig.TLS.InsecureSkipVerify = c.skip
			require.NoError(t, cfg.Validate(), "warned about, not refused")

			core, logs := observer.New(zapcore.WarnLevel)
			set := exportertest.NewNopSettings(NewFactory().Type())
			set.Logger = zap.New(core)
			exp, err := NewFactory().CreateLogs(context.Background(), set, cfg)
			require.NoError(t, err)
			require.NoError(t, exp.Shutdown(context.Background()))

			got := logs.FilterMessageSnippet("insecure recovery_webhook configuration").All()
			require.Len(t, got, len(c.want), "warnings: %v", got)
			for i, w := range c.want {
				assert.Contains(t, got[i].Message, w)
			}
			for _, e := range got {
				assert.False(t, strings.Contains(e.Message, c.secret) && c.secret != "")
			}
		})
	}
}

func TestWarningsHideEndpointCredentials(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = "http://user:hunter2-password@agents.internal/hooks?token=query-token-value"
	cfg.Secret = testSecret
	w := strings.Join(cfg.Warnings(), "\n")
	require.Contains(t, w, "agents.internal")
	assert.NotContains(t, w, "hunter2-password")
	assert.NotContains(t, w, "query-token-value")
}
