package recoverywebhookexporter // import "github.com/triage-otel/triage/exporter/recoverywebhookexporter"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/triage-otel/triage/exporter/recoverywebhookexporter/internal/metadata"
)

// NewFactory returns the factory of the recovery_webhook exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	client := confighttp.NewDefaultClientConfig()
	// One attempt is one small POST; a receiver slower than this is treated
	// as down and the decision is retried.
	client.Timeout = 10 * time.Second

	retry := configretry.NewDefaultBackOffConfig()
	// A decision is acted on by a waiting agent: retry soon after a failure.
	retry.InitialInterval = time.Second

	return &Config{
		ClientConfig: client,
		RetryConfig:  retry,
		QueueConfig:  configoptional.Some(exporterhelper.NewDefaultQueueConfig()),
	}
}

func createLogs(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
	c := cfg.(*Config)
	for _, w := range c.Warnings() {
		set.Logger.Warn("insecure recovery_webhook configuration: " + w)
	}
	exp, err := newWebhookExporter(c, set)
	if err != nil {
		return nil, err
	}
	return exporterhelper.NewLogs(ctx, set, cfg, exp.pushLogs,
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		// The HTTP client's timeout bounds each attempt; exporterhelper's own
		// timeout would only duplicate it.
		exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{Timeout: 0}),
		exporterhelper.WithRetry(c.RetryConfig),
		exporterhelper.WithQueue(c.QueueConfig),
		exporterhelper.WithStart(exp.start),
		exporterhelper.WithShutdown(exp.shutdown),
	)
}
