package triageconnector

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/triage-otel/triage/connector/triageconnector/internal/metadatatest"
	"github.com/triage-otel/triage/recovery"
)

var baseTime = time.Unix(1_700_000_000, 0).UTC()

func traceID(n uint64) pcommon.TraceID {
	var id pcommon.TraceID
	id[0] = 0x7c
	binary.BigEndian.PutUint64(id[8:], n)
	return id
}

func spanID(n uint64) pcommon.SpanID {
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], n)
	return id
}

// spanDef is a span of a hand-built trace that follows the triage
// processor's attribute contract.
type spanDef struct {
	trace, id, parent uint64
	attrs             map[string]any
	// start and end offsets from baseTime; both zero: 0s..1s.
	start, end time.Duration
	// rawTimes: use start/end literally, even when zero.
	rawTimes bool
}

// resourceDef is one resource of a batch with its spans.
type resourceDef struct {
	attrs map[string]any
	spans []spanDef
}

func svc(name string, spans ...spanDef) resourceDef {
	return resourceDef{attrs: map[string]any{"service.name": name, "host.name": "h1"}, spans: spans}
}

func batch(resources ...resourceDef) ptrace.Traces {
	td := ptrace.NewTraces()
	for _, r := range resources {
		rs := td.ResourceSpans().AppendEmpty()
		if err := rs.Resource().Attributes().FromRaw(r.attrs); err != nil {
			panic(err)
		}
		rs.SetSchemaUrl("https://opentelemetry.io/schemas/1.30.0")
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("agent")
		for _, d := range r.spans {
			s := ss.Spans().AppendEmpty()
			s.SetTraceID(traceID(d.trace))
			s.SetSpanID(spanID(d.id))
			if d.parent != 0 {
				s.SetParentSpanID(spanID(d.parent))
			}
			s.SetName("span")
			start, end := d.start, d.end
			if !d.rawTimes && start == 0 && end == 0 {
				end = time.Second
			}
			if d.rawTimes && start == 0 {
				s.SetStartTimestamp(0)
			} else {
				s.SetStartTimestamp(pcommon.NewTimestampFromTime(baseTime.Add(start)))
			}
			if d.rawTimes && end == 0 {
				s.SetEndTimestamp(0)
			} else {
				s.SetEndTimestamp(pcommon.NewTimestampFromTime(baseTime.Add(end)))
			}
			if err := s.Attributes().FromRaw(d.attrs); err != nil {
				panic(err)
			}
		}
	}
	return td
}

// decisionDoc returns a real decision document, as the recovery package
// encodes it.
func decisionDoc(t testing.TB, id string, trace, span uint64, ft string, kind recovery.ActionKind, agent, tool string) string {
	t.Helper()
	d := recovery.Decision{
		Version:     recovery.DecisionVersion,
		Phase:       recovery.PhaseFinal,
		DecisionID:  id,
		TraceID:     traceID(trace).String(),
		SpanID:      spanID(span).String(),
		SessionID:   "sess-1",
		Service:     "checkout",
		Agent:       agent,
		Tool:        tool,
		FailureType: ft,
		Confidence:  0.9,
		Evidence:    []recovery.Evidence{{SpanID: spanID(span + 1), Signal: "http_status", Reason: "503"}},
		Action:      recovery.Action{Kind: kind, DelayMS: 500, Hint: "retry later"},
		Attempt:     1,
		MaxAttempts: 3,
		Policy:      ft + ".steps[0]:" + string(kind),
		Time:        baseTime.Format(time.RFC3339),
	}
	b, err := d.JSON()
	require.NoError(t, err)
	require.NoError(t, recovery.ValidateDecisionJSON(b))
	return string(b)
}

// failedRoot is the root span of a failed run with its decision stamped as
// the processor does.
func failedRoot(t testing.TB, trace, id uint64, ft string, kind recovery.ActionKind, agent, tool string) spanDef {
	decID := fmt.Sprintf("%08x-0000-4000-8000-%012x", trace, id)
	return spanDef{trace: trace, id: id, end: 4 * time.Second, attrs: map[string]any{
		"triage.verdict":          "failed",
		"triage.failure_type":     ft,
		"triage.signal":           "http_status",
		"triage.confidence":       0.9,
		"triage.evidence.span_id": spanID(id + 1).String(),
		"triage.tool":             tool,
		"triage.agent":            agent,
		"triage.session.id":       "sess-1",
		"triage.decision":         decisionDoc(t, decID, trace, id, ft, kind, agent, tool),
		"triage.decision.id":      decID,
		"triage.action.kind":      string(kind),
		"triage.action.delay_ms":  int64(500),
		"triage.action.hint":      "retry later",
		"triage.attempt":          int64(1),
		"triage.max_attempts":     int64(3),
	}}
}

func okRoot(trace, id uint64, verdict string, dur time.Duration) spanDef {
	return spanDef{trace: trace, id: id, end: dur, attrs: map[string]any{
		"triage.verdict": verdict,
		"triage.agent":   "planner",
	}}
}

func incident(trace, id, parent uint64, ft string, recovered bool) spanDef {
	return spanDef{trace: trace, id: id, parent: parent, attrs: map[string]any{
		"triage.failure_type": ft,
		"triage.signal":       "http_status",
		"triage.recovered":    recovered,
	}}
}

func plain(trace, id, parent uint64) spanDef {
	return spanDef{trace: trace, id: id, parent: parent, attrs: map[string]any{"gen_ai.operation.name": "chat"}}
}

// testSettings returns connector settings recording telemetry in tel.
func testSettings(t *testing.T) (connector.Settings, *componenttest.Telemetry) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	return metadatatest.NewSettings(tel), tel
}

func newLogs(t *testing.T, cfg *Config) (*logsConnector, *consumertest.LogsSink, *componenttest.Telemetry) {
	set, tel := testSettings(t)
	sink := new(consumertest.LogsSink)
	c, err := newLogsConnector(set, cfg, sink)
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, c.Shutdown(context.Background())) })
	return c, sink, tel
}

func newMetrics(t *testing.T, cfg *Config) (*metricsConnector, *consumertest.MetricsSink, *componenttest.Telemetry) {
	set, tel := testSettings(t)
	sink := new(consumertest.MetricsSink)
	c, err := newMetricsConnector(set, cfg, sink)
	require.NoError(t, err)
	return c, sink, tel
}

func defaultConfig() *Config { return createDefaultConfig().(*Config) }

// telemetryValue sums the points of an int counter of the connector's own
// telemetry whose attributes include attrs; 0 when the metric is absent.
func telemetryValue(t *testing.T, tel *componenttest.Telemetry, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	m, err := tel.GetMetric("otelcol_connector_triage_" + name)
	if err != nil {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is not an int sum", name)
	var total int64
	for _, dp := range sum.DataPoints {
		match := true
		for _, kv := range attrs {
			v, ok := dp.Attributes.Value(kv.Key)
			if !ok || v != kv.Value {
				match = false
				break
			}
		}
		if match {
			total += dp.Value
		}
	}
	return total
}

func invalid(reason, attr string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("reason", reason), attribute.String("attribute", attr)}
}
