// Package bench compares the triage processor with contrib's trace-buffering
// processors (tailsamplingprocessor, groupbytraceprocessor) on the same
// agent traces. It is its own module so the peers stay out of the main
// module's dependencies. See BENCHMARKS.md at the repository root.
package bench

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/trajectory"
)

// toolDefinitions is what an agent framework records on its first chat span
// (gen_ai.tool.definitions): the tools the model may call, with schemas.
const toolDefinitions = `[{"type":"function","name":"lookup_order","description":"Find an order by id","parameters":{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}},` +
	`{"type":"function","name":"refund_order","description":"Refund an order","parameters":{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},"required":["order_id","amount"]}},` +
	`{"type":"function","name":"search_kb","description":"Search the knowledge base","parameters":{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"}},"required":["query"]}}]`

var toolNames = []string{"lookup_order", "refund_order", "search_kb"}

// AgentTrace returns one agent run as OTel GenAI semconv spans: an
// invoke_agent root and alternating chat / execute_tool children (the last
// child is the final chat), spans spans in all. The root is the last span
// in the batch, as SDK exporters send it (it ends last). A failing run has
// a tool that fails with an upstream 502 (status ERROR, error.type, an
// exception event) and ends with an error on the root.
func AgentTrace(rnd *rand.Rand, spans int, failing bool) ptrace.Traces {
	if spans < 2 {
		spans = 2
	}
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	res := rs.Resource().Attributes()
	res.PutStr("service.name", "support-agent")
	res.PutStr("service.version", "1.4.2")
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
	conversation := fmt.Sprintf("conv-%08x", rnd.Uint32())
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(rnd.IntN(1e6)) * time.Millisecond)
	now := start

	children := spans - 1
	// The failing tool call is the last tool call of the run, so the run
	// ends on an unrecovered incident.
	failAt := -1
	if failing {
		failAt = children - 2
		if failAt%2 == 0 {
			failAt--
		}
	}
	for i := 0; i < children; i++ {
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(newSpanID())
		s.SetParentSpanID(rootID)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(now))
		s.Attributes().PutStr("gen_ai.provider.name", "openai")
		if i%2 == 0 || i == children-1 {
			now = agentChatSpan(rnd, s, i, i == children-1, now)
		} else {
			now = agentToolSpan(rnd, s, i == failAt, now)
		}
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	}

	root := ss.Spans().AppendEmpty()
	root.SetTraceID(tid)
	root.SetSpanID(rootID)
	root.SetName("invoke_agent support-agent")
	root.SetKind(ptrace.SpanKindInternal)
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(5 * time.Millisecond)))
	a := root.Attributes()
	a.PutStr("gen_ai.operation.name", "invoke_agent")
	a.PutStr("gen_ai.provider.name", "openai")
	a.PutStr("gen_ai.agent.name", "support-agent")
	a.PutStr("gen_ai.agent.id", "agent-7")
	a.PutStr("gen_ai.conversation.id", conversation)
	a.PutStr("gen_ai.request.model", "gpt-4o-mini")
	if failing {
		root.Status().SetCode(ptrace.StatusCodeError)
		root.Status().SetMessage("tool lookup_order failed")
		a.PutStr("error.type", "ToolExecutionError")
	}
	return td
}

// agentChatSpan fills model step i of an AgentTrace, which asks for a
// tool or, final, answers, and returns the time it ends.
func agentChatSpan(rnd *rand.Rand, s ptrace.Span, i int, final bool, now time.Time) time.Time {
	a := s.Attributes()
	now = now.Add(time.Duration(300+rnd.IntN(900)) * time.Millisecond)
	putChatModel(rnd, s)
	a.PutInt("gen_ai.usage.input_tokens", int64(400+rnd.IntN(3000)))
	a.PutInt("gen_ai.usage.output_tokens", int64(20+rnd.IntN(300)))
	a.PutStr("server.address", "api.openai.com")
	if i == 0 {
		a.PutStr("gen_ai.tool.definitions", toolDefinitions)
	}
	reasons := a.PutEmptySlice("gen_ai.response.finish_reasons")
	if final {
		reasons.AppendEmpty().SetStr("stop")
		a.PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"Your order has been refunded; you will see the credit within 5 business days."}],"finish_reason":"stop"}]`)
		return now
	}
	tool := toolNames[rnd.IntN(len(toolNames))]
	reasons.AppendEmpty().SetStr("tool_calls")
	a.PutStr("gen_ai.output.messages", fmt.Sprintf(`[{"role":"assistant","parts":[{"type":"tool_call","id":"call_%08x","name":%q,"arguments":{"order_id":"A-%d"}}],"finish_reason":"tool_calls"}]`, rnd.Uint32(), tool, rnd.IntN(99999)))
	return now
}

// putChatModel writes what names a synthetic chat span and its model
// (gpt-4o-mini over the OpenAI API's conventions): name, kind, operation,
// models and a response id drawn from rnd.
func putChatModel(rnd *rand.Rand, s ptrace.Span) {
	a := s.Attributes()
	s.SetName("chat gpt-4o-mini")
	s.SetKind(ptrace.SpanKindClient)
	a.PutStr("gen_ai.operation.name", "chat")
	a.PutStr("gen_ai.request.model", "gpt-4o-mini")
	a.PutStr("gen_ai.response.model", "gpt-4o-mini-2024-07-18")
	a.PutStr("gen_ai.response.id", fmt.Sprintf("chatcmpl-%016x", rnd.Uint64()))
}

// agentToolSpan fills a tool step of an AgentTrace (failed: it fails with
// an upstream 502) and returns the time it ends.
func agentToolSpan(rnd *rand.Rand, s ptrace.Span, failed bool, now time.Time) time.Time {
	a := s.Attributes()
	now = now.Add(time.Duration(20+rnd.IntN(400)) * time.Millisecond)
	tool := toolNames[rnd.IntN(len(toolNames))]
	s.SetName("execute_tool " + tool)
	s.SetKind(ptrace.SpanKindInternal)
	a.PutStr("gen_ai.operation.name", "execute_tool")
	a.PutStr("gen_ai.tool.name", tool)
	a.PutStr("gen_ai.tool.type", "function")
	a.PutStr("gen_ai.tool.call.id", fmt.Sprintf("call_%08x", rnd.Uint32()))
	a.PutStr("gen_ai.tool.call.arguments", fmt.Sprintf(`{"order_id":"A-%d"}`, rnd.IntN(99999)))
	if failed {
		failUpstream502(s, now)
	} else {
		a.PutStr("gen_ai.tool.call.result", `{"status":"ok","order":{"id":"A-1042","state":"shipped","total":59.9}}`)
	}
	return now
}

// failUpstream502 makes a tool span fail the way an HTTP tool does when
// its upstream answers 502: status ERROR, error.type and the status code,
// an exception event at now.
func failUpstream502(s ptrace.Span, now time.Time) {
	a := s.Attributes()
	s.Status().SetCode(ptrace.StatusCodeError)
	s.Status().SetMessage("upstream returned 502 Bad Gateway")
	a.PutStr("error.type", "502")
	a.PutInt("http.response.status_code", 502)
	ev := s.Events().AppendEmpty()
	ev.SetName("exception")
	ev.SetTimestamp(pcommon.NewTimestampFromTime(now))
	ev.Attributes().PutStr("exception.type", "httpx.HTTPStatusError")
	ev.Attributes().PutStr("exception.message", "Server error '502 Bad Gateway' for url 'https://orders.internal/api/orders'")
}

// Corpus is a fixed set of agent traces that benchmarks replay with fresh
// trace IDs, so that generating attributes is not part of what is measured.
type Corpus struct {
	templates []ptrace.Traces
	spans     int
	next      uint64
	rnd       *rand.Rand
}

// NewCorpus builds n distinct traces of spans spans each, one in ten failing.
func NewCorpus(n, spans int, seed uint64) *Corpus {
	rnd := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := &Corpus{spans: spans, rnd: rnd}
	for i := 0; i < n; i++ {
		c.templates = append(c.templates, AgentTrace(rnd, spans, i%10 == 0))
	}
	return c
}

// SpansPerTrace is the number of spans in each trace of the corpus.
func (c *Corpus) SpansPerTrace() int { return c.spans }

// Next returns a copy of the next template with a trace ID never returned
// before. The copy is needed because processors keep (and may annotate)
// the data they are handed.
func (c *Corpus) Next() ptrace.Traces {
	t := c.templates[c.next%uint64(len(c.templates))]
	c.next++
	td := ptrace.NewTraces()
	t.CopyTo(td)
	var tid pcommon.TraceID
	binary.BigEndian.PutUint64(tid[:8], c.rnd.Uint64())
	binary.BigEndian.PutUint64(tid[8:], c.next)
	trajectory.ForEachSpan(td, func(span ptrace.Span) { span.SetTraceID(tid) })
	return td
}

// NextBatch returns traces whole traces merged into one batch (as a batch
// processor upstream would send them), each trace's root last.
func (c *Corpus) NextBatch(traces int) ptrace.Traces {
	out := c.Next()
	for i := 1; i < traces; i++ {
		c.Next().ResourceSpans().MoveAndAppendTo(out.ResourceSpans())
	}
	return out
}

// Batches is a Source of one request per op holding traces whole traces of
// the corpus.
func (c *Corpus) Batches(traces int) Source { return &corpusBatches{c: c, traces: traces} }

type corpusBatches struct {
	c      *Corpus
	traces int
}

func (b *corpusBatches) Next() []ptrace.Traces { return []ptrace.Traces{b.c.NextBatch(b.traces)} }
func (b *corpusBatches) Traces() int           { return b.traces }
