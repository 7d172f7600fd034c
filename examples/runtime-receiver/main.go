// Command runtime-receiver is an example of the agent runtime's side of
// triage: it receives the decisions the collector's recovery_webhook
// exporter POSTs, verifies their signature, and stops or re-plans the agent
// runs they name (by trace_id, else session_id).
//
// runtime.go is the part to copy into a Go agent runtime: a registry of
// running runs (Runtime.Start gives each run a context that an in-flight
// decision cancels), the webhook handler, and Next, which turns a decision
// into what the driver does next. This file serves it as a sidecar for an
// agent written in another language (e2e/harness-extra/looping-agent.mjs
// uses it with RUNTIME_URL):
//
//	POST   /decisions              the recovery_webhook endpoint (signed)
//	POST   /runs                   {"trace_id": "...", "session_id": "..."}: a run started
//	GET    /runs/{trace_id}?wait=D long-poll up to D (default 0, at most 60s): 200 with
//	                               {"decision", "final", "plan"} once a decision applies, else 204
//	DELETE /runs/{trace_id}        the run ended (its final decision can still be read for 2 min)
//
// The run API has no authentication: it listens on loopback by default.
//
//	TRIAGE_WEBHOOK_SECRET=whsec_... go run ./examples/runtime-receiver --listen 127.0.0.1:9000
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9000", "address to listen on (the recovery_webhook endpoint is /decisions)")
	flag.Parse()
	secret := os.Getenv("TRIAGE_WEBHOOK_SECRET")
	rt, err := New(secret)
	if err != nil {
		log.Fatalf("runtime-receiver: TRIAGE_WEBHOOK_SECRET: %v", err)
	}
	srv := &http.Server{Addr: *listen, Handler: newSidecar(rt).routes(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("runtime-receiver: listening on http://%s (decisions: POST /decisions)", *listen)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("runtime-receiver: %v", err)
	}
}

// sidecar exposes a Runtime's registry over HTTP.
type sidecar struct {
	rt   *Runtime
	mu   sync.Mutex
	runs map[string]*Run // trace id → run
}

func newSidecar(rt *Runtime) *sidecar { return &sidecar{rt: rt, runs: map[string]*Run{}} }

const maxWait = 60 * time.Second

func (s *sidecar) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/decisions", s.rt)
	mux.HandleFunc("POST /runs", s.start)
	mux.HandleFunc("GET /runs/{trace}", s.get)
	mux.HandleFunc("DELETE /runs/{trace}", s.end)
	return mux
}

func (s *sidecar) start(w http.ResponseWriter, req *http.Request) {
	var in struct {
		TraceID   string `json:"trace_id"`
		SessionID string `json:"session_id"`
	}
	if err := json.NewDecoder(io.LimitReader(req.Body, 64<<10)).Decode(&in); err != nil || !isTraceID(in.TraceID) {
		http.Error(w, `want {"trace_id": "<32 hex digits>", "session_id": "..."}`, http.StatusBadRequest)
		return
	}
	// The sidecar has no use for the run's context: the agent polls.
	_, run := s.rt.Start(context.Background(), in.TraceID, in.SessionID)
	s.mu.Lock()
	s.runs[run.TraceID] = run
	s.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

func (s *sidecar) lookup(w http.ResponseWriter, req *http.Request) *Run {
	s.mu.Lock()
	run := s.runs[req.PathValue("trace")]
	s.mu.Unlock()
	if run == nil {
		http.Error(w, "no such run", http.StatusNotFound)
	}
	return run
}

func (s *sidecar) get(w http.ResponseWriter, req *http.Request) {
	run := s.lookup(w, req)
	if run == nil {
		return
	}
	wait := time.Duration(0)
	if v := req.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			http.Error(w, "wait: a duration such as 30s", http.StatusBadRequest)
			return
		}
		wait = min(d, maxWait)
	}
	ctx, cancel := context.WithTimeout(req.Context(), wait)
	defer cancel()
	d, ok := run.Wait(ctx)
	if !ok {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	out := struct {
		Decision Decision  `json:"decision"`
		Final    *Decision `json:"final,omitempty"`
		Plan     Plan      `json:"plan"`
	}{Decision: d, Plan: Next(d)}
	if f, ok := run.Final(); ok {
		out.Final = &f
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (s *sidecar) end(w http.ResponseWriter, req *http.Request) {
	run := s.lookup(w, req)
	if run == nil {
		return
	}
	run.End()
	// Forget it here when the runtime does.
	time.AfterFunc(s.rt.linger, func() {
		s.mu.Lock()
		if s.runs[run.TraceID] == run {
			delete(s.runs, run.TraceID)
		}
		s.mu.Unlock()
	})
	w.WriteHeader(http.StatusNoContent)
}

func isTraceID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != "00000000000000000000000000000000"
}
