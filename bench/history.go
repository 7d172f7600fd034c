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

	g := historyGen{rnd: rnd}
	binary.BigEndian.PutUint64(g.tid[:8], rnd.Uint64())
	binary.BigEndian.PutUint64(g.tid[8:], rnd.Uint64())
	rootID := g.newSpanID()
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(rnd.IntN(1e6)) * time.Millisecond)
	g.now = start

	g.order = 1000 + rnd.IntN(9000)
	question := fmt.Sprintf("Hi, my order A-%d arrived damaged and one item is missing. Can you check what happened and refund the missing item?", g.order)
	g.history = []string{
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
	for i := 0; i < steps; i++ {
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(g.tid)
		s.SetSpanID(g.newSpanID())
		s.SetParentSpanID(rootID)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(g.now))
		s.Attributes().PutStr("gen_ai.provider.name", "openai")
		final := i == steps-1
		if i%2 == 0 || final {
			g.chatSpan(s, i, final)
		} else {
			g.toolSpan(s, i == failAt)
		}
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(g.now))
	}

	root := ss.Spans().AppendEmpty()
	root.SetTraceID(g.tid)
	root.SetSpanID(rootID)
	root.SetName("invoke_agent shop-support-agent")
	root.SetKind(ptrace.SpanKindInternal)
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(g.now.Add(5 * time.Millisecond)))
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

// historyGen is the state of one HistoryRun: the random source (drawn in
// a fixed order, so a seed gives one run), the trace, the clock, and the
// messages sent so far (already JSON-encoded) with the tool call pending.
type historyGen struct {
	rnd     *rand.Rand
	tid     pcommon.TraceID
	now     time.Time
	order   int
	history []string

	pendingCall, pendingTool, pendingArgs string
}

func (g *historyGen) newSpanID() pcommon.SpanID {
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], g.rnd.Uint64()|1)
	return id
}

// chatSpan fills model step i: it asks for a tool, or, final, answers.
func (g *historyGen) chatSpan(s ptrace.Span, i int, final bool) {
	rnd, a := g.rnd, s.Attributes()
	if g.pendingCall != "" {
		// The tool ran without a span of its own (not instrumented): only
		// its result fed back shows it.
		g.history = append(g.history, toolResultMessage(g.pendingCall, fmt.Sprintf(`{"status":"ok","tool":%q}`, g.pendingTool)))
		g.pendingCall = ""
	}
	g.now = g.now.Add(time.Duration(300+rnd.IntN(900)) * time.Millisecond)
	putChatModel(rnd, s)
	a.PutInt("gen_ai.usage.input_tokens", int64(200+60*len(g.history)))
	a.PutInt("gen_ai.usage.output_tokens", int64(20+rnd.IntN(120)))
	a.PutStr("server.address", "api.openai.com")
	a.PutStr("gen_ai.tool.definitions", toolDefinitions)
	a.PutStr("gen_ai.input.messages", "["+strings.Join(g.history, ",")+"]")
	reasons := a.PutEmptySlice("gen_ai.response.finish_reasons")
	if final {
		reasons.AppendEmpty().SetStr("stop")
		a.PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"I have refunded the missing item; the credit will show within 5 business days."}],"finish_reason":"stop"}]`)
		return
	}
	tool := toolNames[rnd.IntN(len(toolNames))]
	g.pendingCall = fmt.Sprintf("call_%016x", rnd.Uint64())
	g.pendingTool = tool
	g.pendingArgs = fmt.Sprintf(`{"order_id":"A-%d","query":"step %d"}`, g.order, i)
	call := fmt.Sprintf(`{"role":"assistant","parts":[{"type":"tool_call","id":%q,"name":%q,"arguments":%s}],"finish_reason":"tool_calls"}`, g.pendingCall, tool, g.pendingArgs)
	reasons.AppendEmpty().SetStr("tool_calls")
	a.PutStr("gen_ai.output.messages", "["+call+"]")
	g.history = append(g.history, call)
}

// toolSpan fills the tool step that runs the pending call; failed: it
// fails with an upstream 502.
func (g *historyGen) toolSpan(s ptrace.Span, failed bool) {
	rnd, a := g.rnd, s.Attributes()
	g.now = g.now.Add(time.Duration(20+rnd.IntN(400)) * time.Millisecond)
	s.SetName("execute_tool " + g.pendingTool)
	s.SetKind(ptrace.SpanKindInternal)
	a.PutStr("gen_ai.operation.name", "execute_tool")
	a.PutStr("gen_ai.tool.name", g.pendingTool)
	a.PutStr("gen_ai.tool.type", "function")
	a.PutStr("gen_ai.tool.call.id", g.pendingCall)
	a.PutStr("gen_ai.tool.call.arguments", g.pendingArgs)
	var result string
	if failed {
		failUpstream502(s, g.now)
		result = "Error: upstream returned 502 Bad Gateway"
	} else {
		result = fmt.Sprintf(`{"status":"ok","order":{"id":"A-%d","state":"delivered","items":[{"sku":"SKU-%d","qty":1,"price":19.9},{"sku":"SKU-%d","qty":2,"price":5.5}],"carrier":"DHL","tracking":"JD%012d"}}`, g.order, rnd.IntN(9999), rnd.IntN(9999), rnd.Int64N(1e12))
		a.PutStr("gen_ai.tool.call.result", result)
	}
	g.history = append(g.history, toolResultMessage(g.pendingCall, result))
	g.pendingCall = ""
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
