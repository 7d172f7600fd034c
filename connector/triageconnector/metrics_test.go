package triageconnector

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"

	"github.com/triage-otel/triage/connector/triageconnector/internal/metadata"
	"github.com/triage-otel/triage/recovery"
)

// fakeClock is advanced by hand so timestamps are exact.
type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time { return f.t }

func attrKey(m pcommon.Map) string {
	var parts []string
	m.Range(func(k string, v pcommon.Value) bool {
		parts = append(parts, k+"="+v.AsString())
		return true
	})
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func findMetric(t *testing.T, md pmetric.Metrics, name string) (pmetric.Metric, bool) {
	t.Helper()
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				if ms.At(k).Name() == name {
					return ms.At(k), true
				}
			}
		}
	}
	return pmetric.Metric{}, false
}

// sumPoints returns a cumulative monotonic sum's values by attribute set.
func sumPoints(t *testing.T, md pmetric.Metrics, name string) map[string]int64 {
	t.Helper()
	m, ok := findMetric(t, md, name)
	if !ok {
		return nil
	}
	require.Equal(t, pmetric.MetricTypeSum, m.Type(), name)
	require.True(t, m.Sum().IsMonotonic(), name)
	require.Equal(t, pmetric.AggregationTemporalityCumulative, m.Sum().AggregationTemporality(), name)
	out := map[string]int64{}
	for i := 0; i < m.Sum().DataPoints().Len(); i++ {
		dp := m.Sum().DataPoints().At(i)
		out[attrKey(dp.Attributes())] = dp.IntValue()
	}
	return out
}

// flushed flushes c and returns the one batch it emitted.
func flushed(t *testing.T, c *metricsConnector, sink *consumertest.MetricsSink) pmetric.Metrics {
	t.Helper()
	before := len(sink.AllMetrics())
	require.NoError(t, c.flush(context.Background()))
	all := sink.AllMetrics()
	require.Len(t, all, before+1, "flush emits one batch")
	return all[before]
}

func TestMetricsValuesAndAttributes(t *testing.T) {
	c, sink, tel := newMetrics(t, defaultConfig())
	clock := &fakeClock{t: baseTime.Add(time.Hour)}
	c.now = clock.now
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, c.Shutdown(context.Background())) }()

	td := batch(
		svc("checkout",
			failedRoot(t, 1, 10, "external_fault", recovery.ActionRetry, "support", "lookup_order"),
			incident(1, 11, 10, "external_fault", false),
			incident(1, 12, 10, "schema_mismatch", true),
			failedRoot(t, 2, 20, "external_fault", recovery.ActionReplan, "support", "lookup_order"),
			okRoot(3, 30, "ok", 500*time.Millisecond),
			okRoot(4, 40, "recovered", 20*time.Second),
			incident(4, 41, 40, "schema_mismatch", true),
			plain(4, 42, 40),
		),
		svc("billing",
			failedRoot(t, 5, 50, "context_overflow", recovery.ActionAbort, "biller", ""),
		),
	)
	require.NoError(t, c.ConsumeTraces(context.Background(), td))
	md := flushed(t, c, sink)

	assert.Equal(t, map[string]int64{"verdict=failed": 3, "verdict=ok": 1, "verdict=recovered": 1}, sumPoints(t, md, "triage.runs"))
	assert.Equal(t, map[string]int64{
		"agent=support,failure_type=external_fault,service=checkout,tool=lookup_order": 2,
		"agent=biller,failure_type=context_overflow,service=billing,tool=":             1,
	}, sumPoints(t, md, "triage.failures"))
	assert.Equal(t, map[string]int64{
		"failure_type=external_fault,recovered=false": 1,
		"failure_type=schema_mismatch,recovered=true": 2,
	}, sumPoints(t, md, "triage.incidents"))
	assert.Equal(t, map[string]int64{
		"action=retry,failure_type=external_fault":   1,
		"action=replan,failure_type=external_fault":  1,
		"action=abort,failure_type=context_overflow": 1,
	}, sumPoints(t, md, "triage.decisions"))

	h, ok := findMetric(t, md, "triage.run.duration")
	require.True(t, ok)
	assert.Equal(t, "s", h.Unit())
	require.Equal(t, pmetric.MetricTypeHistogram, h.Type())
	assert.Equal(t, pmetric.AggregationTemporalityCumulative, h.Histogram().AggregationTemporality())
	byVerdict := map[string]pmetric.HistogramDataPoint{}
	for i := 0; i < h.Histogram().DataPoints().Len(); i++ {
		dp := h.Histogram().DataPoints().At(i)
		byVerdict[attrKey(dp.Attributes())] = dp
	}
	require.Len(t, byVerdict, 3)
	failed := byVerdict["verdict=failed"]
	assert.Equal(t, uint64(3), failed.Count())
	assert.InDelta(t, 12.0, failed.Sum(), 1e-9)
	assert.InDelta(t, 4.0, failed.Min(), 1e-9)
	assert.InDelta(t, 4.0, failed.Max(), 1e-9)
	bounds := defaultConfig().bucketBounds()
	assert.Equal(t, bounds, failed.ExplicitBounds().AsRaw())
	// 4s falls in (2.5, 5].
	want := make([]uint64, len(bounds)+1)
	want[4] = 3
	assert.Equal(t, want, failed.BucketCounts().AsRaw())
	okDP := byVerdict["verdict=ok"]
	want = make([]uint64, len(bounds)+1)
	want[1] = 1 // 0.5s is the upper bound of (0.25, 0.5]
	assert.Equal(t, want, okDP.BucketCounts().AsRaw())
	rec := byVerdict["verdict=recovered"]
	want = make([]uint64, len(bounds)+1)
	want[6] = 1 // 20s in (10, 30]
	assert.Equal(t, want, rec.BucketCounts().AsRaw())

	for _, name := range []string{"triage.runs", "triage.failures", "triage.incidents", "triage.decisions"} {
		m, _ := findMetric(t, md, name)
		dp := m.Sum().DataPoints().At(0)
		assert.Equal(t, pcommon.NewTimestampFromTime(clock.t), dp.StartTimestamp(), name)
		assert.Equal(t, pcommon.NewTimestampFromTime(clock.t), dp.Timestamp(), name)
		assert.NotEmpty(t, m.Description(), name)
	}
	assert.Equal(t, metadata.ScopeName, md.ResourceMetrics().At(0).ScopeMetrics().At(0).Scope().Name())
	assert.Equal(t, int64(0), telemetryValue(t, tel, "invalid_input"))
	assert.Equal(t, int64(0), telemetryValue(t, tel, "cardinality_overflow"))
	assert.Equal(t, int64(3+2+2+3+3), telemetryValue(t, tel, "series"))
}

func TestMetricsAreCumulativeAcrossFlushes(t *testing.T) {
	c, sink, _ := newMetrics(t, defaultConfig())
	clock := &fakeClock{t: baseTime}
	c.now = clock.now
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", okRoot(1, 1, "ok", time.Second)))))
	first := flushed(t, c, sink)
	assert.Equal(t, map[string]int64{"verdict=ok": 1}, sumPoints(t, first, "triage.runs"))

	clock.t = baseTime.Add(time.Minute)
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a",
		okRoot(2, 1, "ok", time.Second),
		failedRoot(t, 3, 1, "timeout", recovery.ActionRetry, "a", "")))))
	clock.t = baseTime.Add(2 * time.Minute)
	second := flushed(t, c, sink)
	assert.Equal(t, map[string]int64{"verdict=ok": 2, "verdict=failed": 1}, sumPoints(t, second, "triage.runs"))

	runs, _ := findMetric(t, second, "triage.runs")
	for i := 0; i < runs.Sum().DataPoints().Len(); i++ {
		dp := runs.Sum().DataPoints().At(i)
		assert.Equal(t, pcommon.NewTimestampFromTime(baseTime.Add(2*time.Minute)), dp.Timestamp())
		v, _ := dp.Attributes().Get("verdict")
		wantStart := baseTime // the ok series started with the first batch
		if v.Str() == "failed" {
			wantStart = baseTime.Add(time.Minute)
		}
		assert.Equal(t, pcommon.NewTimestampFromTime(wantStart), dp.StartTimestamp(), v.Str())
	}

	// A flush without new spans repeats every series, so exporters that
	// expire idle series keep them.
	third := flushed(t, c, sink)
	assert.Equal(t, sumPoints(t, second, "triage.runs"), sumPoints(t, third, "triage.runs"))
	require.NoError(t, c.Shutdown(context.Background()))
}

func TestMetricsCardinalityOverflow(t *testing.T) {
	cfg := defaultConfig()
	cfg.MaxCardinality = 2
	c, sink, tel := newMetrics(t, cfg)
	var spans []spanDef
	for i := uint64(1); i <= 5; i++ {
		ft := "timeout"
		if i == 5 {
			ft = "loop_detected"
		}
		spans = append(spans, failedRoot(t, i, 1, ft, recovery.ActionRetry, fmt.Sprintf("agent-%d", i), "tool"))
	}
	spans = append(spans, okRoot(6, 1, "ok", time.Second), okRoot(7, 1, "recovered", time.Second))
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", spans...))))
	require.NoError(t, c.Shutdown(context.Background()))
	md := sink.AllMetrics()[len(sink.AllMetrics())-1]

	assert.Equal(t, map[string]int64{
		"agent=agent-1,failure_type=timeout,service=a,tool=tool":                                    1,
		"agent=agent-2,failure_type=timeout,service=a,tool=tool":                                    1,
		"agent=other,failure_type=timeout,otel.metric.overflow=true,service=other,tool=other":       2,
		"agent=other,failure_type=loop_detected,otel.metric.overflow=true,service=other,tool=other": 1,
	}, sumPoints(t, md, "triage.failures"), "the failure type survives the overflow")
	// A metric without free attributes collapses every attribute: runs
	// holds failed and ok, the third verdict goes to verdict=other.
	assert.Equal(t, map[string]int64{
		"verdict=failed": 5, "verdict=ok": 1,
		"otel.metric.overflow=true,verdict=other": 1,
	}, sumPoints(t, md, "triage.runs"))
	assert.Equal(t, map[string]int64{
		"action=retry,failure_type=timeout":       4,
		"action=retry,failure_type=loop_detected": 1,
	}, sumPoints(t, md, "triage.decisions"), "two series fit the limit")

	assert.Equal(t, int64(3), telemetryValue(t, tel, "cardinality_overflow", attribute.String("metric", "triage.failures")))
	assert.Equal(t, int64(1), telemetryValue(t, tel, "cardinality_overflow", attribute.String("metric", "triage.runs")))
	assert.Equal(t, int64(1), telemetryValue(t, tel, "cardinality_overflow", attribute.String("metric", "triage.run.duration")))
	assert.Equal(t, int64(0), telemetryValue(t, tel, "cardinality_overflow", attribute.String("metric", "triage.decisions")))
}

func TestMetricsTruncateFreeAttributes(t *testing.T) {
	cfg := defaultConfig()
	cfg.MaxAttributeLength = 8
	c, sink, _ := newMetrics(t, cfg)
	root := failedRoot(t, 1, 1, "timeout", recovery.ActionRetry, "agent-with-a-very-long-name", "ééééé") // é is 2 bytes
	root.attrs["triage.agent"] = "agent-with-a-very-long-name"
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(
		resourceDef{attrs: map[string]any{"service.name": "svc\xff\xfe-long-name"}, spans: []spanDef{root}})))
	require.NoError(t, c.Shutdown(context.Background()))
	md := sink.AllMetrics()[0]
	assert.Equal(t, map[string]int64{
		"agent=agent-wi,failure_type=timeout,service=svc\uFFFD-l,tool=éééé": 1,
	}, sumPoints(t, md, "triage.failures"))
}

func TestMetricsBadInputNeverPanics(t *testing.T) {
	c, sink, tel := newMetrics(t, defaultConfig())
	td := batch(svc("a",
		spanDef{trace: 1, id: 1, attrs: map[string]any{"triage.verdict": int64(3)}},
		spanDef{trace: 2, id: 1, attrs: map[string]any{"triage.verdict": "weird"}},
		spanDef{trace: 3, id: 1, attrs: map[string]any{"triage.verdict": "failed"}},                                       // no failure type
		spanDef{trace: 4, id: 1, attrs: map[string]any{"triage.verdict": "failed", "triage.failure_type": "cosmic_rays"}}, // unknown
		spanDef{trace: 5, id: 1, attrs: map[string]any{"triage.verdict": "failed", "triage.failure_type": []any{"x"}, "triage.agent": map[string]any{"n": 1}}},
		spanDef{trace: 6, id: 1, start: 5 * time.Second, end: time.Second, attrs: map[string]any{"triage.verdict": "ok"}}, // ends before it starts
		spanDef{trace: 7, id: 1, attrs: map[string]any{"triage.verdict": "failed", "triage.failure_type": "timeout",
			"triage.decision": `{"decision_id":"d7","action":{"kind":"teleport"}}`}},
		spanDef{trace: 8, id: 1, attrs: map[string]any{"triage.verdict": "failed", "triage.failure_type": "timeout",
			"triage.decision": "{{{"}},
		spanDef{trace: 9, id: 2, parent: 1, attrs: map[string]any{"triage.recovered": "yes", "triage.failure_type": "timeout"}},
		spanDef{trace: 9, id: 3, parent: 1, attrs: map[string]any{"triage.recovered": "true"}},
		spanDef{trace: 9, id: 4, parent: 1, attrs: map[string]any{"triage.recovered": int64(0), "triage.failure_type": "nope"}},
		spanDef{trace: 10, id: 1, attrs: map[string]any{"triage.verdict": "ok", "triage.root_missing": "true"}},
	))
	require.NotPanics(t, func() { require.NoError(t, c.ConsumeTraces(context.Background(), td)) })
	require.NoError(t, c.Shutdown(context.Background()))
	md := sink.AllMetrics()[0]

	assert.Equal(t, map[string]int64{"verdict=other": 2, "verdict=failed": 5, "verdict=ok": 2}, sumPoints(t, md, "triage.runs"))
	failures := sumPoints(t, md, "triage.failures")
	assert.Equal(t, int64(2), failures["agent=,failure_type=other,service=a,tool="], "missing and unknown failure types")
	assert.Equal(t, int64(1), failures[`agent={"n":1},failure_type=other,service=a,tool=`])
	assert.Equal(t, int64(2), failures["agent=,failure_type=timeout,service=a,tool="])
	assert.Equal(t, map[string]int64{"action=other,failure_type=timeout": 1}, sumPoints(t, md, "triage.decisions"),
		"the non-JSON decision is not counted, the unknown action kind is other")
	assert.Equal(t, map[string]int64{
		"failure_type=timeout,recovered=other": 1,
		"failure_type=other,recovered=true":    1,
		"failure_type=other,recovered=other":   1,
	}, sumPoints(t, md, "triage.incidents"))

	for _, tc := range []struct {
		reason, attr string
		n            int64
	}{
		{reasonWrongType, attrVerdict, 1},
		{reasonUnknownValue, attrVerdict, 2}, // "3" and "weird"
		{reasonMissingAttribute, attrFailureType, 2},
		{reasonUnknownValue, attrFailureType, 3}, // cosmic_rays, ["x"], nope
		{reasonWrongType, attrFailureType, 1},
		{reasonWrongType, attrAgent, 1},
		{reasonBadTimestamps, attrTimestamps, 1},
		{reasonUnknownValue, attrActionKind, 1},
		{reasonDecisionNotJSON, attrDecision, 1},
		{reasonWrongType, attrRecovered, 3},
		{reasonWrongType, attrRootMissing, 1},
	} {
		assert.Equal(t, tc.n, telemetryValue(t, tel, "invalid_input", invalid(tc.reason, tc.attr)...), "%s %s", tc.reason, tc.attr)
	}
	h, _ := findMetric(t, md, "triage.run.duration")
	var count uint64
	for i := 0; i < h.Histogram().DataPoints().Len(); i++ {
		count += h.Histogram().DataPoints().At(i).Count()
	}
	assert.Equal(t, uint64(7), count, "no duration for the span ending before it starts nor for the root-missing stand-in")
}

// Stand-ins for a missing root (and the late root itself) count the run
// once.
func TestMetricsRootMissingRunCountedOnce(t *testing.T) {
	c, sink, tel := newMetrics(t, defaultConfig())
	root := failedRoot(t, 1, 10, "timeout", recovery.ActionRetry, "a", "t")
	standIn := func(id uint64) spanDef {
		s := spanDef{trace: 1, id: id, parent: 10, attrs: map[string]any{"triage.root_missing": true}}
		for k, v := range root.attrs {
			s.attrs[k] = v
		}
		return s
	}
	okStandIn := func(id uint64) spanDef {
		return spanDef{trace: 2, id: id, parent: 99, attrs: map[string]any{"triage.verdict": "ok", "triage.root_missing": true}}
	}
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", standIn(11), standIn(12), okStandIn(21), okStandIn(22)))))
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", root))))
	require.NoError(t, c.Shutdown(context.Background()))
	md := sink.AllMetrics()[0]
	assert.Equal(t, map[string]int64{"verdict=failed": 1, "verdict=ok": 1}, sumPoints(t, md, "triage.runs"))
	assert.Equal(t, map[string]int64{"action=retry,failure_type=timeout": 1}, sumPoints(t, md, "triage.decisions"))
	assert.Equal(t, int64(3), telemetryValue(t, tel, "runs_duplicate"))
	_, hasDuration := findMetric(t, md, "triage.run.duration")
	assert.False(t, hasDuration, "a stand-in's duration is not the run's")
}

func TestMetricsShutdownFlushes(t *testing.T) {
	cfg := defaultConfig()
	cfg.MetricsFlushInterval = time.Hour // only the shutdown flush can emit
	c, sink, _ := newMetrics(t, cfg)
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", okRoot(1, 1, "recovered", time.Second)))))
	assert.Empty(t, sink.AllMetrics())
	require.NoError(t, c.Shutdown(context.Background()))
	require.Len(t, sink.AllMetrics(), 1)
	assert.Equal(t, map[string]int64{"verdict=recovered": 1}, sumPoints(t, sink.AllMetrics()[0], "triage.runs"))

	// After shutdown nothing is counted or emitted, and a second Shutdown is
	// harmless.
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", okRoot(2, 1, "ok", time.Second)))))
	require.NoError(t, c.Shutdown(context.Background()))
	require.Len(t, sink.AllMetrics(), 1)
}

func TestMetricsNothingToFlush(t *testing.T) {
	c, sink, _ := newMetrics(t, defaultConfig())
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", plain(1, 1, 0)))))
	require.NoError(t, c.Shutdown(context.Background()))
	assert.Empty(t, sink.AllMetrics(), "no empty batches downstream")
}

func TestMetricsFlushedOnInterval(t *testing.T) {
	cfg := defaultConfig()
	cfg.MetricsFlushInterval = 5 * time.Millisecond
	c, sink, _ := newMetrics(t, cfg)
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", okRoot(1, 1, "ok", time.Second)))))
	require.Eventually(t, func() bool { return len(sink.AllMetrics()) >= 2 }, 10*time.Second, 5*time.Millisecond,
		"the ticker emits repeatedly without new spans")
	require.NoError(t, c.Shutdown(context.Background()))
	for _, md := range sink.AllMetrics() {
		assert.Equal(t, map[string]int64{"verdict=ok": 1}, sumPoints(t, md, "triage.runs"))
	}
}
