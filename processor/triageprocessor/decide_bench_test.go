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

	"github.com/triage-otel/triage/internal/callgrind"
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
	p := newBenchProcessor(b, cfg)
	ctx := context.Background()
	n := uint64(0)
	callgrind.GrowStack(8) // 8 frames of 64 KiB
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

func hasRoot(td ptrace.Traces) bool {
	root := false
	eachSpan(td, func(_ ptrace.ResourceSpans, s ptrace.Span) { root = root || s.ParentSpanID().IsEmpty() })
	return root
}

// BenchmarkDecideRunEnded decides rootless runs whose spans show they are
// over (the agent span ended in error), as the ticker decides them
// settle_wait after their last span (early.go): the check and the decision.
func BenchmarkDecideRunEnded(b *testing.B) {
	r := newRunEndedBench(b)
	ctx := context.Background()
	template := rootlessBatch(1, rootlessAgent("agent failed: upstream returned 502 Bad Gateway", "upstream returned 502 Bad Gateway", false))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.sendAndSettle(ctx, template, uint64(4_000_000+i))
	}
	b.StopTimer()
	if n := r.p.decided.len(); n < min(b.N, r.cfg.DecisionCacheSize) {
		b.Fatalf("%d of %d traces decided", n, b.N)
	}
}

// BenchmarkDecideRunEndedCaptures decides the rootless traces of the
// shared captures as the defaults decide them (settle_wait 2 s before
// decision_wait 30 s): each trace's spans arrive in one batch, the ticker
// checks settle_wait later whether its runs are over (early.go) and decides
// those (trigger run_ended); the others are decided when decision_wait
// expires. One op is one pass over the rootless traces; run_ended/op is
// how many took the early path. bench/'s configuration (decision_wait 1 s)
// never reaches the check.
func BenchmarkDecideRunEndedCaptures(b *testing.B) {
	var traces []ptrace.Traces
	for _, td := range captureFiles(b) {
		groups, _ := groupByTrace(td, &ptrace.ProtoMarshaler{})
		for _, g := range groups {
			if !hasRoot(g.td) {
				traces = append(traces, g.td)
			}
		}
	}
	r := newRunEndedBench(b)
	ctx := context.Background()
	n := uint64(0)
	ended := 0
	callgrind.GrowStack(8)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, tmpl := range traces {
			n++
			r.sendAndSettle(ctx, tmpl, 5_000_000+n)
			if r.p.held.Len() == 0 {
				ended++
			}
			r.now = r.now.Add(r.cfg.DecisionWait)
			r.p.decideExpired(ctx)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(ended)/float64(b.N), "run_ended/op")
	b.ReportMetric(float64(len(traces)), "traces/op")
}

// runEndedBench is a processor with recovery decisions on (the defaults
// otherwise) whose clock the benchmark moves.
type runEndedBench struct {
	b   *testing.B
	p   *triageProcessor
	cfg *Config
	now time.Time
}

func newRunEndedBench(b *testing.B) *runEndedBench {
	cfg := createDefaultConfig().(*Config)
	cfg.Recovery.Enabled = true
	r := &runEndedBench{b: b, p: newBenchProcessor(b, cfg), cfg: cfg, now: time.Unix(1_800_000_000, 0)}
	r.p.now = func() time.Time { return r.now }
	return r
}

// sendAndSettle consumes a copy of tmpl as trace id (the copy untimed),
// then moves the clock past settle_wait and runs the ticker once, as it
// runs settle_wait after a rootless trace's last span (early.go).
func (r *runEndedBench) sendAndSettle(ctx context.Context, tmpl ptrace.Traces, id uint64) {
	b := r.b
	b.StopTimer()
	td := ptrace.NewTraces()
	tmpl.CopyTo(td)
	setTraceID(td, traceID(id))
	b.StartTimer()
	if err := r.p.ConsumeTraces(ctx, td); err != nil {
		b.Fatal(err)
	}
	r.now = r.now.Add(r.cfg.SettleWait + time.Millisecond)
	r.p.decideExpired(ctx)
}

// newBenchProcessor is a processor at cfg's settings sending to a nop
// consumer, shut down when the benchmark's run ends.
func newBenchProcessor(b *testing.B, cfg *Config) *triageProcessor {
	b.Helper()
	p, err := newTriageProcessor(processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p
}
