package guard

import (
	"cmp"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/trajectory"
)

// sharedDir finds shared/ by walking up from the working directory.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		cand := filepath.Join(dir, "shared")
		if st, err := os.Stat(filepath.Join(cand, "fixtures", "frameworks")); err == nil && st.IsDir() {
			return cand
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("shared/fixtures not found above the working directory")
		}
		dir = parent
	}
}

type capture struct {
	name    string
	td      ptrace.Traces
	spans   []Span // in end-time order, parentless spans last
	nRoots  int    // parentless spans at the end of spans
	verdict classifier.Verdict
	runs    []trajectory.Run
}

// loadCaptures reads every shared capture with its final verdict (the
// classifier on the whole trace). Captures with several runs are skipped:
// the guards watch a trace as one run.
func loadCaptures(t testing.TB, cls *classifier.Classifier) []capture {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(sharedDir(t), "fixtures", "frameworks", "*", "*.json"))
	var out []capture
	for _, f := range files {
		if strings.HasSuffix(f, ".logs.json") || filepath.Base(f) == "labels.json" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		runs := trajectory.Build(td)
		if len(runs) != 1 {
			continue
		}
		c := capture{name: filepath.Base(filepath.Dir(f)) + "/" + filepath.Base(f), td: td, runs: runs,
			verdict: cls.Classify(&runs[0])}
		c.spans, c.nRoots = ordered(td)
		out = append(out, c)
	}
	if len(out) == 0 {
		t.Fatal("no captures")
	}
	return out
}

// split lists the spans of td in the order td holds them, the spans with a
// parent apart from the parentless ones (roots).
func split(td ptrace.Traces) (spans, roots []Span) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				s := Span{Span: ss.Spans().At(k), Resource: rs.Resource(), Scope: ss.Scope().Name()}
				if s.Span.ParentSpanID().IsEmpty() {
					roots = append(roots, s)
				} else {
					spans = append(spans, s)
				}
			}
		}
	}
	return spans, roots
}

// ordered lists the spans of td as an SDK exporter sends them: in end-time
// order, with the parentless spans (the run's root, which ends last) held
// back to the end.
func ordered(td ptrace.Traces) ([]Span, int) {
	spans, roots := split(td)
	byEnd := func(a, b Span) int { return cmp.Compare(a.Span.EndTimestamp(), b.Span.EndTimestamp()) }
	slices.SortStableFunc(spans, byEnd)
	slices.SortStableFunc(roots, byEnd)
	return append(spans, roots...), len(roots)
}

// feed adds spans to a new run in batches cut at the given sizes (the last
// batch takes the rest) and returns the trips with the index of the batch
// that tripped them.
func feed(g *Guards, spans []Span, sizes []int) (trips []Trip, at []int) {
	r := g.NewRun()
	b := 0
	for len(spans) > 0 {
		n := len(spans)
		if b < len(sizes) && sizes[b] > 0 && sizes[b] < n {
			n = sizes[b]
		}
		for _, tr := range r.Add(spans[:n]) {
			trips = append(trips, tr)
			at = append(at, b)
		}
		spans = spans[n:]
		b++
	}
	return trips, at
}

func mustGuards(t testing.TB, cfg Config) (*Guards, *classifier.Classifier) {
	t.Helper()
	cls, err := classifier.New(classifier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, cls, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g, cls
}

func names(trips []Trip) []string {
	var out []string
	for _, tr := range trips {
		out = append(out, string(tr.Guard))
	}
	sort.Strings(out)
	return out
}

// synth builds traces span by span.
type synth struct {
	td    ptrace.Traces
	ss    ptrace.SpanSlice
	res   pcommon.Resource
	clock uint64
}

func newSynth() *synth {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "svc")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("test")
	return &synth{td: td, ss: ss.Spans(), res: rs.Resource(), clock: 1_000_000_000}
}

func sid(n uint64) pcommon.SpanID {
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], n)
	return id
}

func (s *synth) span(id, parent uint64, name string, attrs map[string]any) Span {
	sp := s.ss.AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{9})
	sp.SetSpanID(sid(id))
	if parent != 0 {
		sp.SetParentSpanID(sid(parent))
	}
	sp.SetName(name)
	s.clock += 1_000_000
	sp.SetStartTimestamp(pcommon.Timestamp(s.clock))
	sp.SetEndTimestamp(pcommon.Timestamp(s.clock + 500_000))
	for k, v := range attrs {
		switch x := v.(type) {
		case string:
			sp.Attributes().PutStr(k, x)
		case int:
			sp.Attributes().PutInt(k, int64(x))
		case float64:
			sp.Attributes().PutDouble(k, x)
		}
	}
	return Span{Span: sp, Resource: s.res, Scope: "test"}
}

// tool appends a GenAI execute_tool span under parent.
func (s *synth) tool(id, parent uint64, name, args string, failed bool) Span {
	sp := s.span(id, parent, "execute_tool "+name, map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
		"gen_ai.tool.call.arguments": args, "gen_ai.tool.call.id": "call-" + string(rune('a'+id%26)) + args,
	})
	if failed {
		sp.Span.Status().SetCode(ptrace.StatusCodeError)
		sp.Span.Status().SetMessage("upstream returned HTTP 503 Service Unavailable")
		sp.Span.Attributes().PutInt("http.response.status_code", 503)
	}
	return sp
}

// llm appends a GenAI chat span under parent.
func (s *synth) llm(id, parent uint64, in, out int) Span {
	return s.span(id, parent, "chat gpt-4o-mini", map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
		"gen_ai.usage.input_tokens": in, "gen_ai.usage.output_tokens": out,
	})
}

func (s *synth) root(id uint64) Span {
	return s.span(id, 0, "invoke_agent a", map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"})
}
