package triageconnector // import "github.com/triage-otel/triage/connector/triageconnector"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/triage-otel/triage/connector/triageconnector/internal/metadata"
)

// Defaults. Agent runs last from under a second to tens of minutes, hence
// the wide duration buckets.
const (
	defaultMetricsFlushInterval   = 15 * time.Second
	defaultMaxCardinality         = 1000
	defaultMaxAttributeLength     = 64
	defaultDecisionDedupCacheSize = 10_000
)

// Decision retry defaults: a full sending queue drains in seconds; past 15
// minutes (the delivery exporters' own retry bound) a decision is stale.
const (
	defaultRetryQueueSize       = 10_000
	defaultRetryInitialInterval = time.Second
	defaultRetryMaxInterval     = 30 * time.Second
	defaultRetryMaxElapsedTime  = 15 * time.Minute
)

var defaultRunDurationBuckets = []time.Duration{
	250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2500 * time.Millisecond,
	5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute,
	5 * time.Minute, 10 * time.Minute, 30 * time.Minute,
}

// NewFactory returns the factory of the triage connector (type "triage").
func NewFactory() connector.Factory {
	return connector.NewFactory(
		metadata.Type,
		createDefaultConfig,
		connector.WithTracesToLogs(createTracesToLogs, metadata.TracesToLogsStability),
		connector.WithTracesToMetrics(createTracesToMetrics, metadata.TracesToMetricsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		MetricsFlushInterval:   defaultMetricsFlushInterval,
		MaxCardinality:         defaultMaxCardinality,
		MaxAttributeLength:     defaultMaxAttributeLength,
		RunDurationBuckets:     append([]time.Duration(nil), defaultRunDurationBuckets...),
		DecisionDedupCacheSize: defaultDecisionDedupCacheSize,
		DecisionRetry: DecisionRetryConfig{
			QueueSize:       defaultRetryQueueSize,
			InitialInterval: defaultRetryInitialInterval,
			MaxInterval:     defaultRetryMaxInterval,
			MaxElapsedTime:  defaultRetryMaxElapsedTime,
		},
	}
}

func createTracesToLogs(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Logs) (connector.Traces, error) {
	return newLogsConnector(set, cfg.(*Config), next)
}

func createTracesToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
	return newMetricsConnector(set, cfg.(*Config), next)
}
