package recoverystreamexporter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

	"github.com/triage-otel/triage/exporter/recoverystreamexporter/internal/metadatatest"
	"github.com/triage-otel/triage/internal/redistest"
)

// redisServer is a real redis-server process owned by one test.
type redisServer struct {
	addr string
	cmd  *exec.Cmd
	out  *syncBuffer
}

// syncBuffer collects the server's output, written by exec's copier goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// startRedis runs redis-server on addr (a free port when empty) without
// persistence, and waits until it answers PING.
func startRedis(t *testing.T, addr string, extraArgs ...string) *redisServer {
	t.Helper()
	path := redistest.Binary(t)
	if addr == "" {
		addr = freeAddr(t)
	}
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	args := append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir()}, extraArgs...)
	out := &syncBuffer{}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	srv := &redisServer{addr: addr, cmd: cmd, out: out}
	t.Cleanup(srv.stop)

	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true})
	defer client.Close()
	password := ""
	for i := 0; i+1 < len(extraArgs); i++ {
		if extraArgs[i] == "--requirepass" {
			password = extraArgs[i+1]
		}
	}
	if password != "" {
		client = redis.NewClient(&redis.Options{Addr: addr, Password: password, MaxRetries: -1, DisableIdentity: true})
		defer client.Close()
	}
	if !assert.Eventually(t, func() bool {
		return client.Ping(context.Background()).Err() == nil
	}, 15*time.Second, 20*time.Millisecond) {
		t.Fatalf("redis-server did not start: %s", out.String())
	}
	return srv
}

func (s *redisServer) stop() {
	if s.cmd.Process != nil && s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

func (s *redisServer) client(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

type harness struct {
	tt   *componenttest.Telemetry
	logs *observer.ObservedLogs
	exp  exporter.Logs
	once sync.Once
	err  error
}

func testConfig(addr, stream string) *Config {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Endpoint = addr
	cfg.Stream = stream
	cfg.Timeout = 2 * time.Second
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
	h := &harness{tt: tt, logs: logs, exp: exp}
	t.Cleanup(func() {
		h.shutdown(t)
		_ = tt.Shutdown(context.Background())
	})
	return h
}

// shutdown stops the exporter once (draining its queue); exporterhelper must
// not be shut down twice.
func (h *harness) shutdown(t *testing.T) {
	h.once.Do(func() { h.err = h.exp.Shutdown(context.Background()) })
	require.NoError(t, h.err)
}

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

func decisionJSON(id, failure, action string) string {
	return fmt.Sprintf(`{"decision_id":%q,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7",`+
		`"session_id":"sess-1","service":"checkout-agent","agent":"planner","failure_type":%q,"confidence":0.9,`+
		`"evidence":[{"signal":"jsonrpc_code","detail":"-32602"}],"action":{"kind":%q,"hint":"use the tool manifest"},`+
		`"attempt":2,"max_attempts":3,"policy":"default","time":"2026-11-29T21:00:00Z"}`, id, failure, action)
}

func decisionLogs(ids ...string) plog.Logs {
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for _, id := range ids {
		lr := sl.LogRecords().AppendEmpty()
		lr.Body().SetStr(decisionJSON(id, "schema_mismatch", "retry_with_tool_manifest"))
		lr.Attributes().PutStr("triage.decision.id", id)
		lr.Attributes().PutStr("service.name", "checkout-agent")
		lr.Attributes().PutStr("triage.agent", "planner")
		lr.Attributes().PutStr("triage.failure_type", "schema_mismatch")
		lr.Attributes().PutStr("triage.action.kind", "retry_with_tool_manifest")
	}
	return ld
}

func TestAppendsDecisionsToStream(t *testing.T) {
	srv := startRedis(t, "")
	h := startExporter(t, testConfig(srv.addr, "triage:test"))

	ld := decisionLogs("dec-1", "dec-2")
	// Map body, routing fields only inside the document.
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(decisionJSON("dec-3", "timeout", "backoff_and_retry")), &doc))
	require.NoError(t, ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty().Body().SetEmptyMap().FromRaw(doc))
	require.NoError(t, h.exp.ConsumeLogs(context.Background(), ld))
	h.shutdown(t) // drains the queue

	entries, err := srv.client(t).XRange(context.Background(), "triage:test", "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, entries, 3)
	for i, want := range []struct{ id, failure, action string }{
		{"dec-1", "schema_mismatch", "retry_with_tool_manifest"},
		{"dec-2", "schema_mismatch", "retry_with_tool_manifest"},
		{"dec-3", "timeout", "backoff_and_retry"},
	} {
		v := entries[i].Values
		assert.Equal(t, want.id, v[FieldDecisionID])
		assert.Equal(t, want.failure, v[FieldFailureType])
		assert.Equal(t, want.action, v[FieldAction])
		assert.JSONEq(t, decisionJSON(want.id, want.failure, want.action), v[FieldDecision].(string))
		assert.Len(t, v, 4)
	}
	assert.Equal(t, decisionJSON("dec-1", "schema_mismatch", "retry_with_tool_manifest"), entries[0].Values[FieldDecision],
		"a string body is stored byte for byte")
	assert.Equal(t, int64(3), h.counter(t, "recovery_stream_decisions_appended", nil))
}

func TestMaxLenTrimsTheStream(t *testing.T) {
	// Small stream nodes so that approximate trimming is visible at a small
	// scale: Redis trims whole nodes, so the length stays within one node of
	// maxlen.
	const nodeEntries, maxLen, total = 5, 20, 300
	srv := startRedis(t, "", "--stream-node-max-entries", strconv.Itoa(nodeEntries))
	cfg := testConfig(srv.addr, "triage:trim")
	cfg.MaxLen = maxLen
	h := startExporter(t, cfg)
	for batch := 0; batch < total/10; batch++ {
		ids := make([]string, 10)
		for i := range ids {
			ids[i] = fmt.Sprintf("dec-%03d", batch*10+i)
		}
		require.NoError(t, h.exp.ConsumeLogs(context.Background(), decisionLogs(ids...)))
	}
	h.shutdown(t)

	client := srv.client(t)
	length, err := client.XLen(context.Background(), "triage:trim").Result()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, length, int64(maxLen))
	assert.LessOrEqual(t, length, int64(maxLen+nodeEntries))
	last, err := client.XRevRangeN(context.Background(), "triage:trim", "+", "-", 1).Result()
	require.NoError(t, err)
	require.Len(t, last, 1)
	assert.Equal(t, fmt.Sprintf("dec-%03d", total-1), last[0].Values[FieldDecisionID], "trimming drops the oldest")
	assert.Equal(t, int64(total), h.counter(t, "recovery_stream_decisions_appended", nil))
}

func TestRedisDownThenBackDeliversEachDecisionOnce(t *testing.T) {
	redistest.Binary(t)
	addr := freeAddr(t)
	h := startExporter(t, testConfig(addr, "triage:outage"))
	require.NoError(t, h.exp.ConsumeLogs(context.Background(), decisionLogs("dec-x", "dec-y")))
	require.Eventually(t, func() bool {
		return h.counter(t, "recovery_stream_append_failures", map[string]string{"reason": "connection"}) >= 3
	}, 10*time.Second, 10*time.Millisecond)

	srv := startRedis(t, addr)
	client := srv.client(t)
	require.Eventually(t, func() bool {
		n, err := client.XLen(context.Background(), "triage:outage").Result()
		return err == nil && n == 2
	}, 20*time.Second, 20*time.Millisecond)
	h.shutdown(t)

	entries, err := client.XRange(context.Background(), "triage:outage", "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, entries, 2)
	assert.Equal(t, "dec-x", entries[0].Values[FieldDecisionID])
	assert.Equal(t, "dec-y", entries[1].Values[FieldDecisionID])
	assert.Zero(t, h.counter(t, "recovery_stream_decisions_dropped", nil))
}

func TestWrongTypeKeyIsPermanent(t *testing.T) {
	srv := startRedis(t, "")
	client := srv.client(t)
	require.NoError(t, client.Set(context.Background(), "triage:notastream", "x", 0).Err())
	h := startExporter(t, testConfig(srv.addr, "triage:notastream"))

	// Invalid records are dropped before any XADD.
	ld := decisionLogs("dec-w")
	ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty().Body().SetStr("{truncated")
	require.NoError(t, h.exp.ConsumeLogs(context.Background(), ld))
	h.shutdown(t)

	assert.Equal(t, int64(1), h.counter(t, "recovery_stream_decisions_dropped", map[string]string{"reason": "rejected"}))
	assert.Equal(t, int64(1), h.counter(t, "recovery_stream_decisions_dropped", map[string]string{"reason": "invalid"}))
	assert.Zero(t, h.counter(t, "recovery_stream_append_failures", nil), "WRONGTYPE is not retried")
	assert.Zero(t, h.counter(t, "recovery_stream_decisions_appended", nil))
	typ, err := client.Type(context.Background(), "triage:notastream").Result()
	require.NoError(t, err)
	assert.Equal(t, "string", typ)
}

func TestPasswordAuthAndNeverLogged(t *testing.T) {
	const password = "redis-pass-must-not-leak"
	srv := startRedis(t, "", "--requirepass", password)

	// Wrong password first: retried (an operator can fix it), never logged.
	wrong := testConfig(srv.addr, "triage:auth")
	wrong.Password = "wrong-pass-must-not-leak"
	wrong.RetryConfig.MaxElapsedTime = 300 * time.Millisecond
	hw := startExporter(t, wrong)
	require.NoError(t, hw.exp.ConsumeLogs(context.Background(), decisionLogs("dec-denied")))
	require.Eventually(t, func() bool {
		return hw.counter(t, "recovery_stream_append_failures", map[string]string{"reason": "redis_auth"}) >= 2
	}, 10*time.Second, 10*time.Millisecond)
	hw.shutdown(t)

	cfg := testConfig(srv.addr, "triage:auth")
	cfg.Password = configopaque.String(password)
	h := startExporter(t, cfg)
	require.NoError(t, h.exp.ConsumeLogs(context.Background(), decisionLogs("dec-auth")))
	h.shutdown(t)
	assert.Equal(t, int64(1), h.counter(t, "recovery_stream_decisions_appended", nil))

	require.NotZero(t, hw.logs.Len())
	for _, observed := range []*observer.ObservedLogs{hw.logs, h.logs} {
		for _, entry := range observed.All() {
			line := entry.Message + fmt.Sprint(entry.ContextMap())
			assert.NotContains(t, line, password)
			assert.NotContains(t, line, "wrong-pass-must-not-leak")
		}
	}
	assert.NotContains(t, fmt.Sprintf("%v %+v", *cfg, *cfg), password)
}
