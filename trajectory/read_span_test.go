package trajectory

import (
	"reflect"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Every span of every capture reads, on its own, as the step Build makes of
// that span alone: SpanReader is Build's per-span reading, not a second one.
func TestSpanReaderReadsAsBuildDoes(t *testing.T) {
	steps := 0
	for _, f := range traceCaptures(t) {
		td := loadFixture(t, f)
		var r SpanReader
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			rs := rss.At(i)
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				for k := 0; k < ss.Spans().Len(); k++ {
					sp := ss.Spans().At(k)
					got := r.Read(sp, rs.Resource(), ss.Scope().Name())

					alone := ptrace.NewTraces()
					ars := alone.ResourceSpans().AppendEmpty()
					rs.Resource().CopyTo(ars.Resource())
					ass := ars.ScopeSpans().AppendEmpty()
					ss.Scope().CopyTo(ass.Scope())
					sp.CopyTo(ass.Spans().AppendEmpty())
					runs := Build(alone)
					var want []Step
					for _, run := range runs {
						want = append(want, run.Steps...)
					}
					// A part alone is the model call's step assembled from it.
					isStep := got.Role == SpanLLM || got.Role == SpanTool || got.Role == SpanPart
					if isStep != (len(want) == 1) || len(want) > 1 {
						t.Fatalf("%s span %s %q: role %d, Build alone made %d steps", f, sp.SpanID(), sp.Name(), got.Role, len(want))
					}
					if !isStep {
						continue
					}
					steps++
					w := want[0]
					if got.Role == SpanLLM && len(got.Step.Offered) == 0 {
						// Build completes Offered from the run's head span's
						// gen_ai.tool.definitions: the span itself here.
						w.Offered = got.Step.Offered
					}
					if !reflect.DeepEqual(got.Step, w) {
						t.Errorf("%s span %s %q:\n read  %+v\n build %+v", f, sp.SpanID(), sp.Name(), got.Step, w)
					}
				}
			}
		}
	}
	if steps == 0 {
		t.Fatal("no step spans read")
	}
}

func TestSpanReaderSessionAgentAndTools(t *testing.T) {
	s := newSynth("svc")
	agent := s.span(1, 0, "invoke_agent planner", map[string]any{
		"gen_ai.operation.name":  "invoke_agent",
		"gen_ai.agent.name":      "planner",
		"gen_ai.conversation.id": "conv-9",
		"gen_ai.tool.definitions": `[{"type":"function","name":"delete_file","parameters":{"type":"object"},` +
			`"annotations":{"destructiveHint":true}},{"type":"function","name":"read_file"}]`,
	})
	var r SpanReader
	got := r.Read(agent, s.td.ResourceSpans().At(0).Resource(), "test")
	if got.Role != SpanAgent || got.Agent != "planner" || got.Session != "conv-9" {
		t.Fatalf("agent span read as %+v", got)
	}
	if len(got.Tools) != 2 || got.Tools[0].Name != "delete_file" {
		t.Fatalf("tools %+v", got.Tools)
	}
	if reason, ok := got.Tools[0].Hints.NonIdempotent(); !ok || reason != "MCP annotation destructiveHint: true" {
		t.Errorf("delete_file hints %+v: %q %v", got.Tools[0].Hints, reason, ok)
	}
	if _, ok := got.Tools[1].Hints.NonIdempotent(); ok {
		t.Errorf("read_file states no hint but reads as non-idempotent")
	}
}

func TestToolHints(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		annotations string
		want        ToolHints
		nonIdem     bool
	}{
		{`{"destructiveHint":true}`, ToolHints{Destructive: &yes}, true},
		{`{"idempotentHint":false}`, ToolHints{Idempotent: &no}, true},
		{`{"idempotentHint":true,"destructiveHint":false}`, ToolHints{Idempotent: &yes, Destructive: &no}, false},
		// Read-only tools are idempotent whatever the other hints say.
		{`{"readOnlyHint":true,"destructiveHint":true}`, ToolHints{ReadOnly: &yes, Destructive: &yes}, false},
		// A hint that is not a boolean is not stated; the others still count.
		{`{"destructiveHint":"yes","idempotentHint":false}`, ToolHints{Idempotent: &no}, true},
		{`[1,2]`, ToolHints{}, false},
	}
	for _, c := range cases {
		defs := decodeToolDefs(`[{"name":"t","inputSchema":{"type":"object"},"annotations":` + c.annotations + `}]`)
		if len(defs) != 1 {
			t.Fatalf("%s: %d defs", c.annotations, len(defs))
		}
		if !reflect.DeepEqual(defs[0].Hints, c.want) {
			t.Errorf("%s: hints %+v, want %+v", c.annotations, defs[0].Hints, c.want)
		}
		if _, ok := defs[0].Hints.NonIdempotent(); ok != c.nonIdem {
			t.Errorf("%s: NonIdempotent %v, want %v", c.annotations, ok, c.nonIdem)
		}
		if len(defs[0].Schema) == 0 {
			t.Errorf("%s: schema lost", c.annotations)
		}
	}
	// OpenAI-style wrapping.
	defs := decodeToolDefs(`[{"type":"function","function":{"name":"pay","annotations":{"idempotentHint":false}}}]`)
	if len(defs) != 1 || defs[0].Hints.Idempotent == nil || *defs[0].Hints.Idempotent {
		t.Errorf("function.annotations not read: %+v", defs)
	}
}

// An MCP server's tools/list answer (as @traceloop/instrumentation-mcp
// records it) reaches Run.ListedTools with its annotations.
func TestMCPToolsListAnnotations(t *testing.T) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "mcp-agent")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("@traceloop/instrumentation-mcp")
	root := ss.Spans().AppendEmpty()
	root.SetTraceID([16]byte{1})
	root.SetSpanID(sid(1))
	root.SetName("mcp.client.session")
	list := ss.Spans().AppendEmpty()
	list.SetTraceID([16]byte{1})
	list.SetSpanID(sid(2))
	list.SetParentSpanID(sid(1))
	list.SetName("tools/list.mcp")
	list.Attributes().PutStr("traceloop.entity.output",
		`{"tools":[{"name":"transfer_funds","inputSchema":{"type":"object"},"annotations":{"idempotentHint":false}},{"name":"get_balance","annotations":{"readOnlyHint":true}}]}`)
	runs := Build(td)
	if len(runs) != 1 || len(runs[0].ListedTools) != 2 {
		t.Fatalf("runs %+v", runs)
	}
	lt := runs[0].ListedTools
	if _, ok := lt[0].Hints.NonIdempotent(); !ok || lt[0].Name != "transfer_funds" {
		t.Errorf("transfer_funds %+v", lt[0])
	}
	if _, ok := lt[1].Hints.NonIdempotent(); ok {
		t.Errorf("get_balance is read-only: %+v", lt[1])
	}
	var r SpanReader
	got := r.Read(list, rs.Resource(), ss.Scope().Name())
	if got.Role != SpanOther || len(got.Tools) != 2 {
		t.Errorf("tools/list read as %+v", got)
	}
}

func TestStepCost(t *testing.T) {
	s := newSynth("svc")
	sp := s.span(1, 0, "chat m", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 10})
	sp.Attributes().PutDouble("gen_ai.usage.cost", 0.0125)
	s.span(2, 0, "llm", map[string]any{"openinference.span.kind": "LLM", "llm.cost.total": "0.5"})
	bad := s.span(3, 0, "chat m", map[string]any{"gen_ai.operation.name": "chat"})
	bad.Attributes().PutDouble("gen_ai.usage.cost", -3)
	var got []float64
	for _, r := range Build(s.td) {
		for _, st := range r.Steps {
			got = append(got, st.Cost)
		}
	}
	if !reflect.DeepEqual(got, []float64{0.0125, 0.5, 0}) {
		t.Errorf("costs %v, want [0.0125 0.5 0]", got)
	}
}

func TestRunToolHints(t *testing.T) {
	yes := true
	offered := []ToolDef{{Name: "a"}, {Name: "pay", Hints: ToolHints{Destructive: &yes}}}
	r := Run{
		Steps:       []Step{{Kind: StepLLM, Offered: offered}, {Kind: StepLLM, Offered: offered}, {Kind: StepTool}},
		ListedTools: []ToolDef{{Name: "drop", Hints: ToolHints{Destructive: &yes}}},
	}
	if _, ok := r.ToolHints("pay").NonIdempotent(); !ok {
		t.Error("pay: hints on the offered definitions not found")
	}
	if _, ok := r.ToolHints("drop").NonIdempotent(); !ok {
		t.Error("drop: hints on the listed tools not found")
	}
	if h := r.ToolHints("a"); h != (ToolHints{}) {
		t.Errorf("a states nothing: %+v", h)
	}
}
