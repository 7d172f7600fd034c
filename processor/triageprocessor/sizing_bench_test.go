package triageprocessor

import (
	"context"
	"runtime"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadata"
)

// BenchmarkHeldSpanBytesCaptures holds every shared capture (its root
// spans removed, so nothing is decided) b.N times under fresh trace IDs and
// reports the live heap per held span beside the protobuf bytes per span
// that max_bytes counts: the figures of the README's Sizing section, on
// real agent traces (they carry the conversation so far on every chat span).
func BenchmarkHeldSpanBytesCaptures(b *testing.B) {
	var wires [][]byte
	for _, td := range captureFiles(b) {
		removeRoot(td)
		w, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			b.Fatal(err)
		}
		wires = append(wires, w)
	}
	cfg := createDefaultConfig().(*Config)
	cfg.NumTraces = max(b.N*len(wires), 1)
	cfg.MaxBytes = 0
	p, err := newTriageProcessor(processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	before := liveHeap()
	b.ResetTimer()
	n := uint64(0)
	for i := 0; i < b.N; i++ {
		for _, w := range wires {
			b.StopTimer()
			in, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(w)
			if err != nil {
				b.Fatal(err)
			}
			n++
			setTraceID(in, traceID(2_000_000+n))
			b.StartTimer()
			if err := p.ConsumeTraces(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	after := liveHeap()
	spans := float64(p.heldSpans)
	b.ReportMetric(float64(after-before)/spans, "heap-B/span")
	b.ReportMetric(float64(p.heldBytes)/spans, "proto-B/span")
	b.ReportMetric(float64(after-before)/float64(p.heldBytes), "heap/proto")
	runtime.KeepAlive(p)
}
