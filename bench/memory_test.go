package bench

import (
	"context"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// settledHeap is the live heap once a processor has taken in what it was
// given, measured from before: a processor that hands its input to its
// own goroutines (groupbytrace queues each trace to a worker, which copies
// it into its storage) still holds the queued input, not yet what it keeps,
// when ConsumeTraces returns, and how much of it is queued depends on how
// busy the machine is (groupbytrace's figure read at once swung from 1.2
// to 1.6 KB per span). The heap is read every settleEvery until two
// readings in a row agree within settleTolerance of what is held, at most
// settleReadings times; a processor that works inside ConsumeTraces
// agrees at once.
func settledHeap(before uint64) int64 {
	held := int64(heapInUse()) - int64(before)
	for range settleReadings {
		time.Sleep(settleEvery)
		next := int64(heapInUse()) - int64(before)
		diff, prev := next-held, held
		held = next
		if diff < 0 {
			diff = -diff
		}
		if float64(diff) <= settleTolerance*float64(prev) {
			break
		}
	}
	return held
}

const (
	settleEvery     = 50 * time.Millisecond
	settleReadings  = 20
	settleTolerance = 0.002
)

// BenchmarkHeldMemory measures the heap a processor keeps per span it
// holds: the captures, roots removed, are fed passes times with fresh
// trace IDs to a processor whose timers are an hour long, then the live
// heap, once settled (settledHeap), is compared with what it was before.
// heap-B/span is that difference per span held; heap/proto is the same per
// byte of the spans' protobuf encoding (what max_bytes counts). Run with
// -benchtime 1x. Beside the peers, proc=triage/guards=off is the triage
// processor without its in-flight guards: what its buffer holds, apart
// from the guards' state of each run.
func BenchmarkHeldMemory(b *testing.B) { heldMemory(b, 0, false) }

// BenchmarkHeldMemorySplit is BenchmarkHeldMemory with each trace's spans
// sent in requests of at most heldSplitSpans spans, in the order they
// ended, as an SDK's batch span processor exports a run that lasts longer
// than its export interval: a processor then holds each trace across
// several batches, not one.
func BenchmarkHeldMemorySplit(b *testing.B) { heldMemory(b, heldSplitSpans, false) }

// BenchmarkHeldMemoryProto is BenchmarkHeldMemory with each request
// encoded to protobuf and decoded again before it is fed, as the OTLP
// receiver hands requests to a collector's pipeline: every string is then
// the request's own (copied input shares its strings with the captures,
// which the "before" heap holds), so the figure is what a whole collector
// holds per span (collectorbench -held) in a few seconds instead of
// minutes.
func BenchmarkHeldMemoryProto(b *testing.B) { heldMemory(b, 0, true) }

const heldSplitSpans = 2

// heldMemory is the held-memory benchmark with each request cut into
// requests of at most split spans (0: as captured), decoded from protobuf
// when proto is set.
func heldMemory(b *testing.B, split int, proto bool) {
	caps := loadCaptures(b)
	const passes = 5
	type heldCase struct {
		name string
		p    peer
		o    peerOptions
	}
	var cases []heldCase
	for _, p := range peers {
		if p.name == "baseline" {
			continue
		}
		cases = append(cases, heldCase{p.name, p, peerOptions{wait: time.Hour}})
		if p.name == "triage" {
			cases = append(cases, heldCase{p.name + "/guards=off", p, peerOptions{wait: time.Hour, guardsOff: true}})
		}
	}
	for _, c := range cases {
		b.Run("proc="+c.name, func(b *testing.B) {
			for range b.N {
				next := &spanCounter{}
				proc := c.p.create(b, next, newProgress(), c.o)
				ctx := context.Background()
				if err := proc.Start(ctx, componenttest.NewNopHost()); err != nil {
					b.Fatal(err)
				}
				// The "before" heap holds no input: a processor that moves
				// its input into its buffer keeps that input, one that
				// copies it lets it go, and either way what is live once
				// the input is dropped is what the processor holds.
				before := heapInUse()
				ops := make([][]ptrace.Traces, 0, passes*caps.Len())
				var spans, bytes int
				for range passes * caps.Len() {
					reqs := WithoutRoots(caps.Next())
					if split > 0 {
						var cut []ptrace.Traces
						for _, td := range reqs {
							cut = append(cut, splitBatches(td, split)...)
						}
						reqs = cut
					}
					if proto {
						reqs = protoDecoded(b, reqs)
					}
					bytes += opBytes(reqs)
					for _, td := range reqs {
						spans += td.SpanCount()
					}
					ops = append(ops, reqs)
				}
				for i, reqs := range ops {
					for _, td := range reqs {
						if err := proc.ConsumeTraces(ctx, td); err != nil {
							b.Fatal(err)
						}
					}
					ops[i] = nil
				}
				ops = nil
				held := float64(settledHeap(before))
				if got := next.forwarded.Load(); got != 0 {
					b.Fatalf("%s forwarded %d spans before its timer", c.name, got)
				}
				b.ReportMetric(held/float64(spans), "heap-B/span")
				b.ReportMetric(held/float64(bytes), "heap/proto")
				runtime.KeepAlive(ops)
				b.StopTimer()
				_ = proc.Shutdown(ctx)
				b.StartTimer()
			}
		})
	}
}

// protoDecoded is reqs encoded to protobuf and decoded again, each request
// then owning all of its memory.
func protoDecoded(b *testing.B, reqs []ptrace.Traces) []ptrace.Traces {
	var m ptrace.ProtoMarshaler
	var u ptrace.ProtoUnmarshaler
	out := make([]ptrace.Traces, len(reqs))
	for i, td := range reqs {
		buf, err := m.MarshalTraces(td)
		if err != nil {
			b.Fatal(err)
		}
		if out[i], err = u.UnmarshalTraces(buf); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// BenchmarkDecidedMemory measures what the triage processor keeps per
// trace after deciding it: the captures are replayed passes times, every
// trace decided and forwarded to a sink that keeps nothing, and the live
// heap after is compared with before. With recovery on, the per-session
// attempt history of the recovery engine is part of what is kept; with it
// off, the figure is the decision cache's. Run with -benchtime 1x.
func BenchmarkDecidedMemory(b *testing.B) {
	caps := loadCaptures(b)
	const passes = 10
	triage := peers[0]
	for _, recoveryOff := range []bool{false, true} {
		name := "recovery=on"
		if recoveryOff {
			name = "recovery=off"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				done := newProgress()
				next := &spanCounter{}
				proc := triage.create(b, next, done, peerOptions{recoveryOff: recoveryOff})
				ctx := context.Background()
				if err := proc.Start(ctx, componenttest.NewNopHost()); err != nil {
					b.Fatal(err)
				}
				before := heapInUse()
				ops := make([][]ptrace.Traces, 0, passes*caps.Len())
				var spans, traces int64
				for range passes * caps.Len() {
					reqs := caps.Next()
					traces += int64(caps.Traces())
					for _, td := range reqs {
						spans += int64(td.SpanCount())
					}
					ops = append(ops, reqs)
				}
				for i, reqs := range ops {
					for _, td := range reqs {
						if err := proc.ConsumeTraces(ctx, td); err != nil {
							b.Fatal(err)
						}
					}
					ops[i] = nil
				}
				// Traces whose root never arrives are decided after
				// decision_wait (1 s).
				if !done.waitFor(spans, drainTimeout) {
					b.Fatalf("only %d of %d spans forwarded", done.count, spans)
				}
				kept := float64(int64(heapInUse()) - int64(before))
				b.ReportMetric(kept/float64(traces), "heap-B/trace")
				b.StopTimer()
				_ = proc.Shutdown(ctx)
				b.StartTimer()
			}
		})
	}
}
