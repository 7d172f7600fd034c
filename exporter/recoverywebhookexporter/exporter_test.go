package recoverywebhookexporter

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triage-otel/triage/exporter/recoverywebhookexporter/internal/metadatatest"
)

const testSecret = "whsec_dGVzdC1zaWduaW5nLWtleS1ub3QtYS1yZWFsLW9uZQ=="

// receiver is a real HTTP webhook receiver. It verifies every request with
// its own Standard Webhooks implementation (not the exporter's Sign) and
// records what it accepted.
type receiver struct {
	t      *testing.T
	key    []byte
	server *httptest.Server

	mu        sync.Mutex
	requests  map[string]int    // webhook-id -> requests seen
	delivered map[string]int    // webhook-id -> 2xx answered
	bodies    map[string][]byte // webhook-id -> last verified body
	badSig    int
	respond   func(id string, n int) (status int, header http.Header)
}

func newReceiver(t *testing.T, secret string, respond func(id string, n int) (int, http.Header)) *receiver {
	r := &receiver{
		t:         t,
		key:       decodeWhsec(t, secret),
		requests:  map[string]int{},
		delivered: map[string]int{},
		bodies:    map[string][]byte{},
		respond:   respond,
	}
	r.server = httptest.NewUnstartedServer(http.HandlerFunc(r.handle))
	return r
}

func (r *receiver) start() { r.server.Start(); r.t.Cleanup(r.server.Close) }

// decodeWhsec is the receiver side's reading of a whsec_ secret.
func decodeWhsec(t *testing.T, secret string) []byte {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	return key
}

func (r *receiver) handle(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	id := req.Header.Get("webhook-id")
	ts := req.Header.Get("webhook-timestamp")

	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.verify(id, ts, req.Header.Get("webhook-signature"), body) ||
		req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" || !json.Valid(body) {
		r.badSig++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	r.requests[id]++
	status, header := http.StatusOK, http.Header(nil)
	if r.respond != nil {
		status, header = r.respond(id, r.requests[id])
	}
	for k, v := range header {
		w.Header()[k] = v
	}
	if status >= 200 && status < 300 {
		r.delivered[id]++
		r.bodies[id] = body
	}
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "status %d", status)
}

// verify follows the Standard Webhooks receiver algorithm: tolerance on the
// timestamp, HMAC-SHA256 over "id.timestamp.body", constant-time compare
// against each space-separated "v1,<sig>".
func (r *receiver) verify(id, ts, header string, body []byte) bool {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || id == "" {
		return false
	}
	if d := time.Since(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return false
	}
	mac := hmac.New(sha256.New, r.key)
	_, _ = io.WriteString(mac, id+"."+ts+".")
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(header) {
		version, encoded, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(encoded)
		if err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

func (r *receiver) snapshot() (requests, delivered map[string]int, badSig int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	requests, delivered = map[string]int{}, map[string]int{}
	for k, v := range r.requests {
		requests[k] = v
	}
	for k, v := range r.delivered {
		delivered[k] = v
	}
	return requests, delivered, r.badSig
}

func (r *receiver) body(id string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bodies[id]
}

type harness struct {
	tt     *componenttest.Telemetry
	logs   *observer.ObservedLogs
	exp    exporter.Logs
	set    exporter.Settings
	config *Config
	once   sync.Once
	err    error
}

func testConfig(endpoint, secret string) *Config {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = endpoint
	cfg.ClientConfig.Timeout = 5 * time.Second
	cfg.Secret = configopaque.String(secret)
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 50 * time.Millisecond
	cfg.RetryConfig.MaxElapsedTime = time.Minute
	q := cfg.QueueConfig.Get()
	q.NumConsumers = 1
	cfg.QueueConfig = configoptional.Some(*q)
	return cfg
}

func startExporter(t *testing.T, cfg *Config) *harness {
	t.Helper()
	require.NoError(t, cfg.Validate())
	tt := componenttest.NewTelemetry()
	core, logs := observer.New(zapcore.DebugLevel)
	set := metadatatest.NewSettings(tt)
	set.Logger = zap.New(core)
	exp, err := NewFactory().CreateLogs(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	h := &harness{tt: tt, logs: logs, exp: exp, set: set, config: cfg}
	t.Cleanup(func() {
		h.shutdown(t)
		_ = tt.Shutdown(context.Background())
	})
	return h
}

// shutdown stops the exporter once; exporterhelper must not be shut down twice.
func (h *harness) shutdown(t *testing.T) {
	h.once.Do(func() { h.err = h.exp.Shutdown(context.Background()) })
	require.NoError(t, h.err)
}

// counter sums the data points of a telemetry counter whose attributes
// include want (nil: all points).
func (h *harness) counter(t *testing.T, name string, want map[string]string) int64 {
	m, err := h.tt.GetMetric("otelcol_" + name)
	if err != nil {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok)
	var total int64
	for _, dp := range sum.DataPoints {
		match := true
		for k, v := range want {
			got, ok := dp.Attributes.Value(attribute.Key(k))
			if !ok || got.AsString() != v {
				match = false
			}
		}
		if match {
			total += dp.Value
		}
	}
	return total
}

type decisionSpec struct {
	id   string
	body string // raw string body; when empty, a map body is used
}

func decisionJSON(id, failure, action string) string {
	return fmt.Sprintf(`{"decision_id":%q,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7",`+
		`"session_id":"sess-1","service":"checkout-agent","agent":"planner","failure_type":%q,"confidence":0.9,`+
		`"evidence":[{"span_id":"00f067aa0ba902b7","signal":"http_status","detail":"503"}],`+
		`"action":{"kind":%q,"delay_ms":2000},"attempt":1,"max_attempts":3,"policy":"default","time":"2026-11-29T21:00:00Z"}`,
		id, failure, action)
}

// decisionLogs builds one log record per decision the way the connector
// does: string body with the JSON plus routing attributes.
func decisionLogs(ids ...string) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "checkout-agent")
	sl := rl.ScopeLogs().AppendEmpty()
	for _, id := range ids {
		lr := sl.LogRecords().AppendEmpty()
		lr.Body().SetStr(decisionJSON(id, "external_fault", "backoff_and_retry"))
		lr.Attributes().PutStr("triage.decision.id", id)
		lr.Attributes().PutStr("service.name", "checkout-agent")
		lr.Attributes().PutStr("triage.failure_type", "external_fault")
		lr.Attributes().PutStr("triage.action.kind", "backoff_and_retry")
	}
	return ld
}

func TestDeliversSignedDecisions(t *testing.T) {
	rcv := newReceiver(t, testSecret, nil)
	rcv.start()
	h := startExporter(t, testConfig(rcv.server.URL+"/recovery", testSecret))

	ld := decisionLogs("dec-1", "dec-2")
	// A map body (the other shape the connector may emit), with the id only
	// inside the document.
	mapRecord := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty()
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(decisionJSON("dec-3", "timeout", "replan")), &doc))
	require.NoError(t, mapRecord.Body().SetEmptyMap().FromRaw(doc))

	require.NoError(t, h.exp.ConsumeLogs(context.Background(), ld))
	require.Eventually(t, func() bool {
		_, delivered, _ := rcv.snapshot()
		return len(delivered) == 3
	}, 10*time.Second, 10*time.Millisecond)
	h.shutdown(t)

	requests, delivered, bad := rcv.snapshot()
	assert.Equal(t, map[string]int{"dec-1": 1, "dec-2": 1, "dec-3": 1}, delivered)
	assert.Equal(t, delivered, requests)
	assert.Zero(t, bad, "every signature verified")
	assert.JSONEq(t, decisionJSON("dec-1", "external_fault", "backoff_and_retry"), string(rcv.body("dec-1")))
	assert.Equal(t, decisionJSON("dec-2", "external_fault", "backoff_and_retry"), string(rcv.body("dec-2")),
		"a string body is sent byte for byte")
	assert.JSONEq(t, decisionJSON("dec-3", "timeout", "replan"), string(rcv.body("dec-3")))
	assert.Equal(t, int64(3), h.counter(t, "recovery_webhook_decisions_delivered", nil))
	assert.Zero(t, h.counter(t, "recovery_webhook_decisions_dropped", nil))
}

func TestRetries5xxThenDeliversExactlyOnce(t *testing.T) {
	rcv := newReceiver(t, testSecret, func(id string, n int) (int, http.Header) {
		if id == "dec-a" && n <= 3 {
			return http.StatusServiceUnavailable, nil
		}
		return http.StatusOK, nil
	})
	rcv.start()
	h := startExporter(t, testConfig(rcv.server.URL, testSecret))

	// dec-0 is delivered before dec-a fails: the retry must resend only
	// dec-a and dec-b, never dec-0 again.
	require.NoError(t, h.exp.ConsumeLogs(context.Background(), decisionLogs("dec-0", "dec-a", "dec-b")))
	require.Eventually(t, func() bool {
		_, delivered, _ := rcv.snapshot()
		return len(delivered) == 3
	}, 20*time.Second, 10*time.Millisecond)
	h.shutdown(t)

	requests, delivered, bad := rcv.snapshot()
	assert.Equal(t, map[string]int{"dec-0": 1, "dec-a": 1, "dec-b": 1}, delivered)
	assert.Equal(t, map[string]int{"dec-0": 1, "dec-a": 4, "dec-b": 1}, requests)
	assert.Zero(t, bad)
	assert.Equal(t, int64(3), h.counter(t, "recovery_webhook_delivery_failures", map[string]string{"reason": "http_5xx"}))
	assert.Equal(t, int64(3), h.counter(t, "recovery_webhook_decisions_delivered", nil))
}

func TestThrottledWithRetryAfterIsRetried(t *testing.T) {
	rcv := newReceiver(t, testSecret, func(id string, n int) (int, http.Header) {
		if id == "dec-throttled" && n == 1 {
			return http.StatusTooManyRequests, http.Header{"Retry-After": []string{"1"}}
		}
		return http.StatusOK, nil
	})
	rcv.start()
	h := startExporter(t, testConfig(rcv.server.URL, testSecret))
	// The throttle error must still carry the undelivered rest only.
	require.NoError(t, h.exp.ConsumeLogs(context.Background(), decisionLogs("dec-first", "dec-throttled")))
	require.Eventually(t, func() bool {
		_, delivered, _ := rcv.snapshot()
		return delivered["dec-throttled"] == 1
	}, 20*time.Second, 10*time.Millisecond)
	h.shutdown(t)
	requests, delivered, _ := rcv.snapshot()
	assert.Equal(t, map[string]int{"dec-first": 1, "dec-throttled": 2}, requests)
	assert.Equal(t, map[string]int{"dec-first": 1, "dec-throttled": 1}, delivered)
	assert.Equal(t, int64(1), h.counter(t, "recovery_webhook_delivery_failures", map[string]string{"reason": "http_429"}))
}

func TestRejected4xxIsDroppedWithoutRetry(t *testing.T) {
	rcv := newReceiver(t, testSecret, func(id string, _ int) (int, http.Header) {
		if id == "dec-bad" {
			return http.StatusBadRequest, nil
		}
		return http.StatusNoContent, nil
	})
	rcv.start()
	h := startExporter(t, testConfig(rcv.server.URL, testSecret))

	require.NoError(t, h.exp.ConsumeLogs(context.Background(), decisionLogs("dec-bad", "dec-good")))
	// A batch with nothing deliverable at all.
	require.NoError(t, h.exp.ConsumeLogs(context.Background(), decisionLogs("dec-bad")))
	require.Eventually(t, func() bool {
		return h.counter(t, "recovery_webhook_decisions_dropped", nil) == 2
	}, 10*time.Second, 10*time.Millisecond)
	// Shutdown drains the queue: whatever would still be retried runs now.
	h.shutdown(t)

	requests, delivered, _ := rcv.snapshot()
	assert.Equal(t, 2, requests["dec-bad"], "sent once per batch, never retried")
	assert.Equal(t, map[string]int{"dec-good": 1}, delivered)
	assert.Equal(t, int64(2), h.counter(t, "recovery_webhook_decisions_dropped", map[string]string{"reason": "rejected"}))
	assert.Zero(t, h.counter(t, "recovery_webhook_delivery_failures", nil))
	warn := h.logs.FilterMessage("decision dropped without retry").All()
	require.Len(t, warn, 2)
	assert.Equal(t, "dec-bad", warn[0].ContextMap()["decision_id"])
}

func TestConnectionRefusedIsRetriedUntilReceiverIsBack(t *testing.T) {
	// Reserve a port, then close it so that connections are refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	h := startExporter(t, testConfig("http://"+addr+"/hook", testSecret))
	require.NoError(t, h.exp.ConsumeLogs(context.Background(), decisionLogs("dec-down-1", "dec-down-2")))
	require.Eventually(t, func() bool {
		return h.counter(t, "recovery_webhook_delivery_failures", map[string]string{"reason": "connection"}) >= 3
	}, 10*time.Second, 10*time.Millisecond)

	rcv := newReceiver(t, testSecret, nil)
	ln, err = net.Listen("tcp", addr)
	require.NoError(t, err)
	rcv.server.Listener = ln
	rcv.start()

	require.Eventually(t, func() bool {
		_, delivered, _ := rcv.snapshot()
		return len(delivered) == 2
	}, 20*time.Second, 10*time.Millisecond)
	h.shutdown(t)
	_, delivered, bad := rcv.snapshot()
	assert.Equal(t, map[string]int{"dec-down-1": 1, "dec-down-2": 1}, delivered)
	assert.Zero(t, bad)
	assert.Zero(t, h.counter(t, "recovery_webhook_decisions_dropped", nil))
}

func TestInvalidRecordsAreDroppedAndCounted(t *testing.T) {
	rcv := newReceiver(t, testSecret, nil)
	rcv.start()
	h := startExporter(t, testConfig(rcv.server.URL, testSecret))

	ld := decisionLogs("dec-ok")
	records := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	records.AppendEmpty().Body().SetStr("not json at all")
	records.AppendEmpty().Body().SetInt(42)
	records.AppendEmpty().Body().SetStr(`["an","array"]`)
	require.NoError(t, h.exp.ConsumeLogs(context.Background(), ld))
	require.Eventually(t, func() bool {
		return h.counter(t, "recovery_webhook_decisions_dropped", map[string]string{"reason": "invalid"}) == 3
	}, 10*time.Second, 10*time.Millisecond)
	h.shutdown(t)
	requests, delivered, _ := rcv.snapshot()
	assert.Equal(t, map[string]int{"dec-ok": 1}, delivered)
	assert.Len(t, requests, 1, "invalid records are never sent")
}

func TestUnsignedWhenAllowed(t *testing.T) {
	var got http.Header
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	cfg := testConfig(srv.URL, "")
	cfg.AllowUnsigned = true
	h := startExporter(t, cfg)
	require.NoError(t, h.exp.ConsumeLogs(context.Background(), decisionLogs("dec-unsigned")))
	require.Eventually(t, func() bool {
		return h.counter(t, "recovery_webhook_decisions_delivered", nil) == 1
	}, 10*time.Second, 10*time.Millisecond)
	h.shutdown(t)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, "dec-unsigned", got.Get("webhook-id"))
	assert.NotEmpty(t, got.Get("webhook-timestamp"))
	assert.Empty(t, got.Get("webhook-signature"))
}

func TestRawSecretSignsWithTheBytesAsGiven(t *testing.T) {
	const raw = "plain-shared-secret"
	// The receiver holds the same key in Standard Webhooks form.
	rcv := newReceiver(t, "whsec_"+base64.StdEncoding.EncodeToString([]byte(raw)), nil)
	rcv.start()
	h := startExporter(t, testConfig(rcv.server.URL, raw))
	require.NoError(t, h.exp.ConsumeLogs(context.Background(), decisionLogs("dec-raw")))
	require.Eventually(t, func() bool {
		_, delivered, _ := rcv.snapshot()
		return delivered["dec-raw"] == 1
	}, 10*time.Second, 10*time.Millisecond)
	h.shutdown(t)
	_, _, bad := rcv.snapshot()
	assert.Zero(t, bad)
}

func TestSecretsNeverLogged(t *testing.T) {
	const headerToken = "Bearer header-token-must-not-leak"
	rcv := newReceiver(t, testSecret, func(id string, n int) (int, http.Header) {
		switch {
		case id == "dec-rejected":
			return http.StatusBadRequest, nil
		case n == 1:
			return http.StatusBadGateway, nil
		}
		return http.StatusOK, nil
	})
	rcv.start()
	cfg := testConfig(rcv.server.URL, testSecret)
	cfg.ClientConfig.Headers.Set("Authorization", configopaque.String(headerToken))
	h := startExporter(t, cfg)
	require.NoError(t, h.exp.ConsumeLogs(context.Background(), decisionLogs("dec-retry", "dec-rejected")))
	require.Eventually(t, func() bool {
		return h.counter(t, "recovery_webhook_decisions_dropped", nil) == 1 &&
			h.counter(t, "recovery_webhook_decisions_delivered", nil) == 1
	}, 10*time.Second, 10*time.Millisecond)
	h.shutdown(t)

	require.NotZero(t, h.logs.Len(), "the scenario logs retries and drops")
	secretKey := base64.StdEncoding.EncodeToString(decodeWhsec(t, testSecret))
	for _, entry := range h.logs.All() {
		line := entry.Message + fmt.Sprint(entry.ContextMap())
		for _, secret := range []string{testSecret, secretKey, "header-token-must-not-leak"} {
			assert.NotContains(t, line, secret)
		}
	}
	dumped := fmt.Sprintf("%v %+v", *cfg, *cfg)
	assert.NotContains(t, dumped, testSecret)
	assert.NotContains(t, dumped, "header-token-must-not-leak")
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	for header, want := range map[string]time.Duration{
		"":       0,
		"3":      3 * time.Second,
		"-1":     0,
		"junk":   0,
		"999999": maxRetryAfter,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
	} {
		got, ok := retryAfter(header, now)
		assert.Equal(t, want, got, header)
		assert.Equal(t, want > 0, ok, header)
	}
}

func TestSignMatchesStandardWebhooksVector(t *testing.T) {
	// Test vector published with the Standard Webhooks reference libraries.
	key := decodeWhsec(t, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	got := Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", []byte(`{"test": 2432232314}`))
	assert.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", got)
}
