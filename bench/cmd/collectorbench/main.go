// Command collectorbench measures whole-collector CPU per span: it starts
// the benchmark collector (bench/collector/builder-config.yaml) once per
// configuration (bench/collector/*.yaml: the OTLP receiver alone,
// groupbytrace, tail_sampling, triage, triage with its connector), replays
// a corpus to it over OTLP/HTTP protobuf with fresh trace IDs, waits until
// every span has left the pipeline, and reads the CPU time the collector
// process's threads ran (/proc/<pid>/task/*/schedstat).
//
// Rounds are A/B-paired: each round runs every configuration once, in an
// order rotated from round to round, so that load from other processes on
// the machine hits them alike; ratios are taken within a round and their
// median is reported. Output lines are in Go benchmark format, for
// benchstat:
//
//	BenchmarkCollector/corpus=captures/proc=triage  <spans>  <v> cpu-ns/span  <v> cpu-ns/KiB  <v> spans/s  <v> rss-MiB
//
// See BENCHMARKS.md for the commands.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/bench"
	"github.com/triage-otel/triage/internal/loopback"
)

func main() {
	var (
		collector = flag.String("collector", "_build/benchcol/bench-otelcol", "benchmark collector binary (built by ocb from collector/builder-config.yaml)")
		configDir = flag.String("configs", "collector", "folder of the <proc>.yaml configurations")
		procsFlag = flag.String("procs", "receiver,groupbytrace,tailsampling,triage", "configurations to run, comma-separated")
		corpus    = flag.String("corpus", "captures", "captures, or history:<steps> (e.g. history:100)")
		rounds    = flag.Int("rounds", 3, "A/B-paired rounds")
		passes    = flag.Int("passes", 10, "times the corpus is replayed per measurement (fresh trace IDs each time)")
		workers   = flag.Int("workers", 2, "concurrent export requests")
		runs      = flag.Int("runs", 20, "distinct runs of a history corpus")
		out       = flag.String("out", "", "also append the benchmark lines to this file")
		alts      = flag.String("alt", "", "other collector binaries, tag=path,...: a configuration named <proc>@<tag> runs <proc>.yaml on that binary (e.g. triage@before)")
		held      = flag.Bool("held", false, "measure the live heap per held span instead of CPU (roots dropped, timers an hour; see held.go)")
		window    = flag.Duration("held-window", 130*time.Second, "with -held: how long the heap is watched after each load for its least value (the Go runtime collects at least every 2 min)")
	)
	flag.Parse()
	binaries := map[string]string{"": *collector}
	for _, kv := range strings.Split(*alts, ",") {
		if tag, path, ok := strings.Cut(kv, "="); ok {
			binaries[tag] = path
		}
	}
	procs := strings.Split(*procsFlag, ",")
	src, name, err := loadCorpus(*corpus, *runs)
	if err != nil {
		fail(err)
	}
	var outW io.Writer = os.Stdout
	if *out != "" {
		f, err := os.OpenFile(*out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		outW = io.MultiWriter(os.Stdout, f)
	}
	spans, byteCount, traces := src.Totals()
	fmt.Fprintf(os.Stderr, "corpus %s: %d templates, %d traces, %d spans, %.1f MiB protobuf per pass; %d passes, %d rounds\n",
		name, src.Len(), traces, spans, float64(byteCount)/(1<<20), *passes, *rounds)

	// configFor is the binary and configuration file of <proc>[@<tag>].
	configFor := func(p string) (string, string, error) {
		config, tag, _ := strings.Cut(p, "@")
		bin, ok := binaries[tag]
		if !ok {
			return "", "", fmt.Errorf("%s: no -alt binary tagged %q", p, tag)
		}
		return bin, filepath.Join(*configDir, config+".yaml"), nil
	}
	if *held {
		corpusFor := func() (*bench.Replay, error) {
			r, _, err := loadCorpus(*corpus, *runs)
			return r, err
		}
		if err := runHeld(outW, name, procs, configFor, corpusFor, *rounds, *passes, *workers, *window); err != nil {
			fail(err)
		}
		return
	}
	results := map[string][]result{}
	for r := 0; r < *rounds; r++ {
		order := slices.Clone(procs)
		rot := r % len(order)
		order = append(order[rot:], order[:rot]...)
		for _, p := range order {
			bin, config, err := configFor(p)
			if err != nil {
				fail(err)
			}
			res, err := measure(bin, config, src, *passes, *workers)
			if err != nil {
				fail(fmt.Errorf("%s round %d: %w", p, r+1, err))
			}
			results[p] = append(results[p], res)
			fmt.Fprintf(outW, "BenchmarkCollector/corpus=%s/proc=%s %d %.1f cpu-ns/span %.1f cpu-ns/KiB %.0f spans/s %.1f rss-MiB %.3f fwd-ratio\n",
				name, p, res.spans, res.cpuPerSpan(), res.cpuPerKiB(), res.spansPerSec(), res.rssMiB, res.fwdRatio())
		}
	}
	summarize(os.Stderr, procs, results)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "collectorbench:", err)
	os.Exit(1)
}

func loadCorpus(spec string, runs int) (*bench.Replay, string, error) {
	if spec == "captures" {
		dir, err := bench.CapturesDir()
		if err != nil {
			return nil, "", err
		}
		r, err := bench.LoadCaptures(dir, 1)
		return r, "captures", err
	}
	if s, ok := strings.CutPrefix(spec, "history:"); ok {
		steps, err := strconv.Atoi(s)
		if err != nil || steps < 2 {
			return nil, "", fmt.Errorf("corpus %q: history:<steps> with steps >= 2", spec)
		}
		return bench.NewHistoryReplay(runs, steps, 7), fmt.Sprintf("history_steps=%d", steps), nil
	}
	return nil, "", fmt.Errorf("corpus %q: captures or history:<steps>", spec)
}

type result struct {
	spans     int64
	forwarded int64
	bytes     int64
	cpu       time.Duration
	wall      time.Duration
	rssMiB    float64
}

func (r result) cpuPerSpan() float64  { return float64(r.cpu.Nanoseconds()) / float64(r.spans) }
func (r result) cpuPerKiB() float64   { return float64(r.cpu.Nanoseconds()) / (float64(r.bytes) / 1024) }
func (r result) spansPerSec() float64 { return float64(r.spans) / r.wall.Seconds() }
func (r result) fwdRatio() float64    { return float64(r.forwarded) / float64(r.spans) }

// payload is one export request ready to send, and what the pipeline is
// expected to pass on of it.
type payload struct {
	body  []byte
	spans int64
}

// measure starts the collector on config, warms it up with one pass, then
// replays passes passes and returns the CPU the collector used from the
// first request of the measured passes until the last span left its
// pipeline.
func measure(collector, config string, src *bench.Replay, passes, workers int) (result, error) {
	m, s, stop, err := startCollector(collector, config)
	if err != nil {
		return result{}, err
	}
	defer stop()

	// Warm-up: one pass, drained, not measured.
	sent, fwd, _, err := s.replay(src, 1, workers)
	if err != nil {
		return result{}, err
	}
	base, err := m.waitExported(fwd, time.Minute, 15*time.Minute)
	if err != nil {
		return result{}, fmt.Errorf("warm-up (%d spans sent): %w", sent, err)
	}
	cpu0, err := m.cpu()
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	sent, fwd, nbytes, err := s.replay(src, passes, workers)
	if err != nil {
		return result{}, err
	}
	end, err := m.waitExported(base+fwd, time.Minute, 15*time.Minute)
	if err != nil {
		return result{}, err
	}
	wall := time.Since(start)
	cpu1, err := m.cpu()
	if err != nil {
		return result{}, err
	}
	return result{spans: sent, forwarded: end - base, bytes: nbytes, cpu: cpu1 - cpu0, wall: wall, rssMiB: m.rssMiB()}, nil
}

// startCollector starts the collector on config with env added to its
// environment and waits until its telemetry endpoint answers; stop ends
// it (SIGTERM, then a kill after 30 s).
func startCollector(collector, config string, env ...string) (m *meter, s *sender, stop func(), err error) {
	ports, err := loopback.FreePorts(2)
	if err != nil {
		return nil, nil, nil, err
	}
	otlpPort, metricsPort := ports[0], ports[1]
	cmd := exec.Command(collector, "--config", config, "--feature-gates=telemetry.newPipelineTelemetry")
	cmd.Env = append(os.Environ(),
		fmt.Sprintf("BENCH_OTLP_ENDPOINT=127.0.0.1:%d", otlpPort),
		fmt.Sprintf("BENCH_METRICS_PORT=%d", metricsPort))
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, err
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	m = &meter{pid: cmd.Process.Pid, metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)}
	if err := m.waitReady(30 * time.Second); err != nil {
		stop()
		return nil, nil, nil, fmt.Errorf("%w; collector output:\n%s", err, stderr.String())
	}
	s = &sender{
		url:         fmt.Sprintf("http://127.0.0.1:%d/v1/traces", otlpPort),
		client:      &http.Client{Timeout: 5 * time.Minute},
		sampledOnly: strings.HasPrefix(filepath.Base(config), "tailsampling"),
	}
	return m, s, stop, nil
}

type sender struct {
	url    string
	client *http.Client
	// sampledOnly: the configuration forwards only the traces with an
	// error span (tail_sampling's status-code policy).
	sampledOnly bool
	// rootless: the parentless spans are dropped before sending (-held).
	rootless bool
}

// replay sends passes passes over the corpus with fresh trace IDs and
// returns the spans sent, the spans the pipeline will pass to its exporter
// (all of them, except with tail_sampling, see expectedForward), and the
// protobuf bytes sent. Requests are marshalled by one goroutine while
// workers send them, each trace's requests in order on one worker.
func (s *sender) replay(src *bench.Replay, passes, workers int) (sent, forward, nbytes int64, err error) {
	queue := make(chan []payload, 2*workers)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for reqs := range queue {
				for _, p := range reqs {
					if e := s.post(p.body); e != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = e
						}
						mu.Unlock()
					}
				}
			}
		}()
	}
	var m ptrace.ProtoMarshaler
	total := passes * src.Len()
	for i := 0; i < total; i++ {
		reqs := src.Next()
		if s.rootless {
			reqs = bench.WithoutRoots(reqs)
		}
		fwd := expectedForward(reqs, s.sampledOnly)
		ps := make([]payload, 0, len(reqs))
		for _, td := range reqs {
			body, e := m.MarshalTraces(td)
			if e != nil {
				err = e
				break
			}
			n := int64(td.SpanCount())
			ps = append(ps, payload{body: body, spans: n})
			sent += n
			nbytes += int64(len(body))
		}
		forward += fwd
		queue <- ps
	}
	close(queue)
	wg.Wait()
	if err == nil {
		err = firstErr
	}
	return sent, forward, nbytes, err
}

// expectedForward is how many spans of reqs reach the exporter: every
// span, or with tail_sampling's status-code policy the spans of traces
// holding a span with status ERROR.
func expectedForward(reqs []ptrace.Traces, sampledOnly bool) int64 {
	if !sampledOnly {
		var n int64
		for _, td := range reqs {
			n += int64(td.SpanCount())
		}
		return n
	}
	type acc struct {
		spans int64
		err   bool
	}
	byTrace := map[[16]byte]*acc{}
	for _, td := range reqs {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				spans := sss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					sp := spans.At(k)
					a := byTrace[sp.TraceID()]
					if a == nil {
						a = &acc{}
						byTrace[sp.TraceID()] = a
					}
					a.spans++
					a.err = a.err || sp.Status().Code() == ptrace.StatusCodeError
				}
			}
		}
	}
	var n int64
	for _, a := range byTrace {
		if a.err {
			n += a.spans
		}
	}
	return n
}

func (s *sender) post(body []byte) error {
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/x-protobuf")
		resp, err := s.client.Do(req)
		if err != nil {
			if attempt < 50 && errors.Is(err, syscall.ECONNREFUSED) {
				// The receiver may start listening after the telemetry
				// endpoint answered.
				time.Sleep(100 * time.Millisecond)
				continue
			}
			return err
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		switch {
		case resp.StatusCode/100 == 2:
			return nil
		case (resp.StatusCode == 429 || resp.StatusCode == 503) && attempt < 20:
			time.Sleep(50 * time.Millisecond)
		default:
			return fmt.Errorf("%s answered %s: %s", s.url, resp.Status, msg)
		}
	}
}

// meter reads the collector's CPU, RSS and exported span count.
type meter struct {
	pid        int
	metricsURL string
}

func (m *meter) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := m.exported(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("collector not ready (its telemetry endpoint did not answer)")
}

// exported is the number of items the exporters consumed, from the
// collector's own pipeline telemetry (feature gate
// telemetry.newPipelineTelemetry). Its series carry no signal label, so in
// a configuration with the triage connector the count also holds the
// decision log records and metric points (see waitExported).
func (m *meter) exported() (int64, error) {
	n, err := m.sum("otelcol_exporter_consumed_items")
	return int64(n), err
}

// sum is the sum of every series named series in the collector's
// telemetry (0 when it has none).
func (m *meter) sum(series string) (float64, error) {
	resp, err := http.Get(m.metricsURL)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var n float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, series)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			n += v
		}
	}
	return n, sc.Err()
}

// waitExported polls until the exporters consumed target items and, when
// they consumed more (connector output), until the count stops moving. A
// count that stops short of target for stall is returned as it is (a peer
// that lost spans: the fwd-ratio shows it); it is an error only when
// nothing at all arrives within timeout.
func (m *meter) waitExported(target int64, stall, timeout time.Duration) (int64, error) {
	deadline := time.Now().Add(timeout)
	last, since := int64(-1), time.Now()
	for {
		n, err := m.exported()
		if err == nil {
			if n == target {
				return n, nil
			}
			if n != last {
				last, since = n, time.Now()
			} else if n > target && time.Since(since) >= 300*time.Millisecond {
				return n, nil
			} else if n > 0 && time.Since(since) >= stall {
				fmt.Fprintf(os.Stderr, "collectorbench: exporters consumed %d of %d items, none for %s: going on\n", n, target, stall)
				return n, nil
			}
		}
		if time.Now().After(deadline) {
			return n, fmt.Errorf("exporter consumed %d of %d spans after %s", n, target, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cpu is the CPU time the process's threads have run, in nanoseconds:
// the sum over /proc/<pid>/task/*/schedstat (the Go runtime keeps its
// threads, so none is lost to exit). /proc/<pid>/stat counts in clock ticks
// (10 ms), too coarse for short passes.
func (m *meter) cpu() (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", m.pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("reading the threads of %d: %v", m.pid, err)
	}
	var total int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread exited meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %s: %v", t, err)
		}
		total += ns
	}
	return time.Duration(total), nil
}

// rssMiB is the process's peak resident set (VmHWM).
func (m *meter) rssMiB() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// summarize prints the medians per configuration and the paired ratios of
// every configuration to every other, each ratio taken within a round.
func summarize(w io.Writer, procs []string, res map[string][]result) {
	fmt.Fprintln(w, "\nmedian CPU per span (whole collector process):")
	for _, p := range procs {
		var v []float64
		for _, r := range res[p] {
			v = append(v, r.cpuPerSpan()/1000)
		}
		fmt.Fprintf(w, "  %-16s %8.2f µs/span  (rounds: %s)\n", p, median(v), join(v))
	}
	fmt.Fprintln(w, "\npaired ratios (median over rounds of A/B within a round):")
	for _, a := range procs {
		for _, b := range procs {
			if a == b || !strings.HasPrefix(a, "triage") {
				continue
			}
			var v []float64
			for i := range min(len(res[a]), len(res[b])) {
				v = append(v, res[a][i].cpuPerSpan()/res[b][i].cpuPerSpan())
			}
			fmt.Fprintf(w, "  %s / %-14s %6.2f×  (rounds: %s)\n", a, b, median(v), join(v))
		}
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func join(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(parts, " ")
}
