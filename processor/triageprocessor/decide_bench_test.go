package triageprocessor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/triage-otel/triage/internal/evalset"
	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadata"
)

// captureFiles returns the shared captures as decoded traces (one per
// file, as recorded), skipping the benchmark when /work/shared is absent.
func captureFiles(b *testing.B) []ptrace.Traces {
	b.Helper()
	wd, _ := os.Getwd()
	shared, err := evalset.FindShared(wd)
	if err != nil {
		b.Skip(err)
	}
	files, _ := filepath.Glob(filepath.Join(shared, "fixtures", "frameworks", "*", "*.json"))
	var out []ptrace.Traces
	for _, f := range files {
		if strings.HasSuffix(f, ".logs.json") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(data)
		if err != nil || td.SpanCount() == 0 {
			continue
		}
		out = append(out, td)
	}
	return out
}

// BenchmarkAnnotateCaptures times the decision path after classification
// (annotateTrace: annotations, evaluation events, recovery decisions and
// their documents, the decision-cache entry) on every trace of the shared
// captures, one op being one pass. Each trace is decoded, held and
// classified with the timer stopped, so B/op and allocs/op are the
// annotation path's alone; for instruction counts, callgrind's
// --toggle-collect on annotateTrace counts the same region. Recovery is on
// (in-memory history), as in bench/'s BenchmarkCaptures; traces without a
// root are decided as the decision_wait timer decides them.
func BenchmarkAnnotateCaptures(b *testing.B) {
	var wires [][]byte
	spans := 0
	for _, td := range captureFiles(b) {
		groups, _ := groupByTrace(td, &ptrace.ProtoMarshaler{})
		for _, g := range groups {
			w, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(g.td)
			if err != nil {
				b.Fatal(err)
			}
			wires = append(wires, w)
			spans += g.spans
		}
	}
	cfg := createDefaultConfig().(*Config)
	cfg.Recovery.Enabled = true
	p, err := newTriageProcessor(processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Shutdown(context.Background()) }()
	ctx := context.Background()
	n := uint64(0)
	growStack(8) // 8 frames of 64 KiB
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, w := range wires {
			b.StopTimer()
			td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(w)
			if err != nil {
				b.Fatal(err)
			}
			n++
			id := traceID(3_000_000 + n)
			setTraceID(td, id)
			h := &heldTrace{id: id, td: td, spans: td.SpanCount(), firstSeen: time.Now(), trigger: triggerDecisionWait}
			if hasRoot(td) {
				h.trigger = triggerRoot
			}
			ct := p.classifyTrace(ctx, h)
			b.StartTimer()
			p.annotateTrace(ctx, h, ct)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans), "ns/span")
}

// growStack grows the goroutine's stack once, before the measured region:
// a stack copy inside annotateTrace would throw off callgrind's tracking of
// the calls it toggles collection on (and the count with it). Under
// GOGC=off, as instruction counts are taken, the stack never shrinks back.
//
//go:noinline
func growStack(depth int) byte {
	var pad [64 << 10]byte
	pad[depth] = byte(depth)
	if depth > 0 {
		pad[0] = growStack(depth - 1)
	}
	return pad[0] + pad[depth]
}

func hasRoot(td ptrace.Traces) bool {
	root := false
	eachSpan(td, func(_ ptrace.ResourceSpans, s ptrace.Span) { root = root || s.ParentSpanID().IsEmpty() })
	return root
}
