package triageconnector

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triage-otel/triage/exporter/recoverywebhookexporter"
	"github.com/triage-otel/triage/internal/evalset"
	"github.com/triage-otel/triage/internal/secretplant"
	"github.com/triage-otel/triage/processor/triageprocessor"
	"github.com/triage-otel/triage/wire"
)

// webhookBodies is a receiver that records every request it gets.
type webhookBodies struct {
	mu   sync.Mutex
	reqs []string
}

func (w *webhookBodies) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.mu.Lock()
	w.reqs = append(w.reqs, fmt.Sprint(r.Header)+"\n"+string(body))
	w.mu.Unlock()
	rw.WriteHeader(http.StatusNoContent)
}

func (w *webhookBodies) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.reqs...)
}

// TestPlantedSecretsLeaveNoTrace plants every secret form (after "_" and
// glued) in every user-controlled field of every shared capture — names,
// ids, session attributes, messages, arguments, results, errors, the
// service name — runs them through the real processor, connector and
// webhook exporter, and looks for the planted values in everything they
// emit: webhook requests, triage.* attributes, metric points (the
// connector's and every component's own telemetry) and log lines.
func TestPlantedSecretsLeaveNoTrace(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	shared, err := evalset.FindShared(wd)
	if err != nil {
		t.Skipf("shared fixtures not available: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(shared, "fixtures", "frameworks", "*", "*.json"))
	require.NoError(t, err)

	ctx := context.Background()
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(ctx) })
	core, logs := observer.New(zapcore.DebugLevel)
	telset := tel.NewTelemetrySettings()
	telset.Logger = zap.New(core)

	hook := &webhookBodies{}
	srv := httptest.NewServer(hook)
	t.Cleanup(srv.Close)

	// webhook exporter <- logs connector; metrics connector -> sink.
	expFactory := recoverywebhookexporter.NewFactory()
	expCfg := expFactory.CreateDefaultConfig().(*recoverywebhookexporter.Config)
	expCfg.ClientConfig.Endpoint = srv.URL
	expCfg.Secret = configopaque.String("whsec_dGVzdC1zaWduaW5nLWtleS1ub3QtYS1yZWFsLW9uZQ==")
	exp, err := expFactory.CreateLogs(ctx, exporter.Settings{ID: component.NewID(expFactory.Type()), TelemetrySettings: telset}, expCfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(ctx, componenttest.NewNopHost()))

	connSet := connector.Settings{ID: component.NewID(NewFactory().Type()), TelemetrySettings: telset}
	logsConn, err := NewFactory().CreateTracesToLogs(ctx, connSet, defaultConfig(), exp)
	require.NoError(t, err)
	metricsSink := new(consumertest.MetricsSink)
	metricsConn, err := NewFactory().CreateTracesToMetrics(ctx, connSet, defaultConfig(), metricsSink)
	require.NoError(t, err)
	tracesSink := new(consumertest.TracesSink)
	for _, c := range []component.Component{logsConn, metricsConn} {
		require.NoError(t, c.Start(ctx, componenttest.NewNopHost()))
	}

	procFactory := triageprocessor.NewFactory()
	procCfg := procFactory.CreateDefaultConfig().(*triageprocessor.Config)
	procCfg.DecisionWait = 100 * time.Millisecond
	// A rule that always fails to evaluate quotes span data in its error.
	procCfg.Rules = []triageprocessor.RuleConfig{{Name: "quotes_span_data", FailureType: "external_fault",
		Conditions: []string{`Int(span.name) > 0`}}}
	proc, err := procFactory.CreateTraces(ctx, processor.Settings{ID: component.NewID(procFactory.Type()), TelemetrySettings: telset},
		procCfg, teeTraces{tracesSink, logsConn, metricsConn})
	require.NoError(t, err)
	require.NoError(t, proc.Start(ctx, componenttest.NewNopHost()))

	sent, planted := 0, 0
	for i, f := range files {
		if strings.HasSuffix(f, ".logs.json") {
			continue
		}
		td, err := evalset.ReadTraces(f)
		require.NoError(t, err)
		planted += secretplant.Plant(td, i)
		sent += td.SpanCount()
		require.NoError(t, proc.ConsumeTraces(ctx, td))
	}
	// Beside the input spans, the in-flight decision spans of runs that
	// tripped a guard before being decided.
	inputSpans := func() int {
		n := 0
		for _, td := range tracesSink.AllTraces() {
			forEach(td, func(_ pcommon.Resource, s ptrace.Span) {
				if s.Name() != wire.SpanInFlightDecision {
					n++
				}
			})
		}
		return n
	}
	require.Eventually(t, func() bool { return inputSpans() == sent }, time.Minute, 20*time.Millisecond,
		"every span forwarded (root-less traces after decision_wait)")
	require.NoError(t, proc.Shutdown(ctx))
	for _, c := range []component.Component{logsConn, metricsConn} {
		require.NoError(t, c.Shutdown(ctx))
	}
	decisions := 0
	for _, td := range tracesSink.AllTraces() {
		forEach(td, func(_ pcommon.Resource, s ptrace.Span) {
			if _, ok := s.Attributes().Get(attrDecision); ok {
				if v, late := s.Attributes().Get(attrLate); !late || !v.Bool() {
					decisions++
				}
			}
		})
	}
	require.Positive(t, decisions)
	require.Eventually(t, func() bool { return len(hook.all()) >= 1 }, time.Minute, 20*time.Millisecond)
	require.NoError(t, exp.Shutdown(ctx))

	leaks := map[string]int{}
	leak := func(where, s string) {
		for _, form := range secretplant.Find(s) {
			if leaks[where+" "+form] == 0 {
				t.Errorf("%s leaks %s: %s", where, form, leakContext(s))
			}
			leaks[where+" "+form]++
		}
	}
	// The planting reached the spans: without it the test proves nothing.
	inSpans := 0
	redactedNames := map[string]int{}
	for _, td := range tracesSink.AllTraces() {
		forEach(td, func(res pcommon.Resource, s ptrace.Span) {
			for k, v := range s.Attributes().All() {
				if strings.HasPrefix(k, "triage.") {
					leak("attribute "+k, v.AsString())
					if strings.Contains(v.AsString(), "[REDACTED]") {
						redactedNames[k]++
					}
				} else if len(secretplant.Find(v.AsString())) > 0 {
					inSpans++
				}
			}
		})
	}
	require.Positive(t, inSpans, "the planted values are in the forwarded spans")
	for _, k := range []string{"triage.agent", "triage.service", "triage.tool", "triage.session.id", "triage.decision"} {
		assert.Positive(t, redactedNames[k], "%s carries a redacted planted value somewhere", k)
	}

	reqs := hook.all()
	for _, r := range reqs {
		leak("webhook request", r)
	}
	for _, md := range metricsSink.AllMetrics() {
		forEachPoint(md, func(name string, attrs pcommon.Map) {
			for k, v := range attrs.All() {
				leak("metric "+name+" label "+k, v.AsString())
			}
		})
	}
	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.Reader.Collect(ctx, &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			leak("telemetry "+m.Name, fmt.Sprintf("%+v", m.Data))
		}
	}
	for _, e := range logs.All() {
		leak("log line", e.Message+" "+fmt.Sprint(e.ContextMap()))
	}

	var where []string
	for k := range leaks {
		where = append(where, k)
	}
	sort.Strings(where)
	t.Logf("%d strings planted in %d spans; %d decisions, %d webhook requests, %d log lines checked; leaks: %v",
		planted, sent, decisions, len(reqs), logs.Len(), where)
}

func forEach(td ptrace.Traces, f func(pcommon.Resource, ptrace.Span)) {
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			spans := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				f(rs.Resource(), spans.At(k))
			}
		}
	}
}

func forEachPoint(md pmetric.Metrics, f func(string, pcommon.Map)) {
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		rm := md.ResourceMetrics().At(i)
		f("resource", rm.Resource().Attributes())
		for j := 0; j < rm.ScopeMetrics().Len(); j++ {
			ms := rm.ScopeMetrics().At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				switch m.Type() {
				case pmetric.MetricTypeSum:
					for p := 0; p < m.Sum().DataPoints().Len(); p++ {
						f(m.Name(), m.Sum().DataPoints().At(p).Attributes())
					}
				case pmetric.MetricTypeHistogram:
					for p := 0; p < m.Histogram().DataPoints().Len(); p++ {
						f(m.Name(), m.Histogram().DataPoints().At(p).Attributes())
					}
				case pmetric.MetricTypeGauge:
					for p := 0; p < m.Gauge().DataPoints().Len(); p++ {
						f(m.Name(), m.Gauge().DataPoints().At(p).Attributes())
					}
				}
			}
		}
	}
}

// leakContext shows what surrounds the first planted fragment in s.
func leakContext(s string) string {
	for _, f := range secretplant.Forms {
		for _, frag := range f.Fragments {
			if i := strings.Index(s, frag); i >= 0 {
				return fmt.Sprintf("…%s… (%d bytes)", s[max(0, i-120):min(len(s), i+len(frag)+60)], len(s))
			}
		}
	}
	return ""
}
