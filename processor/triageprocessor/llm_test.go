package triageprocessor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/triage-otel/triage/internal/llmtest"
	"github.com/triage-otel/triage/internal/redistest"
	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadata"
	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadatatest"
)

// A tool error no structure, code or rule places: the run is a reasonless
// unknown, and the model is asked.
const llmToolErr = "dispatcher has no handler registered under the name frob"

func withLLM(endpoint string, more func(*LLMConfig)) func(*Config) {
	return func(cfg *Config) {
		cfg.LLM.Enabled = true
		cfg.LLM.Endpoint = endpoint
		cfg.LLM.Model = "scripted"
		cfg.LLM.Timeout = 5 * time.Second
		if more != nil {
			more(&cfg.LLM)
		}
	}
}

// waitFor polls cond (the model answers on another goroutine).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLLMConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "llm.yaml"))
	require.NoError(t, err)
	load := func(name string) (*Config, error) {
		cfg := createDefaultConfig().(*Config)
		sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
		require.NoError(t, err)
		require.NoError(t, sub.Unmarshal(cfg))
		return cfg, cfg.Validate()
	}
	cfg, err := load("llm")
	require.NoError(t, err)
	assert.Equal(t, LLMConfig{
		Enabled: true, Endpoint: "http://localhost:11434/v1", Model: "llama3.2", APIKey: "not-a-real-key",
		Timeout: 20 * time.Second, MaxRetries: 1, MaxTokens: 2048, ConfidenceThreshold: 0.85, ConfidenceCap: 0.5,
		MaxCallsPerSession: 2, MaxCallsPerMinute: 30, MaxConcurrency: 2, MaxPending: 100,
		Cache:       LLMCacheConfig{Size: 500, Redis: true, TTL: 24 * time.Hour},
		Corrections: "corrections.jsonl",
	}, cfg.LLM)
	assert.NotContains(t, cfg.LLM.APIKey.String(), "not-a-real-key", "the key must not print")

	// Off by default, and a disabled block is not checked.
	assert.False(t, createDefaultConfig().(*Config).LLM.Enabled)
	_, err = load("llm_disabled_incomplete")
	require.NoError(t, err)

	for name, want := range map[string][]string{
		"llm_no_endpoint":  {"llm.endpoint must be an http(s) URL", "llm.model must be set"},
		"llm_bad_numbers":  {"llm.confidence_threshold", "llm.confidence_cap", "llm.max_concurrency", "llm.max_pending", "llm.max_calls_per_minute", "llm.timeout", "llm.cache.size"},
		"llm_redis_alone":  {"llm.cache.redis", "recovery.history.redis.endpoint"},
		"llm_scheme_wrong": {"llm.endpoint"},
	} {
		_, err := load(name)
		require.Error(t, err, name)
		for _, w := range want {
			assert.Contains(t, err.Error(), w, name)
		}
	}
	// A corrections file that does not load fails the start, naming it.
	cfg, err = load("llm")
	require.NoError(t, err)
	cfg.LLM.Cache.Redis = false
	cfg.LLM.Corrections = filepath.Join(t.TempDir(), "missing.jsonl")
	_, err = newTriageProcessor(metadatatest.NewSettings(componenttest.NewTelemetry()), cfg, new(consumertest.TracesSink))
	require.ErrorContains(t, err, "llm.corrections")
}

func TestLLMAnswerAnnotatesTheRun(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(llmtest.Answer("wrong_tool_called", 0.92, "no handler registered under the name frob")))
	h := newHarness(t, withLLM(srv.Endpoint(), nil))
	h.send(agentTrace(traceID(1), "svc", genaiRun(llmToolErr)...))
	waitFor(t, "the held trace", func() bool { return h.sink.SpanCount() == 4 })

	root := rootOf(t, h, traceID(1))
	ft, _ := strAttr(root, attrFailureType)
	sig, _ := strAttr(root, attrSignal)
	rule, _ := strAttr(root, attrRule)
	conf, _ := root.Attributes().Get(attrConfidence)
	assert.Equal(t, "wrong_tool_called", ft)
	assert.Equal(t, "llm", sig)
	assert.Equal(t, "scripted", rule)
	assert.InDelta(t, 0.6, conf.Double(), 1e-9)
	doc, ok := strAttr(root, "triage.decision")
	require.True(t, ok, "a recovery decision for the typed run")
	assert.Contains(t, doc, `"failure_type":"wrong_tool_called"`)
	tool := h.forwarded()[spanID(3)][0]
	ift, _ := strAttr(tool, attrFailureType)
	assert.Equal(t, "wrong_tool_called", ift)

	assert.Equal(t, int64(1), sumValue(t, h, "llm_calls", attribute.String("outcome", "answered")))
	assert.Equal(t, int64(1), sumValue(t, h, "llm_accepted", attribute.String("failure_type", "wrong_tool_called")))
	assert.Equal(t, int64(0), sumValue(t, h, "llm_pending"))
	assert.Equal(t, int64(1), sumValue(t, h, "decisions", attribute.String("verdict", "failed"), attribute.String("failure_type", "wrong_tool_called")))

	// The same shape again: answered from memory, no call.
	h.send(agentTrace(traceID(2), "svc", genaiRun(llmToolErr)...))
	assert.Equal(t, 8, h.sink.SpanCount(), "a cache hit is decided in ConsumeTraces")
	assert.Equal(t, int64(1), srv.Calls())
	assert.Equal(t, int64(1), sumValue(t, h, "llm_cache_hits", attribute.String("source", "memory")))
}

func TestLLMRejectedAnswersLeaveUnknown(t *testing.T) {
	// timeout for a tool step that took 1 ms contradicts the structure.
	srv := llmtest.New(t, llmtest.Always(llmtest.Answer("timeout", 0.97, "no handler registered")))
	h := newHarness(t, withLLM(srv.Endpoint(), nil))
	h.send(agentTrace(traceID(1), "svc", genaiRun(llmToolErr)...))
	waitFor(t, "the held trace", func() bool { return h.sink.SpanCount() == 4 })
	root := rootOf(t, h, traceID(1))
	ft, _ := strAttr(root, attrFailureType)
	sig, hasSig := strAttr(root, attrSignal)
	assert.Equal(t, "unknown", ft)
	assert.False(t, hasSig && sig == "llm")
	assert.Equal(t, int64(1), sumValue(t, h, "llm_rejections", attribute.String("gate", "structure")))
}

// Not-retryable unknowns never reach the model; ok and typed runs neither.
func TestLLMNotRetryableNeverAsked(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(llmtest.Answer("external_fault", 0.99, "error")))
	h := newHarness(t, withLLM(srv.Endpoint(), nil))
	for i, msg := range []string{
		"Incorrect API key provided", "Your account has been suspended", "Interrupted at node: approve",
		"The model gpt-3 has been deprecated", "503 Service Unavailable", "",
	} {
		h.send(agentTrace(traceID(uint64(10+i)), "svc", genaiRun(msg)...))
	}
	assert.Equal(t, 24, h.sink.SpanCount(), "every trace decided in ConsumeTraces")
	assert.Zero(t, srv.Calls())
	assert.Equal(t, int64(4), sumValue(t, h, "llm_skipped", attribute.String("reason", "not_retryable")))
}

// A slow model under the concurrency cap: the traces waiting for it are
// held, every other trace flows through at once, spans arriving for a
// held trace wait with it, and no more calls than max_concurrency are in
// flight.
func TestLLMSlowModelDoesNotBlockOtherTraces(t *testing.T) {
	release := make(chan struct{})
	srv := llmtest.New(t, func(req llmtest.Request, _ int) llmtest.Reply {
		<-release
		return llmtest.Reply{Content: llmtest.Answer("wrong_tool_called", 0.9, "no handler registered under the name")}
	})
	h := newHarness(t, withLLM(srv.Endpoint(), func(c *LLMConfig) { c.MaxConcurrency = 1 }))
	// Three unknown traces of distinct shapes, each waiting for the model.
	for i := range 3 {
		h.send(agentTrace(traceID(uint64(100+i)), "svc", genaiRun(llmToolErr+strings.Repeat(" again", i))...))
	}
	assert.Zero(t, h.sink.SpanCount())
	assert.Equal(t, int64(3), sumValue(t, h, "llm_pending"))
	// Other traces flow: ok and typed runs are forwarded in ConsumeTraces.
	h.send(agentTrace(traceID(200), "svc", genaiRun("")...))
	h.send(agentTrace(traceID(201), "svc", genaiRun("upstream returned 502 Bad Gateway")...))
	assert.Equal(t, 8, h.sink.SpanCount())
	// A late span of a held trace waits with it.
	late := agentTrace(traceID(100), "svc", spanSpec{id: 9, parent: 1, name: "late"})
	h.send(late)
	assert.Equal(t, 8, h.sink.SpanCount())

	close(release)
	waitFor(t, "the held traces", func() bool { return h.sink.SpanCount() == 8+12+1 })
	assert.Equal(t, int64(1), srv.Peak(), "max_concurrency 1")
	assert.Equal(t, int64(3), srv.Calls())
	assert.Equal(t, int64(0), sumValue(t, h, "llm_pending"))
	for _, td := range h.sink.AllTraces() {
		eachSpan(td, func(_ ptrace.ResourceSpans, s ptrace.Span) {
			if s.TraceID() == traceID(100) && s.ParentSpanID().IsEmpty() {
				ft, _ := strAttr(s, attrFailureType)
				assert.Equal(t, "wrong_tool_called", ft)
			}
		})
	}
}

func TestLLMTimeoutDecidesUnknown(t *testing.T) {
	srv := llmtest.New(t, func(llmtest.Request, int) llmtest.Reply {
		return llmtest.Reply{Content: llmtest.Answer("wrong_tool_called", 0.9, "no handler"), Delay: 10 * time.Second}
	})
	h := newHarness(t, withLLM(srv.Endpoint(), func(c *LLMConfig) { c.Timeout = 100 * time.Millisecond }))
	h.send(agentTrace(traceID(1), "svc", genaiRun(llmToolErr)...))
	waitFor(t, "the trace after the timeout", func() bool { return h.sink.SpanCount() == 4 })
	root := rootOf(t, h, traceID(1))
	ft, _ := strAttr(root, attrFailureType)
	assert.Equal(t, "unknown", ft)
	assert.Equal(t, int64(1), sumValue(t, h, "llm_errors", attribute.String("error", "timeout")))
}

func TestLLMMaxPendingAndShutdown(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := llmtest.New(t, func(req llmtest.Request, _ int) llmtest.Reply {
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		return llmtest.Reply{Content: llmtest.Answer("wrong_tool_called", 0.9, "no handler")}
	})
	h := newHarness(t, withLLM(srv.Endpoint(), func(c *LLMConfig) { c.MaxPending = 1 }))
	h.send(agentTrace(traceID(1), "svc", genaiRun(llmToolErr)...))
	h.send(agentTrace(traceID(2), "svc", genaiRun(llmToolErr+" twice")...))
	assert.Equal(t, 4, h.sink.SpanCount(), "the second trace is decided without the model")
	assert.Equal(t, int64(1), sumValue(t, h, "llm_skipped", attribute.String("reason", "pending_full")))
	// Shutdown cancels the consultation and forwards the held trace.
	require.NoError(t, h.p.Shutdown(context.Background()))
	assert.Equal(t, 8, h.sink.SpanCount())
	root := rootOf(t, h, traceID(1))
	ft, _ := strAttr(root, attrFailureType)
	assert.Equal(t, "unknown", ft)
}

func TestLLMCorrectionsOverride(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(llmtest.Answer("unknown", 0, "")))
	// Learn the shape's signature from a first processor.
	probe := newHarness(t, withLLM(srv.Endpoint(), nil))
	probe.send(agentTrace(traceID(1), "svc", genaiRun(llmToolErr)...))
	waitFor(t, "the probe", func() bool { return probe.sink.SpanCount() == 4 })
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	sig := signatureOfFirstConsultation(t, probe)

	path := filepath.Join(t.TempDir(), "corrections.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"signature":"`+sig+`","expected":"schema_mismatch","note":"frob is an argument"}`+"\n"), 0o600))
	h := newHarness(t, withLLM(srv.Endpoint(), func(c *LLMConfig) { c.Corrections = path }))
	h.send(agentTrace(traceID(2), "svc", genaiRun(llmToolErr)...))
	assert.Equal(t, 4, h.sink.SpanCount(), "a correction is applied in ConsumeTraces")
	root := rootOf(t, h, traceID(2))
	ft, _ := strAttr(root, attrFailureType)
	signal, _ := strAttr(root, attrSignal)
	assert.Equal(t, "schema_mismatch", ft)
	assert.Equal(t, "correction", signal)
	assert.Equal(t, int64(1), srv.Calls(), "no call for a corrected shape")
	assert.Equal(t, int64(1), sumValue(t, h, "llm_cache_hits", attribute.String("source", "correction")))
}

// signatureOfFirstConsultation recomputes the signature the processor used
// (the consultant's own, through a Prepare on the same trace).
func signatureOfFirstConsultation(t *testing.T, h *harness) string {
	t.Helper()
	hh := &heldTrace{id: traceID(1), td: agentTrace(traceID(1), "svc", genaiRun(llmToolErr)...)}
	ct := h.p.classifyTrace(context.Background(), hh)
	for i := range ct.runs {
		_, cons, _ := h.p.llm.consultant.Prepare(ct.classifierFor(i), &ct.runs[i], ct.verdicts[i])
		if cons != nil && cons.Signature != "" {
			return cons.Signature
		}
	}
	t.Fatal("no signature")
	return ""
}

// Two collectors sharing one Redis: the shape one asked about is answered
// from Redis for the other, which makes no call.
func TestLLMTwoProcessorsShareAnswersInRedis(t *testing.T) {
	addr := redistest.Start(t)
	srv := llmtest.New(t, llmtest.Always(llmtest.Answer("wrong_tool_called", 0.9, "no handler registered under the name")))
	shared := withLLM(srv.Endpoint(), func(c *LLMConfig) { c.Cache.Redis = true })
	mutate := func(cfg *Config) {
		shared(cfg)
		cfg.Recovery.History.Redis.Endpoint = addr
		cfg.Recovery.History.Redis.KeyPrefix = "llmtest:"
		cfg.Recovery.History.Redis.Timeout = 300 * time.Millisecond
	}
	a, b := newHarness(t, mutate), newHarness(t, mutate)
	a.send(agentTrace(traceID(1), "svc", genaiRun(llmToolErr+" (request 41)")...))
	waitFor(t, "a", func() bool { return a.sink.SpanCount() == 4 })
	b.send(agentTrace(traceID(2), "svc", genaiRun(llmToolErr+" (request 97)")...))
	waitFor(t, "b", func() bool { return b.sink.SpanCount() == 4 })
	assert.Equal(t, int64(1), srv.Calls())
	assert.Equal(t, int64(1), sumValue(t, b, "llm_cache_hits", attribute.String("source", "redis")))
	root := rootOf(t, b, traceID(2))
	ft, _ := strAttr(root, attrFailureType)
	assert.Equal(t, "wrong_tool_called", ft)
}

// With the model off nothing changes: the default config has no asker.
func TestLLMOffByDefault(t *testing.T) {
	h := newHarness(t, nil)
	assert.Nil(t, h.p.llm)
	h.send(agentTrace(traceID(1), "svc", genaiRun(llmToolErr)...))
	assert.Equal(t, 4, h.sink.SpanCount())
	root := rootOf(t, h, traceID(1))
	ft, _ := strAttr(root, attrFailureType)
	assert.Equal(t, "unknown", ft)
}

// Late spans of a trace waiting for the model wait with it only up to
// max_spans_per_trace of them: beyond, they go on at once (without the
// decision's annotations) and are counted, so a slow model cannot make a
// trace gather spans without bound.
func TestLLMLateSpansOfAHeldTraceAreBounded(t *testing.T) {
	release := make(chan struct{})
	srv := llmtest.New(t, func(llmtest.Request, int) llmtest.Reply {
		<-release
		return llmtest.Reply{Content: llmtest.Answer("wrong_tool_called", 0.9, "no handler registered under the name")}
	})
	model := withLLM(srv.Endpoint(), func(c *LLMConfig) { c.MaxConcurrency = 1 })
	h := newHarness(t, func(c *Config) { model(c); c.MaxSpansPerTrace = 4 })
	h.send(agentTrace(traceID(1), "svc", genaiRun(llmToolErr)...))
	assert.Zero(t, h.sink.SpanCount(), "held for the model")
	for i := range 6 {
		h.send(agentTrace(traceID(1), "svc", spanSpec{id: uint64(20 + i), parent: 1, name: "late"}))
	}
	assert.Equal(t, 2, h.sink.SpanCount(), "the late spans beyond max_spans_per_trace go on at once")
	assert.Equal(t, int64(2), sumValue(t, h, "late_spans_passed"))
	assert.Equal(t, int64(4), sumValue(t, h, "late_spans"), "the others wait for the decision")
	close(release)
	waitFor(t, "the held trace", func() bool { return h.sink.SpanCount() == 2+4+4 })
	ft, _ := strAttr(rootOf(t, h, traceID(1)), attrFailureType)
	assert.Equal(t, "wrong_tool_called", ft)
}
