package triageconnector

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/connector/triageconnector/internal/metadata"
)

// FuzzConsumeTraces feeds arbitrary annotation values to both sides: they
// must never panic nor fail, and the logs side emits a document only as
// stamped.
func FuzzConsumeTraces(f *testing.F) {
	f.Add(`{"decision_id":"a","action":{"kind":"retry"}}`, "failed", "timeout", "retry", "agent", true, int64(1))
	f.Add("not json", "ok", "", "", "", false, int64(-1))
	f.Add(`{"action":[1,2]}`, "failed", "cosmic", "teleport", "\xff\xfe", true, int64(0))
	f.Add(`{`, "", "unknown", "abort", "", false, int64(5))
	f.Fuzz(func(t *testing.T, doc, verdict, ft, kind, agent string, recovered bool, end int64) {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", agent)
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		root := spans.AppendEmpty()
		root.SetTraceID(traceID(1))
		root.SetSpanID(spanID(1))
		root.SetStartTimestamp(pcommonTS(10))
		if end >= 0 {
			root.SetEndTimestamp(pcommonTS(10 + uint64(end)%1000))
		}
		a := root.Attributes()
		a.PutStr(attrVerdict, verdict)
		a.PutStr(attrFailureType, ft)
		a.PutStr(attrDecision, doc)
		a.PutStr(attrActionKind, kind)
		a.PutStr(attrAgent, agent)
		a.PutStr(attrTool, agent+agent)
		a.PutInt(attrDecisionID, end)
		inc := spans.AppendEmpty()
		inc.SetTraceID(traceID(1))
		inc.SetSpanID(spanID(2))
		inc.SetParentSpanID(spanID(1))
		inc.Attributes().PutBool(attrRecovered, recovered)
		inc.Attributes().PutStr(attrFailureType, ft)

		set := connectortest.NewNopSettings(metadata.Type)
		cfg := defaultConfig()
		cfg.MaxAttributeLength = 3
		logsSink := new(consumertest.LogsSink)
		lc, err := newLogsConnector(set, cfg, logsSink)
		if err != nil {
			t.Fatal(err)
		}
		mc, err := newMetricsConnector(set, cfg, consumertest.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := lc.ConsumeTraces(ctx, td); err != nil {
			t.Fatal(err)
		}
		if err := mc.ConsumeTraces(ctx, td); err != nil {
			t.Fatal(err)
		}
		if err := mc.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if err := lc.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		for _, ld := range logsSink.AllLogs() {
			body := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Body().Str()
			if body != doc {
				t.Fatalf("body %q is not the stamped document %q", body, doc)
			}
		}
	})
}

func pcommonTS(v uint64) pcommon.Timestamp { return pcommon.Timestamp(v) }
