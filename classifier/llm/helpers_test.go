package llm

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/internal/llmtest"
	"github.com/triage-otel/triage/trajectory"
)

// answerJSON is a model answer.
func answerJSON(ft classifier.FailureType, conf float64, quote string) string {
	b, _ := json.Marshal(Answer{FailureType: ft, Confidence: conf, Evidence: quote})
	return string(b)
}

// lastUser is the user message of the last request.
func lastUser(s *llmtest.Server) string {
	rs := s.Requests()
	if len(rs) == 0 {
		return ""
	}
	return rs[len(rs)-1].User()
}

// countingObserver counts what a Consultant reports.
type countingObserver struct {
	mu     sync.Mutex
	counts map[string]int
}

func (o *countingObserver) add(k string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.counts == nil {
		o.counts = map[string]int{}
	}
	o.counts[k]++
}

func (o *countingObserver) get(k string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.counts[k]
}

func (o *countingObserver) Call(outcome string, _ time.Duration) { o.add("call:" + outcome) }
func (o *countingObserver) CacheHit(source string)               { o.add("hit:" + source) }
func (o *countingObserver) Rejected(gate string)                 { o.add("rejected:" + gate) }
func (o *countingObserver) Accepted(ft classifier.FailureType)   { o.add("accepted:" + string(ft)) }
func (o *countingObserver) Error(kind string)                    { o.add("error:" + kind) }
func (o *countingObserver) Skipped(reason string)                { o.add("skipped:" + reason) }

func sid(b byte) pcommon.SpanID { return pcommon.SpanID{0, 0, 0, 0, 0, 0, 2, b} }

var lookupSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)

var offeredTools = []trajectory.ToolDef{{Name: "lookup", Schema: lookupSchema}, {Name: "convert"}}

// toolFailure is a run whose lookup tool fails with msg, the model having
// been offered the tools (nil: no definitions recorded), then answers.
func toolFailure(session string, offered []trajectory.ToolDef, args, errType, msg string, took time.Duration) *trajectory.Run {
	base := pcommon.Timestamp(1_000_000_000)
	return &trajectory.Run{
		RootFound: true, RootSpanID: sid(100), Session: session,
		Steps: []trajectory.Step{
			{Kind: trajectory.StepLLM, SpanID: sid(1), Start: base, End: base + 1000, Model: "agent-model", Offered: offered,
				Requested: []trajectory.ToolCall{{ID: "c1", Name: "lookup", Arguments: args}}, FinishReasons: []string{"tool_calls"}},
			{Kind: trajectory.StepTool, SpanID: sid(2), Start: base + 2000, End: base + 2000 + pcommon.Timestamp(took), ToolName: "lookup", ToolCallID: "c1",
				Arguments: args, StatusError: true, StatusMessage: msg, Errors: []trajectory.ErrorInfo{{Type: errType, Message: msg}}},
			{Kind: trajectory.StepLLM, SpanID: sid(3), Start: base + 3000 + pcommon.Timestamp(took), End: base + 4000 + pcommon.Timestamp(took),
				Model: "agent-model", Offered: offered, OutputText: "Sorry, I could not do that.", FinishReasons: []string{"stop"}},
		},
	}
}

// rootFailure is a run that ends with an error on its root span.
func rootFailure(session, errType, msg string, httpStatus int) *trajectory.Run {
	return &trajectory.Run{
		RootFound: true, RootSpanID: sid(100), Session: session,
		Steps: []trajectory.Step{{Kind: trajectory.StepLLM, SpanID: sid(1), Start: 1000, End: 2000, FinishReasons: []string{"stop"}}},
		SpanErrors: []trajectory.SpanError{{SpanID: sid(100), Name: "invoke_agent", IsRoot: true, End: 3000, StatusError: true,
			StatusMessage: msg, HTTPStatus: httpStatus, Errors: []trajectory.ErrorInfo{{Type: errType, Message: msg}}}},
	}
}

func newClassifier(t testing.TB) *classifier.Classifier {
	t.Helper()
	c, err := classifier.New(classifier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newConsultant(t testing.TB, o Options) *Consultant {
	t.Helper()
	if o.Model == "" {
		o.Model = "scripted-model"
	}
	if o.Backoff == 0 {
		o.Backoff = 5 * time.Millisecond
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not contain %q:\n%s", what, sub, s)
		}
	}
}
