package recoverystreamexporter // import "github.com/triage-otel/triage/exporter/recoverystreamexporter"

import (
	"errors"
	"fmt"
	"net"
	"time"

	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

// Config configures the recovery_stream exporter.
type Config struct {
	// Endpoint is the Redis server as host:port.
	Endpoint string `mapstructure:"endpoint"`
	// Username for Redis ACL users; empty for the default user.
	Username string `mapstructure:"username"`
	// Password is opaque, so it never appears in logs or a dumped config.
	Password configopaque.String `mapstructure:"password"`
	// DB is the logical database number.
	DB int `mapstructure:"db"`
	// TLS: plaintext by default (insecure: true); set insecure: false (and
	// ca_file etc. as needed) to connect with TLS.
	TLS configtls.ClientConfig `mapstructure:"tls"`
	// Timeout bounds dialing and each XADD round trip.
	Timeout time.Duration `mapstructure:"timeout"`

	// Stream is the key of the Redis Stream decisions are appended to.
	Stream string `mapstructure:"stream"`
	// MaxLen trims the stream to about this many entries on every XADD
	// (MAXLEN ~); 0 disables trimming.
	MaxLen int64 `mapstructure:"maxlen"`

	RetryConfig configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`
	QueueConfig configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Validate checks the configuration; every error names the offending field.
func (cfg *Config) Validate() error {
	var errs []error
	if cfg.Endpoint == "" {
		errs = append(errs, errors.New("endpoint: required (host:port)"))
	} else if host, port, err := net.SplitHostPort(cfg.Endpoint); err != nil {
		errs = append(errs, fmt.Errorf("endpoint: must be host:port: %w", err))
	} else if host == "" || port == "" {
		errs = append(errs, fmt.Errorf("endpoint: must be host:port, got %q", cfg.Endpoint))
	}
	if cfg.Stream == "" {
		errs = append(errs, errors.New("stream: must not be empty"))
	}
	if cfg.MaxLen < 0 {
		errs = append(errs, fmt.Errorf("maxlen: must be >= 0 (0 disables trimming), got %d", cfg.MaxLen))
	}
	if cfg.DB < 0 {
		errs = append(errs, fmt.Errorf("db: must be >= 0, got %d", cfg.DB))
	}
	if cfg.Timeout < 0 {
		errs = append(errs, errors.New("timeout: must not be negative"))
	}
	return errors.Join(errs...)
}
