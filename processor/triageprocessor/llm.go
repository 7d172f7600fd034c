package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/classifier/llm"
	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadata"
	"github.com/triage-otel/triage/recovery"
)

// The model never runs on the pipeline's goroutine. A trace whose run the
// model must be asked about (a cache or a correction did not answer) is
// held — it stays among the traces being decided, so its late spans wait
// with it — while a goroutine asks; it is decided and forwarded when the
// answer arrives or the consultation times out. Held traces are bounded by
// llm.max_pending (beyond it a trace is decided without the model,
// counted); Shutdown cancels the consultations and forwards their traces.

// Skip reasons of the processor itself (beyond the consultant's).
const (
	skipPendingFull = "pending_full"
	skipShutdown    = "shutdown"
)

// modelAsker holds the consultant and the traces waiting for it.
type modelAsker struct {
	consultant *llm.Consultant
	tb         *metadata.TelemetryBuilder
	logger     *zap.Logger
	maxPending int

	mu        sync.Mutex
	closed    bool
	closeOnce sync.Once
	pending   int
	wg        sync.WaitGroup
	ctx       context.Context
	cancel    context.CancelFunc
}

func newModelAsker(cfg *Config, redactor *recovery.Redactor, tb *metadata.TelemetryBuilder, logger *zap.Logger) (*modelAsker, error) {
	o, err := cfg.LLM.options()
	if err != nil {
		return nil, err
	}
	o.Redactor = redactor
	o.Observer = &llmTelemetry{tb: tb}
	o.Shared = cfg.LLM.sharedCache(&cfg.Recovery)
	c, err := llm.New(o)
	if err != nil {
		if o.Shared != nil {
			_ = o.Shared.Close()
		}
		return nil, fmt.Errorf("llm: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &modelAsker{consultant: c, tb: tb, logger: logger, maxPending: cfg.LLM.MaxPending, ctx: ctx, cancel: cancel}, nil
}

// prepare consults without I/O on every run of a classified trace: a
// correction or a cached answer may type an unknown at once. It returns
// the consultations that need the model. Runs a partial buffer leaves
// incomplete get no verdict whatever the model says: they are not asked.
func (m *modelAsker) prepare(h *heldTrace, ct *classifiedTrace) []pendingRun {
	var out []pendingRun
	for i := range ct.runs {
		if incompleteReason(h, &ct.runs[i], &ct.verdicts[i]) != "" {
			continue
		}
		v, _, p := m.consultant.Prepare(ct.classifierFor(i), &ct.runs[i], ct.verdicts[i], ct.extras[i]...)
		ct.verdicts[i] = v
		if p != nil {
			out = append(out, pendingRun{run: i, p: p})
		}
	}
	return out
}

// pendingRun is a run of a held trace awaiting its answer.
type pendingRun struct {
	run int
	p   *llm.Pending
}

// hold reserves a place for a trace awaiting the model; false (counted)
// when llm.max_pending traces already wait or the processor is shutting
// down: the trace is then decided without the model.
func (m *modelAsker) hold(ctx context.Context, runs int) bool {
	m.mu.Lock()
	reason := ""
	switch {
	case m.closed:
		reason = skipShutdown
	case m.pending >= m.maxPending:
		reason = skipPendingFull
	default:
		m.pending++
		m.wg.Add(1)
	}
	m.mu.Unlock()
	if reason != "" {
		m.tb.ProcessorTriageLlmSkipped.Add(ctx, int64(runs), metric.WithAttributes(attribute.String("reason", reason)))
		return false
	}
	m.tb.ProcessorTriageLlmPending.Add(ctx, 1)
	return true
}

// ask resolves the pending runs (bounded by llm.timeout each, cancelled by
// Shutdown), then calls done; it releases the hold.
func (m *modelAsker) ask(ct *classifiedTrace, pending []pendingRun, done func()) {
	go func() {
		defer func() {
			m.mu.Lock()
			m.pending--
			m.mu.Unlock()
			m.tb.ProcessorTriageLlmPending.Add(context.Background(), -1)
			m.wg.Done()
		}()
		for _, pr := range pending {
			ct.verdicts[pr.run], _ = m.consultant.Resolve(m.ctx, pr.p)
		}
		done()
	}()
}

// stop refuses new holds, cancels the consultations in flight and waits
// (within ctx) for their traces to be decided and forwarded.
func (m *modelAsker) stop(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	waited := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(waited)
	}()
	var err error
	select {
	case <-waited:
	case <-ctx.Done():
		err = fmt.Errorf("waiting for traces held for the model: %w", ctx.Err())
	}
	m.closeOnce.Do(func() {
		if cerr := m.consultant.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing the llm answer cache: %w", cerr))
		}
	})
	return err
}

// llmTelemetry turns consultations into the processor's telemetry.
type llmTelemetry struct {
	tb *metadata.TelemetryBuilder
}

var _ llm.Observer = (*llmTelemetry)(nil)

func (t *llmTelemetry) Call(outcome string, latency time.Duration) {
	ctx := context.Background()
	t.tb.ProcessorTriageLlmCalls.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
	t.tb.ProcessorTriageLlmCallLatency.Record(ctx, float64(latency)/float64(time.Millisecond))
}

func (t *llmTelemetry) CacheHit(source string) {
	t.tb.ProcessorTriageLlmCacheHits.Add(context.Background(), 1, metric.WithAttributes(attribute.String("source", source)))
}

func (t *llmTelemetry) Rejected(gate string) {
	t.tb.ProcessorTriageLlmRejections.Add(context.Background(), 1, metric.WithAttributes(attribute.String("gate", gate)))
}

func (t *llmTelemetry) Accepted(ft classifier.FailureType) {
	t.tb.ProcessorTriageLlmAccepted.Add(context.Background(), 1, metric.WithAttributes(attribute.String("failure_type", string(ft))))
}

func (t *llmTelemetry) Error(kind string) {
	t.tb.ProcessorTriageLlmErrors.Add(context.Background(), 1, metric.WithAttributes(attribute.String("error", kind)))
}

func (t *llmTelemetry) Skipped(reason string) {
	t.tb.ProcessorTriageLlmSkipped.Add(context.Background(), 1, metric.WithAttributes(attribute.String("reason", reason)))
}
