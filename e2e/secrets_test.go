//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/internal/secretplant"
)

// TestDecisionsCarryNoSecrets plants every secret form of secretplant
// (API keys, tokens, JWTs, URL credentials, e-mail addresses, card numbers;
// after "_" and glued) in every user-controlled field of every capture —
// span names, names, ids, the session attribute, messages, arguments,
// results, errors, service.name — replays them into the built collector and
// looks for them in everything it emits: the webhook requests, the triage.*
// attributes of the forwarded spans, the Prometheus exporter's series, the
// collector's own telemetry and its log (at debug level).
func TestDecisionsCarryNoSecrets(t *testing.T) {
	repo := repoRoot(t)
	shared := sharedDir(t, repo)
	fixtures := fixtureFiles(t, shared)
	work := t.TempDir()
	otelcol := collectorBinary(t, repo)
	triage := buildTriageCLI(t, repo, work)

	copies := sessionCopies(t, fixtures, filepath.Join(work, "in"), perTraceSession, nil)
	planted := 0
	for i, f := range copies {
		planted += plantFile(t, f, i)
	}
	failed := failedRuns(classify(t, triage, nil, copies))
	if len(failed) == 0 {
		t.Fatal("no failed run among the planted copies")
	}

	hook := newWebhookReceiver(t)
	ports := freePorts(t, 3)
	otlpPort, promPort, telemetryPort := ports[0], ports[1], ports[2]
	spansPath := filepath.Join(work, "spans.json")
	cfgPath := filepath.Join(work, "otelcol.yaml")
	writeFile(t, cfgPath, secretsCollectorConfig(otlpPort, promPort, telemetryPort, hook.url(), hook.secret, spansPath))
	logPath := filepath.Join(work, "otelcol.log")
	col := startCollector(t, otelcol, cfgPath, logPath)
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", otlpPort)
	waitHTTPReady(t, col, endpoint)
	run(t, 3*time.Minute, triage, append([]string{"replay", "--endpoint", endpoint}, copies...)...)

	hook.waitDelivered(t, col, len(failed), decisionsTimeout)
	hook.assertNoProblems(t)
	time.Sleep(2 * time.Second) // a metrics flush after the last decision
	promText := scrape(t, promPort)
	telemetryText := scrape(t, telemetryPort)
	col.stop(t)

	leaks := map[string]int{}
	check := func(where, s string) {
		for _, form := range secretplant.Find(s) {
			if leaks[where+": "+form] == 0 {
				t.Errorf("%s leaks %s: %.400s", where, form, around(s, form))
			}
			leaks[where+": "+form]++
		}
	}
	for _, req := range hook.requests() {
		check("webhook request", fmt.Sprint(req.header)+"\n"+string(req.body))
	}
	inSpans, redacted := 0, map[string]int{}
	for _, line := range bytes.Split(readFile(t, spansPath), []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(line)
		if err != nil {
			t.Fatalf("%s: %v", spansPath, err)
		}
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			ss := td.ResourceSpans().At(i).ScopeSpans()
			for j := 0; j < ss.Len(); j++ {
				for k := 0; k < ss.At(j).Spans().Len(); k++ {
					for key, v := range ss.At(j).Spans().At(k).Attributes().All() {
						switch {
						case strings.HasPrefix(key, "triage."):
							check("attribute "+key, v.AsString())
							if strings.Contains(v.AsString(), "[REDACTED]") {
								redacted[key]++
							}
						case len(secretplant.Find(v.AsString())) > 0:
							inSpans++
						}
					}
				}
			}
		}
	}
	if inSpans == 0 {
		t.Fatal("the planted values are not in the forwarded spans: the test would prove nothing")
	}
	for _, key := range []string{"triage.agent", "triage.service", "triage.session.id", "triage.decision"} {
		if redacted[key] == 0 {
			t.Errorf("no %s carries a redacted planted value: the planting did not reach it", key)
		}
	}
	if !strings.Contains(promText, "[REDACTED]") {
		t.Errorf("no Prometheus series label carries a redacted planted value: the planting did not reach them")
	}
	for _, l := range strings.Split(promText, "\n") {
		check("prometheus exporter series", l)
	}
	for _, l := range strings.Split(telemetryText, "\n") {
		check("collector telemetry series", l)
	}
	logText := string(readFile(t, logPath))
	if !strings.Contains(logText, "[REDACTED]") {
		t.Errorf("no log line carries a redacted planted value (the failing rule's errors quote span names): the planting did not reach the log")
	}
	for _, l := range strings.Split(logText, "\n") {
		check("collector log", l)
	}
	var where []string
	for k := range leaks {
		where = append(where, k)
	}
	sort.Strings(where)
	t.Logf("%d strings planted in %d captures; %d webhook requests, %d log lines, %d+%d metric lines checked; leaks: %v",
		planted, len(copies), len(hook.requests()), strings.Count(logText, "\n"),
		strings.Count(promText, "\n"), strings.Count(telemetryText, "\n"), where)
}

// plantFile plants secretplant's payload in every user-controlled string of
// an OTLP/JSON file, in place.
func plantFile(t *testing.T, path string, n int) int {
	t.Helper()
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(readFile(t, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	planted := secretplant.Plant(td, n)
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(b))
	return planted
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func scrape(t *testing.T, port int) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatalf("scraping :%d: %v", port, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// around shows the first fragment of form in s with some context.
func around(s, form string) string {
	for _, f := range secretplant.Forms {
		if f.Name != form {
			continue
		}
		for _, frag := range f.Fragments {
			if i := strings.Index(s, frag); i >= 0 {
				return s[max(0, i-150):min(len(s), i+len(frag)+50)]
			}
		}
	}
	return s
}

// secretsCollectorConfig: OTLP in, triage (with a rule whose evaluation
// fails on every span, quoting span data in its error), decisions to the
// webhook, metrics to the Prometheus exporter, forwarded spans to a file,
// the collector's telemetry on a Prometheus endpoint and its log at debug.
func secretsCollectorConfig(otlpPort, promPort, telemetryPort int, webhookURL, secret, spansPath string) string {
	return fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
processors:
  triage:
    decision_wait: %s
    rules:
      - name: quotes_span_data
        failure_type: external_fault
        conditions: ['Int(span.name) > 0']
    recovery:
      timeout: 5s
      session_attributes: [%s]
connectors:
  triage:
    metrics_flush_interval: 1s
exporters:
  debug:
    verbosity: basic
  prometheus:
    endpoint: 127.0.0.1:%d
  recovery_webhook:
    endpoint: %s
    secret: %s
    retry_on_failure:
      initial_interval: 100ms
      max_interval: 500ms
  file:
    path: %s
    flush_interval: 100ms
service:
  telemetry:
    logs:
      level: debug
    metrics:
      level: detailed
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: %d
  pipelines:
    traces:
      receivers: [otlp]
      processors: [triage]
      exporters: [triage, file]
    metrics:
      receivers: [triage]
      exporters: [prometheus]
    logs:
      receivers: [triage]
      exporters: [recovery_webhook]
    logs/genai:
      receivers: [otlp]
      processors: [triage]
      exporters: [debug]
`, otlpPort, decisionWait, sessionAttr, promPort, webhookURL, secret, spansPath, telemetryPort)
}
