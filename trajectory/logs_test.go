package trajectory

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// logSynth builds GenAI log events the way the instrumentations emit them.
type logSynth struct {
	ld  plog.Logs
	lrs plog.LogRecordSlice
}

func newLogSynth() *logSynth {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "svc")
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName("test-instrumentation")
	return &logSynth{ld: ld, lrs: sl.LogRecords()}
}

// event appends a record for span (trace tid) named by the event.name
// attribute (attrName) or the EventName field; body is decoded from JSON
// into a map body, or kept as a string body when it is not JSON.
func (l *logSynth) event(tid pcommon.TraceID, span uint64, name string, attrName bool, body string) plog.LogRecord {
	lr := l.lrs.AppendEmpty()
	lr.SetTraceID(tid)
	if span != 0 {
		lr.SetSpanID(sid(span))
	}
	if attrName {
		lr.Attributes().PutStr("event.name", name)
	} else {
		lr.SetEventName(name)
	}
	lr.Attributes().PutStr("gen_ai.system", "openai")
	var raw map[string]any
	if body != "" && json.Unmarshal([]byte(body), &raw) == nil {
		if err := lr.Body().SetEmptyMap().FromRaw(raw); err != nil {
			panic(err)
		}
	} else if body != "" {
		lr.Body().SetStr(body)
	}
	return lr
}

// agentWithTwoCalls is an invoke_agent run with two chat spans (2, 4) and
// a tool span (3) between them, no content on the spans, as OTel's openai
// instrumentation records it.
func agentWithTwoCalls() *synth {
	s := newSynth("svc")
	s.span(1, 0, "invoke_agent a", map[string]any{"gen_ai.operation.name": "invoke_agent"})
	s.span(2, 1, "chat m", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": []string{"tool_calls"}})
	s.span(3, 1, "execute_tool search", map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search", "gen_ai.tool.call.id": "call_1"})
	s.span(4, 1, "chat m", map[string]any{"gen_ai.operation.name": "chat"})
	return s
}

func llmSteps(r *Run) []*Step {
	var out []*Step
	for i := range r.Steps {
		if r.Steps[i].Kind == StepLLM {
			out = append(out, &r.Steps[i])
		}
	}
	return out
}

func TestLogEventsJoinPerMessageEvents(t *testing.T) {
	for _, attrName := range []bool{true, false} {
		s := agentWithTwoCalls()
		l := newLogSynth()
		l.event(s.tid, 2, EventSystemMessage, attrName, `{"content":"be brief"}`)
		l.event(s.tid, 2, EventUserMessage, attrName, `{"content":"find it"}`)
		l.event(s.tid, 2, EventChoice, attrName, `{"index":0,"finish_reason":"tool_calls","message":{"tool_calls":[{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"q\":\"x\"}"}}]}}`)
		l.event(s.tid, 4, EventUserMessage, attrName, `{"content":"find it"}`)
		l.event(s.tid, 4, EventAssistantMessage, attrName, `{"tool_calls":[{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"q\":\"x\"}"}}]}`)
		l.event(s.tid, 4, EventToolMessage, attrName, `{"id":"call_1","content":"Error: upstream returned 502"}`)
		l.event(s.tid, 4, EventChoice, attrName, `{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"the answer"}}`)

		without := Build(s.td)
		if got := llmSteps(&without[0]); got[1].OutputText != "" || len(got[0].Requested) != 0 {
			t.Fatalf("spans alone carry no content, got %+v", got)
		}
		runs := Build(s.td, WithLogs(l.ld))
		if len(runs) != 1 {
			t.Fatalf("%d runs", len(runs))
		}
		llm := llmSteps(&runs[0])
		if len(llm) != 2 {
			t.Fatalf("%d LLM steps", len(llm))
		}
		first, second := llm[0], llm[1]
		if len(first.Requested) != 1 || first.Requested[0].Name != "search" || first.Requested[0].ID != "call_1" || first.Requested[0].Arguments != `{"q":"x"}` {
			t.Errorf("event.name=%v: requested %+v", attrName, first.Requested)
		}
		if len(second.InputResults) != 1 {
			t.Fatalf("event.name=%v: input results %+v", attrName, second.InputResults)
		}
		r := second.InputResults[0]
		// The tool message names only the call: the tool's name comes from
		// the assistant message's call with that ID.
		if r.CallID != "call_1" || r.Name != "search" || r.Content != "Error: upstream returned 502" {
			t.Errorf("event.name=%v: input result %+v", attrName, r)
		}
		if second.OutputText != "the answer" || strings.Join(second.FinishReasons, ",") != "stop" {
			t.Errorf("event.name=%v: output %q finish %v", attrName, second.OutputText, second.FinishReasons)
		}
		// Finish reasons recorded on the span win over the events'.
		if strings.Join(first.FinishReasons, ",") != "tool_calls" {
			t.Errorf("first finish reasons %v", first.FinishReasons)
		}
	}
}

// gen_ai.client.inference.operation.details carries the span's inference
// attributes, structured (not JSON strings) as the current conventions
// allow.
func TestLogEventsJoinInferenceDetails(t *testing.T) {
	s := agentWithTwoCalls()
	l := newLogSynth()
	lr := l.event(s.tid, 4, EventInferenceDetails, false, "")
	in := lr.Attributes().PutEmptySlice("gen_ai.input.messages")
	if err := in.FromRaw([]any{
		map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "content": "find it"}}},
		map[string]any{"role": "assistant", "parts": []any{map[string]any{"type": "tool_call", "id": "call_1", "name": "search", "arguments": map[string]any{"q": "x"}}}},
		map[string]any{"role": "tool", "parts": []any{map[string]any{"type": "tool_call_response", "id": "call_1", "response": "no such city"}}},
	}); err != nil {
		t.Fatal(err)
	}
	out := lr.Attributes().PutEmptySlice("gen_ai.output.messages")
	if err := out.FromRaw([]any{
		map[string]any{"role": "assistant", "finish_reason": "stop", "parts": []any{map[string]any{"type": "text", "content": "done"}}},
	}); err != nil {
		t.Fatal(err)
	}
	lr.Attributes().PutStr("gen_ai.tool.definitions", `[{"type":"function","name":"search","parameters":{"type":"object"}}]`)
	lr.Attributes().PutEmptySlice("gen_ai.response.finish_reasons").AppendEmpty().SetStr("stop")

	runs := Build(s.td, WithLogs(l.ld))
	st := llmSteps(&runs[0])[1]
	if len(st.InputResults) != 1 || st.InputResults[0].CallID != "call_1" || st.InputResults[0].Name != "search" || st.InputResults[0].Content != "no such city" {
		t.Errorf("input results %+v", st.InputResults)
	}
	if st.OutputText != "done" || strings.Join(st.FinishReasons, ",") != "stop" {
		t.Errorf("output %q finish %v", st.OutputText, st.FinishReasons)
	}
	if len(st.Offered) != 1 || st.Offered[0].Name != "search" {
		t.Errorf("offered %+v", st.Offered)
	}
}

func TestLogEventsDoNotOverrideSpanContent(t *testing.T) {
	s := agentWithTwoCalls()
	s.spans.At(3).Attributes().PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"from the span"}]}]`)
	l := newLogSynth()
	l.event(s.tid, 4, EventChoice, true, `{"index":0,"finish_reason":"stop","message":{"content":"from the log"}}`)
	runs := Build(s.td, WithLogs(l.ld))
	if got := llmSteps(&runs[0])[1].OutputText; got != "from the span" {
		t.Errorf("output %q: span content must win", got)
	}
}

// Records of other traces, without a span ID, naming a span that is not an
// LLM step, of other event names, or with bodies that are not messages
// change nothing and do not fail.
func TestLogEventsIgnoredRecords(t *testing.T) {
	s := agentWithTwoCalls()
	l := newLogSynth()
	other := pcommon.TraceID{9}
	l.event(other, 4, EventChoice, true, `{"message":{"content":"other trace"}}`)
	l.event(s.tid, 0, EventChoice, true, `{"message":{"content":"no span"}}`)
	l.event(s.tid, 3, EventChoice, true, `{"message":{"content":"tool span"}}`)
	l.event(s.tid, 1, EventChoice, true, `{"message":{"content":"agent span"}}`)
	l.event(s.tid, 4, "http.request", true, `{"content":"not genai"}`)
	l.event(s.tid, 4, EventChoice, true, `{"message": [1,2`) // broken JSON kept as string body
	l.event(s.tid, 4, EventToolMessage, true, `{"id": 7, "content": {"deep": [1]}}`)
	lr := l.lrs.AppendEmpty() // no name at all
	lr.SetTraceID(s.tid)
	lr.SetSpanID(sid(4))
	lr.Body().SetStr("plain")
	runs := Build(s.td, WithLogs(l.ld))
	for _, st := range llmSteps(&runs[0]) {
		if st.OutputText != "" {
			t.Errorf("step %s got output %q from an ignored record", st.SpanID, st.OutputText)
		}
	}
	for i := range runs[0].Steps {
		if st := &runs[0].Steps[i]; st.Kind == StepTool && st.Result != "" {
			t.Errorf("tool step got result %q from a log record", st.Result)
		}
	}
	// A plain-text user message is the message content.
	if !IsGenAIEvent(EventUserMessage) || IsGenAIEvent("gen_ai.unknown") || !IsOutputEvent(EventChoice) || IsOutputEvent(EventUserMessage) {
		t.Error("event name predicates")
	}
}

// Several WithLogs options (log batches exported separately) are all joined.
func TestLogEventsSeveralBatches(t *testing.T) {
	s := agentWithTwoCalls()
	a, b := newLogSynth(), newLogSynth()
	a.event(s.tid, 2, EventChoice, true, `{"finish_reason":"tool_calls","message":{"tool_calls":[{"id":"call_1","function":{"name":"search","arguments":"{}"}}]}}`)
	b.event(s.tid, 4, EventChoice, true, `{"finish_reason":"stop","message":{"content":"ok"}}`)
	runs := Build(s.td, WithLogs(a.ld), WithLogs(b.ld))
	llm := llmSteps(&runs[0])
	if len(llm[0].Requested) != 1 || llm[1].OutputText != "ok" {
		t.Errorf("requested %+v, output %q", llm[0].Requested, llm[1].OutputText)
	}
}

// The real captures: OTel's openai instrumentation and EDOT put the model's
// answer only in log events, so the forbidden strings of constraint_leak are
// only visible with the logs joined.
func TestLogEventsFixtures(t *testing.T) {
	for _, stack := range []string{"openai-otel", "openai-edot"} {
		t.Run(stack, func(t *testing.T) {
			td := loadFixture(t, filepath.Join(fixturesDir, stack, "constraint_leak.json"))
			ld := loadLogsFixture(t, filepath.Join(fixturesDir, stack, "constraint_leak.logs.json"))
			last := func(runs []Run) *Step {
				llm := llmSteps(&runs[0])
				return llm[len(llm)-1]
			}
			if got := last(Build(td)).OutputText; strings.Contains(got, "CONFIDENTIAL") {
				t.Fatalf("spans alone already hold the answer %q: the test shows nothing", got)
			}
			runs := Build(td, WithLogs(ld))
			st := last(runs)
			if !strings.Contains(st.OutputText, "CONFIDENTIAL") {
				t.Errorf("final answer %q lacks the leaked string", st.OutputText)
			}
			if len(st.InputResults) != 1 || st.InputResults[0].Name != "search_docs" || st.InputResults[0].CallID == "" {
				t.Errorf("tool result fed back: %+v", st.InputResults)
			}
			first := llmSteps(&runs[0])[0]
			if len(first.Requested) != 1 || first.Requested[0].Name != "search_docs" {
				t.Errorf("first call's requested tools %+v", first.Requested)
			}
		})
	}
}

func loadLogsFixture(tb testing.TB, path string) plog.Logs {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Skipf("fixture not available: %v", err)
	}
	ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(data)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return ld
}
