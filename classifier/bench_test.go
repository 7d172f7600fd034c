package classifier

import (
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/trajectory"
)

const benchToolDefs = `[{"type":"function","function":{"name":"lookup","description":"Look a city up.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}},` +
	`{"type":"function","function":{"name":"convert","description":"Convert money.","parameters":{"type":"object","properties":{"amount":{"type":"number"},"to":{"type":"string","maxLength":3}},"required":["amount","to"]}}}]`

// syntheticTrace is one GenAI-semconv agent run of steps steps: model
// turns asking for a tool with distinct arguments, each followed by the
// tool span, the previous result fed back in the next turn's input, and a
// final answer. Every third tool call fails with a 503 and is retried, so
// the classifier has incidents and recoveries to work through.
func syntheticTrace(steps int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "bench-agent")
	ss := rs.ScopeSpans().AppendEmpty()
	traceID := pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	rootID := pcommon.SpanID{0xff, 0, 0, 0, 0, 0, 0, 1}
	t0 := time.Unix(1_800_000_000, 0)
	at := func(i int) pcommon.Timestamp {
		return pcommon.NewTimestampFromTime(t0.Add(time.Duration(i) * time.Millisecond))
	}
	span := func(i int, name string) ptrace.Span {
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(traceID)
		s.SetSpanID(pcommon.SpanID{0, 0, 0, 0, byte(i >> 16), byte(i >> 8), byte(i), 2})
		s.SetParentSpanID(rootID)
		s.SetName(name)
		s.SetStartTimestamp(at(i * 10))
		s.SetEndTimestamp(at(i*10 + 5))
		return s
	}
	prevResult := ""
	for i := 0; i < steps; i++ {
		callID := fmt.Sprintf("call_%d", i/2)
		if i%2 == 0 {
			s := span(i, "chat bench-model")
			a := s.Attributes()
			a.PutStr("gen_ai.operation.name", "chat")
			a.PutStr("gen_ai.request.model", "bench-model")
			a.PutStr("gen_ai.tool.definitions", benchToolDefs)
			if prevResult != "" {
				a.PutStr("gen_ai.input.messages", prevResult)
			}
			if i == steps-1 {
				a.PutStr("gen_ai.output.messages", `[{"role":"assistant","finish_reason":"stop","parts":[{"type":"text","content":"done"}]}]`)
				a.PutEmptySlice("gen_ai.response.finish_reasons").AppendEmpty().SetStr("stop")
				continue
			}
			a.PutStr("gen_ai.output.messages", fmt.Sprintf(`[{"role":"assistant","finish_reason":"tool_call","parts":[{"type":"tool_call","id":%q,"name":"lookup","arguments":{"city":"city-%d"}}]}]`, callID, i))
			a.PutEmptySlice("gen_ai.response.finish_reasons").AppendEmpty().SetStr("tool_call")
			continue
		}
		s := span(i, "execute_tool lookup")
		a := s.Attributes()
		a.PutStr("gen_ai.operation.name", "execute_tool")
		a.PutStr("gen_ai.tool.name", "lookup")
		a.PutStr("gen_ai.tool.call.id", callID)
		a.PutStr("gen_ai.tool.call.arguments", fmt.Sprintf(`{"city":"city-%d"}`, i-1))
		result := `{"temperature_c":18}`
		if (i/2)%3 == 1 {
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage("weather-api request failed: 503 Service Unavailable")
			ev := s.Events().AppendEmpty()
			ev.SetName("exception")
			ev.Attributes().PutStr("exception.type", "UpstreamHTTPError")
			ev.Attributes().PutStr("exception.message", "weather-api request failed: 503 Service Unavailable")
			result = "UpstreamHTTPError: weather-api request failed: 503 Service Unavailable"
		} else {
			a.PutStr("gen_ai.tool.call.result", result)
		}
		prevResult = fmt.Sprintf(`[{"role":"tool","parts":[{"type":"tool_call_response","id":%q,"response":%q}]}]`, callID, result)
	}
	root := ss.Spans().AppendEmpty()
	root.SetTraceID(traceID)
	root.SetSpanID(rootID)
	root.SetName("invoke_agent bench")
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.Attributes().PutStr("gen_ai.agent.name", "bench")
	root.SetStartTimestamp(at(0))
	root.SetEndTimestamp(at(steps*10 + 10))
	return td
}

func TestSyntheticTraceClassifies(t *testing.T) {
	// The benchmark input must exercise the classifier: a built run with
	// all its steps, failed tool calls that were retried, a final answer.
	c := mustNew(t, Options{})
	runs := trajectory.Build(syntheticTrace(20))
	if len(runs) != 1 || len(runs[0].Steps) != 20 {
		t.Fatalf("built %d runs (steps %v)", len(runs), func() []int {
			var n []int
			for _, r := range runs {
				n = append(n, len(r.Steps))
			}
			return n
		}())
	}
	v := c.Classify(&runs[0])
	if len(v.Incidents) == 0 {
		t.Fatalf("no incidents: %+v", v)
	}
	if v.Outcome == OutcomeOK {
		t.Fatalf("outcome %s", v.Outcome)
	}
}

func BenchmarkClassify(b *testing.B) {
	c := mustNew(b, Options{})
	for _, steps := range []int{20, 1000} {
		td := syntheticTrace(steps)
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				runs := trajectory.Build(td)
				for i := range runs {
					_ = c.Classify(&runs[i])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps), "ns/step")
		})
	}
}
