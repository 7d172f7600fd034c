package triageprocessor

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadata"
)

// benchTrace returns a GenAI-semconv agent trace of about n spans: chat and
// tool calls alternating under one invoke_agent root (sent last, as an SDK
// exports it), with realistic message payloads. When failing, one tool call
// in the middle fails with an upstream error.
func benchTrace(seq uint64, n int, failing bool) ptrace.Traces {
	msg := `[{"role":"user","parts":[{"type":"text","content":"` + strings.Repeat("plan the trip ", 20) + `"}]}]`
	defs := `[{"type":"function","name":"lookup","parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}]`
	var specs []spanSpec
	for i := 0; len(specs) < n-1; i++ {
		id := uint64(2 + len(specs))
		if i%2 == 0 {
			specs = append(specs, spanSpec{id: id, parent: 1, name: "chat m", attrs: map[string]any{
				"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
				"gen_ai.input.messages": msg, "gen_ai.tool.definitions": defs,
				"gen_ai.output.messages": `[{"role":"assistant","parts":[{"type":"tool_call","id":"c` + fmt.Sprint(i) + `","name":"lookup","arguments":{"q":"x"}}]}]`,
			}})
			continue
		}
		sp := spanSpec{id: id, parent: 1, name: "execute_tool lookup", attrs: map[string]any{
			"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
			"gen_ai.tool.call.id": "c" + fmt.Sprint(i-1), "gen_ai.tool.call.arguments": `{"q":"x"}`,
			"gen_ai.tool.call.result": `{"answer":"` + strings.Repeat("data ", 40) + `"}`,
		}}
		if failing && len(specs) >= n/2 && len(specs) < n/2+2 {
			sp.errMsg = "upstream returned 502 Bad Gateway"
		}
		specs = append(specs, sp)
	}
	specs = append(specs, spanSpec{id: 1, name: "invoke_agent a", attrs: map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}})
	return agentTrace(traceID(seq), "bench-agent", specs...)
}

// BenchmarkConsumeTraces feeds whole agent traces (root last) through the
// processor: buffer, trajectory.Build, classification, annotation, forward.
// 10 % of the traces fail.
func BenchmarkConsumeTraces(b *testing.B) {
	for _, rec := range []bool{true, false} {
		for _, n := range []int{20, 200} {
			benchConsume(b, n, rec)
		}
	}
}

// benchConsume runs one case; with rec the recovery engine (in-memory
// history, default policy) decides each failed run and hears of each
// successful one.
func benchConsume(b *testing.B, n int, rec bool) {
	{
		b.Run(fmt.Sprintf("recovery=%v/spans_per_trace=%d", rec, n), func(b *testing.B) {
			const variants = 10
			batches := make([]ptrace.Traces, variants)
			for i := range batches {
				batches[i] = benchTrace(uint64(i), n, i == 0)
			}
			cfg := createDefaultConfig().(*Config)
			cfg.Recovery.Enabled = rec
			p, err := newTriageProcessor(processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				td := batches[i%variants]
				// A fresh trace ID each time so every trace is decided, not
				// answered from the decision cache.
				setTraceID(td, traceID(uint64(1_000_000+i)))
				if err := p.ConsumeTraces(ctx, td); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*batches[0].SpanCount())/b.Elapsed().Seconds(), "spans/s")
			if err := p.Shutdown(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}

func setTraceID(td ptrace.Traces, id [16]byte) {
	eachSpan(td, func(_ ptrace.ResourceSpans, s ptrace.Span) { s.SetTraceID(id) })
}
