package trajectory

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

const benchToolDefs = `[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},` +
	`{"type":"function","name":"get_local_time","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},` +
	`{"type":"function","name":"convert_currency","parameters":{"type":"object","properties":{"amount":{"type":"number"},"from":{"type":"string"},"to":{"type":"string"}},"required":["amount","from","to"]}},` +
	`{"type":"function","name":"search_docs","parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}]`

// benchRun is a GenAI-semconv agent run of the given number of steps:
// alternating chat spans (messages with the previous tool call and its
// result, a requested call, four tool definitions) and execute_tool spans,
// each with an HTTP child span. Per-step attributes have a fixed size, so
// the input grows linearly with the number of steps.
func benchRun(steps int) ptrace.Traces {
	s := newSynth("bench")
	s.span(1, 0, "invoke_agent bench", map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bench", "gen_ai.conversation.id": "c",
	})
	id := uint64(2)
	for i := 0; i < steps; i++ {
		call := fmt.Sprintf("call_%d", i/2)
		if i%2 == 0 {
			prev := fmt.Sprintf("call_%d", i/2-1)
			s.span(id, 1, "chat m", map[string]any{
				"gen_ai.operation.name":          "chat",
				"gen_ai.response.model":          "m",
				"gen_ai.response.finish_reasons": []string{"tool_calls"},
				"gen_ai.usage.input_tokens":      100,
				"gen_ai.usage.output_tokens":     20,
				"gen_ai.tool.definitions":        benchToolDefs,
				"gen_ai.input.messages": `[{"role":"user","parts":[{"type":"text","content":"weather in Paris?"}]},` +
					`{"role":"assistant","parts":[{"type":"tool_call","id":"` + prev + `","name":"get_weather","arguments":{"city":"Paris"}}]},` +
					`{"role":"tool","parts":[{"type":"tool_call_response","id":"` + prev + `","response":"{\"temperature_c\":18}"}]}]`,
				"gen_ai.output.messages": `[{"role":"assistant","finish_reason":"tool_calls","parts":[{"type":"tool_call","id":"` + call + `","name":"get_weather","arguments":{"city":"Paris"}}]}]`,
			})
		} else {
			s.span(id, 1, "execute_tool get_weather", map[string]any{
				"gen_ai.operation.name":      "execute_tool",
				"gen_ai.tool.name":           "get_weather",
				"gen_ai.tool.call.id":        call,
				"gen_ai.tool.call.arguments": `{"city":"Paris"}`,
				"gen_ai.tool.call.result":    `{"temperature_c":18}`,
			})
		}
		s.span(id+1, id, "GET", map[string]any{"http.response.status_code": 200})
		id += 2
	}
	return s.td
}

func BenchmarkBuild(b *testing.B) {
	for _, steps := range []int{20, 1000} {
		td := benchRun(steps)
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				runs := Build(td)
				if len(runs) != 1 || len(runs[0].Steps) != steps {
					b.Fatalf("got %d runs", len(runs))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps), "ns/step")
		})
	}
}
