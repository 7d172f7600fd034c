// Package llmtest is a scripted OpenAI-compatible chat completions server
// for tests: each reply is chosen by the test from the request and the
// call's number. No real model is reachable from CI, so every test of the
// model path runs against this.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Request is what the server received.
type Request struct {
	Model          string `json:"model"`
	MaxTokens      int    `json:"max_tokens"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	// Authorization is the request's header.
	Authorization string `json:"-"`
}

// User is the last message's content.
func (r Request) User() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Content
}

// Reply is one scripted answer.
type Reply struct {
	Status  int               // 0: 200
	Content string            // the assistant message content
	Body    string            // a raw body instead of a completion
	Delay   time.Duration     // before answering (the request's cancellation ends it)
	Header  map[string]string // response headers
	Finish  string            // finish_reason (default stop)
}

// Server is the scripted server.
type Server struct {
	*httptest.Server
	calls    atomic.Int64
	inFlight atomic.Int64
	peak     atomic.Int64
	mu       sync.Mutex
	requests []Request
	reply    func(req Request, n int) Reply
}

// New starts a server answering with reply (n counts calls from 1); it is
// closed when the test ends.
func New(t testing.TB, reply func(req Request, n int) Reply) *Server {
	t.Helper()
	s := &Server{reply: reply}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

// Always answers every request with content.
func Always(content string) func(Request, int) Reply {
	return func(Request, int) Reply { return Reply{Content: content} }
}

// Answer is a model answer as the consultant asks for it.
func Answer(failureType string, confidence float64, evidence string) string {
	b, _ := json.Marshal(map[string]any{"failure_type": failureType, "confidence": confidence, "evidence": evidence})
	return string(b)
}

// Endpoint is the base URL to configure (…/v1).
func (s *Server) Endpoint() string { return s.URL + "/v1" }

// Calls is the number of requests received.
func (s *Server) Calls() int64 { return s.calls.Load() }

// Peak is the largest number of requests in flight at once.
func (s *Server) Peak() int64 { return s.peak.Load() }

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
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
	var req Request
	if err := json.Unmarshal(raw, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Authorization = r.Header.Get("Authorization")
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	rep := s.reply(req, n)
	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		w.WriteHeader(rep.Status)
		fmt.Fprint(w, rep.Body)
		return
	}
	if rep.Body != "" {
		fmt.Fprint(w, rep.Body)
		return
	}
	finish := rep.Finish
	if finish == "" {
		finish = "stop"
	}
	content, _ := json.Marshal(rep.Content)
	fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":%q}]}`, req.Model, content, finish)
}
