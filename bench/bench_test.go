package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/groupbytraceprocessor"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/tailsamplingprocessor"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"golang.org/x/sys/unix"

	"github.com/triage-otel/triage/internal/callgrind"
	"github.com/triage-otel/triage/processor/triageprocessor"
	"github.com/triage-otel/triage/trajectory"
	"github.com/triage-otel/triage/wire"
)

// spansPerOp is the size of one ConsumeTraces call: whole traces adding up
// to 200 spans (10 traces of 20 spans, or 1 trace of 200), so that an op is
// the same amount of data for both trace sizes.
const spansPerOp = 200

// drainTimeout bounds the wait for the last decisions after the last batch
// was sent (tailsamplingprocessor decides on a fixed 1 s ticker).
const drainTimeout = 60 * time.Second

// progress counts what a processor has finished with: spans forwarded, or
// traces decided, depending on the peer.
type progress struct {
	mu    sync.Mutex
	cond  *sync.Cond
	count int64
}

func newProgress() *progress {
	p := &progress{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *progress) add(n int64) {
	p.mu.Lock()
	p.count += n
	p.mu.Unlock()
	p.cond.Broadcast()
}

// waitFor blocks until count reaches target or timeout passes.
func (p *progress) waitFor(target int64, timeout time.Duration) bool {
	timer := time.AfterFunc(timeout, p.cond.Broadcast)
	defer timer.Stop()
	deadline := time.Now().Add(timeout)
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.count < target {
		if time.Now().After(deadline) {
			return false
		}
		p.cond.Wait()
	}
	return true
}

// spanCounter is the next consumer: it counts the spans it is given.
type spanCounter struct {
	forwarded atomic.Int64
	onSpans   func(int64)
	// added counts the spans the triage processor adds (in-flight
	// decision spans, wire.SpanInFlightDecision): not spans it was sent,
	// so not in forwarded.
	added atomic.Int64
}

func (c *spanCounter) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }
func (c *spanCounter) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	n, added := int64(td.SpanCount()), int64(0)
	trajectory.ForEachSpan(td, func(s ptrace.Span) {
		if s.Name() == wire.SpanInFlightDecision {
			added++
		}
	})
	n -= added
	c.added.Add(added)
	c.forwarded.Add(n)
	if c.onSpans != nil {
		c.onSpans(n)
	}
	return nil
}

// peer builds one processor under test. done reports progress; target
// returns the count that means "everything sent has been decided".
type peer struct {
	name   string
	create func(b testing.TB, next *spanCounter, done *progress, o peerOptions) processor.Traces
	// countsTraces: progress counts decided traces (the peer drops what it
	// does not sample, so forwarded spans cannot tell when it is done);
	// otherwise progress counts forwarded spans.
	countsTraces bool
}

// peerOptions are the settings a benchmark changes on every peer alike.
type peerOptions struct {
	// wait replaces the peers' timers (decision_wait, settle_wait, wait_duration) when
	// set: the memory benchmarks hold traces that must not be released.
	wait time.Duration
	// recoveryOff turns the triage processor's recovery decisions off.
	recoveryOff bool
	// guardsOff turns the triage processor's in-flight guards off (the
	// loop and repeated-failure guards the default config turns on), so
	// that a memory benchmark can tell the buffer from the guards' state.
	guardsOff bool
}

var peers = []peer{
	{
		name: "triage",
		create: func(b testing.TB, next *spanCounter, done *progress, o peerOptions) processor.Traces {
			f := triageprocessor.NewFactory()
			cfg := f.CreateDefaultConfig().(*triageprocessor.Config)
			// Every trace's root arrives, so decisions never wait for the
			// timer; the limits are set so that nothing is evicted or cut
			// (a 1000-step run with its history is about 65 MB).
			cfg.DecisionWait = time.Second
			if o.wait > 0 {
				// Its settle_wait (a rootless trace checked for a run
				// that ended) is a timer too: with the default 2 s, how
				// much a memory benchmark finds held would depend on how
				// long the machine took to feed the traces.
				cfg.DecisionWait, cfg.SettleWait = o.wait, o.wait
			}
			cfg.NumTraces = 200_000
			cfg.MaxBytes = 0
			cfg.MaxTraceBytes = 256 << 20
			cfg.Recovery.Enabled = !o.recoveryOff
			if o.guardsOff {
				cfg.Guards.Loop.Enabled, cfg.Guards.RepeatedFailure.Enabled = false, false
			}
			next.onSpans = done.add
			return create(b, f, cfg, next)
		},
	},
	{
		name: "tailsampling",
		create: func(b testing.TB, next *spanCounter, done *progress, o peerOptions) processor.Traces {
			f := tailsamplingprocessor.NewFactory()
			cfg := f.CreateDefaultConfig().(*tailsamplingprocessor.Config)
			// 1 s is its shortest effective wait: decisions run on a fixed
			// 1 s ticker. num_traces holds a few seconds of the stream.
			cfg.DecisionWait = time.Second
			if o.wait > 0 {
				cfg.DecisionWait = o.wait
			}
			cfg.NumTraces = 200_000
			cfg.ExpectedNewTracesPerSec = 20_000
			cfg.PolicyCfgs = statusCodePolicy()
			hook := func(context.Context, pcommon.TraceID, *tailsamplingprocessor.TraceData) { done.add(1) }
			cfg.Options = append(cfg.Options,
				tailsamplingprocessor.WithSampledHooks(hook),
				tailsamplingprocessor.WithNonSampledHooks(hook))
			return create(b, f, cfg, next)
		},
		countsTraces: true,
	},
	{
		name: "groupbytrace",
		create: func(b testing.TB, next *spanCounter, done *progress, o peerOptions) processor.Traces {
			f := groupbytraceprocessor.NewFactory()
			cfg := f.CreateDefaultConfig().(*groupbytraceprocessor.Config)
			// It has no notion of a complete trace: it releases each trace
			// wait_duration after its first span. Short, so the timer adds
			// little idle time; num_traces large so nothing is evicted.
			cfg.WaitDuration = 10 * time.Millisecond
			if o.wait > 0 {
				cfg.WaitDuration = o.wait
			}
			cfg.NumTraces = 200_000
			next.onSpans = done.add
			return create(b, f, cfg, next)
		},
	},
	{
		// The work the harness itself does (copying the corpus, fresh IDs)
		// with nothing in between: subtract it mentally from the others.
		name: "baseline",
		create: func(b testing.TB, next *spanCounter, done *progress, _ peerOptions) processor.Traces {
			next.onSpans = done.add
			return passThrough{next}
		},
	},
}

func statusCodePolicy() []tailsamplingprocessor.PolicyCfg {
	// PolicyCfg embeds an unexported struct, so it is filled through the
	// same path as a collector config would be.
	var cfg tailsamplingprocessor.Config
	if err := unmarshalConfig(map[string]any{
		"policies": []any{map[string]any{
			"name":        "errors",
			"type":        "status_code",
			"status_code": map[string]any{"status_codes": []any{"ERROR"}},
		}},
	}, &cfg); err != nil {
		panic(err)
	}
	return cfg.PolicyCfgs
}

func unmarshalConfig(m map[string]any, cfg any) error {
	return confmap.NewFromStringMap(m).Unmarshal(cfg)
}

func create(b testing.TB, f processor.Factory, cfg any, next consumer.Traces) processor.Traces {
	b.Helper()
	set := processortest.NewNopSettings(f.Type())
	p, err := f.CreateTraces(context.Background(), set, cfg, next)
	if err != nil {
		b.Fatalf("%s: %v", f.Type(), err)
	}
	return p
}

type passThrough struct{ next consumer.Traces }

func (p passThrough) Start(context.Context, component.Host) error { return nil }
func (p passThrough) Shutdown(context.Context) error              { return nil }
func (p passThrough) Capabilities() consumer.Capabilities         { return consumer.Capabilities{} }
func (p passThrough) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	return p.next.ConsumeTraces(ctx, td)
}

// BenchmarkAgentTraces feeds each processor the same agent traces (20 and
// 200 spans per trace, one in ten failing, no message history) and waits,
// inside the timed region, until every trace sent has been decided. Besides
// ns/op, B/op and allocs/op (one op = one ConsumeTraces of 200 spans), it
// reports spans/s (wall clock, including the wait for the last decisions),
// cpu-ns/span (user+system CPU of the whole process, all goroutines and
// GC included, per span: unaffected by how long a peer's timers sleep) and
// allocs/span.
func BenchmarkAgentTraces(b *testing.B) {
	for _, size := range []int{20, 200} {
		corpus := NewCorpus(100, size, uint64(size))
		for _, p := range peers {
			b.Run(fmt.Sprintf("spans_per_trace=%d/proc=%s", size, p.name), func(b *testing.B) {
				runPeer(b, p, corpus.Batches(max(1, spansPerOp/size)))
			})
		}
	}
}

// BenchmarkCaptures replays the shared real captures (241 runs of 12
// stacks, with the message histories and tool definitions their
// instrumentations record) with fresh trace IDs; one op is one capture.
func BenchmarkCaptures(b *testing.B) {
	caps := loadCaptures(b)
	for _, p := range peers {
		b.Run("proc="+p.name, func(b *testing.B) { runPeer(b, p, caps) })
	}
}

// BenchmarkHistory replays agent runs whose chat spans carry the growing
// conversation (HistoryRun), from 10 to 1000 steps; one op is one run sent
// in SDK-sized batches, root last. cpu-ns/KiB staying flat from 10 to 1000
// steps is what "cost linear in the bytes received" means.
func BenchmarkHistory(b *testing.B) {
	for _, steps := range []int{10, 100, 1000} {
		n := 20
		if steps >= 1000 {
			n = 4
		}
		runs := NewHistoryReplay(n, steps, 7)
		for _, p := range peers {
			b.Run(fmt.Sprintf("steps=%d/proc=%s", steps, p.name), func(b *testing.B) { runPeer(b, p, runs) })
		}
	}
}

var (
	capturesOnce sync.Once
	captures     *Replay
	capturesErr  error
)

func loadCaptures(tb testing.TB) *Replay {
	capturesOnce.Do(func() {
		dir, err := CapturesDir()
		if err != nil {
			capturesErr = err
			return
		}
		captures, capturesErr = LoadCaptures(dir, 11)
	})
	if capturesErr != nil {
		tb.Fatal(capturesErr)
	}
	return captures
}

func opBytes(reqs []ptrace.Traces) int {
	var m ptrace.ProtoMarshaler
	n := 0
	for _, td := range reqs {
		n += m.TracesSize(td)
	}
	return n
}

// prepareBudget bounds the bytes of ops prepared ahead of the timed work:
// the data of each op is copied from its template (fresh trace IDs) and
// sized outside the CPU measurement, a chunk at a time.
const prepareBudget = 128 << 20

func runPeer(b *testing.B, p peer, src Source) {
	done := newProgress()
	next := &spanCounter{}
	proc := p.create(b, next, done, peerOptions{})
	ctx := context.Background()
	if err := proc.Start(ctx, componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}

	var spans, traces, bytes int64
	var cpu time.Duration
	var mallocs uint64
	var ms runtime.MemStats
	rootLatency := make([]time.Duration, 0, b.N)
	rootCPU := make([]time.Duration, 0, b.N)
	callgrind.GrowStack(8)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for op := 0; op < b.N; {
		// Prepare a chunk of ops with the timer and the CPU clock stopped.
		b.StopTimer()
		var chunk [][]ptrace.Traces
		for size := 0; op+len(chunk) < b.N && size < prepareBudget; {
			reqs := src.Next()
			traces += int64(src.Traces())
			n := opBytes(reqs)
			size += n
			bytes += int64(n)
			for _, td := range reqs {
				spans += int64(td.SpanCount())
			}
			chunk = append(chunk, reqs)
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		mallocs -= ms.Mallocs
		cpu0 := cpuTime()
		b.StartTimer()
		for i, reqs := range chunk {
			for j, td := range reqs {
				last := j == len(reqs)-1
				if last {
					// The thread's CPU time is the call's own work (not the
					// time it waited for a core on a loaded machine).
					runtime.LockOSThread()
				}
				t0, c0 := time.Now(), threadCPUTime()
				if err := proc.ConsumeTraces(ctx, td); err != nil {
					b.Fatal(err)
				}
				if last {
					// The last request carries the root: for the triage
					// processor this call returns once the run is decided
					// and forwarded.
					rootLatency = append(rootLatency, time.Since(t0))
					rootCPU = append(rootCPU, threadCPUTime()-c0)
					runtime.UnlockOSThread()
				}
			}
			chunk[i] = nil
		}
		op += len(chunk)
		if op >= b.N {
			target := spans
			if p.countsTraces {
				target = traces
			}
			if !done.waitFor(target, drainTimeout) {
				b.Fatalf("%s: only %d of %d decided %s after the last batch", p.name, done.count, target, drainTimeout)
			}
		}
		cpu += cpuTime() - cpu0
		runtime.ReadMemStats(&ms)
		mallocs += ms.Mallocs
	}
	elapsed := time.Since(start)
	b.StopTimer()

	if err := proc.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	fs := float64(spans)
	// spans/s is over the whole run, preparation included: only useful to
	// compare peers within one run.
	b.ReportMetric(fs/elapsed.Seconds(), "spans/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/fs, "cpu-ns/span")
	b.ReportMetric(float64(cpu.Nanoseconds())/(float64(bytes)/1024), "cpu-ns/KiB")
	b.ReportMetric(float64(mallocs)/fs, "allocs/span")
	b.ReportMetric(float64(next.forwarded.Load())/fs, "fwd-ratio")
	if p.name == "triage" {
		slices.Sort(rootLatency)
		b.ReportMetric(float64(percentile(rootLatency, 0.50))/1e6, "root-p50-ms")
		b.ReportMetric(float64(percentile(rootLatency, 0.99))/1e6, "root-p99-ms")
		slices.Sort(rootCPU)
		b.ReportMetric(float64(percentile(rootCPU, 0.50))/1e6, "root-cpu-p50-ms")
		b.ReportMetric(float64(percentile(rootCPU, 0.99))/1e6, "root-cpu-p99-ms")
	}
}

// percentile returns the q-quantile of sorted (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// cpuTime is the user+system CPU time used by this process so far.
// threadCPUTime is the CPU time of the calling thread
// (CLOCK_THREAD_CPUTIME_ID: to the nanosecond, where getrusage counts
// scheduler ticks).
func threadCPUTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
