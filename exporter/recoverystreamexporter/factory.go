package recoverystreamexporter // import "github.com/triage-otel/triage/exporter/recoverystreamexporter"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/triage-otel/triage/exporter/recoverystreamexporter/internal/metadata"
)

// Defaults.
const (
	DefaultStream = "triage:decisions"
	DefaultMaxLen = 100_000
)

// NewFactory returns the factory of the recovery_stream exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	retry := configretry.NewDefaultBackOffConfig()
	// A decision is acted on by a waiting agent: retry soon after a failure.
	retry.InitialInterval = time.Second
	return &Config{
		Endpoint:    "localhost:6379",
		TLS:         configtls.ClientConfig{Insecure: true},
		Timeout:     5 * time.Second,
		Stream:      DefaultStream,
		MaxLen:      DefaultMaxLen,
		RetryConfig: retry,
		QueueConfig: configoptional.Some(exporterhelper.NewDefaultQueueConfig()),
	}
}

func createLogs(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
	c := cfg.(*Config)
	exp, err := newStreamExporter(c, set)
	if err != nil {
		return nil, err
	}
	return exporterhelper.NewLogs(ctx, set, cfg, exp.pushLogs,
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		// The Redis client's timeouts bound each attempt.
		exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{Timeout: 0}),
		exporterhelper.WithRetry(c.RetryConfig),
		exporterhelper.WithQueue(c.QueueConfig),
		exporterhelper.WithStart(exp.start),
		exporterhelper.WithShutdown(exp.shutdown),
	)
}
