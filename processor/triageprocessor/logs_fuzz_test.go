package triageprocessor

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadata"
)

// FuzzConsumeLogs feeds arbitrary OTLP logs payloads, around a trace,
// through a traces and a logs instance with tiny limits: it must not panic,
// must forward every log record unchanged and every span exactly once, and
// must hold no log record after Shutdown.
func FuzzConsumeLogs(f *testing.F) {
	m := &plog.ProtoMarshaler{}
	for _, ld := range []plog.Logs{leakEvents(traceID(1)), leakEvents(traceID(2)), genaiLogs(traceID(1), event{0, "gen_ai.choice", map[string]any{"message": "x"}})} {
		b, err := m.MarshalLogs(ld)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(0))
		f.Add(b, uint8(3))
	}
	f.Fuzz(func(t *testing.T, payload []byte, order uint8) {
		ld, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(payload)
		if err != nil {
			return
		}
		cfg := createDefaultConfig().(*Config)
		cfg.NumTraces = 2
		cfg.MaxLogRecordsPerTrace = 3
		cfg.MaxLogBytes = 4096
		cfg.Constraints.Global = []string{"SECRET"}
		set := processortest.NewNopSettings(metadata.Type)
		sink, logSink := new(consumertest.TracesSink), new(consumertest.LogsSink)
		ctx := context.Background()
		tc, err := NewFactory().CreateTraces(ctx, set, cfg, sink)
		if err != nil {
			t.Fatal(err)
		}
		lc, err := NewFactory().CreateLogs(ctx, set, cfg, logSink)
		if err != nil {
			t.Fatal(err)
		}
		td := agentTrace(traceID(1), "svc", genaiRun("")...)
		other := agentTrace(traceID(2), "svc", genaiRun("")[:2]...)
		steps := []func(){
			func() { ld.MarkReadOnly(); must(t, lc.ConsumeLogs(ctx, ld)) },
			func() { must(t, tc.ConsumeTraces(ctx, ownedBatch(tc, td))) },
			func() { must(t, tc.ConsumeTraces(ctx, ownedBatch(tc, other))) },
		}
		for i := range steps {
			steps[(i+int(order))%len(steps)]()
		}
		if order&4 != 0 {
			must(t, lc.Shutdown(ctx))
			must(t, tc.Shutdown(ctx))
		} else {
			must(t, tc.Shutdown(ctx))
			must(t, lc.Shutdown(ctx))
		}
		if got, want := sink.SpanCount(), td.SpanCount()+other.SpanCount(); got != want {
			t.Fatalf("forwarded %d spans, received %d", got, want)
		}
		if got := logSink.LogRecordCount(); got != ld.LogRecordCount() {
			t.Fatalf("forwarded %d log records, received %d", got, ld.LogRecordCount())
		}
		p := tc.(*triageProcessor)
		if p.logs.records < 0 || p.logs.bytes < 0 || p.logs.bytes > cfg.MaxLogBytes {
			t.Fatalf("log accounting out of bounds: %d records, %d bytes", p.logs.records, p.logs.bytes)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
