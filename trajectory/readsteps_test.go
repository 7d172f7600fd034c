package trajectory

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// spanReadings is a ReadSteps of SpanReader's readings, counting what
// Build takes.
type spanReadings struct {
	steps map[pcommon.SpanID]*Step
	asked map[pcommon.SpanID]int
}

func (s *spanReadings) ReadStep(id pcommon.SpanID, st *Step) bool {
	s.asked[id]++
	got, ok := s.steps[id]
	if ok {
		*st = *got
	}
	return ok
}

func readAll(td ptrace.Traces) *spanReadings {
	out := &spanReadings{steps: map[pcommon.SpanID]*Step{}, asked: map[pcommon.SpanID]int{}}
	var idx SpanIndex
	Build(td, WithIndex(&idx))
	var r SpanReader
	for _, e := range idx.Spans() {
		if got := r.Read(e.Span, e.Resource.Resource(), e.Scope.Scope().Name()); got.Role == SpanLLM || got.Role == SpanTool {
			st := got.Step
			out.steps[e.Span.SpanID()] = &st
		}
	}
	return out
}

// Build over every capture gives the same runs with the spans' readings
// handed over as without, and asks for each step span at most once.
func TestBuildWithReadStepsMatchesBuild(t *testing.T) {
	reused := 0
	for _, f := range traceCaptures(t) {
		var opts []Option
		if logs := strings.TrimSuffix(f, ".json") + ".logs.json"; fileExists(logs) {
			// Spans with joined log events are read again.
			opts = append(opts, WithLogs(loadLogsFixture(t, logs)))
		}
		want := Build(loadFixture(t, f), opts...)
		td := loadFixture(t, f)
		src := readAll(td)
		got := Build(td, append(opts, WithReadSteps(src))...)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: runs differ with the readings handed over", f)
		}
		for id, n := range src.asked {
			if n > 1 {
				t.Fatalf("%s: span %s asked for %d times", f, id, n)
			}
		}
		reused += len(src.asked)
	}
	if reused == 0 {
		t.Fatal("no reading was asked for")
	}
}

// A reading that does not name the span, a span whose ID another span of
// the trace has, and a span with joined log events are read again.
func TestBuildReadsAgainWhatReadStepsCannotVouchFor(t *testing.T) {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	root := ss.Spans().AppendEmpty()
	root.SetTraceID(pcommon.TraceID{1})
	root.SetSpanID(pcommon.SpanID{1})
	root.SetName("invoke_agent a")
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	for i, name := range []string{"read_file", "write_file"} {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{1})
		sp.SetSpanID(pcommon.SpanID{byte(2 + i)})
		sp.SetParentSpanID(pcommon.SpanID{1})
		sp.SetName("execute_tool " + name)
		sp.SetStartTimestamp(pcommon.Timestamp(10 + i))
		sp.SetEndTimestamp(pcommon.Timestamp(20 + i))
		sp.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
		sp.Attributes().PutStr("gen_ai.tool.name", name)
	}
	want := Build(td)
	if len(want) != 1 || len(want[0].Steps) != 2 {
		t.Fatalf("setup: %d runs", len(want))
	}
	check := func(what string, src *spanReadings) {
		t.Helper()
		if got := Build(td, WithReadSteps(src)); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: runs differ", what)
		}
	}

	// A stale reading (another name, other times) is not taken.
	src := readAll(td)
	stale := *src.steps[pcommon.SpanID{2}]
	stale.ToolName = "stale"
	stale.Name = "execute_tool stale"
	src.steps[pcommon.SpanID{2}] = &stale
	other := *src.steps[pcommon.SpanID{3}]
	other.ToolName = "stale"
	other.End++
	src.steps[pcommon.SpanID{3}] = &other
	check("stale readings", src)

	// Readings are taken (a changed tool name shows it when nothing else
	// differs), unless the ID is shared.
	src = readAll(td)
	src.steps[pcommon.SpanID{2}].ToolName = "taken"
	if got := Build(td, WithReadSteps(src)); got[0].Steps[0].ToolName != "taken" {
		t.Fatalf("reading not taken: %q", got[0].Steps[0].ToolName)
	}
	dup := ss.Spans().AppendEmpty()
	ss.Spans().At(1).CopyTo(dup)
	dup.SetName("execute_tool duplicate")
	want = Build(td)
	check("shared span ID", src)
}

// traceCaptures are the shared captures' trace files (not their labels or
// log events).
func traceCaptures(t *testing.T) []string {
	files, _ := filepath.Glob(filepath.Join(fixturesDir, "*", "*.json"))
	var out []string
	for _, f := range files {
		if filepath.Base(f) != "labels.json" && !strings.HasSuffix(f, ".logs.json") {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		t.Skip("no captures")
	}
	return out
}
