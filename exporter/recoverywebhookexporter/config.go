package recoverywebhookexporter // import "github.com/triage-otel/triage/exporter/recoverywebhookexporter"

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

// secretPrefix marks a Standard Webhooks secret: the rest is the base64 of
// the HMAC key. Any other secret is used as the key byte for byte.
const secretPrefix = "whsec_"

// Config configures the recovery_webhook exporter.
type Config struct {
	// ClientConfig holds endpoint, timeout, headers, TLS, proxy, compression.
	ClientConfig confighttp.ClientConfig `mapstructure:",squash"`

	// Secret signs every request (webhook-signature). Either "whsec_<base64
	// key>" (the Standard Webhooks form) or any other string, used raw as the
	// key. Opaque, so it never appears in logs or in a dumped config.
	Secret configopaque.String `mapstructure:"secret"`

	// AllowUnsigned permits an empty secret; requests then carry webhook-id
	// and webhook-timestamp but no webhook-signature. For local sinks only.
	AllowUnsigned bool `mapstructure:"allow_unsigned"`

	RetryConfig configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`
	QueueConfig configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// reservedHeaders are set by the exporter on every request; a configured
// header of the same name would silently replace the signature.
var reservedHeaders = []string{"webhook-id", "webhook-timestamp", "webhook-signature", "content-type"}

// Validate checks the configuration; every error names the offending field.
func (cfg *Config) Validate() error {
	var errs []error
	if cfg.ClientConfig.Endpoint == "" {
		errs = append(errs, errors.New("endpoint: required"))
	} else if u, err := url.Parse(cfg.ClientConfig.Endpoint); err != nil {
		errs = append(errs, fmt.Errorf("endpoint: not a valid URL: %w", err))
	} else if u.Scheme != "http" && u.Scheme != "https" {
		errs = append(errs, fmt.Errorf("endpoint: scheme must be http or https, got %q", u.Scheme))
	} else if u.Host == "" {
		errs = append(errs, errors.New("endpoint: URL has no host"))
	}
	if cfg.Secret == "" {
		if !cfg.AllowUnsigned {
			errs = append(errs, errors.New("secret: required (set allow_unsigned: true to send unsigned requests)"))
		}
	} else if _, err := signingKey(cfg.Secret); err != nil {
		errs = append(errs, err)
	}
	if cfg.ClientConfig.Timeout < 0 {
		errs = append(errs, errors.New("timeout: must not be negative"))
	}
	for name := range cfg.ClientConfig.Headers.Iter {
		for _, reserved := range reservedHeaders {
			if strings.EqualFold(name, reserved) {
				errs = append(errs, fmt.Errorf("headers: %q is set by the exporter and cannot be configured", name))
			}
		}
	}
	return errors.Join(errs...)
}

// signingKey turns the configured secret into the HMAC key. The error never
// includes the secret itself.
func signingKey(secret configopaque.String) ([]byte, error) {
	s := string(secret)
	if !strings.HasPrefix(s, secretPrefix) {
		return []byte(s), nil
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, secretPrefix))
	if err != nil {
		return nil, errors.New("secret: starts with whsec_ but the rest is not valid standard base64")
	}
	if len(key) == 0 {
		return nil, errors.New("secret: whsec_ key is empty")
	}
	return key, nil
}
