package triageprocessor

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadata"
)

// BenchmarkMemoryPerTrace measures the heap a trace costs while it is held
// (its spans without the root, so it waits for decision_wait) and once it
// is decided (an entry of the decision cache), for the capacity notes of the
// README ("Scaling out"): heap bytes per trace after a GC, and for held
// traces also the protobuf bytes the processor's max_bytes counts, so that
// the ratio between the two sizes max_bytes against a memory limit.
func BenchmarkMemoryPerTrace(b *testing.B) {
	for _, n := range []int{20, 200} {
		b.Run(fmt.Sprintf("state=held/spans_per_trace=%d", n), func(b *testing.B) {
			td := benchTrace(0, n, false)
			removeRoot(td) // without its root the trace stays held

			measureHeapPerTrace(b, td, func(p *triageProcessor) {
				if p.held.Len() != b.N {
					b.Fatalf("%d traces held, want %d", p.held.Len(), b.N)
				}
				b.ReportMetric(float64(p.heldBytes)/float64(b.N), "proto-B/trace")
			})
		})
		// A decided trace: its decision cache entry, and for a failed run
		// the recovery decision and the session's in-memory history.
		for _, failing := range []bool{false, true} {
			b.Run(fmt.Sprintf("state=decided/failed=%v/spans_per_trace=%d", failing, n), func(b *testing.B) {
				measureHeapPerTrace(b, benchTrace(0, n, failing), func(p *triageProcessor) {
					if p.held.Len() != 0 || p.decided.len() != b.N {
						b.Fatalf("%d held, %d cached, want 0 and %d", p.held.Len(), p.decided.len(), b.N)
					}
				})
			})
		}
	}
}

// measureHeapPerTrace sends b.N copies of td under fresh trace IDs to a
// processor with room for all of them (the next consumer drops what it
// gets, so only the processor's own state stays reachable) and reports the
// live heap growth per trace.
func measureHeapPerTrace(b *testing.B, td ptrace.Traces, check func(*triageProcessor)) {
	cfg := createDefaultConfig().(*Config)
	cfg.NumTraces = max(b.N, 1)
	cfg.MaxBytes = 0
	cfg.DecisionCacheSize = max(b.N, 1)
	cfg.DecisionCacheBytes = 1 << 40
	p, err := newTriageProcessor(processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// Each trace is decoded from the wire like a receiver's, so the held
	// copies share no string data with each other.
	wire, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		b.Fatal(err)
	}
	before := liveHeap()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		in, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(wire)
		if err != nil {
			b.Fatal(err)
		}
		setTraceID(in, traceID(uint64(1_000_000+i)))
		b.StartTimer()
		if err := p.ConsumeTraces(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after := liveHeap()
	b.ReportMetric(float64(after-before)/float64(b.N), "heap-B/trace")
	check(p)
	runtime.KeepAlive(p)
}

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// removeRoot drops the parentless spans of td.
func removeRoot(td ptrace.Traces) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			sss.At(j).Spans().RemoveIf(func(s ptrace.Span) bool { return s.ParentSpanID().IsEmpty() })
		}
	}
}
