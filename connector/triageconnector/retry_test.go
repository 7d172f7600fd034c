package triageconnector

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"

	"github.com/triage-otel/triage/recovery"
)

// refusingLogs refuses batches while refuse is set, like a delivery
// exporter whose sending queue is full; it counts what it accepted.
type refusingLogs struct {
	consumertest.LogsSink
	mu      sync.Mutex
	refuse  error
	refused int
}

func (r *refusingLogs) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	r.mu.Lock()
	err := r.refuse
	if err != nil {
		r.refused++
	}
	r.mu.Unlock()
	if err != nil {
		return err
	}
	return r.LogsSink.ConsumeLogs(ctx, ld)
}

func (r *refusingLogs) set(err error) {
	r.mu.Lock()
	r.refuse = err
	r.mu.Unlock()
}

func fastRetry() *Config {
	cfg := defaultConfig()
	cfg.DecisionRetry.InitialInterval = 5 * time.Millisecond
	cfg.DecisionRetry.MaxInterval = 20 * time.Millisecond
	return cfg
}

func startLogs(t *testing.T, cfg *Config, next *refusingLogs) (*logsConnector, *componenttest.Telemetry) {
	t.Helper()
	set, tel := testSettings(t)
	c, err := newLogsConnector(set, cfg, next)
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	return c, tel
}

// A full queue downstream is not the traces pipeline's problem: the
// connector accepts the spans, keeps the decision and delivers it once the
// queue has room — once.
func TestRefusedDecisionIsRetriedNotReturned(t *testing.T) {
	next := &refusingLogs{refuse: errors.New("sending queue is full")}
	c, tel := startLogs(t, fastRetry(), next)
	td := batch(svc("a", failedRoot(t, 1, 10, "timeout", recovery.ActionRetry, "a", "")))

	require.NoError(t, c.ConsumeTraces(context.Background(), td), "no error for the traces pipeline")
	assert.Equal(t, int64(1), telemetryValue(t, tel, "decisions_refused"))
	assert.Equal(t, int64(1), telemetryValue(t, tel, "decisions_retry_queue"))
	time.Sleep(30 * time.Millisecond) // a few refused rounds
	assert.Zero(t, next.LogRecordCount())

	next.set(nil)
	require.Eventually(t, func() bool { return next.LogRecordCount() == 1 }, 5*time.Second, 5*time.Millisecond)
	// The sender counts a delivery after the next consumer has taken it.
	require.Eventually(t, func() bool {
		return telemetryValue(t, tel, "decisions_retry_queue") == 0 && telemetryValue(t, tel, "decisions_emitted") == 1
	}, 5*time.Second, 5*time.Millisecond)

	// The same spans again (a client that resent them anyway): a duplicate.
	require.NoError(t, c.ConsumeTraces(context.Background(), td))
	require.NoError(t, c.Shutdown(context.Background()))
	assert.Equal(t, 1, next.LogRecordCount(), "delivered exactly once")
}

func TestRetryQueueBoundedAndCounted(t *testing.T) {
	cfg := fastRetry()
	cfg.DecisionRetry.QueueSize = 2
	next := &refusingLogs{refuse: errors.New("sending queue is full")}
	c, tel := startLogs(t, cfg, next)
	for i := range 5 {
		td := batch(svc("a", failedRoot(t, uint64(i+1), 10, "timeout", recovery.ActionRetry, "a", "")))
		require.NoError(t, c.ConsumeTraces(context.Background(), td))
	}
	assert.Equal(t, int64(3), telemetryValue(t, tel, "decisions_dropped", attribute.String("reason", "queue_full")))
	next.set(nil)
	require.Eventually(t, func() bool { return next.LogRecordCount() == 2 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, c.Shutdown(context.Background()))
	assert.Equal(t, 2, next.LogRecordCount())
}

func TestPermanentRefusalAndShutdownDropsAreCounted(t *testing.T) {
	next := &refusingLogs{refuse: consumererror.NewPermanent(errors.New("bad data"))}
	c, tel := startLogs(t, fastRetry(), next)
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", failedRoot(t, 1, 10, "timeout", recovery.ActionRetry, "a", "")))))
	assert.Equal(t, int64(1), telemetryValue(t, tel, "decisions_dropped", attribute.String("reason", "permanent")))

	next.set(errors.New("down"))
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", failedRoot(t, 2, 10, "timeout", recovery.ActionRetry, "a", "")))))
	require.NoError(t, c.Shutdown(context.Background()))
	assert.Equal(t, int64(1), telemetryValue(t, tel, "decisions_dropped", attribute.String("reason", "shutdown")))
	assert.Zero(t, next.LogRecordCount())
}

func TestExpiredDecisionsAreDropped(t *testing.T) {
	cfg := fastRetry()
	cfg.DecisionRetry.MaxElapsedTime = 10 * time.Millisecond
	next := &refusingLogs{refuse: errors.New("down")}
	c, tel := startLogs(t, cfg, next)
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", failedRoot(t, 1, 10, "timeout", recovery.ActionRetry, "a", "")))))
	require.Eventually(t, func() bool {
		return telemetryValue(t, tel, "decisions_dropped", attribute.String("reason", "expired")) == 1
	}, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, c.Shutdown(context.Background()))
}

// A span the processor marked late repeats the run of stand-ins forwarded
// earlier: neither emitted nor counted, whatever the dedup cache remembers.
func TestLateRootNeitherEmittedNorCounted(t *testing.T) {
	cfg := defaultConfig()
	cfg.DecisionDedupCacheSize = 1 // forgets everything: the mark alone must do
	c, sink, tel := newLogs(t, cfg)
	m, msink, _ := newMetrics(t, cfg)
	root := failedRoot(t, 1, 10, "timeout", recovery.ActionRetry, "a", "")
	standIn := spanDef{trace: 1, id: 11, parent: 10, attrs: map[string]any{"triage.root_missing": true}}
	late := spanDef{trace: 1, id: 10, attrs: map[string]any{"triage.late": true}}
	for k, v := range root.attrs {
		standIn.attrs[k] = v
		late.attrs[k] = v
	}
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", standIn))))
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", failedRoot(t, 2, 10, "timeout", recovery.ActionRetry, "a", "")))))
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", late))))
	recs, _ := allRecords(sink)
	assert.Len(t, recs, 2)
	assert.Equal(t, int64(1), telemetryValue(t, tel, "runs_duplicate"))

	incomplete := okRoot(3, 30, "incomplete", time.Second)
	for _, s := range []spanDef{standIn, late, incomplete} {
		require.NoError(t, m.ConsumeTraces(context.Background(), batch(svc("a", s))))
	}
	md := flushed(t, m, msink)
	assert.Equal(t, map[string]int64{"verdict=failed": 1, "verdict=incomplete": 1}, sumPoints(t, md, "triage.runs"))
}
