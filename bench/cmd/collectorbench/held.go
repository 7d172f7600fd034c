package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/triage-otel/triage/bench"
)

// The held-memory measure (-held): the heap a collector keeps per span it
// holds, in the whole process, with the strings of every span its own
// (decoded by its receiver, as in production; the in-process
// BenchmarkHeldMemory shares them with the corpus, so it counts only the
// processors' own structures). The corpus is sent twice, its parentless
// spans dropped so that nothing is decided, to a collector whose timers
// are an hour long (BENCH_WAIT, read by the configurations); after each
// load the live heap is read as the least heap_alloc the collector reports
// over heldWindow, which holds the collection the Go runtime forces at
// least every two minutes. Held bytes per span are the second load's
// growth over its spans: what the process holds before (its start, pools,
// the first load's traces) cancels.

// heldResult is one held-memory measure.
type heldResult struct {
	spans, bytes int64
	held         int64 // live heap after the second load minus after the first
}

func (r heldResult) perSpan() float64  { return float64(r.held) / float64(r.spans) }
func (r heldResult) perProto() float64 { return float64(r.held) / float64(r.bytes) }

// heldWait is the timers' length in the held measure: none fires while it
// runs.
const heldWait = "BENCH_WAIT=1h"

func measureHeld(collector, config string, src *bench.Replay, passes, workers int, window time.Duration) (heldResult, error) {
	m, s, stop, err := startCollector(collector, config, heldWait)
	if err != nil {
		return heldResult{}, err
	}
	defer stop()
	s.rootless = true
	if _, _, _, err := s.replay(src, passes, workers); err != nil {
		return heldResult{}, err
	}
	h1, err := m.liveHeap(window)
	if err != nil {
		return heldResult{}, err
	}
	sent, _, nbytes, err := s.replay(src, passes, workers)
	if err != nil {
		return heldResult{}, err
	}
	h2, err := m.liveHeap(window)
	if err != nil {
		return heldResult{}, err
	}
	// Nothing is forwarded but the triage processor's in-flight decision
	// spans (one per guard trip).
	n, err := m.exported()
	if err != nil {
		return heldResult{}, err
	}
	added, err := m.sum("otelcol_processor_triage_in_flight_decisions")
	if err != nil {
		return heldResult{}, err
	}
	if n != int64(added) {
		return heldResult{}, fmt.Errorf("forwarded %d items before its timer, %d of them in-flight decisions: does the configuration read BENCH_WAIT?", n, int64(added))
	}
	return heldResult{spans: sent, bytes: nbytes, held: h2 - h1}, nil
}

// runHeld runs the held measure of every configuration, the
// configurations of a round side by side (memory, not CPU, is measured).
func runHeld(w io.Writer, name string, procs []string, configFor func(string) (bin, config string, err error), src func() (*bench.Replay, error), rounds, passes, workers int, window time.Duration) error {
	res := map[string][]heldResult{}
	for r := 0; r < rounds; r++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		round := map[string]heldResult{}
		for _, p := range procs {
			bin, config, err := configFor(p)
			if err != nil {
				return err
			}
			// Each collector gets its own corpus: a Replay hands out
			// fresh IDs from its own state and is not safe to share.
			corpus, err := src()
			if err != nil {
				return err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				hr, err := measureHeld(bin, config, corpus, passes, workers, window)
				mu.Lock()
				defer mu.Unlock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("%s round %d: %w", p, r+1, err)
				}
				round[p] = hr
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		for _, p := range procs {
			hr := round[p]
			res[p] = append(res[p], hr)
			fmt.Fprintf(w, "BenchmarkCollectorHeld/corpus=%s/proc=%s %d %.1f heap-B/span %.4f heap/proto\n",
				name, p, hr.spans, hr.perSpan(), hr.perProto())
		}
	}
	fmt.Fprintln(w, "\nmedian live heap per held span (whole collector process):")
	for _, p := range procs {
		var v []float64
		for _, hr := range res[p] {
			v = append(v, hr.perSpan())
		}
		fmt.Fprintf(w, "  %-16s %8.0f B/span  (rounds: %s)\n", p, median(v), join(v))
	}
	return nil
}

// liveHeap is the least heap_alloc the collector reports over window (read
// every heapPoll): the live heap right after a collection, plus the little
// an idle collector allocates until the next read.
func (m *meter) liveHeap(window time.Duration) (int64, error) {
	least := int64(-1)
	for end := time.Now().Add(window); time.Now().Before(end); time.Sleep(heapPoll) {
		v, err := m.sum("otelcol_process_runtime_heap_alloc_bytes")
		if err != nil {
			return 0, err
		}
		if least < 0 || int64(v) < least {
			least = int64(v)
		}
	}
	return least, nil
}

const heapPoll = 250 * time.Millisecond
