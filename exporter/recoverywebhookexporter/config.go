package recoverywebhookexporter // import "github.com/triage-otel/triage/exporter/recoverywebhookexporter"

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"strings"

	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

// secretPrefix marks a Standard Webhooks secret: the rest is the base64 of
// the HMAC key. Any other secret is used as the key byte for byte.
const secretPrefix = "whsec_"

// minKeyBytes is the shortest HMAC key accepted: a shorter secret can be
// guessed offline from one signed request.
const minKeyBytes = 16

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
	} else if key, err := signingKey(cfg.Secret); err != nil {
		errs = append(errs, err)
	} else if len(key) < minKeyBytes {
		errs = append(errs, fmt.Errorf("secret: the signing key is %d bytes, use at least %d (e.g. echo \"whsec_$(head -c 32 /dev/urandom | base64)\")", len(key), minKeyBytes))
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

var _ confmap.Unmarshaler = (*Config)(nil)

// Unmarshal decodes the configuration and rejects unknown keys, as every
// other component does. confighttp.ClientConfig (v0.161) decodes with
// WithIgnoreUnused because it is usually squash-embedded, and as its
// Unmarshal receives the whole map, the embedding config inherits the
// leniency: "timout" or "secrett" would be ignored without a word. So the
// map is also decoded, strictly, into a mirror of Config in which the
// client settings have a type without that Unmarshal.
func (cfg *Config) Unmarshal(conf *confmap.Conf) error {
	type plain Config // no Unmarshal method: no recursion
	if err := conf.Unmarshal((*plain)(cfg)); err != nil {
		return err
	}
	return conf.Unmarshal(strictMirror())
}

// strictClientConfig has ClientConfig's fields and tags, not its methods.
type strictClientConfig confighttp.ClientConfig

// strictMirror returns a pointer to a zero struct with Config's exported
// fields, the squashed client settings as strictClientConfig.
func strictMirror() any {
	t := reflect.TypeFor[Config]()
	client := reflect.TypeFor[confighttp.ClientConfig]()
	var fields []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Type == client {
			f.Type = reflect.TypeFor[strictClientConfig]()
		}
		fields = append(fields, f)
	}
	return reflect.New(reflect.StructOf(fields)).Interface()
}

// Warnings about a configuration that works but exposes the decisions or
// the receiver; the exporter logs them at startup. They name the field.
func (cfg *Config) Warnings() []string {
	var out []string
	u, err := url.Parse(cfg.ClientConfig.Endpoint)
	if err != nil || u.Host == "" {
		return nil // Validate reports it
	}
	remote := !isLoopback(u.Hostname())
	if remote && u.Scheme == "http" {
		out = append(out, fmt.Sprintf("endpoint %q is plain http:// to a host that is not loopback: decisions (and their signatures) travel unencrypted; use https://", redactURL(u)))
	}
	if remote && cfg.Secret == "" {
		out = append(out, fmt.Sprintf("secret is empty (allow_unsigned) and endpoint %q is not loopback: the receiver cannot tell these decisions from forged ones; set a secret", redactURL(u)))
	}
	if tls := cfg.ClientConfig.TLS; tls.InsecureSkipVerify {
		out = append(out, "tls.insecure_skip_verify is true: the receiver's certificate is not checked, so anyone on the path can read and answer the decisions")
	}
	return out
}

// isLoopback reports whether host names this machine without DNS:
// localhost or a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redactURL prints an endpoint without its user info and query, which may
// hold credentials.
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	c.Fragment = ""
	return c.String()
}
