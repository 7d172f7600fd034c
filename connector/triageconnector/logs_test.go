package triageconnector

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/triage-otel/triage/connector/triageconnector/internal/metadata"
	"github.com/triage-otel/triage/recovery"
)

// allRecords flattens what the sink received, with each record's resource.
func allRecords(sink *consumertest.LogsSink) ([]plog.LogRecord, []pcommon.Resource) {
	var recs []plog.LogRecord
	var res []pcommon.Resource
	for _, ld := range sink.AllLogs() {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			rl := ld.ResourceLogs().At(i)
			for j := 0; j < rl.ScopeLogs().Len(); j++ {
				lrs := rl.ScopeLogs().At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					recs = append(recs, lrs.At(k))
					res = append(res, rl.Resource())
				}
			}
		}
	}
	return recs, res
}

func TestLogsOneRecordPerFailedRun(t *testing.T) {
	c, sink, tel := newLogs(t, defaultConfig())
	root := failedRoot(t, 1, 10, "external_fault", recovery.ActionRetry, "support-agent", "lookup_order")
	td := batch(
		svc("checkout",
			plain(1, 11, 10),
			incident(1, 12, 10, "external_fault", false),
			root,
			okRoot(2, 20, "ok", time.Second),
			plain(2, 21, 20),
			okRoot(3, 30, "recovered", 2*time.Second),
			incident(3, 31, 30, "schema_mismatch", true),
		),
	)
	require.NoError(t, c.ConsumeTraces(context.Background(), td))

	recs, res := allRecords(sink)
	require.Len(t, recs, 1, "one decision record for the one failed run, none for ok/recovered")
	lr := recs[0]
	assert.Equal(t, root.attrs["triage.decision"], lr.Body().Str(), "body is the stamped document byte for byte")
	assert.Equal(t, pcommon.ValueTypeStr, lr.Body().Type())
	assert.Equal(t, traceID(1), lr.TraceID())
	assert.Equal(t, spanID(10), lr.SpanID())
	assert.Equal(t, pcommon.NewTimestampFromTime(baseTime.Add(4*time.Second)), lr.Timestamp(), "timestamp is the run's end")
	assert.NotZero(t, lr.ObservedTimestamp())
	assert.Equal(t, "triage.decision", lr.EventName())
	assert.Equal(t, plog.SeverityNumberWarn, lr.SeverityNumber())
	assert.Equal(t, map[string]any{
		"triage.decision.id":  root.attrs["triage.decision.id"],
		"triage.failure_type": "external_fault",
		"triage.action.kind":  "retry",
		"triage.agent":        "support-agent",
		"triage.session.id":   "sess-1",
		"triage.phase":        "final",
	}, lr.Attributes().AsRaw())
	assert.Equal(t, map[string]any{"service.name": "checkout", "host.name": "h1"}, res[0].Attributes().AsRaw())

	rl := sink.AllLogs()[0].ResourceLogs().At(0)
	assert.Equal(t, "https://opentelemetry.io/schemas/1.30.0", rl.SchemaUrl())
	assert.Equal(t, metadata.ScopeName, rl.ScopeLogs().At(0).Scope().Name())
	assert.Equal(t, int64(1), telemetryValue(t, tel, "decisions_emitted"))
	assert.Equal(t, int64(0), telemetryValue(t, tel, "invalid_input"))
}

func TestLogsGroupByResource(t *testing.T) {
	c, sink, _ := newLogs(t, defaultConfig())
	td := batch(
		svc("a", failedRoot(t, 1, 10, "timeout", recovery.ActionRetry, "x", ""), failedRoot(t, 2, 20, "loop_detected", recovery.ActionReplan, "x", "t")),
		svc("b", okRoot(3, 30, "ok", time.Second)),
		svc("c", failedRoot(t, 4, 40, "unknown", recovery.ActionEscalate, "y", "")),
	)
	require.NoError(t, c.ConsumeTraces(context.Background(), td))
	require.Len(t, sink.AllLogs(), 1, "one downstream call per batch")
	ld := sink.AllLogs()[0]
	require.Equal(t, 2, ld.ResourceLogs().Len(), "resources without decisions are left out")
	assert.Equal(t, "a", ld.ResourceLogs().At(0).Resource().Attributes().AsRaw()["service.name"])
	assert.Equal(t, 2, ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().Len())
	assert.Equal(t, "c", ld.ResourceLogs().At(1).Resource().Attributes().AsRaw()["service.name"])
	recs, _ := allRecords(sink)
	var kinds []string
	for _, r := range recs {
		v, _ := r.Attributes().Get("triage.action.kind")
		kinds = append(kinds, v.Str())
	}
	assert.Equal(t, []string{"retry", "replan", "escalate"}, kinds)
	_, hasTool := recs[0].Attributes().Get("triage.tool")
	assert.False(t, hasTool)
}

func TestLogsNothingWithoutDecisions(t *testing.T) {
	c, sink, _ := newLogs(t, defaultConfig())
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", okRoot(1, 1, "ok", time.Second), plain(1, 2, 1)))))
	require.NoError(t, c.ConsumeTraces(context.Background(), batch()))
	assert.Empty(t, sink.AllLogs(), "no downstream call without a decision")
}

// The processor annotates every top span of a run whose root is missing,
// and a root arriving later gets the same decision: one record only.
func TestLogsDuplicateDecisionEmittedOnce(t *testing.T) {
	c, sink, tel := newLogs(t, defaultConfig())
	root := failedRoot(t, 1, 10, "timeout", recovery.ActionRetry, "a", "")
	standIn := func(id uint64) spanDef {
		s := spanDef{trace: 1, id: id, parent: 10, attrs: map[string]any{"triage.root_missing": true}}
		for k, v := range root.attrs {
			s.attrs[k] = v
		}
		return s
	}
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", standIn(11), standIn(12)))))
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", root))))
	recs, _ := allRecords(sink)
	require.Len(t, recs, 1)
	assert.Equal(t, spanID(11), recs[0].SpanID())
	assert.Equal(t, int64(2), telemetryValue(t, tel, "runs_duplicate"))
	assert.Equal(t, int64(1), telemetryValue(t, tel, "decisions_emitted"))
}

type flakyLogs struct {
	consumertest.LogsSink
	failures int
}

func (f *flakyLogs) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if f.failures > 0 {
		f.failures--
		return errors.New("downstream unavailable")
	}
	return f.LogsSink.ConsumeLogs(ctx, ld)
}

func TestLogsBadDecisionsNeverPanic(t *testing.T) {
	c, sink, tel := newLogs(t, defaultConfig())
	withDecision := func(id uint64, v any, extra map[string]any) spanDef {
		attrs := map[string]any{"triage.verdict": "failed", "triage.failure_type": "timeout", "triage.decision": v}
		for k, x := range extra {
			if x == nil {
				delete(attrs, k)
				continue
			}
			attrs[k] = x
		}
		return spanDef{trace: id, id: id, attrs: attrs}
	}
	td := batch(svc("a",
		withDecision(1, "not json at all", nil),
		withDecision(2, `["an","array"]`, nil),
		withDecision(3, `{"decision_id": "x", "action": {"kind": "retry"`, nil), // truncated
		withDecision(4, "", nil),
		withDecision(5, int64(42), nil),
		withDecision(6, map[string]any{"decision_id": "m"}, nil),
		withDecision(7, []any{"a"}, nil),
		// Valid document, routing attributes only in the document.
		withDecision(8, `{"decision_id":"doc-8","failure_type":"timeout","agent":"doc-agent","session_id":"s8","action":{"kind":"backoff"}}`,
			map[string]any{"triage.failure_type": nil}),
		// Valid document without any id: emitted, id counted missing.
		withDecision(9, `{"failure_type":"timeout","action":"not an object"}`, nil),
		// Wrong attribute types next to a valid document.
		withDecision(10, `{"decision_id":"doc-10"}`, map[string]any{"triage.decision.id": int64(77), "triage.action.kind": true}),
		// Odd document field types.
		withDecision(11, `{"decision_id":12345,"action":{"kind":7},"agent":null}`, nil),
	))
	require.NotPanics(t, func() { require.NoError(t, c.ConsumeTraces(context.Background(), td)) })

	recs, _ := allRecords(sink)
	ids := map[string]plog.LogRecord{}
	for _, r := range recs {
		id := ""
		if v, ok := r.Attributes().Get("triage.decision.id"); ok {
			id = v.Str()
		}
		ids[id] = r
	}
	require.Len(t, recs, 4, "only the JSON object documents are emitted")
	require.Contains(t, ids, "doc-8")
	assert.Equal(t, map[string]any{
		"triage.decision.id": "doc-8", "triage.failure_type": "timeout", "triage.action.kind": "backoff",
		"triage.agent": "doc-agent", "triage.session.id": "s8",
	}, ids["doc-8"].Attributes().AsRaw(), "routing attributes fall back to the document")
	require.Contains(t, ids, "", "a document without id is still delivered")
	require.Contains(t, ids, "77", "a non-string id attribute is used through its string form")
	v, _ := ids["77"].Attributes().Get("triage.action.kind")
	assert.Equal(t, "true", v.Str())
	require.Contains(t, ids, "12345")

	assert.Equal(t, int64(4), telemetryValue(t, tel, "invalid_input", invalid(reasonDecisionNotJSON, attrDecision)...))
	assert.Equal(t, int64(3), telemetryValue(t, tel, "invalid_input", invalid(reasonWrongType, attrDecision)...))
	assert.Equal(t, int64(1), telemetryValue(t, tel, "invalid_input", invalid(reasonMissingAttribute, attrDecisionID)...))
	assert.Equal(t, int64(1), telemetryValue(t, tel, "invalid_input", invalid(reasonWrongType, attrDecisionID)...))
	assert.Equal(t, int64(1), telemetryValue(t, tel, "invalid_input", invalid(reasonWrongType, attrActionKind)...))
	assert.Equal(t, int64(4), telemetryValue(t, tel, "decisions_emitted"))
}

func TestLogsSpanWithoutEndUsesObservedTime(t *testing.T) {
	c, sink, _ := newLogs(t, defaultConfig())
	root := failedRoot(t, 1, 10, "timeout", recovery.ActionRetry, "a", "")
	root.rawTimes, root.start, root.end = true, 0, 0
	before := time.Now()
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("a", root))))
	recs, _ := allRecords(sink)
	require.Len(t, recs, 1)
	assert.False(t, recs[0].Timestamp().AsTime().Before(before.Truncate(time.Second)))
	assert.Equal(t, recs[0].ObservedTimestamp(), recs[0].Timestamp())
}
