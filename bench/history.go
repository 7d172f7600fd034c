package bench

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// historyBatch is how many ended spans an SDK's batch span processor sends
// per export request in the history runs (the root, ending last, is in the
// last request).
const historyBatch = 64

const historySystemPrompt = "You are the support assistant of an online shop. Answer the customer's question using the tools; " +
	"never promise a refund you have not issued; keep answers short."

// HistoryRun returns one agent run of steps steps as OTel GenAI semconv
// spans, the way current instrumentations record a chat loop: every chat
// span carries the whole conversation so far in gen_ai.input.messages
// (system prompt, user question, then each earlier tool call and its
// result), the tool definitions in gen_ai.tool.definitions, and the new
// tool call in gen_ai.output.messages. Steps alternate chat / execute_tool;
// the last step is the final answer. The input of the k-th chat span holds
// about 2k messages, so the bytes of a run grow with the square of its
// steps: the benchmark checks that the cost follows the bytes.
//
// A failing run's last tool call fails with an upstream 502 (status ERROR,
// http.response.status_code, an exception event), the error is fed back to
// the model, and the root ends in error.
//
// The spans are returned in the order they end, cut into export requests of
// historyBatch spans, the root last.
func HistoryRun(rnd *rand.Rand, steps int, failing bool) []ptrace.Traces {
	steps = max(steps, 2)
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	res := rs.Resource().Attributes()
	res.PutStr("service.name", "shop-support-agent")
	res.PutStr("service.version", "2.3.0")
	res.PutStr("telemetry.sdk.language", "python")
	res.PutStr("telemetry.sdk.name", "opentelemetry")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("opentelemetry.instrumentation.openai_v2")
	ss.Scope().SetVersion("2.1b0")

	var tid pcommon.TraceID
	binary.BigEndian.PutUint64(tid[:8], rnd.Uint64())
	binary.BigEndian.PutUint64(tid[8:], rnd.Uint64())
	newSpanID := func() pcommon.SpanID {
		var id pcommon.SpanID
		binary.BigEndian.PutUint64(id[:], rnd.Uint64()|1)
		return id
	}
	rootID := newSpanID()
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(rnd.IntN(1e6)) * time.Millisecond)
	now := start

	order := 1000 + rnd.IntN(9000)
	question := fmt.Sprintf("Hi, my order A-%d arrived damaged and one item is missing. Can you check what happened and refund the missing item?", order)
	// history holds the messages sent so far, already JSON-encoded.
	history := []string{
		fmt.Sprintf(`{"role":"system","parts":[{"type":"text","content":%q}]}`, historySystemPrompt),
		fmt.Sprintf(`{"role":"user","parts":[{"type":"text","content":%q}]}`, question),
	}
	failAt := -1
	if failing {
		// The last tool call of the run.
		failAt = steps - 2
		if failAt%2 == 0 {
			failAt--
		}
	}
	var pendingCall, pendingTool, pendingArgs string
	for i := 0; i < steps; i++ {
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(newSpanID())
		s.SetParentSpanID(rootID)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(now))
		a := s.Attributes()
		a.PutStr("gen_ai.provider.name", "openai")
		final := i == steps-1
		if i%2 == 0 || final {
			if pendingCall != "" {
				// The tool ran without a span of its own (not
				// instrumented): only its result fed back shows it.
				history = append(history, toolResultMessage(pendingCall, fmt.Sprintf(`{"status":"ok","tool":%q}`, pendingTool)))
				pendingCall = ""
			}
			now = now.Add(time.Duration(300+rnd.IntN(900)) * time.Millisecond)
			s.SetName("chat gpt-4o-mini")
			s.SetKind(ptrace.SpanKindClient)
			a.PutStr("gen_ai.operation.name", "chat")
			a.PutStr("gen_ai.request.model", "gpt-4o-mini")
			a.PutStr("gen_ai.response.model", "gpt-4o-mini-2024-07-18")
			a.PutStr("gen_ai.response.id", fmt.Sprintf("chatcmpl-%016x", rnd.Uint64()))
			a.PutInt("gen_ai.usage.input_tokens", int64(200+60*len(history)))
			a.PutInt("gen_ai.usage.output_tokens", int64(20+rnd.IntN(120)))
			a.PutStr("server.address", "api.openai.com")
			a.PutStr("gen_ai.tool.definitions", toolDefinitions)
			a.PutStr("gen_ai.input.messages", "["+strings.Join(history, ",")+"]")
			reasons := a.PutEmptySlice("gen_ai.response.finish_reasons")
			if final {
				reasons.AppendEmpty().SetStr("stop")
				a.PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"I have refunded the missing item; the credit will show within 5 business days."}],"finish_reason":"stop"}]`)
			} else {
				tool := toolNames[rnd.IntN(len(toolNames))]
				pendingCall = fmt.Sprintf("call_%016x", rnd.Uint64())
				pendingTool = tool
				pendingArgs = fmt.Sprintf(`{"order_id":"A-%d","query":"step %d"}`, order, i)
				call := fmt.Sprintf(`{"role":"assistant","parts":[{"type":"tool_call","id":%q,"name":%q,"arguments":%s}],"finish_reason":"tool_calls"}`, pendingCall, tool, pendingArgs)
				reasons.AppendEmpty().SetStr("tool_calls")
				a.PutStr("gen_ai.output.messages", "["+call+"]")
				history = append(history, call)
			}
		} else {
			now = now.Add(time.Duration(20+rnd.IntN(400)) * time.Millisecond)
			s.SetName("execute_tool " + pendingTool)
			s.SetKind(ptrace.SpanKindInternal)
			a.PutStr("gen_ai.operation.name", "execute_tool")
			a.PutStr("gen_ai.tool.name", pendingTool)
			a.PutStr("gen_ai.tool.type", "function")
			a.PutStr("gen_ai.tool.call.id", pendingCall)
			a.PutStr("gen_ai.tool.call.arguments", pendingArgs)
			var result string
			if i == failAt {
				s.Status().SetCode(ptrace.StatusCodeError)
				s.Status().SetMessage("upstream returned 502 Bad Gateway")
				a.PutStr("error.type", "502")
				a.PutInt("http.response.status_code", 502)
				ev := s.Events().AppendEmpty()
				ev.SetName("exception")
				ev.SetTimestamp(pcommon.NewTimestampFromTime(now))
				ev.Attributes().PutStr("exception.type", "httpx.HTTPStatusError")
				ev.Attributes().PutStr("exception.message", "Server error '502 Bad Gateway' for url 'https://orders.internal/api/orders'")
				result = "Error: upstream returned 502 Bad Gateway"
			} else {
				result = fmt.Sprintf(`{"status":"ok","order":{"id":"A-%d","state":"delivered","items":[{"sku":"SKU-%d","qty":1,"price":19.9},{"sku":"SKU-%d","qty":2,"price":5.5}],"carrier":"DHL","tracking":"JD%012d"}}`, order, rnd.IntN(9999), rnd.IntN(9999), rnd.Int64N(1e12))
				a.PutStr("gen_ai.tool.call.result", result)
			}
			history = append(history, toolResultMessage(pendingCall, result))
			pendingCall = ""
		}
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	}

	root := ss.Spans().AppendEmpty()
	root.SetTraceID(tid)
	root.SetSpanID(rootID)
	root.SetName("invoke_agent shop-support-agent")
	root.SetKind(ptrace.SpanKindInternal)
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(5 * time.Millisecond)))
	a := root.Attributes()
	a.PutStr("gen_ai.operation.name", "invoke_agent")
	a.PutStr("gen_ai.provider.name", "openai")
	a.PutStr("gen_ai.agent.name", "shop-support-agent")
	a.PutStr("gen_ai.conversation.id", fmt.Sprintf("conv-%08x", rnd.Uint32()))
	a.PutStr("gen_ai.request.model", "gpt-4o-mini")
	if failing {
		root.Status().SetCode(ptrace.StatusCodeError)
		root.Status().SetMessage("tool call failed: upstream returned 502 Bad Gateway")
		a.PutStr("error.type", "ToolExecutionError")
	}
	return splitBatches(td, historyBatch)
}

func toolResultMessage(callID, result string) string {
	return fmt.Sprintf(`{"role":"tool","parts":[{"type":"tool_call_response","id":%q,"response":%q}]}`, callID, result)
}

// NewHistoryReplay returns n distinct history runs of steps steps, one in
// ten failing.
func NewHistoryReplay(n, steps int, seed uint64) *Replay {
	rnd := rand.New(rand.NewPCG(seed, uint64(steps)))
	r := NewReplay(seed)
	for i := 0; i < n; i++ {
		r.Add(fmt.Sprintf("history-%d-%d", steps, i), HistoryRun(rnd, steps, i%10 == 0)...)
	}
	return r
}
