package triageconnector // import "github.com/triage-otel/triage/connector/triageconnector"

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/connector/triageconnector/internal/metadata"
)

// metricsConnector aggregates cumulative triage metrics and emits all of
// them every metrics_flush_interval and on shutdown.
type metricsConnector struct {
	cfg    *Config
	logger *zap.Logger
	next   consumer.Metrics
	tb     *metadata.TelemetryBuilder
	seen   *seenRuns
	now    func() time.Time

	mu         sync.Mutex
	runs       *metricAgg
	failures   *metricAgg
	incidents  *metricAgg
	decisions  *metricAgg
	inFlight   *metricAgg
	durations  *metricAgg
	shutDown   bool
	flushMu    sync.Mutex // serialises flushes so cumulative points go out in order
	lifecycle  sync.Mutex
	stop       chan struct{}
	tickerDone sync.WaitGroup
}

var _ connector.Traces = (*metricsConnector)(nil)

func newMetricsConnector(set connector.Settings, cfg *Config, next consumer.Metrics) (*metricsConnector, error) {
	if next == nil {
		return nil, errors.New("nil next consumer")
	}
	seen, err := newSeenRuns(cfg.DecisionDedupCacheSize)
	if err != nil {
		return nil, err
	}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	bounds := cfg.bucketBounds()
	return &metricsConnector{
		cfg:       cfg,
		logger:    set.Logger,
		next:      next,
		tb:        tb,
		seen:      seen,
		now:       time.Now,
		runs:      newMetricAgg(&metricRuns, cfg.MaxCardinality, nil),
		failures:  newMetricAgg(&metricFailures, cfg.MaxCardinality, nil),
		incidents: newMetricAgg(&metricIncidents, cfg.MaxCardinality, nil),
		decisions: newMetricAgg(&metricDecisions, cfg.MaxCardinality, nil),
		inFlight:  newMetricAgg(&metricInFlightDecisions, cfg.MaxCardinality, nil),
		durations: newMetricAgg(&metricRunDuration, cfg.MaxCardinality, bounds),
	}, nil
}

func (*metricsConnector) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// Start starts the flush ticker.
func (c *metricsConnector) Start(context.Context, component.Host) error {
	c.lifecycle.Lock()
	defer c.lifecycle.Unlock()
	if c.stop != nil {
		return nil
	}
	c.stop = make(chan struct{})
	c.tickerDone.Add(1)
	go c.flushLoop(c.stop)
	return nil
}

func (c *metricsConnector) flushLoop(stop <-chan struct{}) {
	defer c.tickerDone.Done()
	t := time.NewTicker(c.cfg.MetricsFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := c.flush(context.Background()); err != nil {
				c.logger.Warn("emitting triage metrics", zap.Error(err))
			}
		}
	}
}

// Shutdown stops the ticker and emits the metrics one last time, so that
// what was counted since the last flush is not lost.
func (c *metricsConnector) Shutdown(ctx context.Context) error {
	c.lifecycle.Lock()
	if c.stop != nil {
		close(c.stop)
		c.tickerDone.Wait()
		c.stop = nil
	}
	c.lifecycle.Unlock()

	c.mu.Lock()
	already := c.shutDown
	c.shutDown = true
	c.mu.Unlock()
	if already {
		return nil
	}
	err := c.flush(ctx)
	c.tb.Shutdown()
	return err
}

// ConsumeTraces counts the runs and incidents of the batch. It never fails:
// bad annotations are counted as invalid input and recorded as "other".
func (c *metricsConnector) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	b := batchCount{rep: reporter{}, overflow: map[string]int64{}}

	c.mu.Lock()
	if c.shutDown {
		c.mu.Unlock()
		return nil
	}
	b.now = pcommon.NewTimestampFromTime(c.now())
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				c.countSpan(&b, spans.At(k), rs.Resource())
			}
		}
	}
	c.mu.Unlock()

	b.rep.record(ctx, c.tb)
	for name, n := range b.overflow {
		c.tb.ConnectorTriageCardinalityOverflow.Add(ctx, n, metric.WithAttributes(attribute.String("metric", name)))
	}
	if b.newSeries > 0 {
		c.tb.ConnectorTriageSeries.Add(ctx, b.newSeries)
	}
	if b.dups > 0 {
		c.tb.ConnectorTriageRunsDuplicate.Add(ctx, b.dups)
	}
	return nil
}

// batchCount is what counting one batch found, recorded in telemetry once
// the lock is released.
type batchCount struct {
	rep       reporter
	now       pcommon.Timestamp
	overflow  map[string]int64 // series refused by the cardinality limit, by metric
	newSeries int64
	dups      int64 // runs and decisions seen before
}

// inc counts one observation v of metric m for the label values.
func (b *batchCount) inc(m *metricAgg, v float64, values ...string) {
	s, over, created := m.seriesFor(values, b.now)
	if created {
		b.newSeries++
	}
	if over {
		b.overflow[m.def.name]++
	}
	if m.def.kind == kindHistogram {
		m.observe(s, v)
	} else {
		s.count++
	}
}

// countSpan counts what one span's triage.* annotations report: an
// incident, an in-flight decision, or a run (its verdict, duration,
// failure and decision), each once. Called with c.mu held.
func (c *metricsConnector) countSpan(b *batchCount, span ptrace.Span, res pcommon.Resource) {
	rep := b.rep
	if recovered, ok := readRecovered(span, rep); ok {
		ft := valueOther
		if s, ok := rep.str(span.Attributes(), attrFailureType); ok {
			ft = rep.enum(s, attrFailureType, failureTypeValues)
		} else {
			rep.add(reasonMissingAttribute, attrFailureType)
		}
		b.inc(c.incidents, 1, ft, recovered)
	}
	if d := readInFlight(span, rep); d != nil {
		if d.ID != "" && !c.seen.add(decisionKey(d.ID)) {
			b.dups++
			return
		}
		b.inc(c.inFlight, 1, rep.enum(d.Guard, attrGuard, guardValues), rep.enum(d.ActionKind, attrActionKind, actionValues))
		return
	}
	run, ok := readRunRoot(span, res, rep)
	if !ok {
		return
	}
	if isLate(span, rep) {
		b.dups++ // its stand-ins carried the run
		return
	}
	if key := runKey(span.TraceID(), run); key != "" && !c.seen.add(key) {
		b.dups++
		return
	}
	maxLen := c.cfg.MaxAttributeLength
	b.inc(c.runs, 1, run.verdict)
	if run.durationOK && !run.rootMissing {
		b.inc(c.durations, run.duration, run.verdict)
	}
	if run.verdict == string(classifier.OutcomeFailed) {
		b.inc(c.failures, 1, run.failureType,
			truncate(run.service, maxLen), truncate(run.agent, maxLen), truncate(run.tool, maxLen))
	}
	if d := run.decision; d != nil {
		ft := run.failureType
		if ft == "" {
			ft = rep.enum(d.FailureType, attrFailureType, failureTypeValues)
		}
		b.inc(c.decisions, 1, ft, rep.enum(d.ActionKind, attrActionKind, actionValues))
	}
}

// snapshot builds the cumulative metrics at now; it returns false when
// nothing was counted yet.
func (c *metricsConnector) snapshot() (pmetric.Metrics, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	md := pmetric.NewMetrics()
	now := pcommon.NewTimestampFromTime(c.now())
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(metadata.ScopeName)
	for _, m := range []*metricAgg{c.runs, c.failures, c.incidents, c.decisions, c.inFlight, c.durations} {
		m.appendTo(sm.Metrics(), now)
	}
	return md, sm.Metrics().Len() > 0
}

// flush emits every series. A refused batch is not retried: the next flush
// carries the same cumulative values.
func (c *metricsConnector) flush(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	md, ok := c.snapshot()
	if !ok {
		return nil
	}
	return c.next.ConsumeMetrics(ctx, md)
}
