package triageconnector

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/triage-otel/triage/internal/evalset"
	"github.com/triage-otel/triage/processor/triageprocessor"
)

// teeTraces hands each batch to several consumers, each getting its own
// copy as the collector's fan-out does for consumers that may keep data.
type teeTraces []consumer.Traces

func (teeTraces) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (t teeTraces) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	for _, c := range t {
		cp := ptrace.NewTraces()
		td.CopyTo(cp)
		if err := c.ConsumeTraces(ctx, cp); err != nil {
			return err
		}
	}
	return nil
}

// TestPipelineOnFrameworkCaptures runs the real triage processor on the
// shared framework captures and checks the connector's logs and metrics
// against the annotations the processor wrote.
func TestPipelineOnFrameworkCaptures(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	shared, err := evalset.FindShared(wd)
	if err != nil {
		t.Skipf("shared fixtures not available: %v", err)
	}
	captures, err := evalset.LoadLabels(filepath.Join(shared, "fixtures", "frameworks", "labels.json"))
	require.NoError(t, err)
	require.NotEmpty(t, captures)

	ctx := context.Background()
	logsSink := new(consumertest.LogsSink)
	logsSet, _ := testSettings(t)
	logsConn, err := newLogsConnector(logsSet, defaultConfig(), logsSink)
	require.NoError(t, err)
	metricsSink := new(consumertest.MetricsSink)
	metricsSet, mtel := testSettings(t)
	metricsConn, err := newMetricsConnector(metricsSet, defaultConfig(), metricsSink)
	require.NoError(t, err)
	annotated := new(consumertest.TracesSink)

	pf := triageprocessor.NewFactory()
	proc, err := pf.CreateTraces(ctx, processortest.NewNopSettings(pf.Type()), pf.CreateDefaultConfig(),
		teeTraces{annotated, logsConn, metricsConn})
	require.NoError(t, err)
	host := componenttest.NewNopHost()
	require.NoError(t, logsConn.Start(ctx, host))
	require.NoError(t, metricsConn.Start(ctx, host))
	require.NoError(t, proc.Start(ctx, host))
	for _, c := range captures {
		td, err := evalset.ReadTraces(c.Path)
		require.NoError(t, err, c.Name())
		require.NoError(t, proc.ConsumeTraces(ctx, td), c.Name())
	}
	require.NoError(t, proc.Shutdown(ctx))
	require.NoError(t, metricsConn.Shutdown(ctx))
	require.NoError(t, logsConn.Shutdown(ctx))

	// What the processor annotated, counted independently of the
	// connector's code: one run per root span carrying a verdict, the
	// stand-ins of a missing root counting once per trace and verdict.
	wantRuns := map[string]int64{}
	wantFailures := map[string]int64{}
	wantIncidents := map[string]int64{}
	decisionDocs := map[string]string{}
	failedRuns := 0
	failedWithDecision := 0
	inFlight := map[string]int64{} // in-flight decision spans by guard and action
	nInFlight := 0
	standIns := map[string]bool{}
	for _, td := range annotated.AllTraces() {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			for j := 0; j < td.ResourceSpans().At(i).ScopeSpans().Len(); j++ {
				spans := td.ResourceSpans().At(i).ScopeSpans().At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					attrs := spans.At(k).Attributes()
					if rec, ok := attrs.Get("triage.recovered"); ok {
						ft, _ := attrs.Get("triage.failure_type")
						wantIncidents["failure_type="+ft.Str()+",recovered="+rec.AsString()]++
					}
					if ph, ok := attrs.Get("triage.phase"); ok && ph.Str() == "in_flight" {
						// Runs whose root never came trip their guards in flight.
						g, _ := attrs.Get("triage.guard")
						k, _ := attrs.Get("triage.action.kind")
						inFlight["action="+k.Str()+",guard="+g.Str()]++
						nInFlight++
						doc, _ := attrs.Get("triage.decision")
						id, _ := attrs.Get("triage.decision.id")
						decisionDocs[id.AsString()] = doc.Str()
						continue
					}
					verdict, ok := attrs.Get("triage.verdict")
					if !ok {
						continue
					}
					if _, missing := attrs.Get("triage.root_missing"); missing {
						key := spans.At(k).TraceID().String() + verdict.Str()
						if standIns[key] {
							continue
						}
						standIns[key] = true
					}
					wantRuns["verdict="+verdict.Str()]++
					if verdict.Str() == "failed" {
						failedRuns++
						ft, _ := attrs.Get("triage.failure_type")
						wantFailures[ft.Str()]++
						if doc, ok := attrs.Get("triage.decision"); ok {
							failedWithDecision++
							id, _ := attrs.Get("triage.decision.id")
							decisionDocs[id.AsString()] = doc.Str()
						}
					}
				}
			}
		}
	}
	t.Logf("runs %v, failures by type %v, incidents %v", wantRuns, wantFailures, wantIncidents)
	require.NotZero(t, wantRuns["verdict=failed"], "the captures hold failed runs")
	require.NotZero(t, wantRuns["verdict=ok"]+wantRuns["verdict=recovered"], "the captures hold successful runs")

	require.NotEmpty(t, metricsSink.AllMetrics())
	md := metricsSink.AllMetrics()[len(metricsSink.AllMetrics())-1]
	assert.Equal(t, wantRuns, sumPoints(t, md, "triage.runs"))
	gotFailures := map[string]int64{}
	for k, v := range sumPoints(t, md, "triage.failures") {
		for _, part := range strings.Split(k, ",") {
			if ft, ok := strings.CutPrefix(part, "failure_type="); ok {
				gotFailures[ft] += v
			}
		}
	}
	assert.Equal(t, wantFailures, gotFailures)
	if len(wantIncidents) > 0 {
		assert.Equal(t, wantIncidents, sumPoints(t, md, "triage.incidents"))
	}
	assert.Equal(t, int64(0), telemetryValue(t, mtel, "invalid_input"), "the processor's annotations follow the contract")
	assert.Equal(t, int64(0), telemetryValue(t, mtel, "cardinality_overflow"))

	// One record per decision, body equal to the stamped document; once
	// the processor stamps decisions, that is one per failed run.
	recs, _ := allRecords(logsSink)
	assert.Len(t, recs, len(decisionDocs))
	for _, r := range recs {
		id, _ := r.Attributes().Get("triage.decision.id")
		assert.Equal(t, decisionDocs[id.Str()], r.Body().Str())
	}
	if nInFlight > 0 {
		assert.Equal(t, inFlight, sumPoints(t, md, "triage.in_flight_decisions"))
	}
	if failedWithDecision > 0 {
		assert.Equal(t, failedRuns, failedWithDecision, "every failed run carries a decision")
		assert.Len(t, recs, failedRuns+nInFlight, "a record per failed run and per in-flight decision")
	} else {
		t.Logf("the processor stamped no triage.decision: %d failed runs, no decision records", failedRuns)
	}
}
