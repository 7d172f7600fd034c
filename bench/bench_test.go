package bench

import (
	"context"
	"fmt"
	"runtime"
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

	"github.com/triage-otel/triage/processor/triageprocessor"
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
}

func (c *spanCounter) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }
func (c *spanCounter) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	n := int64(td.SpanCount())
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
	create func(b *testing.B, next *spanCounter, done *progress) processor.Traces
	// countsTraces: progress counts decided traces (the peer drops what it
	// does not sample, so forwarded spans cannot tell when it is done);
	// otherwise progress counts forwarded spans.
	countsTraces bool
}

var peers = []peer{
	{
		name: "triage",
		create: func(b *testing.B, next *spanCounter, done *progress) processor.Traces {
			f := triageprocessor.NewFactory()
			cfg := f.CreateDefaultConfig().(*triageprocessor.Config)
			// Every trace's root arrives, so decisions never wait for the
			// timer; the limits are set so that nothing is evicted.
			cfg.DecisionWait = time.Second
			cfg.NumTraces = 200_000
			cfg.MaxBytes = 0
			next.onSpans = done.add
			return create(b, f, cfg, next)
		},
	},
	{
		name: "tailsampling",
		create: func(b *testing.B, next *spanCounter, done *progress) processor.Traces {
			f := tailsamplingprocessor.NewFactory()
			cfg := f.CreateDefaultConfig().(*tailsamplingprocessor.Config)
			// 1 s is its shortest effective wait: decisions run on a fixed
			// 1 s ticker. num_traces holds a few seconds of the stream.
			cfg.DecisionWait = time.Second
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
		create: func(b *testing.B, next *spanCounter, done *progress) processor.Traces {
			f := groupbytraceprocessor.NewFactory()
			cfg := f.CreateDefaultConfig().(*groupbytraceprocessor.Config)
			// It has no notion of a complete trace: it releases each trace
			// wait_duration after its first span. Short, so the timer adds
			// little idle time; num_traces large so nothing is evicted.
			cfg.WaitDuration = 10 * time.Millisecond
			cfg.NumTraces = 200_000
			next.onSpans = done.add
			return create(b, f, cfg, next)
		},
	},
	{
		// The work the harness itself does (copying the corpus, fresh IDs)
		// with nothing in between: subtract it mentally from the others.
		name: "baseline",
		create: func(b *testing.B, next *spanCounter, done *progress) processor.Traces {
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

func create(b *testing.B, f processor.Factory, cfg any, next consumer.Traces) processor.Traces {
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
// 200 spans per trace, one in ten failing) and waits, inside the timed
// region, until every trace sent has been decided. Besides ns/op, B/op and
// allocs/op (one op = one ConsumeTraces of 200 spans), it reports
// spans/s (wall clock, including the wait for the last decisions),
// cpu-ns/span (user+system CPU of the whole process, all goroutines and
// GC included, per span: unaffected by how long a peer's timers sleep) and
// allocs/span.
func BenchmarkAgentTraces(b *testing.B) {
	for _, size := range []int{20, 200} {
		corpus := NewCorpus(100, size, uint64(size))
		for _, p := range peers {
			b.Run(fmt.Sprintf("spans_per_trace=%d/proc=%s", size, p.name), func(b *testing.B) {
				runPeer(b, p, corpus)
			})
		}
	}
}

func runPeer(b *testing.B, p peer, corpus *Corpus) {
	tracesPerOp := max(1, spansPerOp/corpus.SpansPerTrace())
	spansPerBatch := int64(tracesPerOp * corpus.SpansPerTrace())
	done := newProgress()
	next := &spanCounter{}
	proc := p.create(b, next, done)
	ctx := context.Background()
	if err := proc.Start(ctx, componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}

	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := proc.ConsumeTraces(ctx, corpus.NextBatch(tracesPerOp)); err != nil {
			b.Fatal(err)
		}
	}
	target := int64(b.N) * spansPerBatch
	if p.countsTraces {
		target = int64(b.N * tracesPerOp)
	}
	if !done.waitFor(target, drainTimeout) {
		b.Fatalf("%s: only %d of %d decided %s after the last batch", p.name, done.count, target, drainTimeout)
	}
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	runtime.ReadMemStats(&m1)

	if err := proc.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	spans := float64(int64(b.N) * spansPerBatch)
	b.ReportMetric(spans/elapsed.Seconds(), "spans/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/spans, "cpu-ns/span")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/spans, "allocs/span")
	b.ReportMetric(float64(next.forwarded.Load())/spans, "fwd-ratio")
}

// cpuTime is the user+system CPU time used by this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
