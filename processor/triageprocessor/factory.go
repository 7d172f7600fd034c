package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"context"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"

	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadata"
)

// Defaults. Agent traces carry prompts and tool payloads, so spans are
// large: the byte limits matter more than the span counts.
const (
	defaultDecisionWait       = 30 * time.Second
	defaultNumTraces          = 10_000
	defaultMaxSpansPerTrace   = 5_000
	defaultMaxTraceBytes      = 16 << 20
	defaultMaxBytes           = 512 << 20
	defaultDecisionCacheSize  = 100_000
	defaultDecisionCacheBytes = 64 << 20
)

// NewFactory returns the factory of the triage processor (type "triage").
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithTraces(createTracesProcessor, metadata.TracesStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		DecisionWait:       defaultDecisionWait,
		NumTraces:          defaultNumTraces,
		MaxSpansPerTrace:   defaultMaxSpansPerTrace,
		MaxTraceBytes:      defaultMaxTraceBytes,
		MaxBytes:           defaultMaxBytes,
		DecisionCacheSize:  defaultDecisionCacheSize,
		DecisionCacheBytes: defaultDecisionCacheBytes,
		ErrorMode:          ottl.IgnoreError,
		Recovery:           defaultRecoveryConfig(),
		LLM:                defaultLLMConfig(),
	}
}

func createTracesProcessor(
	_ context.Context,
	set processor.Settings,
	cfg component.Config,
	next consumer.Traces,
) (processor.Traces, error) {
	return newTriageProcessor(set, cfg.(*Config), next)
}
