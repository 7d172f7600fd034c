//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/trajectory"
)

// The dashboard end-to-end test: the ocb-built collector (triage processor →
// triage connector → prometheus exporter, decisions → recovery_webhook), a
// real Prometheus (the Debian binary) scraping its exporter and its own
// telemetry on loopback, the shared fixtures replayed twice, then every
// query of dashboards/grafana/agent-failures.json evaluated through
// Prometheus' HTTP API. A query that returns nothing (or only NaN) fails the
// test with its panel's title.

const (
	promReadyTimeout = 30 * time.Second
	// Bounds the wait for the metrics to reach Prometheus after a replay:
	// decision (root or decision_wait) + connector flush + scrape.
	promDataTimeout = 2 * time.Minute
	scrapeInterval  = time.Second

	// What the template variables and Grafana's interval variables become.
	// rateInterval spans both replays (seconds apart) and stays longer than
	// the whole test, so a rate is non-zero whenever a query is evaluated.
	rateInterval = "10m"
	wholeRange   = "1h"
)

func TestDashboardQueriesReturnData(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("TRIAGE_REQUIRE_PROMETHEUS") == "1" {
			t.Fatal("prometheus not on PATH and TRIAGE_REQUIRE_PROMETHEUS=1 (apt-get install prometheus)")
		}
		t.Skip("prometheus not on PATH (apt-get install prometheus); set TRIAGE_REQUIRE_PROMETHEUS=1 to fail instead")
	}
	repo := repoRoot(t)
	shared := sharedDir(t, repo)
	fixtures := fixtureFiles(t, shared)
	panels := readDashboardTargets(t, filepath.Join(repo, "dashboards", "grafana", "agent-failures.json"))
	work := t.TempDir()

	otelcol := collectorBinary(t, repo)
	triage := buildTriageCLI(t, repo, work)

	webhook := newFlakyWebhook()
	srv := httptest.NewServer(webhook)
	t.Cleanup(srv.Close)

	ports := freePorts(t, 4)
	otlpPort, promExpPort, telemetryPort, promPort := ports[0], ports[1], ports[2], ports[3]

	cfgPath := filepath.Join(work, "otelcol.yaml")
	writeFile(t, cfgPath, dashboardCollectorConfig(otlpPort, promExpPort, telemetryPort, srv.URL+"/decisions"))
	col := startCollector(t, otelcol, cfgPath, filepath.Join(work, "otelcol.log"))
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", otlpPort)
	waitHTTPReady(t, col, endpoint)

	prom := startPrometheus(t, promBin, work, promPort, promExpPort, telemetryPort)
	api := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	waitPrometheusReady(t, prom, api)

	// Pass 1, then wait until Prometheus has scraped the connector's
	// counters a few times, so pass 2 makes them increase: rate() and
	// histogram_quantile() need two different samples.
	run(t, 2*time.Minute, triage, append([]string{"replay", "--endpoint", endpoint}, fixtures...)...)
	// Settled: the same count for a few scrapes (runs without a root are
	// only decided after decision_wait).
	var first float64
	var since time.Time
	waitForValue(t, col, api, "sum(triage_runs_total)", func(v float64) bool {
		if v != first {
			first, since = v, time.Now()
		}
		return v > 0 && time.Since(since) >= decisionWait+4*scrapeInterval
	})
	t.Logf("pass 1: %v runs counted in Prometheus", first)

	// Pass 2: the same captures under fresh trace IDs (the processor and the
	// connector would otherwise treat them as already decided).
	// Each copy is sent as a running agent's SDK exports it: the spans that
	// ended first, then the root in a request of its own, so loops get an
	// in-flight decision (the in-flight panel) before their final one.
	copies := freshTraceCopies(t, fixtures, filepath.Join(work, "pass2"), nil)
	var requests []string
	for _, f := range copies {
		body, root := splitRoot(t, f, filepath.Join(work, "pass2-split"))
		if logs, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".logs.json"); err == nil {
			writeFile(t, strings.TrimSuffix(body, ".json")+".logs.json", string(logs)) // sent with the body
		}
		requests = append(requests, body)
		if root != "" {
			requests = append(requests, root)
		}
	}
	run(t, 2*time.Minute, triage, append([]string{"replay", "--endpoint", endpoint}, requests...)...)
	second := waitForValue(t, col, api, "sum(triage_runs_total)", func(v float64) bool { return v >= 2*first })
	t.Logf("pass 2: %v runs counted in Prometheus", second)
	if second != 2*first {
		t.Errorf("the same captures replayed twice counted %v runs, then %v in total (want %v)", first, second, 2*first)
	}

	// Pass 3: the captures recorded with content capture off, as most
	// instrumentations are by default (testdata/frameworks-content-off), for
	// the blind-classification panel.
	blind := freshTraceCopies(t, captureFiles(t, filepath.Join(repo, "testdata", "frameworks-content-off")), filepath.Join(work, "pass3"), nil)
	run(t, 2*time.Minute, triage, append([]string{"replay", "--endpoint", endpoint}, blind...)...)
	withoutContent := waitForValue(t, col, api, "sum(otelcol_processor_triage_runs_without_content)", func(v float64) bool { return v > 0 })
	t.Logf("pass 3: %d captures with content off, %v runs classified without content", len(blind), withoutContent)

	// The template variables' own queries must list values.
	vars := readDashboardVariables(t, filepath.Join(repo, "dashboards", "grafana", "agent-failures.json"))
	all := map[string]string{"service": ".*", "agent": ".*", "failure_type": ".*"}
	for _, v := range vars {
		vals := labelValues(t, api, v.query, all)
		if len(vals) == 0 {
			t.Errorf("template variable $%s: %q lists no value", v.name, v.query)
		}
		t.Logf("$%s: %d values (%s)", v.name, len(vals), strings.Join(head(vals, 5), ", "))
	}

	// Every panel with "All" selected, retried until the webhook and
	// pipeline telemetry have caught up (bounded).
	if failed := evalPanelsUntilData(t, col, api, panels, all, promDataTimeout); len(failed) > 0 {
		for _, f := range failed {
			t.Errorf("panel %q (all values): %s", f.title, f.why)
		}
	}

	// And with one real service, agent and failure type selected: the one
	// that has failures, incidents and decisions.
	concrete := concreteSelection(t, api)
	if concrete != nil {
		t.Logf("concrete selection: %v", concrete)
		esc := map[string]string{}
		for k, v := range concrete {
			esc[k] = strings.ReplaceAll(regexp.QuoteMeta(v), `\`, `\\`)
		}
		for _, f := range evalPanelsUntilData(t, col, api, panels, esc, 10*time.Second) {
			t.Errorf("panel %q (service=%q agent=%q failure_type=%q): %s", f.title, concrete["service"], concrete["agent"], concrete["failure_type"], f.why)
		}
	}
	t.Logf("webhook: %s", webhook.summary())

	// A query such as "(x or vector(0)) / y" returns data without x: every
	// series a panel reads must exist on its own.
	checkPanelMetricsExist(t, api, panels)

	// The alert rules cannot be asked to fire here, but every series they
	// read must exist under the name they use, or an alert would silently
	// never fire.
	checkAlertMetricsExist(t, api, filepath.Join(repo, "dashboards", "prometheus", "alerts.yaml"))

	prom.stop(t)
	col.stop(t)
}

// ---- the dashboard ----

type panelTarget struct {
	title, refID, expr string
}

// readDashboardTargets returns every query of every panel (rows' nested
// panels included) of a Grafana dashboard JSON file.
func readDashboardTargets(t *testing.T, path string) []panelTarget {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string `json:"title"`
		Type    string `json:"type"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []panelTarget
	var walk func([]json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("%s: panel: %v", path, err)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %q target %s has no expr", p.Title, tg.RefID)
					continue
				}
				out = append(out, panelTarget{title: p.Title, refID: tg.RefID, expr: tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	if len(out) == 0 {
		t.Fatalf("%s: no panel queries", path)
	}
	return out
}

type dashboardVariable struct{ name, query string }

func readDashboardVariables(t *testing.T, path string) []dashboardVariable {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []dashboardVariable
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, ok := v.Query.(string)
		if !ok {
			t.Errorf("variable %s: query is not a string: %v", v.Name, v.Query)
			continue
		}
		out = append(out, dashboardVariable{name: v.Name, query: q})
	}
	return out
}

var templateVar = regexp.MustCompile(`\$\{(\w+)\}|\$(\w+)`)

// substitute replaces Grafana's variables in a query: the dashboard's own
// by vals, $__rate_interval/$__interval and $__range by the test's windows.
// An unknown variable is reported, never left for PromQL to choke on.
func substitute(expr string, vals map[string]string) (string, error) {
	var unknown []string
	out := templateVar.ReplaceAllStringFunc(expr, func(m string) string {
		name := strings.Trim(m, "${}")
		switch name {
		case "__rate_interval", "__interval":
			return rateInterval
		case "__range":
			return wholeRange
		}
		if v, ok := vals[name]; ok {
			return v
		}
		unknown = append(unknown, name)
		return m
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("unknown template variables %v", unknown)
	}
	return out, nil
}

type panelFailure struct{ title, why string }

// evalPanelsUntilData evaluates every target until each has returned data
// once (rates are only non-zero for a while after a replay, so a target is
// not asked to stay satisfied), or the timeout passes, and returns the last
// failure of each target that never did.
func evalPanelsUntilData(t *testing.T, col *collector, api string, targets []panelTarget, vals map[string]string, timeout time.Duration) []panelFailure {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pending := map[int]string{}
	for i := range targets {
		pending[i] = "not evaluated"
	}
	for {
		for i := range pending {
			tg := targets[i]
			q, err := substitute(tg.expr, vals)
			if err != nil {
				pending[i] = fmt.Sprintf("query %s: %v", tg.refID, err)
				continue
			}
			n, nonNaN, err := promQuery(api, q)
			switch {
			case err != nil:
				pending[i] = fmt.Sprintf("query %s %q: %v", tg.refID, q, err)
			case n == 0:
				pending[i] = fmt.Sprintf("query %s returned no data: %s", tg.refID, q)
			case nonNaN == 0:
				pending[i] = fmt.Sprintf("query %s returned only NaN (%d series): %s", tg.refID, n, q)
			default:
				delete(pending, i)
			}
		}
		if len(pending) == 0 {
			t.Logf("all %d panel queries returned data", len(targets))
			return nil
		}
		if col.exited() {
			t.Fatalf("collector exited:\n%s", col.logTail())
		}
		if time.Now().After(deadline) {
			var failed []panelFailure
			for i, why := range pending {
				failed = append(failed, panelFailure{targets[i].title, why})
			}
			sort.Slice(failed, func(a, b int) bool { return failed[a].title+failed[a].why < failed[b].title+failed[b].why })
			return failed
		}
		time.Sleep(time.Second)
	}
}

// concreteSelection picks the service, agent and failure type with the most
// failed runs at a tool (so the tools table has rows too) among failure
// types that also have incidents and decisions: a selection for which every
// panel should show something.
func concreteSelection(t *testing.T, api string) map[string]string {
	t.Helper()
	q := `topk(1, sum by (service, agent, failure_type) (triage_failures_total{tool!=""})
	        and on(failure_type) count by (failure_type) (triage_incidents_total)
	        and on(failure_type) count by (failure_type) (triage_decisions_total))`
	res, err := promVector(api, q)
	if err != nil {
		t.Errorf("choosing a concrete selection: %v", err)
		return nil
	}
	if len(res) == 0 {
		t.Errorf("no failure type has failed runs at a tool, incidents and decisions: cannot check the dashboard with a concrete selection")
		return nil
	}
	m := res[0].Metric
	return map[string]string{"service": m["service"], "agent": m["agent"], "failure_type": m["failure_type"]}
}

// onlyOnIncident are series the alerts read that exist only once the bad
// thing happened at least once: the test's pipeline never makes it happen.
var onlyOnIncident = map[string]string{
	"otelcol_processor_triage_traces_evicted":       "counted only when the processor's buffer overflows",
	"otelcol_connector_triage_cardinality_overflow": "counted only when a metric reaches max_cardinality",
}

// metricName finds the collector's series names in a PromQL expression or
// rule file.
var metricName = regexp.MustCompile(`\b(?:triage|otelcol)_[a-z0-9_]+\b`)

func checkAlertMetricsExist(t *testing.T, api, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, n := range metricName.FindAllString(line, -1) {
			names[n] = true
		}
	}
	for n := range onlyOnIncident {
		if !names[n] {
			t.Errorf("onlyOnIncident lists %s, which %s does not use", n, path)
		}
	}
	checked := 0
	for n := range names {
		if _, skip := onlyOnIncident[n]; skip {
			continue
		}
		exists, err := seriesExists(api, n)
		switch {
		case err != nil:
			t.Errorf("alert series %s: %v", n, err)
		case !exists:
			t.Errorf("%s reads %s, which the collector does not expose", filepath.Base(path), n)
		}
		checked++
	}
	if checked == 0 {
		t.Errorf("no metric name found in %s", path)
	}
	t.Logf("%d series used by the alert rules exist in Prometheus (%d exist only after an incident)", checked, len(onlyOnIncident))
}

// checkPanelMetricsExist fails for each metric name a panel query reads that
// Prometheus holds no series of.
func checkPanelMetricsExist(t *testing.T, api string, panels []panelTarget) {
	t.Helper()
	readBy := map[string]string{} // metric name -> a panel reading it
	for _, p := range panels {
		for _, n := range metricName.FindAllString(p.expr, -1) {
			readBy[n] = p.title
		}
	}
	for n, title := range readBy {
		exists, err := seriesExists(api, n)
		switch {
		case err != nil:
			t.Errorf("panel %q: series %s: %v", title, n, err)
		case !exists:
			t.Errorf("panel %q reads %s, which the collector does not expose after the replays", title, n)
		}
	}
	t.Logf("%d series read by the panels exist in Prometheus", len(readBy))
}

// ---- Prometheus HTTP API ----

// seriesExists reports whether Prometheus holds a series named name.
func seriesExists(api, name string) (bool, error) {
	res, err := promVector(api, fmt.Sprintf(`count({__name__=%q})`, name))
	return len(res) > 0, err
}

type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

var promClient = &http.Client{Timeout: 10 * time.Second}

func promVector(api, query string) ([]promSample, error) {
	resp, err := promClient.Get(api + "/api/v1/query?" + url.Values{"query": {query}}.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, tail(string(body), 500))
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("Prometheus: %s", r.Error)
	}
	switch r.Data.ResultType {
	case "vector":
		var out []promSample
		if err := json.Unmarshal(r.Data.Result, &out); err != nil {
			return nil, err
		}
		return out, nil
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(r.Data.Result, &v); err != nil {
			return nil, err
		}
		return []promSample{{Value: v}}, nil
	default:
		return nil, fmt.Errorf("unexpected result type %q", r.Data.ResultType)
	}
}

// promQuery returns how many series a query returned and how many of them
// hold a number (not NaN).
func promQuery(api, query string) (n, nonNaN int, err error) {
	res, err := promVector(api, query)
	if err != nil {
		return 0, 0, err
	}
	for _, s := range res {
		if v := sampleValue(s); !math.IsNaN(v) {
			nonNaN++
		}
	}
	return len(res), nonNaN, nil
}

func sampleValue(s promSample) float64 {
	str, _ := s.Value[1].(string)
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// waitForValue polls a single-series query until cond holds on its value.
func waitForValue(t *testing.T, col *collector, api, query string, cond func(float64) bool) float64 {
	t.Helper()
	deadline := time.Now().Add(promDataTimeout)
	last := "no data"
	for {
		res, err := promVector(api, query)
		if err == nil && len(res) == 1 {
			v := sampleValue(res[0])
			if cond(v) {
				return v
			}
			last = fmt.Sprint(v)
		} else if err != nil {
			last = err.Error()
		}
		if col.exited() {
			t.Fatalf("collector exited:\n%s", col.logTail())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: condition not met after %s (last: %s); collector log:\n%s", query, promDataTimeout, last, col.logTail())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

var labelValuesQuery = regexp.MustCompile(`^\s*label_values\((.+),\s*(\w+)\s*\)\s*$`)

// labelValues runs a Grafana label_values(selector, label) variable query
// through /api/v1/label/<label>/values.
func labelValues(t *testing.T, api, query string, vals map[string]string) []string {
	t.Helper()
	m := labelValuesQuery.FindStringSubmatch(query)
	if m == nil {
		t.Errorf("variable query %q is not label_values(selector, label)", query)
		return nil
	}
	sel, err := substitute(m[1], vals)
	if err != nil {
		t.Errorf("variable query %q: %v", query, err)
		return nil
	}
	resp, err := promClient.Get(api + "/api/v1/label/" + m[2] + "/values?" + url.Values{"match[]": {sel}}.Encode())
	if err != nil {
		t.Errorf("variable query %q: %v", query, err)
		return nil
	}
	defer resp.Body.Close()
	var r struct {
		Status string   `json:"status"`
		Error  string   `json:"error"`
		Data   []string `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		t.Errorf("variable query %q: %v %s", query, err, r.Error)
		return nil
	}
	sort.Strings(r.Data)
	return r.Data
}

// ---- Prometheus process ----

type promProcess struct {
	*collector // same process handling: log file, exit watch, kill on cleanup
}

func startPrometheus(t *testing.T, bin, work string, port, exporterPort, telemetryPort int) *promProcess {
	t.Helper()
	cfg := filepath.Join(work, "prometheus.yml")
	writeFile(t, cfg, fmt.Sprintf(`global:
  scrape_interval: %s
  scrape_timeout: %s
scrape_configs:
  - job_name: triage-connector
    static_configs:
      - targets: ["127.0.0.1:%d"]
  - job_name: otelcol
    static_configs:
      - targets: ["127.0.0.1:%d"]
`, scrapeInterval, scrapeInterval, exporterPort, telemetryPort))
	logPath := filepath.Join(work, "prometheus.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin,
		"--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(work, "prometheus-data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		// Samples up to now are queryable at once.
		"--query.lookback-delta=1m",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	p := &promProcess{&collector{cmd: cmd, logPath: logPath, done: make(chan struct{})}}
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func waitPrometheusReady(t *testing.T, p *promProcess, api string) {
	t.Helper()
	deadline := time.Now().Add(promReadyTimeout)
	for {
		resp, err := promClient.Get(api + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if p.exited() {
			t.Fatalf("prometheus exited during start-up (%v):\n%s", p.waitErr, p.logTail())
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after %s:\n%s", promReadyTimeout, p.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (p *promProcess) stop(t *testing.T) {
	t.Helper()
	if p.exited() {
		t.Errorf("prometheus exited before it was stopped (%v):\n%s", p.waitErr, p.logTail())
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(shutdownTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// ---- the collector ----

// dashboardCollectorConfig: OTLP in, triage processor, triage connector to
// the prometheus exporter (metrics) and to recovery_webhook (decisions),
// the collector's own telemetry (default level, as users have it) on a
// Prometheus endpoint.
func dashboardCollectorConfig(otlpPort, promExpPort, telemetryPort int, webhookURL string) string {
	return fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
processors:
  triage:
    decision_wait: %s
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
    secret: dashboard-e2e-secret
    retry_on_failure:
      initial_interval: 200ms
      max_interval: 1s
%s  pipelines:
    traces:
      receivers: [otlp]
      processors: [triage]
      exporters: [triage]
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
`, otlpPort, decisionWait, promExpPort, webhookURL, telemetryReader(telemetryPort))
}

// ---- inputs ----

// freshTraceCopies writes a copy of each capture with every trace ID
// replaced by a new random one (consistently within the file); edit, when
// set, may change each span further (file: the capture's index).
func freshTraceCopies(t *testing.T, fixtures []string, dir string, edit func(file int, s ptrace.Span)) []string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, f := range fixtures {
		td := readTraces(t, f)
		ids := map[pcommon.TraceID]pcommon.TraceID{}
		trajectory.ForEachSpan(td, func(s ptrace.Span) {
			id, ok := ids[s.TraceID()]
			if !ok {
				if _, err := rand.Read(id[:]); err != nil {
					t.Fatal(err)
				}
				ids[s.TraceID()] = id
			}
			s.SetTraceID(id)
			if edit != nil {
				edit(i, s)
			}
		})
		enc, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("%03d-%s-%s", i, filepath.Base(filepath.Dir(f)), filepath.Base(f)))
		writeFile(t, p, string(enc))
		copyLogEvents(t, f, p, ids)
		out = append(out, p)
	}
	return out
}

// copyLogEvents writes the GenAI log events beside capture f (NAME.logs.json)
// beside its copy, their trace IDs mapped as the copy's spans were, so a
// replay of the copy sends them with it.
func copyLogEvents(t *testing.T, f, copyPath string, ids map[pcommon.TraceID]pcommon.TraceID) {
	t.Helper()
	ld := logsBeside(t, f)
	if ld == (plog.Logs{}) {
		return
	}
	trajectory.ForEachLogRecord(ld, func(lr plog.LogRecord) {
		if id, ok := ids[lr.TraceID()]; ok {
			lr.SetTraceID(id)
		}
	})
	enc, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, strings.TrimSuffix(copyPath, ".json")+".logs.json", string(enc))
}

// ---- the webhook receiver ----

// flakyWebhook accepts decisions, except that it answers the very first
// request 503 (a transient failure, retried) and rejects the second distinct
// decision with 400 (permanent: dropped), so the delivery-health panels have
// every outcome to show.
type flakyWebhook struct {
	mu       sync.Mutex
	requests int
	ids      map[string]bool
	status   map[int]int
}

func newFlakyWebhook() *flakyWebhook {
	return &flakyWebhook{ids: map[string]bool{}, status: map[int]int{}}
}

func (w *flakyWebhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.mu.Lock()
	w.requests++
	id := r.Header.Get("webhook-id")
	code := http.StatusOK
	switch {
	case w.requests == 1:
		code = http.StatusServiceUnavailable
	case !w.ids[id] && len(w.ids) == 1:
		w.ids[id] = true
		code = http.StatusBadRequest
	default:
		w.ids[id] = true
	}
	w.status[code]++
	w.mu.Unlock()
	rw.WriteHeader(code)
}

func (w *flakyWebhook) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d requests, %d distinct decisions, responses %v", w.requests, len(w.ids), w.status)
}
