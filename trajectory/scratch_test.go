package trajectory

import (
	"reflect"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// captureInputs loads every capture with its Build options (its log
// events when it has them).
func captureInputs(t *testing.T) (tds []ptrace.Traces, opts [][]Option) {
	t.Helper()
	for _, f := range traceCaptures(t) {
		var o []Option
		if logs := strings.TrimSuffix(f, ".json") + ".logs.json"; fileExists(logs) {
			o = append(o, WithLogs(loadLogsFixture(t, logs)))
		}
		tds = append(tds, loadFixture(t, f))
		opts = append(opts, o)
	}
	return tds, opts
}

// A scratch reused from one input to the next (other sizes, other traces,
// duplicates, logs) gives what a fresh one gives, and keeps no reference
// into the input once reset.
func TestBuildScratchReusedAndCleared(t *testing.T) {
	tds, opts := captureInputs(t)
	dup := newSynth("svc")
	dup.span(1, 0, "root", nil)
	dup.span(2, 1, "chat", map[string]any{"gen_ai.operation.name": "chat"})
	dup.span(2, 1, "chat again", map[string]any{"gen_ai.operation.name": "chat"})
	dup.span(3, 1, "execute_tool t", map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"})
	tds, opts = append(tds, dup.td, interleavedTraces(12)), append(opts, nil, nil)

	sc := new(buildScratch)
	for i, td := range tds {
		var idx SpanIndex
		got := sc.build(td, append(opts[i], WithIndex(&idx)))
		sc.reset()
		if want := (new(buildScratch)).build(td, opts[i]); !reflect.DeepEqual(got, want) {
			t.Fatalf("input %d: runs differ when the scratch is reused", i)
		}
		if len(idx.Spans()) != td.SpanCount() {
			t.Fatalf("input %d: %d spans indexed, want %d", i, len(idx.Spans()), td.SpanCount())
		}
		for k, n := range sc.nodes[:cap(sc.nodes)] {
			if n != (node{}) {
				t.Fatalf("input %d: node %d kept after reset", i, k)
			}
		}
		for k, n := range sc.byTrace[:cap(sc.byTrace)] {
			if n != (node{}) {
				t.Fatalf("input %d: grouped node %d kept after reset", i, k)
			}
		}
		if !reflect.ValueOf(sc.opts).IsZero() || !reflect.ValueOf(sc.inputs).IsZero() || len(sc.traceIdx) != 0 {
			t.Fatalf("input %d: options, input lists or trace map kept after reset", i)
		}
	}
}

// Many traces in one input (found through the trace map past the first
// few) give the runs each trace gives on its own, in order of first
// appearance.
func TestBuildManyTracesInOneInput(t *testing.T) {
	tds, _ := captureInputs(t)
	all := ptrace.NewTraces()
	var want []Run
	seen := map[pcommon.TraceID]bool{}
	traces := 0
	for _, td := range tds {
		ids := map[pcommon.TraceID]bool{}
		clash := false
		ForEachSpan(td, func(sp ptrace.Span) {
			ids[sp.TraceID()] = true
			clash = clash || seen[sp.TraceID()]
		})
		if clash {
			continue
		}
		for id := range ids {
			seen[id] = true
		}
		traces += len(ids)
		want = append(want, Build(td)...)
		td.ResourceSpans().MoveAndAppendTo(all.ResourceSpans())
	}
	if traces <= 8 {
		t.Fatalf("only %d traces", traces)
	}
	if got := Build(all); !reflect.DeepEqual(got, want) {
		t.Fatalf("%d traces in one input: runs differ from each trace's own", traces)
	}
}

// interleavedTraces is n traces of an agent span, a chat span and a tool
// span, their spans interleaved (one span of each trace in turn).
func interleavedTraces(n int) ptrace.Traces {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for k := 0; k < 3; k++ {
		for t := 0; t < n; t++ {
			sp := spans.AppendEmpty()
			sp.SetTraceID(pcommon.TraceID{byte(t + 1)})
			sp.SetSpanID(sid(uint64(k + 1)))
			sp.SetStartTimestamp(pcommon.Timestamp(1000 * (k + 1)))
			sp.SetEndTimestamp(pcommon.Timestamp(1000*(k+1) + 500))
			switch k {
			case 0:
				sp.SetName("invoke_agent a")
				sp.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
				sp.Attributes().PutStr("gen_ai.agent.name", "agent-"+string(rune('a'+t)))
			case 1:
				sp.SetParentSpanID(sid(1))
				sp.SetName("chat m")
				sp.Attributes().PutStr("gen_ai.operation.name", "chat")
			case 2:
				sp.SetParentSpanID(sid(1))
				sp.SetName("execute_tool t")
				sp.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
				sp.Attributes().PutStr("gen_ai.tool.name", "t")
			}
		}
	}
	return td
}

// Traces whose spans are interleaved are each built from their own spans.
func TestBuildInterleavedTraces(t *testing.T) {
	const n = 12 // past the traces looked up without the map
	runs := Build(interleavedTraces(n))
	if len(runs) != n {
		t.Fatalf("%d runs, want %d", len(runs), n)
	}
	for i, r := range runs {
		if r.TraceID != (pcommon.TraceID{byte(i + 1)}) || len(r.SpanIDs) != 3 || len(r.Steps) != 2 ||
			r.Agent != "agent-"+string(rune('a'+i)) {
			t.Fatalf("run %d: trace %s, %d spans, %d steps, agent %q", i, r.TraceID, len(r.SpanIDs), len(r.Steps), r.Agent)
		}
	}
}

// Build calls running at once (each takes its own scratch from the pool)
// give what they give one at a time.
func TestBuildConcurrentCalls(t *testing.T) {
	tds, opts := captureInputs(t)
	want := make([][]Run, len(tds))
	for i, td := range tds {
		want[i] = Build(td, opts[i]...)
	}
	var wg sync.WaitGroup
	errs := make(chan int, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := range tds {
				i := (k + g*len(tds)/4) % len(tds)
				if !reflect.DeepEqual(Build(tds[i], opts[i]...), want[i]) {
					errs <- i
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for i := range errs {
		t.Errorf("input %d: runs differ when built concurrently", i)
	}
}
