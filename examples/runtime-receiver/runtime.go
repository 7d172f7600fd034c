package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Decision is the part of triage's decision document (version 2,
// recovery/decision.schema.json) an agent runtime acts on.
type Decision struct {
	Version int `json:"version"`
	// Phase is "in_flight" (a guard tripped while the run is still going:
	// stop it now) or "final" (the run ended).
	Phase string `json:"phase"`
	// Guard names the in-flight guard: loop, repeated_failure, tokens,
	// cost, wall_clock; "" on final decisions.
	Guard string `json:"guard"`
	// InFlightDecisionID, on a final decision, names the in-flight decision
	// already taken for the same run.
	InFlightDecisionID string `json:"in_flight_decision_id"`
	DecisionID         string `json:"decision_id"`
	TraceID            string `json:"trace_id"`
	SpanID             string `json:"span_id"`
	// SessionID is the run's session id, or "trace:<trace_id>" when the run
	// has none (redacted by the collector when it looks like a secret).
	SessionID   string `json:"session_id"`
	FailureType string `json:"failure_type"`
	Action      Action `json:"action"`
	Attempt     int    `json:"attempt"`
	MaxAttempts int    `json:"max_attempts"`
	Policy      string `json:"policy"`
}

// Action is the decision's action; every field is always present.
type Action struct {
	Kind         string `json:"kind"` // retry, replan, resume, rollback, fallback, suspend, escalate, abort
	DelayMS      int64  `json:"delay_ms"`
	Hint         string `json:"hint"`
	Target       string `json:"target"`
	CheckpointID string `json:"checkpoint_id"`
	Subgoal      string `json:"subgoal"`
	Reason       string `json:"reason"`
}

// Plan is what the agent driver does next about a run that got a
// decision: the README's "Acting on a decision" table as code.
type Plan struct {
	// Again: start another attempt of the task after Delay, with Hint added
	// to its prompt, from Subgoal or Checkpoint, on Target when set.
	Again      bool
	Delay      time.Duration
	Hint       string
	Subgoal    string
	Checkpoint string
	Target     string
	// HandOver: stop automatic recovery and hand the session to a human
	// (escalate; suspend: pause until one approves). Neither Again nor
	// HandOver: give up and report the failure (abort).
	HandOver bool
	Reason   string
}

// Next maps a decision to a plan. The collector already chose the action
// (guard_policy for in-flight decisions: loop and repeated_failure →
// replan, the budgets → abort; the session's budget spent → escalate), so
// the runtime follows action.kind; a kind it does not know is handed
// over, the safe default.
func Next(d Decision) Plan {
	a := d.Action
	p := Plan{Delay: time.Duration(max(a.DelayMS, 0)) * time.Millisecond, Reason: a.Reason}
	switch a.Kind {
	case "retry", "replan":
		p.Again, p.Hint = true, a.Hint
	case "resume":
		p.Again, p.Subgoal = true, a.Subgoal
	case "rollback":
		p.Again, p.Checkpoint = true, a.CheckpointID
	case "fallback":
		p.Again, p.Target = true, a.Target
	case "abort":
	default: // escalate, suspend, or a kind this runtime does not know
		p.HandOver = true
	}
	return p
}

// StoppedError is the cause of a run's context when an in-flight decision
// stopped it: context.Cause(ctx) returns it.
type StoppedError struct{ Decision Decision }

func (e *StoppedError) Error() string {
	return fmt.Sprintf("stopped by in-flight decision %s (%s guard): %s", e.Decision.DecisionID, e.Decision.Guard, e.Decision.Action.Kind)
}

// Outcome says what the runtime did with one decision.
type Outcome string

const (
	Stopped   Outcome = "stopped"   // in-flight: the running run's context was cancelled
	Recorded  Outcome = "recorded"  // final: kept on the run for its driver (Run.Wait)
	Confirmed Outcome = "confirmed" // final of a run already stopped for the same failure type: nothing new to do
	Late      Outcome = "late"      // in-flight for a run already stopped or ended: the first decision stands
	Unmatched Outcome = "unmatched" // no run of this runtime by that trace or session (another replica's, or forgotten)
)

// Runtime keeps a registry of the agent runs this process is executing and
// acts on the decisions the collector's recovery_webhook exporter POSTs
// about them. It is an http.Handler for that endpoint.
type Runtime struct {
	key       []byte
	tolerance time.Duration
	linger    time.Duration
	now       func() time.Time

	mu      sync.Mutex
	byTrace map[string]*Run
	// bySession holds runs started without a trace id (a framework that
	// creates its root span itself): a decision is matched to them by
	// session_id.
	bySession map[string][]*Run
	seen      *idSet // webhook-ids acted on: delivery is at least once
	// stoppedFor: in-flight decision id → its failure type, so that the
	// final decision confirming it is not acted on twice.
	stoppedFor map[string]string
	outcomes   map[Outcome]int
}

// maxBody bounds a webhook request (decisions are a few KiB).
const maxBody = 1 << 20

// New makes a runtime verifying with the recovery_webhook exporter's
// secret: "whsec_<base64 key>" (Standard Webhooks), or any other string
// used as the key's bytes, as the exporter does.
func New(secret string) (*Runtime, error) {
	key := []byte(secret)
	if rest, ok := strings.CutPrefix(secret, "whsec_"); ok {
		k, err := base64.StdEncoding.DecodeString(rest)
		if err != nil || len(k) == 0 {
			return nil, errors.New("secret: whsec_ must be followed by a non-empty standard base64 key")
		}
		key = k
	}
	if len(key) == 0 {
		return nil, errors.New("secret: empty (the exporter signs with recovery_webhook.secret)")
	}
	return &Runtime{
		key: key, tolerance: 5 * time.Minute, linger: 2 * time.Minute, now: time.Now,
		byTrace: map[string]*Run{}, bySession: map[string][]*Run{}, seen: newIDSet(4096),
		stoppedFor: map[string]string{}, outcomes: map[Outcome]int{},
	}, nil
}

// Run is one agent run in the registry.
type Run struct {
	TraceID, SessionID string

	rt     *Runtime
	cancel context.CancelCauseFunc
	got    chan struct{} // closed when decision is set

	// guarded by rt.mu
	decision *Decision // the decision that applies: the first in-flight one, else the final one
	final    *Decision // the final decision, also when it only confirms the in-flight one
	ended    bool
}

// Start registers a run and returns the context to run it under: an
// in-flight decision naming the run cancels it, with a *StoppedError as
// its cause. traceID is the run's trace (the root span's, which the
// runtime usually creates); "" registers it by sessionID only.
func (rt *Runtime) Start(parent context.Context, traceID, sessionID string) (context.Context, *Run) {
	ctx, cancel := context.WithCancelCause(parent)
	r := &Run{TraceID: strings.ToLower(traceID), SessionID: sessionID, rt: rt, cancel: cancel, got: make(chan struct{})}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if r.TraceID != "" {
		rt.byTrace[r.TraceID] = r
	} else {
		rt.bySession[sessionID] = append(rt.bySession[sessionID], r)
	}
	return ctx, r
}

// End says the run finished. It stays known for linger (2 min), so that
// its final decision, which comes once its root span is exported and
// classified, still finds it (Wait).
func (r *Run) End() {
	r.cancel(nil)
	rt := r.rt
	rt.mu.Lock()
	r.ended = true
	rt.mu.Unlock()
	time.AfterFunc(rt.linger, func() { rt.forget(r) })
}

func (rt *Runtime) forget(r *Run) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.byTrace[r.TraceID] == r {
		delete(rt.byTrace, r.TraceID)
	}
	runs := rt.bySession[r.SessionID]
	for i, x := range runs {
		if x == r {
			rt.bySession[r.SessionID] = append(runs[:i:i], runs[i+1:]...)
			break
		}
	}
	if len(rt.bySession[r.SessionID]) == 0 {
		delete(rt.bySession, r.SessionID)
	}
}

// Decision returns the decision that applies to the run, if one came: the
// in-flight decision that stopped it, or its final decision.
func (r *Run) Decision() (Decision, bool) {
	r.rt.mu.Lock()
	defer r.rt.mu.Unlock()
	if r.decision == nil {
		return Decision{}, false
	}
	return *r.decision, true
}

// Final returns the run's final decision, if it came (also when it only
// confirms the in-flight decision that stopped the run).
func (r *Run) Final() (Decision, bool) {
	r.rt.mu.Lock()
	defer r.rt.mu.Unlock()
	if r.final == nil {
		return Decision{}, false
	}
	return *r.final, true
}

// Wait waits until a decision applies to the run or ctx is done. An ok or
// recovered run gets none: bound the wait (the final decision follows the
// root span's export, a few seconds with a batching SDK).
func (r *Run) Wait(ctx context.Context) (Decision, bool) {
	select {
	case <-r.got:
		return r.Decision()
	case <-ctx.Done():
		return r.Decision()
	}
}

// Outcomes counts what the runtime did with the decisions it received.
func (rt *Runtime) Outcomes() map[Outcome]int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make(map[Outcome]int, len(rt.outcomes))
	for k, v := range rt.outcomes {
		out[k] = v
	}
	return out
}

// ServeHTTP is the webhook endpoint: verify the signature on the raw body,
// then dedupe on webhook-id, then act. 401 for a bad or stale signature
// (the exporter keeps the decision and retries: secrets that differ are a
// configuration error), 400 for a body that is not a decision (dropped:
// no retry makes it one), 2xx otherwise, duplicates included.
func (rt *Runtime) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST decisions here", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
	if err != nil {
		http.Error(w, "body unreadable or over 1 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	id := req.Header.Get("webhook-id")
	if err := rt.verify(id, req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature"), body); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var d Decision
	if err := json.Unmarshal(body, &d); err != nil || d.DecisionID == "" || (d.Phase != "in_flight" && d.Phase != "final") {
		http.Error(w, "not a decision document (decision_id, phase in_flight or final)", http.StatusBadRequest)
		return
	}
	if !rt.seen.add(id) {
		w.WriteHeader(http.StatusOK) // a retry of a decision already acted on
		return
	}
	out := rt.Act(d)
	w.Header().Set("X-Runtime-Outcome", string(out))
	w.WriteHeader(http.StatusNoContent)
}

// verify checks a Standard Webhooks signature: "v1," + base64 of
// HMAC-SHA256(key, id "." timestamp "." body), several space-separated
// signatures allowed, the timestamp within tolerance of now.
func (rt *Runtime) verify(id, timestamp, signatures string, body []byte) error {
	if id == "" || timestamp == "" || signatures == "" {
		return errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return errors.New("webhook-timestamp is not Unix seconds")
	}
	if d := rt.now().Sub(time.Unix(ts, 0)); d > rt.tolerance || d < -rt.tolerance {
		return errors.New("webhook-timestamp too far from now (replayed or clock skew)")
	}
	mac := hmac.New(sha256.New, rt.key)
	fmt.Fprintf(mac, "%s.%s.", id, timestamp)
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range strings.Fields(signatures) {
		if v, ok := strings.CutPrefix(s, "v1,"); ok {
			if got, err := base64.StdEncoding.DecodeString(v); err == nil && hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return errors.New("no valid v1 signature")
}

// Act applies one verified decision to the registry (also the entry point
// for decisions read from the recovery_stream exporter's Redis stream).
func (rt *Runtime) Act(d Decision) Outcome {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := rt.act(d)
	rt.outcomes[out]++
	return out
}

func (rt *Runtime) act(d Decision) Outcome {
	runs := rt.match(d)
	if len(runs) == 0 {
		return Unmatched
	}
	if d.Phase == "final" {
		for _, r := range runs {
			if r.final == nil {
				r.final = &d
			}
		}
		if ft, ok := rt.stoppedFor[d.InFlightDecisionID]; ok && d.InFlightDecisionID != "" && ft == d.FailureType {
			// The run was stopped for this failure already; the final
			// decision repeats that answer (same attempt).
			return Confirmed
		}
		for _, r := range runs {
			if r.decision == nil {
				r.set(d)
			}
		}
		return Recorded
	}
	out := Late
	for _, r := range runs {
		if r.decision != nil || r.ended {
			continue // the first decision stands; a run that ended is not stopped
		}
		r.set(d)
		r.cancel(&StoppedError{Decision: d})
		out = Stopped
	}
	if out == Stopped {
		if len(rt.stoppedFor) >= 4096 {
			clear(rt.stoppedFor) // bounded; a lost entry only lets a final decision through as Recorded
		}
		rt.stoppedFor[d.DecisionID] = d.FailureType
	}
	return out
}

// match finds the runs a decision names: by trace_id, else the runs
// registered by session only.
func (rt *Runtime) match(d Decision) []*Run {
	if r, ok := rt.byTrace[strings.ToLower(d.TraceID)]; ok {
		return []*Run{r}
	}
	return rt.bySession[d.SessionID]
}

// set records the decision on the run (rt.mu held).
func (r *Run) set(d Decision) {
	r.decision = &d
	close(r.got)
}

// idSet is a bounded set of recent webhook-ids (oldest forgotten first).
type idSet struct {
	mu    sync.Mutex
	ids   map[string]struct{}
	order []string
	next  int
}

func newIDSet(n int) *idSet {
	return &idSet{ids: make(map[string]struct{}, n), order: make([]string, n)}
}

// add reports whether id is new, and remembers it.
func (s *idSet) add(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[id]; ok {
		return false
	}
	if old := s.order[s.next]; old != "" {
		delete(s.ids, old)
	}
	s.order[s.next] = id
	s.next = (s.next + 1) % len(s.order)
	s.ids[id] = struct{}{}
	return true
}
