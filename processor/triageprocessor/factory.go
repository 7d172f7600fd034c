package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"context"
	"errors"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"

	"github.com/triage-otel/triage/guard"
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

	defaultSettleWait            = 2 * time.Second
	defaultLogsWait              = 5 * time.Second
	defaultMaxLogRecordsPerTrace = 2_000
	defaultMaxLogBytes           = 64 << 20
)

// NewFactory returns the factory of the triage processor (type "triage").
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithTraces(createTracesProcessor, metadata.TracesStability),
		processor.WithLogs(createLogsProcessor, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		DecisionWait:          defaultDecisionWait,
		NumTraces:             defaultNumTraces,
		MaxSpansPerTrace:      defaultMaxSpansPerTrace,
		MaxTraceBytes:         defaultMaxTraceBytes,
		MaxBytes:              defaultMaxBytes,
		DecisionCacheSize:     defaultDecisionCacheSize,
		DecisionCacheBytes:    defaultDecisionCacheBytes,
		SettleWait:            defaultSettleWait,
		LogsWait:              defaultLogsWait,
		MaxLogRecordsPerTrace: defaultMaxLogRecordsPerTrace,
		MaxLogBytes:           defaultMaxLogBytes,
		EvaluationEvents:      true,
		ErrorMode:             ottl.IgnoreError,
		Recovery:              defaultRecoveryConfig(),
		LLM:                   defaultLLMConfig(),
		Guards:                guard.DefaultConfig(),
	}
}

// createTracesProcessor returns the traces instance of the component's
// state, shared with its logs instances (shared.go).
func createTracesProcessor(
	_ context.Context,
	set processor.Settings,
	cfg component.Config,
	next consumer.Traces,
) (processor.Traces, error) {
	if next == nil {
		return nil, errors.New("nil next consumer")
	}
	p, release, err := states.acquire(cfg.(*Config), true, func() (*triageProcessor, error) {
		return newCore(set, cfg.(*Config))
	})
	if err != nil {
		return nil, err
	}
	p.next = next
	p.releaseTraces = release
	return p, nil
}

// createLogsProcessor returns a logs instance: it forwards every log record
// unchanged and joins the GenAI events among them to the traces the shared
// state holds.
func createLogsProcessor(
	_ context.Context,
	set processor.Settings,
	cfg component.Config,
	next consumer.Logs,
) (processor.Logs, error) {
	if next == nil {
		return nil, errors.New("nil next consumer")
	}
	p, release, err := states.acquire(cfg.(*Config), false, func() (*triageProcessor, error) {
		return newCore(set, cfg.(*Config))
	})
	if err != nil {
		return nil, err
	}
	return &logsProcessor{p: p, next: next, release: release}, nil
}
