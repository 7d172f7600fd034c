package triageconnector // import "github.com/triage-otel/triage/connector/triageconnector"

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/triage-otel/triage/connector/triageconnector/internal/metadata"
)

// Reasons of connector_triage_decisions_dropped.
const (
	dropQueueFull = "queue_full"
	dropExpired   = "expired"
	dropPermanent = "permanent"
	dropShutdown  = "shutdown"
)

// DecisionRetryConfig bounds the retry of decisions the logs pipeline
// refused (e.g. a delivery exporter's sending queue was full).
type DecisionRetryConfig struct {
	// QueueSize is how many refused decisions are held for retry; beyond
	// it new refusals are dropped (counted and logged).
	QueueSize int `mapstructure:"queue_size"`
	// InitialInterval is the wait before the first retry; it doubles after
	// each failed round up to MaxInterval and starts again after a success.
	InitialInterval time.Duration `mapstructure:"initial_interval"`
	MaxInterval     time.Duration `mapstructure:"max_interval"`
	// MaxElapsedTime drops a decision still refused this long after the
	// first refusal; 0 keeps retrying while it fits in the queue.
	MaxElapsedTime time.Duration `mapstructure:"max_elapsed_time"`
}

// pendingBatch is one refused batch of decision records.
type pendingBatch struct {
	logs    plog.Logs
	records int
	keys    []string // their keys in the duplicate filter
	since   time.Time
}

// decisionSender offers decision records to the logs pipeline and never
// hands a refusal back to the traces pipeline: the spans that carried the
// decisions have been forwarded to the other consumers of the traces
// pipeline already, and a retryable error there makes OTLP clients send
// them again (duplicates). A refused batch is retried from here, with
// back-off, in a bounded queue; what cannot be kept is counted and logged.
type decisionSender struct {
	cfg    DecisionRetryConfig
	next   consumer.Logs
	tb     *metadata.TelemetryBuilder
	logger *zap.Logger
	seen   *seenRuns
	now    func() time.Time

	mu      sync.Mutex
	pending []pendingBatch
	queued  int // records in pending

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

func newDecisionSender(cfg DecisionRetryConfig, next consumer.Logs, tb *metadata.TelemetryBuilder, logger *zap.Logger, seen *seenRuns) *decisionSender {
	return &decisionSender{
		cfg: cfg, next: next, tb: tb, logger: logger, seen: seen, now: time.Now,
		wake: make(chan struct{}, 1),
	}
}

func (s *decisionSender) start() {
	s.stop = make(chan struct{})
	s.done = make(chan struct{})
	go s.loop(s.stop, s.done)
}

// send offers a batch once; a refusal queues it for retry.
func (s *decisionSender) send(ctx context.Context, ld plog.Logs, keys []string) {
	n := ld.LogRecordCount()
	err := s.next.ConsumeLogs(ctx, ld)
	if err == nil {
		s.tb.ConnectorTriageDecisionsEmitted.Add(ctx, int64(n))
		return
	}
	if consumererror.IsPermanent(err) {
		s.drop(ctx, dropPermanent, n, keys, err)
		return
	}
	s.tb.ConnectorTriageDecisionsRefused.Add(ctx, int64(n))
	s.mu.Lock()
	if s.queued+n > s.cfg.QueueSize {
		s.mu.Unlock()
		s.drop(ctx, dropQueueFull, n, keys, err)
		return
	}
	s.pending = append(s.pending, pendingBatch{logs: ld, records: n, keys: keys, since: s.now()})
	s.queued += n
	first := len(s.pending) == 1
	s.mu.Unlock()
	s.tb.ConnectorTriageDecisionsRetryQueue.Add(ctx, int64(n))
	if first {
		s.logger.Warn("the logs pipeline refused recovery decisions; they are kept and retried with back-off (the traces pipeline is not told, so spans are not resent)",
			zap.Int("decisions", n), zap.Error(err))
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *decisionSender) drop(ctx context.Context, reason string, n int, keys []string, err error) {
	s.seen.forget(keys)
	s.tb.ConnectorTriageDecisionsDropped.Add(ctx, int64(n), metric.WithAttributes(attribute.String("reason", reason)))
	s.logger.Error("recovery decisions dropped", zap.String("reason", reason), zap.Int("decisions", n), zap.Error(err))
}

// loop retries the queue: after InitialInterval, doubling up to
// MaxInterval while the pipeline keeps refusing.
func (s *decisionSender) loop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	interval := s.cfg.InitialInterval
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	for {
		select {
		case <-stop:
			timer.Stop()
			return
		case <-s.wake:
			if !armed {
				timer.Reset(interval)
				armed = true
			}
		case <-timer.C:
			armed = false
			delivered, left := s.retry(context.Background(), false)
			switch {
			case left == 0:
				interval = s.cfg.InitialInterval
				continue
			case delivered > 0:
				interval = s.cfg.InitialInterval
			default:
				interval = min(2*interval, s.cfg.MaxInterval)
			}
			timer.Reset(interval)
			armed = true
		}
	}
}

// retry offers every queued batch once, in order, and returns how many
// batches were delivered and how many are left. Expired batches (and, at
// shutdown, refused ones) are dropped.
func (s *decisionSender) retry(ctx context.Context, final bool) (delivered, left int) {
	s.mu.Lock()
	batches := s.pending
	s.pending = nil
	s.mu.Unlock()

	var keep []pendingBatch
	now := s.now()
	for i, b := range batches {
		if s.cfg.MaxElapsedTime > 0 && now.Sub(b.since) > s.cfg.MaxElapsedTime {
			s.release(ctx, b)
			s.drop(ctx, dropExpired, b.records, b.keys, errors.New("still refused after max_elapsed_time"))
			continue
		}
		err := s.next.ConsumeLogs(ctx, b.logs)
		switch {
		case err == nil:
			s.release(ctx, b)
			s.tb.ConnectorTriageDecisionsEmitted.Add(ctx, int64(b.records))
			delivered++
		case consumererror.IsPermanent(err):
			s.release(ctx, b)
			s.drop(ctx, dropPermanent, b.records, b.keys, err)
		case final:
			s.release(ctx, b)
			s.drop(ctx, dropShutdown, b.records, b.keys, err)
		default:
			// Still refused: keep it and the ones not tried this round.
			keep = append(keep, batches[i:]...)
			s.mu.Lock()
			s.pending = append(keep, s.pending...)
			left = len(s.pending)
			s.mu.Unlock()
			return delivered, left
		}
	}
	s.mu.Lock()
	left = len(s.pending)
	s.mu.Unlock()
	return delivered, left
}

// release takes a batch out of the queue's accounting.
func (s *decisionSender) release(ctx context.Context, b pendingBatch) {
	s.mu.Lock()
	s.queued -= b.records
	s.mu.Unlock()
	s.tb.ConnectorTriageDecisionsRetryQueue.Add(ctx, -int64(b.records))
}

// shutdown stops the retries and offers what is queued one last time;
// what is still refused is dropped, counted and logged.
func (s *decisionSender) shutdown(ctx context.Context) {
	if s.stop != nil {
		close(s.stop)
		<-s.done
		s.stop = nil
	}
	s.retry(ctx, true)
}
