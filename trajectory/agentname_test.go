package trajectory

import "testing"

// OpenAI Agents through OpenInference: the trace span is an AGENT span
// named after the workflow around the agent's own AGENT span. The agent is
// the one that makes the model calls, whether the outer span arrived (the
// run succeeded) or was lost (it failed): one name either way.
func TestAgentIsTheOneMakingTheModelCalls(t *testing.T) {
	build := func(withWrapper bool) Run {
		s := newSynth("svc")
		if withWrapper {
			span(s, 1, 0, "Agent workflow", 0, 100, map[string]any{"openinference.span.kind": "AGENT"})
		}
		span(s, 2, 1, "Agent workflow", 1, 99, map[string]any{"openinference.span.kind": "CHAIN"})
		span(s, 3, 2, "travel-assistant", 2, 98, map[string]any{"openinference.span.kind": "AGENT", "graph.node.id": "travel-assistant"})
		span(s, 4, 3, "turn", 3, 50, map[string]any{"openinference.span.kind": "CHAIN"})
		span(s, 5, 4, "generation", 4, 40, map[string]any{"openinference.span.kind": "LLM", "llm.model_name": "m"})
		runs := Build(s.td)
		if len(runs) != 1 {
			t.Fatalf("%d runs", len(runs))
		}
		return runs[0]
	}
	for _, wrapped := range []bool{true, false} {
		if got := build(wrapped).Agent; got != "travel-assistant" {
			t.Errorf("wrapper present %v: agent %q, want travel-assistant", wrapped, got)
		}
	}

	// A supervisor that calls the model before handing over to a
	// sub-agent is the run's agent.
	s := newSynth("svc")
	span(s, 1, 0, "supervisor", 0, 100, map[string]any{"openinference.span.kind": "AGENT"})
	span(s, 2, 1, "plan", 1, 10, map[string]any{"openinference.span.kind": "LLM", "llm.model_name": "m"})
	span(s, 3, 1, "researcher", 11, 90, map[string]any{"openinference.span.kind": "AGENT"})
	span(s, 4, 3, "search", 12, 50, map[string]any{"openinference.span.kind": "LLM", "llm.model_name": "m"})
	runs := Build(s.td)
	if len(runs) != 1 || runs[0].Agent != "supervisor" {
		t.Fatalf("runs %d, agent %q; want one run of supervisor", len(runs), runs[0].Agent)
	}

	// The agent's explicit name wins over its span's name.
	s = newSynth("svc")
	span(s, 1, 0, "Agent workflow", 0, 100, map[string]any{"openinference.span.kind": "AGENT"})
	span(s, 3, 1, "travel-assistant", 2, 98, map[string]any{"openinference.span.kind": "AGENT", "agent.name": "booking"})
	span(s, 5, 3, "generation", 4, 40, map[string]any{"openinference.span.kind": "LLM", "llm.model_name": "m"})
	if got := Build(s.td)[0].Agent; got != "booking" {
		t.Errorf("explicit agent.name: %q, want booking", got)
	}
}
