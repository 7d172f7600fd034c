package triageconnector

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/triage-otel/triage/recovery"
)

// inFlightSpan is the processor's in-flight decision span: a child of the
// span that tripped the guard, with the decision attributes and
// triage.phase=in_flight, triage.guard.
func inFlightSpan(t testing.TB, trace, id, parent uint64, guard string, kind recovery.ActionKind) spanDef {
	decID := fmt.Sprintf("%08x-0000-4000-9000-%012x", trace, id)
	d := recovery.Decision{
		Version: recovery.DecisionVersion, Phase: recovery.PhaseInFlight, Guard: guard,
		DecisionID: decID, TraceID: traceID(trace).String(), SpanID: spanID(parent).String(),
		SessionID: "sess-1", Service: "checkout", Agent: "support", Tool: "lookup_order",
		FailureType: "loop_detected", Confidence: 0.9,
		Evidence: []recovery.Evidence{{SpanID: spanID(parent), Signal: "loop"}},
		Action:   recovery.Action{Kind: kind}, Attempt: 1, MaxAttempts: 2, Policy: "loop_detected:" + string(kind),
		Time: baseTime.Format(time.RFC3339),
	}
	b, err := d.JSON()
	require.NoError(t, err)
	require.NoError(t, recovery.ValidateDecisionJSON(b))
	return spanDef{trace: trace, id: id, parent: parent, start: 2 * time.Second, end: 2 * time.Second, attrs: map[string]any{
		"triage.decision":     string(b),
		"triage.decision.id":  decID,
		"triage.action.kind":  string(kind),
		"triage.failure_type": "loop_detected",
		"triage.agent":        "support",
		"triage.session.id":   "sess-1",
		"triage.phase":        "in_flight",
		"triage.guard":        guard,
	}}
}

func TestLogsInFlightDecisionRecord(t *testing.T) {
	c, sink, _ := newLogs(t, defaultConfig())
	d := inFlightSpan(t, 1, 90, 12, "loop", recovery.ActionReplan)
	// The same decision span seen twice (a retried batch) is emitted once.
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("checkout", plain(1, 12, 10), d))))
	require.NoError(t, c.ConsumeTraces(context.Background(), batch(svc("checkout", d))))
	recs, _ := allRecords(sink)
	require.Len(t, recs, 1)
	lr := recs[0]
	assert.Equal(t, d.attrs["triage.decision"], lr.Body().Str())
	assert.Equal(t, spanID(90), lr.SpanID())
	assert.Equal(t, "triage.decision", lr.EventName())
	assert.Equal(t, map[string]any{
		"triage.decision.id":  d.attrs["triage.decision.id"],
		"triage.failure_type": "loop_detected",
		"triage.action.kind":  "replan",
		"triage.agent":        "support",
		"triage.session.id":   "sess-1",
		"triage.phase":        "in_flight",
		"triage.guard":        "loop",
	}, lr.Attributes().AsRaw())
}

func TestMetricsInFlightDecisions(t *testing.T) {
	c, sink, _ := newMetrics(t, defaultConfig())
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, c.Shutdown(context.Background())) }()
	loop := inFlightSpan(t, 1, 90, 12, "loop", recovery.ActionReplan)
	odd := inFlightSpan(t, 2, 91, 22, "made_up", recovery.ActionAbort)
	td := batch(svc("checkout", loop, odd, loop))
	require.NoError(t, c.ConsumeTraces(context.Background(), td))
	md := flushed(t, c, sink)
	assert.Equal(t, map[string]int64{
		"action=replan,guard=loop": 1,
		"action=abort,guard=other": 1,
	}, sumPoints(t, md, "triage.in_flight_decisions"), "counted once per decision; an unknown guard is other")
	_, isRun := findMetric(t, md, "triage.runs")
	assert.False(t, isRun, "a decision span is not a run")
}
