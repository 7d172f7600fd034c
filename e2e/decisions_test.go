//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/redis/go-redis/v9"

	"github.com/triage-otel/triage/internal/redistest"
	"github.com/triage-otel/triage/recovery"
)

// The recovery-decision end-to-end tests (issue 4): the ocb-built collector
// (triage processor -> triage connector -> recovery_webhook + prometheus)
// fed the shared captures, a webhook receiver in the test that verifies
// every signature with its own HMAC code and validates every payload against
// recovery/decision.schema.json.
//
// Sessions: every capture shares gen_ai.conversation.id "conv-0001", which
// would make all failed runs one session walking one budget. The tests give
// each copy's traces their own session instead: the processor is configured
// with recovery.session_attributes: [e2e.session.id] and every span of a
// copied trace gets e2e.session.id (one value per trace, or one value for
// all copies in the session-walk test).

const (
	sessionAttr = "e2e.session.id"
	// decisionsTimeout bounds each wait for decisions to reach the receiver
	// (decision_wait, queue and retries included).
	decisionsTimeout = 2 * time.Minute
	// quietPeriod: after the expected decisions arrived, how long the test
	// keeps listening for extra ones (duplicates, decisions for ok runs).
	quietPeriod = decisionWait + 3*time.Second
)

// TestDecisionsEndToEnd: every failed run yields exactly one signed,
// schema-valid decision at the webhook; ok and recovered runs none; the
// connector's counters on the Prometheus endpoint match.
func TestDecisionsEndToEnd(t *testing.T) {
	repo := repoRoot(t)
	shared := sharedDir(t, repo)
	fixtures := fixtureFiles(t, shared)
	constraints := labelledConstraints(t, shared)
	work := t.TempDir()
	otelcol := collectorBinary(t, repo)
	triage := buildTriageCLI(t, repo, work)

	copies := sessionCopies(t, fixtures, filepath.Join(work, "in"), perTraceSession, nil)
	runs := classify(t, triage, constraints, copies)
	failed := failedRuns(runs)
	if len(failed) == 0 {
		t.Fatal("triage classify found no failed run in the captures: nothing to test")
	}

	hook := newWebhookReceiver(t)
	ports := freePorts(t, 2)
	otlpPort, promPort := ports[0], ports[1]
	cfg := decisionsConfig{otlpPort: otlpPort, promPort: promPort, webhookURL: hook.url(), secret: hook.secret, constraints: constraints}
	cfgPath := filepath.Join(work, "otelcol.yaml")
	writeFile(t, cfgPath, cfg.yaml())
	col := startCollector(t, otelcol, cfgPath, filepath.Join(work, "otelcol.log"))
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", otlpPort)
	waitHTTPReady(t, col, endpoint)

	run(t, 2*time.Minute, triage, append([]string{"replay", "--endpoint", endpoint}, copies...)...)

	hook.waitDelivered(t, col, len(failed), decisionsTimeout)
	time.Sleep(quietPeriod)
	hook.assertNoProblems(t)

	// Exactly one final decision per failed run, none for the others.
	// Runs whose root never arrives trip their in-flight guards (a loop
	// seen before the trace is decided): those decisions belong to failed
	// runs and their final decision references them.
	byRun := map[string][]decisionDoc{}
	inFlight := map[string]decisionDoc{}
	finals := 0
	for _, d := range hook.decisions() {
		if d.Phase == "in_flight" {
			inFlight[d.DecisionID] = d
			continue
		}
		finals++
		byRun[spanKey(d.TraceID, d.SpanID)] = append(byRun[spanKey(d.TraceID, d.SpanID)], d)
	}
	for _, ds := range byRun {
		for _, d := range ds {
			if f, ok := inFlight[d.InFlightDecisionID]; ok {
				if f.TraceID != d.TraceID {
					t.Errorf("final decision %s references in-flight decision %s of another trace", d.DecisionID, f.DecisionID)
				}
				delete(inFlight, d.InFlightDecisionID)
			}
		}
	}
	for _, f := range inFlight {
		t.Errorf("in-flight decision %s (%s, guard %s) referenced by no final decision", f.DecisionID, f.FailureType, f.Guard)
	}
	failedPerTrace := map[string]int{}
	for _, r := range failed {
		failedPerTrace[strings.ToLower(r.TraceID)]++
	}
	matched := 0
	for _, r := range runs {
		key := spanKey(r.TraceID, r.RunSpanID)
		got := byRun[key]
		name := filepath.Base(filepath.Dir(r.File)) + "/" + filepath.Base(r.File)
		if r.Verdict != "failed" {
			if len(got) > 0 {
				t.Errorf("%s run %s is %s but got %d decision(s): %s", name, key, r.Verdict, len(got), got[0].raw)
			}
			continue
		}
		if len(got) != 1 {
			t.Errorf("%s failed run %s (%s): %d decisions, want exactly 1", name, key, r.FailureType, len(got))
			continue
		}
		matched++
		d := got[0]
		if d.FailureType != r.FailureType {
			t.Errorf("%s run %s: decision failure_type %q, triage classify says %q", name, key, d.FailureType, r.FailureType)
		}
		// Each trace is its own session: its only failed run is attempt 1.
		if failedPerTrace[strings.ToLower(r.TraceID)] == 1 && d.Attempt != 1 {
			t.Errorf("%s run %s: attempt %d in its own session, want 1 (sessions not independent?)", name, key, d.Attempt)
		}
		if !strings.HasPrefix(d.SessionID, "e2e-") {
			t.Errorf("%s run %s: session_id %q, want the configured %s", name, key, d.SessionID, sessionAttr)
		}
	}
	if finals != matched {
		t.Errorf("received %d final decisions, %d of them for a failed run of triage classify", finals, matched)
	}

	// The connector's counters, as Prometheus scrapes them.
	promURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", promPort)
	want := map[string]float64{
		"triage_runs_total":                   float64(len(runs)),
		`triage_runs_total{verdict="failed"}`: float64(len(failed)),
		"triage_failures_total":               float64(len(failed)),
		"triage_decisions_total":              float64(len(failed)),
	}
	got := waitMetrics(t, col, promURL, want)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v on %s, want %v", k, got[k], promURL, v)
		}
	}
	t.Logf("%d runs (%d failed) from %d captures: %d decisions received, metrics %v", len(runs), len(failed), len(copies), len(hook.decisions()), got)
	col.stop(t)
}

// TestDecisionSessionWalksAndEscalates: one session failing the same way
// again and again walks its sequence and escalates after max_attempts, with
// the history in memory (one collector) and in one Redis shared by two
// collector processes (the runs alternate between them).
func TestDecisionSessionWalksAndEscalates(t *testing.T) {
	repo := repoRoot(t)
	shared := sharedDir(t, repo)
	fixtures := fixtureFiles(t, shared)
	constraints := labelledConstraints(t, shared)
	work := t.TempDir()
	otelcol := collectorBinary(t, repo)
	triage := buildTriageCLI(t, repo, work)

	capture, failureType := singleFailedRun(t, triage, constraints, fixtures)
	t.Logf("session walk on %s (%s)", capture, failureType)
	policy := sessionWalkPolicy(failureType)
	want := sessionWalk

	walk := func(t *testing.T, work string, nCollectors int, redisAddr string) {
		hook := newWebhookReceiver(t)
		var endpoints []string
		var cols []*collector
		for i := range nCollectors {
			port := freePorts(t, 1)[0]
			// With Redis, the decisions also go to its stream (recovery_stream).
			cfg := decisionsConfig{otlpPort: port, webhookURL: hook.url(), secret: hook.secret, constraints: constraints, policy: policy, redis: redisAddr, stream: redisAddr}
			p := filepath.Join(work, fmt.Sprintf("otelcol-%d.yaml", i))
			writeFile(t, p, cfg.yaml())
			col := startCollector(t, otelcol, p, filepath.Join(work, fmt.Sprintf("otelcol-%d.log", i)))
			ep := fmt.Sprintf("http://127.0.0.1:%d", port)
			waitHTTPReady(t, col, ep)
			cols, endpoints = append(cols, col), append(endpoints, ep)
		}
		session := "e2e-walk-" + randomHex(t, 4)
		for i := range want {
			// The same failing run under a fresh trace ID, same session;
			// sent once the previous decision arrived so attempts are
			// ordered.
			copyPath := sessionCopies(t, []string{capture}, filepath.Join(work, fmt.Sprintf("run-%d", i)), func(int, string) string { return session }, nil)[0]
			c := i % nCollectors
			run(t, time.Minute, triage, "replay", "--endpoint", endpoints[c], copyPath)
			hook.waitDelivered(t, cols[c], i+1, decisionsTimeout)
			checkWalkStep(t, i, fmt.Sprintf("collector %d", c), latestDecision(hook.decisions()), session, failureType)
		}
		time.Sleep(quietPeriod)
		hook.assertNoProblems(t)
		if n := len(hook.decisions()); n != len(want) {
			t.Errorf("%d decisions for %d failed runs", n, len(want))
		}
		for _, c := range cols {
			c.stop(t)
		}
		if redisAddr != "" {
			checkDecisionStream(t, redisAddr, hook.decisions())
		}
	}

	t.Run("memory", func(t *testing.T) { walk(t, t.TempDir(), 1, "") })
	t.Run("two collectors, one redis", func(t *testing.T) {
		redis := startRedisServer(t, work)
		walk(t, t.TempDir(), 2, redis)
	})
}

// TestDecisionsSurviveOutageAndRestart: the receiver answers 503, then
// refuses connections; meanwhile the collector (persistent queue on
// file_storage) is restarted; then the receiver comes back: every decision
// arrives, exactly once per webhook-id.
func TestDecisionsSurviveOutageAndRestart(t *testing.T) {
	repo := repoRoot(t)
	shared := sharedDir(t, repo)
	fixtures := fixtureFiles(t, shared)
	constraints := labelledConstraints(t, shared)
	work := t.TempDir()
	otelcol := collectorBinary(t, repo)
	triage := buildTriageCLI(t, repo, work)

	copies := sessionCopies(t, fixtures, filepath.Join(work, "in"), perTraceSession, nil)
	failed := failedRuns(classify(t, triage, constraints, copies))

	hook := newWebhookReceiver(t)
	hook.setUnavailable(true)
	ports := freePorts(t, 2)
	cfg := decisionsConfig{otlpPort: ports[0], promPort: ports[1], webhookURL: hook.url(), secret: hook.secret,
		constraints: constraints, storageDir: filepath.Join(work, "queue")}
	cfgPath := filepath.Join(work, "otelcol.yaml")
	writeFile(t, cfgPath, cfg.yaml())
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	promURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1])

	col := startCollector(t, otelcol, cfgPath, filepath.Join(work, "otelcol-1.log"))
	waitHTTPReady(t, col, endpoint)
	run(t, 2*time.Minute, triage, append([]string{"replay", "--endpoint", endpoint}, copies...)...)

	// Every decision has been handed to the exporter's queue once the
	// connector counted it (both happen in the same ConsumeTraces call).
	waitMetrics(t, col, promURL, map[string]float64{"triage_decisions_total": float64(len(failed))})
	hook.waitAttempted(t, col, 1, decisionsTimeout)
	t.Logf("503 phase: %s", hook.summary())

	// Connections refused, for a few retries.
	hook.stop(t)
	waitLog(t, col, "connection refused", decisionsTimeout)

	// Restart the collector while the receiver is still down: the
	// undelivered decisions must come back from file_storage.
	col.stop(t)
	col2 := startCollector(t, otelcol, cfgPath, filepath.Join(work, "otelcol-2.log"))
	waitHTTPReady(t, col2, endpoint)
	time.Sleep(2 * time.Second)
	if n := hook.deliveredCount(); n != 0 {
		t.Fatalf("%d decisions delivered while the receiver was down", n)
	}

	hook.restart(t)
	hook.waitDelivered(t, col2, len(failed), decisionsTimeout)
	time.Sleep(quietPeriod)
	hook.assertNoProblems(t)

	want := map[string]bool{}
	for _, r := range failed {
		want[spanKey(r.TraceID, r.RunSpanID)] = true
	}
	got := map[string]bool{}
	for _, d := range hook.decisions() {
		if d.Phase == "in_flight" {
			continue // runs whose root never came; delivered exactly once too (below)
		}
		got[spanKey(d.TraceID, d.SpanID)] = true
	}
	for k := range want {
		if !got[k] {
			t.Errorf("decision for failed run %s lost across the outage and restart", k)
		}
	}
	for id, n := range hook.deliveredPerID() {
		if n != 1 {
			t.Errorf("webhook-id %s accepted %d times, want exactly once", id, n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d distinct runs got decisions, %d failed runs", len(got), len(want))
	}
	t.Logf("after recovery: %s", hook.summary())
	col2.stop(t)
}

// ---- the collector config ----

type decisionsConfig struct {
	otlpPort    int
	promPort    int // 0: no metrics pipeline
	webhookURL  string
	secret      string
	constraints []string
	policy      string        // YAML of recovery.policy entries, indented for it
	redis       string        // host:port of a shared history
	storageDir  string        // persistent sending queue in this directory
	spansFile   string        // forwarded spans written here
	stream      string        // host:port of a Redis receiving the decisions too
	wait        time.Duration // decision_wait; 0: decisionWait
	settle      time.Duration // settle_wait; 0: the processor's default
}

func (c decisionsConfig) yaml() string {
	global, _ := json.Marshal(c.constraints)
	settle := "" // the processor's default
	if c.settle > 0 {
		settle = fmt.Sprintf("\n    settle_wait: %s", c.settle)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
processors:
  triage:
    decision_wait: %s%s
    constraints:
      global: %s
    recovery:
      timeout: 5s
      session_attributes: [%s]
`, c.otlpPort, cmp.Or(c.wait, decisionWait), settle, global, sessionAttr)
	if c.policy != "" {
		fmt.Fprintf(&b, "      policy:\n        %s\n", c.policy)
	}
	if c.redis != "" {
		// A generous Redis timeout: on a loaded machine a slow call would
		// fall back to memory and the collectors would stop sharing.
		fmt.Fprintf(&b, "      history:\n        redis:\n          endpoint: %s\n          timeout: 2s\n", c.redis)
	}
	fmt.Fprintf(&b, `connectors:
  triage:
    metrics_flush_interval: 1s
exporters:
  debug:
    verbosity: basic
  recovery_webhook:
    endpoint: %s
    secret: %s
    timeout: 5s
    retry_on_failure:
      initial_interval: 100ms
      max_interval: 500ms
      max_elapsed_time: 0
`, c.webhookURL, c.secret)
	if c.storageDir != "" {
		b.WriteString("    sending_queue:\n      storage: file_storage\n")
	}
	if c.promPort != 0 {
		fmt.Fprintf(&b, "  prometheus:\n    endpoint: 127.0.0.1:%d\n", c.promPort)
	}
	logExporters := "[recovery_webhook]"
	if c.stream != "" {
		fmt.Fprintf(&b, "  recovery_stream:\n    endpoint: %s\n    stream: %s\n", c.stream, decisionStream)
		logExporters = "[recovery_webhook, recovery_stream]"
	}
	traceExporters := "[triage]"
	if c.spansFile != "" {
		fmt.Fprintf(&b, "  file:\n    path: %s\n    flush_interval: 100ms\n", c.spansFile)
		traceExporters = "[triage, file]"
	}
	if c.storageDir != "" {
		fmt.Fprintf(&b, "extensions:\n  file_storage:\n    directory: %s\n    create_directory: true\n", c.storageDir)
	}
	b.WriteString("service:\n  telemetry:\n    metrics:\n      level: none\n")
	if c.storageDir != "" {
		b.WriteString("  extensions: [file_storage]\n")
	}
	fmt.Fprintf(&b, `  pipelines:
    traces:
      receivers: [otlp]
      processors: [triage]
      exporters: %s
    logs:
      receivers: [triage]
      exporters: %s
    logs/genai:
      receivers: [otlp]
      processors: [triage]
      exporters: [debug]
`, traceExporters, logExporters)
	if c.promPort != 0 {
		b.WriteString("    metrics:\n      receivers: [triage]\n      exporters: [prometheus]\n")
	}
	return b.String()
}

// ---- inputs ----

// perTraceSession gives every trace of every copy its own session.
func perTraceSession(file int, trace string) string {
	return fmt.Sprintf("e2e-%03d-%s", file, trace)
}

// sessionCopies writes a copy of each capture with fresh trace IDs and the
// session attribute on every span (session(file index, new trace ID));
// edit, when set, may change each span further.
func sessionCopies(t *testing.T, fixtures []string, dir string, session func(file int, trace string) string, edit func(ptrace.Span)) []string {
	t.Helper()
	return freshTraceCopies(t, fixtures, dir, func(file int, s ptrace.Span) {
		s.Attributes().PutStr(sessionAttr, session(file, s.TraceID().String()))
		if edit != nil {
			edit(s)
		}
	})
}

func failedRuns(runs []classifyLine) []classifyLine {
	var out []classifyLine
	for _, r := range runs {
		if r.Verdict == "failed" {
			out = append(out, r)
		}
	}
	return out
}

// singleFailedRun returns the first capture holding exactly one run, failed
// with a failure type other than unknown (whose policy may not be a
// sequence), and that failure type.
func singleFailedRun(t *testing.T, triage string, constraints, fixtures []string) (string, string) {
	t.Helper()
	for _, f := range fixtures {
		runs := classify(t, triage, constraints, []string{f})
		if len(runs) == 1 && runs[0].Verdict == "failed" && runs[0].FailureType != "" && runs[0].FailureType != "unknown" {
			return f, runs[0].FailureType
		}
	}
	t.Fatal("no capture with a single failed run of a known failure type")
	return "", ""
}

// ---- the session walk ----

// sessionWalkPolicy is the policy of the session-walk tests for one failure
// type (YAML of recovery.policy entries, indented for decisionsConfig):
// back off twice, replan once, then the budget is spent.
func sessionWalkPolicy(failureType string) string {
	return fmt.Sprintf(`%s:
          kind: sequence
          steps:
            - {kind: backoff_and_retry, max_attempts: 2, base_delay: 1s}
            - {kind: replan, max_attempts: 1}`, failureType)
}

// sessionWalk is what sessionWalkPolicy decides for the same failure five
// times in one session: attempt -> action kind, delay, policy path fragment.
var sessionWalk = []struct {
	kind   string
	delay  int64
	policy string
}{
	{"retry", 1000, "steps[0]"},
	{"retry", 2000, "steps[0]"},
	{"replan", 0, "steps[1]"},
	{"escalate", 0, "exhausted"},
	{"escalate", 0, "exhausted"},
}

// checkWalkStep checks the decision of step i (0-based) of a session walk;
// where names the collector the run was sent to.
func checkWalkStep(t *testing.T, i int, where string, d decisionDoc, session, failureType string) {
	t.Helper()
	w := sessionWalk[i]
	if d.Attempt != i+1 || d.Action.Kind != w.kind || d.Action.DelayMS != w.delay || !strings.Contains(d.Policy, w.policy) ||
		d.SessionID != session || d.FailureType != failureType {
		t.Errorf("run %d (%s): attempt %d, action %s delay_ms %d, policy %q, session %q, failure_type %s; want attempt %d, %s delay_ms %d, policy containing %q, session %q, %s\n%s",
			i+1, where, d.Attempt, d.Action.Kind, d.Action.DelayMS, d.Policy, d.SessionID, d.FailureType, i+1, w.kind, w.delay, w.policy, session, failureType, d.raw)
	}
	if d.MaxAttempts != 3 {
		t.Errorf("run %d: max_attempts %d, want 3 (the sequence's budget 2+1)", i+1, d.MaxAttempts)
	}
}

// latestDecision returns the decision with the highest attempt.
func latestDecision(ds []decisionDoc) decisionDoc {
	sort.Slice(ds, func(a, b int) bool { return ds[a].Attempt < ds[b].Attempt })
	return ds[len(ds)-1]
}

// ---- the webhook receiver ----

// decisionDoc is the part of a decision the tests look at.
type decisionDoc struct {
	Phase              string `json:"phase"`
	Guard              string `json:"guard"`
	InFlightDecisionID string `json:"in_flight_decision_id"`
	DecisionID         string `json:"decision_id"`
	TraceID            string `json:"trace_id"`
	SpanID             string `json:"span_id"`
	SessionID          string `json:"session_id"`
	FailureType        string `json:"failure_type"`
	Action             struct {
		Kind    string `json:"kind"`
		DelayMS int64  `json:"delay_ms"`
	} `json:"action"`
	Attempt     int    `json:"attempt"`
	MaxAttempts int    `json:"max_attempts"`
	Policy      string `json:"policy"`
	raw         string
}

type receivedRequest struct {
	header http.Header
	body   []byte
}

// webhookReceiver is the agent runtime's endpoint: it checks each request's
// Standard Webhooks signature with the test's own HMAC code, the body
// against the decision JSON Schema, and webhook-id == decision_id; it can
// answer 503 or stop listening (connections refused) and come back on the
// same address.
type webhookReceiver struct {
	t      *testing.T
	secret string
	key    []byte
	addr   string

	mu          sync.Mutex
	srv         *http.Server
	unavailable bool
	reqs        []receivedRequest
	attempted   map[string]int // webhook-id -> requests answered 503
	delivered   map[string]int // webhook-id -> requests answered 2xx
	docs        map[string]decisionDoc
	problems    []string
}

func newWebhookReceiver(t *testing.T) *webhookReceiver {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	w := &webhookReceiver{
		t: t, key: key, secret: "whsec_" + base64.StdEncoding.EncodeToString(key),
		attempted: map[string]int{}, delivered: map[string]int{}, docs: map[string]decisionDoc{},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.addr = ln.Addr().String()
	w.serve(ln)
	t.Cleanup(func() { w.mu.Lock(); srv := w.srv; w.mu.Unlock(); _ = srv.Close() })
	return w
}

func (w *webhookReceiver) url() string { return "http://" + w.addr + "/decisions" }

func (w *webhookReceiver) serve(ln net.Listener) {
	srv := &http.Server{Handler: w, ReadHeaderTimeout: 10 * time.Second}
	w.mu.Lock()
	w.srv = srv
	w.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// stop closes the listener and every connection: connections are refused
// until restart.
func (w *webhookReceiver) stop(t *testing.T) {
	w.mu.Lock()
	srv := w.srv
	w.mu.Unlock()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
}

// restart listens again on the same address, answering 2xx.
func (w *webhookReceiver) restart(t *testing.T) {
	t.Helper()
	w.setUnavailable(false)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ln, err := net.Listen("tcp", w.addr)
		if err == nil {
			w.serve(ln)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cannot listen on %s again: %v", w.addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (w *webhookReceiver) setUnavailable(v bool) {
	w.mu.Lock()
	w.unavailable = v
	w.mu.Unlock()
}

func (w *webhookReceiver) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	id := r.Header.Get("webhook-id")
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reqs = append(w.reqs, receivedRequest{header: r.Header.Clone(), body: body})
	if err := verifyStandardWebhook(w.key, r.Header, body, time.Now()); err != nil {
		w.problems = append(w.problems, fmt.Sprintf("webhook-id %q: signature: %v", id, err))
		rw.WriteHeader(http.StatusUnauthorized)
		return
	}
	if err := recovery.ValidateDecisionJSON(body); err != nil {
		w.problems = append(w.problems, fmt.Sprintf("webhook-id %q: schema: %v\n%s", id, err, body))
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	var d decisionDoc
	if err := json.Unmarshal(body, &d); err != nil {
		w.problems = append(w.problems, fmt.Sprintf("webhook-id %q: %v", id, err))
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	d.raw = string(body)
	if d.DecisionID != id {
		w.problems = append(w.problems, fmt.Sprintf("webhook-id %q != decision_id %q", id, d.DecisionID))
	}
	if r.Header.Get("Content-Type") != "application/json" {
		w.problems = append(w.problems, fmt.Sprintf("webhook-id %q: Content-Type %q", id, r.Header.Get("Content-Type")))
	}
	if w.unavailable {
		w.attempted[id]++
		rw.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if prev, ok := w.docs[id]; ok && prev.raw != d.raw {
		w.problems = append(w.problems, fmt.Sprintf("webhook-id %q re-sent with another body:\n%s\n%s", id, prev.raw, d.raw))
	}
	w.docs[id] = d
	w.delivered[id]++
	rw.WriteHeader(http.StatusNoContent)
}

// verifyStandardWebhook: v1 = base64(HMAC-SHA256(key, id.timestamp.body)),
// timestamp within 5 minutes, any of the space-separated signatures.
func verifyStandardWebhook(key []byte, h http.Header, body []byte, now time.Time) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook-timestamp %q: %v", ts, err)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("webhook-timestamp %s is %s off", ts, d)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, s := range strings.Fields(sigs) {
		if v, ok := strings.CutPrefix(s, "v1,"); ok && hmac.Equal([]byte(v), []byte(want)) {
			return nil
		}
	}
	return fmt.Errorf("no v1 signature matches in %q", sigs)
}

func (w *webhookReceiver) decisions() []decisionDoc {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]decisionDoc, 0, len(w.docs))
	for _, d := range w.docs {
		out = append(out, d)
	}
	return out
}

// finalDecisions are the received decisions of runs that ended (not the
// in-flight decisions of runs still going: runs whose root never arrives
// trip their in-flight guards before they are decided).
func finalDecisions(w *webhookReceiver) []decisionDoc {
	var out []decisionDoc
	for _, d := range w.decisions() {
		if d.Phase != "in_flight" {
			out = append(out, d)
		}
	}
	return out
}

func (w *webhookReceiver) requests() []receivedRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]receivedRequest(nil), w.reqs...)
}

func (w *webhookReceiver) deliveredCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.delivered)
}

func (w *webhookReceiver) deliveredPerID() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for k, v := range w.delivered {
		out[k] = v
	}
	return out
}

func (w *webhookReceiver) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d requests, %d ids answered 503, %d ids delivered, %d problems", len(w.reqs), len(w.attempted), len(w.delivered), len(w.problems))
}

func (w *webhookReceiver) assertNoProblems(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range head(w.problems, 20) {
		t.Errorf("webhook receiver: %s", p)
	}
}

// waitDelivered waits until n distinct decisions were accepted (2xx).
func (w *webhookReceiver) waitDelivered(t *testing.T, col *collector, n int, timeout time.Duration) {
	t.Helper()
	w.waitFor(t, col, timeout, fmt.Sprintf("%d decisions delivered", n), func() bool { return len(w.delivered) >= n })
}

// waitAttempted waits until n distinct decisions were answered 503.
func (w *webhookReceiver) waitAttempted(t *testing.T, col *collector, n int, timeout time.Duration) {
	t.Helper()
	w.waitFor(t, col, timeout, fmt.Sprintf("%d decisions attempted", n), func() bool { return len(w.attempted) >= n })
}

func (w *webhookReceiver) waitFor(t *testing.T, col *collector, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		w.mu.Lock()
		ok := cond()
		w.mu.Unlock()
		if ok {
			return
		}
		if col.exited() {
			t.Fatalf("collector exited while waiting for %s (%v):\n%s", what, col.waitErr, col.logTail())
		}
		if time.Now().After(deadline) {
			w.mu.Lock()
			problems := head(w.problems, 5)
			w.mu.Unlock()
			t.Fatalf("waited %s for %s: %s; problems: %v\ncollector log:\n%s", timeout, what, w.summary(), problems, col.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ---- metrics ----

// scrapeTriageMetrics sums each triage_* series of the Prometheus exporter
// by metric name, and also by name{verdict="..."} for triage_runs_total.
func scrapeTriageMetrics(url string) (map[string]float64, error) {
	resp, err := promClient.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "triage_") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		series := line[:sp]
		name, labels, _ := strings.Cut(series, "{")
		out[name] += v
		if name == "triage_runs_total" {
			for _, l := range strings.Split(strings.TrimSuffix(labels, "}"), ",") {
				if strings.HasPrefix(l, "verdict=") {
					out[name+"{"+l+"}"] += v
				}
			}
		}
	}
	return out, sc.Err()
}

// waitMetrics polls the exporter until every wanted value is reached (the
// connector flushes every second), then returns the scrape; a value that
// never reaches its target is returned as is for the caller's check.
func waitMetrics(t *testing.T, col *collector, url string, want map[string]float64) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(decisionsTimeout)
	for {
		got, err := scrapeTriageMetrics(url)
		if err == nil {
			done := true
			for k, v := range want {
				if got[k] < v {
					done = false
				}
			}
			if done {
				// One more flush, so a count still climbing past the target
				// shows.
				time.Sleep(2 * time.Second)
				if again, err := scrapeTriageMetrics(url); err == nil {
					return again
				}
				return got
			}
		}
		if col.exited() {
			t.Fatalf("collector exited while waiting for metrics:\n%s", col.logTail())
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics on %s did not reach %v after %s (last: %v, %v)", url, want, decisionsTimeout, got, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// ---- the Redis stream ----

const decisionStream = "triage:e2e:decisions"

// checkDecisionStream: the stream holds exactly the decisions the webhook
// received, each entry's decision_id matching its document, which
// validates against the schema.
func checkDecisionStream(t *testing.T, addr string, want []decisionDoc) {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	entries, err := client.XRange(ctx, decisionStream, "-", "+").Result()
	if err != nil {
		t.Fatalf("XRANGE %s: %v", decisionStream, err)
	}
	wantIDs := map[string]bool{}
	for _, d := range want {
		wantIDs[d.DecisionID] = true
	}
	seen := map[string]bool{}
	for _, e := range entries {
		id, _ := e.Values["decision_id"].(string)
		doc, _ := e.Values["decision"].(string)
		if err := recovery.ValidateDecisionJSON([]byte(doc)); err != nil {
			t.Errorf("stream entry %s: decision does not validate: %v\n%s", e.ID, err, doc)
			continue
		}
		var d decisionDoc
		_ = json.Unmarshal([]byte(doc), &d)
		if d.DecisionID != id || !wantIDs[id] || seen[id] {
			t.Errorf("stream entry %s: decision_id %q (document %q): not one of the webhook's decisions, or repeated", e.ID, id, d.DecisionID)
		}
		if e.Values["action"] != d.Action.Kind || e.Values["failure_type"] != d.FailureType {
			t.Errorf("stream entry %s: routing fields %v do not match the document", e.ID, e.Values)
		}
		seen[id] = true
	}
	if len(seen) != len(wantIDs) {
		t.Errorf("stream %s holds %d of the %d decisions the webhook received", decisionStream, len(seen), len(wantIDs))
	}
}

// ---- processes ----

func waitLog(t *testing.T, col *collector, substr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if b, _ := os.ReadFile(col.logPath); bytes.Contains(b, []byte(substr)) {
			return
		}
		if col.exited() || time.Now().After(deadline) {
			t.Fatalf("collector log never said %q:\n%s", substr, col.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startRedisServer starts redis-server on a free loopback port, without
// persistence, and returns host:port. Without redis-server the test is
// skipped, unless TRIAGE_REQUIRE_REDIS=1 (CI), where it fails.
func startRedisServer(t *testing.T, work string) string {
	t.Helper()
	bin := redistest.Binary(t)
	port := freePorts(t, 1)[0]
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logf, err := os.Create(filepath.Join(work, fmt.Sprintf("redis-%d.log", port)))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	cmd.Dir = work
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if redisPing(addr) {
			return addr
		}
		select {
		case <-done:
			t.Fatalf("redis-server exited at start-up (see %s)", logf.Name())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer PING", addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func redisPing(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}
