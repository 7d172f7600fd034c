package llm

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/trajectory"
)

// scripted is an OpenAI-compatible chat completions server whose replies a
// test scripts: reply gets the request and the call's number (1-based).
type scripted struct {
	srv      *httptest.Server
	calls    atomic.Int64
	inFlight atomic.Int64
	peak     atomic.Int64
	mu       sync.Mutex
	requests []chatRequest
	auth     []string
	reply    func(req chatRequest, n int) reply
}

type reply struct {
	status  int
	content string // the assistant message content
	body    string // a raw body instead of a completion
	delay   time.Duration
	header  map[string]string
	finish  string
}

func newScripted(t *testing.T, fn func(req chatRequest, n int) reply) *scripted {
	t.Helper()
	s := &scripted{reply: fn}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *scripted) handle(w http.ResponseWriter, r *http.Request) {
	n := int(s.calls.Add(1))
	cur := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		p := s.peak.Load()
		if cur <= p || s.peak.CompareAndSwap(p, cur) {
			break
		}
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "not found: "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var req chatRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.mu.Unlock()
	rep := s.reply(req, n)
	if rep.delay > 0 {
		select {
		case <-time.After(rep.delay):
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if rep.status != 0 && rep.status != http.StatusOK {
		w.WriteHeader(rep.status)
		fmt.Fprint(w, rep.body)
		return
	}
	if rep.body != "" {
		fmt.Fprint(w, rep.body)
		return
	}
	finish := rep.finish
	if finish == "" {
		finish = "stop"
	}
	content, _ := json.Marshal(rep.content)
	fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":%q}]}`, req.Model, content, finish)
}

func (s *scripted) endpoint() string { return s.srv.URL + "/v1" }

func (s *scripted) lastUser() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return ""
	}
	return s.requests[len(s.requests)-1].Messages[1].Content
}

// answerJSON is a model answer.
func answerJSON(ft classifier.FailureType, conf float64, quote string) string {
	b, _ := json.Marshal(Answer{FailureType: ft, Confidence: conf, Evidence: quote})
	return string(b)
}

// answering always answers the same.
func answering(content string) func(chatRequest, int) reply {
	return func(chatRequest, int) reply { return reply{content: content} }
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
