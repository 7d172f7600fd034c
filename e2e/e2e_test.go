//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/trajectory"
)

const (
	// decisionWait is the processor's inactivity timeout in the test config:
	// short so the root-less trace is decided quickly, long enough that the
	// "not decided before decision_wait" check means something.
	decisionWait = 2 * time.Second
	// settleWait is the quiet after which a root-less run whose spans show
	// it is over is decided.
	settleWait = 500 * time.Millisecond
	// logsWait bounds how long a trace waits for its log events; the
	// late-logs case sends them decisionWait+1s after its spans.
	logsWait = 8 * time.Second

	// Upper bounds for the waits below; generous because the machine is small
	// and shared. They bound the test, they are not assertions on speed.
	collectorStartTimeout = 60 * time.Second
	outputTimeout         = 60 * time.Second
	shutdownTimeout       = 30 * time.Second
	ocbBuildTimeout       = 25 * time.Minute

	ocbModule = "go.opentelemetry.io/collector/cmd/builder@v0.161.0"
)

// classifyLine is one line of `triage classify` output (one per run).
type classifyLine struct {
	File        string `json:"file"`
	TraceID     string `json:"trace_id"`
	RunSpanID   string `json:"run_span_id"`
	Verdict     string `json:"verdict"`
	FailureType string `json:"failure_type"`
	Signal      string `json:"signal"`
	Rule        string `json:"rule"`
	// EvidenceSpanID is the span showing the failure.
	EvidenceSpanID string `json:"evidence_span_id"`
	Incidents      []struct {
		SpanID      string `json:"span_id"`
		FailureType string `json:"failure_type"`
		Signal      string `json:"signal"`
		Rule        string `json:"rule"`
		Recovered   bool   `json:"recovered"`
	} `json:"incidents"`
}

// The root-span annotations compared with `triage classify`.
var comparedAttrs = []struct{ attr, name string }{
	{"triage.verdict", "verdict"},
	{"triage.failure_type", "failure_type"},
	{"triage.signal", "signal"},
	{"triage.rule", "rule"},
}

func TestCollectorEndToEnd(t *testing.T) {
	repo := repoRoot(t)
	shared := sharedDir(t, repo)
	fixtures := fixtureFiles(t, shared)
	// The forbidden strings of the labelled captures, given alike to the
	// collector and to `triage classify`, so constraint checks are compared
	// too.
	constraints := labelledConstraints(t, shared)
	work := t.TempDir()

	otelcol := collectorBinary(t, repo)
	triage := buildTriageCLI(t, repo, work)

	// A copy of one fixture with its root span(s) removed and a fresh trace
	// ID: the processor never sees the run complete, so only decision_wait
	// can decide it.
	rootless := writeRootlessFixture(t, fixtures, filepath.Join(work, "rootless.json"), false)
	// And one whose remaining spans show the run is over (its outermost
	// span ended in error): decided settle_wait after its last span.
	rootlessEnded := writeRootlessFixture(t, fixtures, filepath.Join(work, "rootless-ended.json"), true)

	// A copy of a capture whose failure is only in its GenAI log events,
	// under a fresh trace ID, whose logs are sent after its spans (the
	// replay of a capture sends its .logs.json first): the processor must
	// hold it, having seen that instrumentation emit events, until they
	// arrive. Its logs file is not named NAME.logs.json, so neither replay
	// nor classify joins it on its own.
	late := writeLateLogsFixture(t, shared, work)

	want := classify(t, triage, constraints, append(append([]string{}, fixtures...), rootless.path, rootlessEnded.path))
	want = append(want, classifyWith(t, triage, constraints, []string{"--logs", late.logsPath}, []string{late.path})...)
	logsJoined := 0
	for _, w := range want {
		if strings.HasSuffix(w.File, "constraint_leak.json") && w.FailureType == "constraint_ignored" && hasLogsBeside(w.File, late) {
			logsJoined++
		}
	}
	if logsJoined < 3 {
		t.Fatalf("triage classify finds constraint_ignored in %d captures whose answer is only in log events (want openai-otel, openai-edot and the late copy): the logs comparison would be vacuous", logsJoined)
	}
	sentLogRecords := late.records
	for _, f := range fixtures {
		if ld := logsBeside(t, f); ld != (plog.Logs{}) {
			sentLogRecords += ld.LogRecordCount()
		}
	}

	ports := freePorts(t, 3)
	grpcPort, httpPort, telemetryPort := ports[0], ports[1], ports[2]
	outPath := filepath.Join(work, "annotated-spans.json")
	logsOutPath := filepath.Join(work, "forwarded-logs.json")
	cfgPath := filepath.Join(work, "otelcol.yaml")
	writeFile(t, cfgPath, testConfig(grpcPort, httpPort, telemetryPort, outPath, logsOutPath, constraints))

	col := startCollector(t, otelcol, cfgPath, filepath.Join(work, "otelcol.log"))
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	waitHTTPReady(t, col, endpoint)

	run(t, 2*time.Minute, triage, append([]string{"replay", "--endpoint", endpoint}, fixtures...)...)

	rootlessSent := time.Now()
	run(t, time.Minute, triage, "replay", "--endpoint", endpoint, rootless.path, rootlessEnded.path)
	// When each root-less trace got its verdict: the one that shows it is
	// over no earlier than settle_wait, the other no earlier than
	// decision_wait.
	var rootlessSeen, endedSeen time.Time
	for wait := time.Now().Add(outputTimeout); rootlessSeen.IsZero() || endedSeen.IsZero(); time.Sleep(50 * time.Millisecond) {
		spans := readAnnotatedSpans(t, outPath)
		now := time.Now()
		if rootlessSeen.IsZero() && traceAnnotated(spans, rootless.traceID) {
			rootlessSeen = now
		}
		if endedSeen.IsZero() && traceAnnotated(spans, rootlessEnded.traceID) {
			endedSeen = now
		}
		if col.exited() || now.After(wait) {
			t.Fatalf("root-less traces not annotated after %s (decision_wait: %v, run ended: %v):\n%s", outputTimeout, !rootlessSeen.IsZero(), !endedSeen.IsZero(), col.logTail())
		}
	}

	// The late-logs copy: spans, a pause longer than decision_wait (which
	// must not decide a trace whose root arrived) and well within
	// logs_wait, then logs.
	run(t, time.Minute, triage, "replay", "--endpoint", endpoint, late.path)
	time.Sleep(decisionWait + time.Second)
	run(t, time.Minute, triage, "replay", "--endpoint", endpoint, late.logsPath)

	// Wait until every run's root span (or, when the root never arrived,
	// the spans standing in for it) carries a verdict, then compare.
	var spans map[string]exportedSpan
	deadline := time.Now().Add(outputTimeout)
	for {
		spans = readAnnotatedSpans(t, outPath)
		var missing []string
		for _, w := range want {
			if !hasVerdict(runSpans(spans, w)) {
				missing = append(missing, spanKey(w.TraceID, w.RunSpanID))
			}
		}
		if len(missing) == 0 {
			break
		}
		if col.exited() {
			t.Fatalf("collector exited while waiting for output:\n%s", col.logTail())
		}
		if time.Now().After(deadline) {
			sort.Strings(missing)
			t.Fatalf("after %s, %d of %d runs have no triage.verdict on their root span (nor on spans standing in for a missing root) in %s; first missing: %v",
				outputTimeout, len(missing), len(want), outPath, head(missing, 10))
		}
		time.Sleep(200 * time.Millisecond)
	}

	mismatches, standIns, evaluations := 0, 0, 0
	for _, w := range want {
		targets := runSpans(spans, w)
		if len(targets) > 0 && targets[0].spanID != w.RunSpanID {
			standIns++
		}
		wantVals := map[string]string{"verdict": w.Verdict, "failure_type": w.FailureType, "signal": w.Signal, "rule": w.Rule}
		// The GenAI conventions' evaluation event says the same: label =
		// the failure type of a failed run, else the verdict.
		wantLabel := w.Verdict
		if w.Verdict == "failed" {
			wantLabel = w.FailureType
		}
		for _, sp := range targets {
			if !slices.Contains(sp.evaluations, wantLabel) {
				mismatches++
				t.Errorf("%s run %s/%s, span %s: gen_ai.evaluation.result labels %q, want one %q",
					filepath.Base(filepath.Dir(w.File))+"/"+filepath.Base(w.File), w.TraceID, w.RunSpanID, sp.spanID, sp.evaluations, wantLabel)
			} else {
				evaluations++
			}
			for _, c := range comparedAttrs {
				got := attrString(sp.attrs, c.attr)
				if got != wantVals[c.name] {
					mismatches++
					t.Errorf("%s run %s/%s, span %s: %s = %q, triage classify says %s = %q",
						filepath.Base(filepath.Dir(w.File))+"/"+filepath.Base(w.File), w.TraceID, w.RunSpanID, sp.spanID, c.attr, got, c.name, wantVals[c.name])
				}
			}
		}
	}
	// Incident spans: triage.failure_type, triage.signal, triage.recovered.
	// Spans that also carry run annotations (a root or its stand-ins) or
	// that are incidents more than once are left out: their attributes
	// combine several answers.
	runAnnotated := map[string]bool{}
	for _, w := range want {
		for _, sp := range runSpans(spans, w) {
			runAnnotated[spanKey(w.TraceID, sp.spanID)] = true
		}
	}
	incidentCount := map[string]int{}
	for _, w := range want {
		for _, in := range w.Incidents {
			incidentCount[spanKey(w.TraceID, in.SpanID)]++
		}
	}
	incidents := 0
	for _, w := range want {
		for _, in := range w.Incidents {
			key := spanKey(w.TraceID, in.SpanID)
			// An incident on the run's own span when that root never
			// arrived has nothing to annotate: the run check covered it.
			if in.SpanID == "" || in.SpanID == w.RunSpanID || runAnnotated[key] || incidentCount[key] > 1 {
				continue
			}
			incidents++
			sp, ok := spans[key]
			if !ok {
				mismatches++
				t.Errorf("%s: incident span %s was not forwarded", key, in.SpanID)
				continue
			}
			if !slices.Contains(sp.evaluations, in.FailureType) {
				mismatches++
				t.Errorf("%s incident span %s: gen_ai.evaluation.result labels %q, want one %q",
					filepath.Base(filepath.Dir(w.File))+"/"+filepath.Base(w.File), key, sp.evaluations, in.FailureType)
			}
			for _, c := range []struct{ attr, want string }{
				{"triage.failure_type", in.FailureType},
				{"triage.signal", in.Signal},
				{"triage.rule", in.Rule},
				{"triage.recovered", fmt.Sprint(in.Recovered)},
			} {
				if got := attrString(sp.attrs, c.attr); got != c.want {
					mismatches++
					t.Errorf("%s incident span %s: %s = %q, triage classify says %q",
						filepath.Base(filepath.Dir(w.File))+"/"+filepath.Base(w.File), key, c.attr, got, c.want)
				}
			}
		}
	}

	t.Logf("compared %d runs from %d fixture files (+2 root-less copies; %d runs without their root span; %d evaluation events) and %d incident spans: %d mismatching attributes",
		len(want), len(fixtures), standIns, evaluations, incidents, mismatches)

	// The root-less trace can only have been decided by the inactivity timer,
	// which starts when its last span was received (after rootlessSent).
	if elapsed := rootlessSeen.Sub(rootlessSent); elapsed < decisionWait {
		t.Errorf("root-less trace %s was annotated %s after it was sent, before decision_wait (%s) elapsed", rootless.traceID, elapsed, decisionWait)
	}
	for _, rl := range []rootlessFixture{rootless, rootlessEnded} {
		for _, id := range rl.spanIDs {
			if _, ok := spans[spanKey(rl.traceID, id)]; !ok {
				t.Errorf("span %s of the root-less trace %s was not forwarded", id, rl.traceID)
			}
		}
	}
	// The run that shows it is over was decided by that (trigger
	// run_ended), settle_wait or more after it was sent, and no later than
	// the one left to decision_wait.
	if elapsed := endedSeen.Sub(rootlessSent); elapsed < settleWait {
		t.Errorf("root-less trace %s, whose run is over, was annotated %s after it was sent, before settle_wait (%s) elapsed", rootlessEnded.traceID, elapsed, settleWait)
	}
	if endedSeen.After(rootlessSeen) {
		t.Errorf("the root-less run that is over was annotated %s after it was sent, later than the one left to decision_wait (%s)", endedSeen.Sub(rootlessSent), rootlessSeen.Sub(rootlessSent))
	}
	telemetry := scrapeAll(t, []*tierInstance{{telemetryURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", telemetryPort)}})
	if n := telemetry.sum("otelcol_processor_triage_traces_decided", `trigger="run_ended"`); n < 1 {
		t.Errorf("no trace decided with trigger run_ended (traces_decided: %v)", telemetry.sum("otelcol_processor_triage_traces_decided"))
	}
	t.Logf("root-less runs: the one that is over annotated %s after it was sent (settle_wait %s), the other %s (decision_wait %s); %v traces decided by run_ended, %v by decision_wait",
		endedSeen.Sub(rootlessSent).Round(10*time.Millisecond), settleWait, rootlessSeen.Sub(rootlessSent).Round(10*time.Millisecond), decisionWait,
		telemetry.sum("otelcol_processor_triage_traces_decided", `trigger="run_ended"`), telemetry.sum("otelcol_processor_triage_traces_decided", `trigger="decision_wait"`))

	// Every log record went on through the logs pipeline, unchanged in
	// number (the processor forwards them, joined or not).
	var forwardedLogs int
	logsDeadline := time.Now().Add(outputTimeout)
	for {
		forwardedLogs = 0
		forEachExportedLogRecord(t, logsOutPath, func(plog.LogRecord) { forwardedLogs++ })
		if forwardedLogs >= sentLogRecords || time.Now().After(logsDeadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if forwardedLogs != sentLogRecords {
		t.Errorf("the logs pipeline forwarded %d log records, %d were sent", forwardedLogs, sentLogRecords)
	}
	t.Logf("log records: %d sent, %d forwarded; %d runs whose answer is only in log events compared", sentLogRecords, forwardedLogs, logsJoined)

	col.stop(t)
}

// TestExampleConfigValidates checks that the collector accepts
// config.example.yaml (what `make run` starts it on), so the example cannot
// drift from the components' configs. It is not started: its fixed ports
// may be in use by a collector the user runs.
func TestExampleConfigValidates(t *testing.T) {
	repo := repoRoot(t)
	otelcol := collectorBinary(t, repo)
	cmd := exec.Command(otelcol, "validate", "--config", filepath.Join(repo, "config.example.yaml"))
	cmd.Dir = t.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s validate --config config.example.yaml: %v\n%s", filepath.Base(otelcol), err, tail(string(out), 4000))
	}
}

// ---- locating things ----

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/triage-otel/triage\n")) {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod of github.com/triage-otel/triage above %s", dir)
		}
	}
}

// sharedDir finds the shared/ folder that sits beside the repository (or one
// of its ancestors), identified by its DESIGN.md.
func sharedDir(t *testing.T, repo string) string {
	t.Helper()
	for d := repo; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "shared", "DESIGN.md")); err == nil {
			return filepath.Join(d, "shared")
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no shared/DESIGN.md beside %s or any of its parents: the fixtures are needed", repo)
		}
	}
}

// fixtureFiles returns every framework capture (not labels.json, not the
// *.logs.json log events).
func fixtureFiles(t *testing.T, shared string) []string {
	t.Helper()
	return captureFiles(t, filepath.Join(shared, "fixtures", "frameworks"))
}

// captureFiles returns the captures (STACK/NAME.json) of a labelled set's
// folder that hold spans.
func captureFiles(t *testing.T, set string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(set, "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out, empty []string
	for _, f := range files {
		if strings.HasSuffix(f, ".logs.json") || filepath.Base(f) == "labels.json" {
			continue
		}
		// A capture whose export held no span (the instrumentation lost
		// them all) has no run to compare: not scorable, as in eval.
		if readTraces(t, f).SpanCount() == 0 {
			empty = append(empty, f)
			continue
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		t.Fatalf("no captures under %s", set)
	}
	if len(empty) > 0 {
		t.Logf("%d captures hold no span and are left out (not scorable): %v", len(empty), head(empty, 5))
	}
	sort.Strings(out)
	return out
}

// labelledConstraints returns the union of the forbidden strings listed in
// the fixtures' labels.json (only the constraints are read, never the
// expected answers).
func labelledConstraints(t *testing.T, shared string) []string {
	t.Helper()
	path := filepath.Join(shared, "fixtures", "frameworks", "labels.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var labels []struct {
		Constraints []string `json:"constraints"`
	}
	if err := json.Unmarshal(b, &labels); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	seen := map[string]bool{}
	var out []string
	for _, l := range labels {
		for _, c := range l.Constraints {
			if strings.TrimSpace(c) != "" && !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	sort.Strings(out)
	return out
}

// ---- building ----

// collectorBinary returns the ocb-built collector, (re)building it with ocb
// when it is missing or older than the sources it compiles (`make e2e`
// does the same through make; this covers a plain `go test -tags e2e`).
// TRIAGE_OTELCOL names a prebuilt binary to use as is.
func collectorBinary(t *testing.T, repo string) string {
	t.Helper()
	if p := os.Getenv("TRIAGE_OTELCOL"); p != "" {
		return p
	}
	bin := filepath.Join(repo, "_build", "collector", "triage-otelcol")
	if fi, err := os.Stat(bin); err == nil {
		stale := newerSource(t, repo, fi.ModTime())
		if stale == "" {
			return bin
		}
		t.Logf("%s is older than %s: rebuilding", bin, stale)
	}
	t.Logf("building the collector with ocb (%s); this takes minutes on a cold cache", ocbModule)
	ctx, cancel := context.WithTimeout(context.Background(), ocbBuildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", ocbModule, "--config", "builder-config.yaml")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ocb build failed: %v\n%s", err, tail(string(out), 4000))
	}
	// go build leaves an up-to-date binary untouched; mark it as checked.
	now := time.Now()
	if err := os.Chtimes(bin, now, now); err != nil {
		t.Fatal(err)
	}
	return bin
}

// newerSource returns a file compiled into the collector that changed after
// t0, or "" when there is none.
func newerSource(t *testing.T, repo string, t0 time.Time) string {
	t.Helper()
	skip := map[string]bool{"_build": true, "bench": true, "e2e": true, "examples": true, "tools": true, ".git": true}
	var newer string
	err := filepath.WalkDir(repo, func(path string, d os.DirEntry, err error) error {
		if err != nil || newer != "" {
			return err
		}
		rel, _ := filepath.Rel(repo, path)
		if d.IsDir() {
			if skip[rel] {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		compiled := strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")
		if !compiled && rel != "builder-config.yaml" && rel != "go.mod" && rel != "go.sum" {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.ModTime().After(t0) {
			newer = rel
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return newer
}

func buildTriageCLI(t *testing.T, repo, dir string) string {
	t.Helper()
	return buildGoProgram(t, repo, dir, "./cmd/triage")
}

// ---- inputs ----

type rootlessFixture struct {
	path    string
	traceID string
	spanIDs []string
}

// writeRootlessFixture copies the first fixture whose single trace has a
// root span with children, drops the root(s) and gives the rest a fresh
// trace ID so it cannot merge with the original replayed beside it.
func writeRootlessFixture(t *testing.T, fixtures []string, path string, ended bool) rootlessFixture {
	t.Helper()
	for _, f := range fixtures {
		td := readTraces(t, f)
		roots, children, traces := 0, 0, map[pcommon.TraceID]bool{}
		trajectory.ForEachSpan(td, func(s ptrace.Span) {
			traces[s.TraceID()] = true
			if s.ParentSpanID().IsEmpty() {
				roots++
			} else {
				children++
			}
		})
		if len(traces) != 1 || roots == 0 || children < 2 {
			continue
		}
		var tid pcommon.TraceID
		if _, err := rand.Read(tid[:]); err != nil {
			t.Fatal(err)
		}
		var ids []string
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				sss.At(j).Spans().RemoveIf(func(s ptrace.Span) bool {
					if s.ParentSpanID().IsEmpty() {
						return true
					}
					s.SetTraceID(tid)
					ids = append(ids, s.SpanID().String())
					return false
				})
			}
		}
		if got := remainderEnded(td); got == "maybe" || (got == "ended") != ended {
			continue
		}
		out, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, string(out))
		t.Logf("root-less trace %s: %s without its root span(s) (%d spans left; the spans show the run is over: %v)", tid.String(), f, len(ids), ended)
		return rootlessFixture{path: path, traceID: tid.String(), spanIDs: ids}
	}
	t.Fatalf("no fixture with a single trace whose root has children and whose other spans show the run over=%v: cannot build the root-less case", ended)
	return rootlessFixture{}
}

// remainderEnded says whether the spans of td, a trace without its root,
// show every run is over the way the processor reads them with certainty
// ("ended": the outermost span, covering the run, is not a step and ended in
// error, processor/triageprocessor/early.go), may show it ("maybe": an
// agent span covers a run, the processor's other case) or not ("no").
func remainderEnded(td ptrace.Traces) string {
	runs := trajectory.Build(td)
	if len(runs) == 0 {
		return "no"
	}
	out := "ended"
	for i := range runs {
		top, ok := trajectory.OutermostSpan(&runs[i], td)
		step := top.Role == trajectory.SpanLLM || top.Role == trajectory.SpanTool
		switch {
		case ok && !step && top.Error:
		case ok && top.Role == trajectory.SpanAgent:
			return "maybe"
		default:
			out = "no"
		}
	}
	return out
}

// readTraces reads an OTLP/JSON traces file.
func readTraces(t *testing.T, path string) ptrace.Traces {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return td
}

// classify runs `triage classify` on each file and returns one line per run,
// tagged with its file for error messages.
func classify(t *testing.T, triage string, constraints, files []string) []classifyLine {
	t.Helper()
	return classifyWith(t, triage, constraints, nil, files)
}

// classifyWith is classify with more flags (e.g. --logs FILE).
func classifyWith(t *testing.T, triage string, constraints, extra, files []string) []classifyLine {
	t.Helper()
	flags := append([]string(nil), extra...)
	for _, c := range constraints {
		flags = append(flags, "--constraint", c)
	}
	var all []classifyLine
	for _, f := range files {
		out := run(t, time.Minute, triage, append(append([]string{"classify"}, flags...), f)...)
		var n int
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			var c classifyLine
			if err := json.Unmarshal(line, &c); err != nil {
				t.Fatalf("triage classify %s: line is not JSON: %v\n%s", f, err, line)
			}
			if c.TraceID == "" || c.RunSpanID == "" || c.Verdict == "" {
				t.Fatalf("triage classify %s: line lacks trace_id, run_span_id or verdict: %s", f, line)
			}
			c.File = f
			all = append(all, c)
			n++
		}
		if n == 0 && readTraces(t, f).SpanCount() > 0 {
			// (A capture without spans — a failing first call that
			// exported nothing — has no run to print.)
			t.Fatalf("triage classify %s printed no run", f)
		}
	}
	return all
}

// testConfig is the collector config of the test: OTLP in on the given
// loopback ports, triage with a short decision_wait, annotated spans out to
// a file (JSON lines of ExportTraceServiceRequest) and the debug log.
func testConfig(grpcPort, httpPort, telemetryPort int, outPath, logsOutPath string, constraints []string) string {
	// JSON strings are valid YAML scalars, whatever the constraint holds.
	global, err := json.Marshal(constraints)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
      http:
        endpoint: 127.0.0.1:%d
processors:
  triage:
    decision_wait: %s
    settle_wait: %s
    logs_wait: %s
    num_traces: 10000
    constraints:
      global: %s
exporters:
  debug:
    verbosity: basic
  file:
    path: %s
    flush_interval: 100ms
  file/logs:
    path: %s
    flush_interval: 100ms
%s  pipelines:
    traces:
      receivers: [otlp]
      processors: [triage]
      exporters: [file, debug]
    logs:
      receivers: [otlp]
      processors: [triage]
      exporters: [file/logs]
`, grpcPort, httpPort, decisionWait, settleWait, logsWait, global, outPath, logsOutPath, telemetryReader(telemetryPort))
}

// ---- the collector process ----

type collector struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error
}

func startCollector(t *testing.T, bin, cfg, logPath string) *collector {
	t.Helper()
	return startCollectorWith(t, bin, []string{cfg}, nil, logPath)
}

// startCollectorWith starts the collector on several config files (merged
// in order, later ones override earlier ones) with extra environment
// variables (KEY=value).
func startCollectorWith(t *testing.T, bin string, cfgs, env []string, logPath string) *collector {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, c := range cfgs {
		args = append(args, "--config", c)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	c := &collector{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	// Never leave a collector behind, whatever way the test ends.
	t.Cleanup(func() {
		if !c.exited() {
			_ = cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

func (c *collector) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *collector) logTail() string {
	b, _ := os.ReadFile(c.logPath)
	return tail(string(b), 6000)
}

// stop sends SIGTERM and asserts a clean exit: status 0 and no panic or
// fatal error in the log.
func (c *collector) stop(t *testing.T) {
	t.Helper()
	c.terminate(t)
	c.awaitExit(t)
}

// terminate sends SIGTERM without waiting for the exit (awaitExit).
func (c *collector) terminate(t *testing.T) {
	t.Helper()
	if c.exited() {
		t.Fatalf("collector exited before it was stopped (%v):\n%s", c.waitErr, c.logTail())
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
}

// awaitExit waits for the exit after terminate and asserts it was clean.
func (c *collector) awaitExit(t *testing.T) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(shutdownTimeout):
		t.Fatalf("collector still running %s after SIGTERM:\n%s", shutdownTimeout, c.logTail())
	}
	if c.waitErr != nil {
		t.Errorf("collector did not exit cleanly after SIGTERM: %v\n%s", c.waitErr, c.logTail())
	}
	log, _ := os.ReadFile(c.logPath)
	for _, bad := range []string{"panic:", "fatal error:", "goroutine 1 ["} {
		if bytes.Contains(log, []byte(bad)) {
			t.Errorf("collector log contains %q:\n%s", bad, c.logTail())
		}
	}
}

func waitHTTPReady(t *testing.T, c *collector, endpoint string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	// An empty JSON export request is valid OTLP and changes nothing.
	waitReady(t, c, "collector OTLP/HTTP endpoint "+endpoint, func() (*http.Response, error) {
		return client.Post(endpoint+"/v1/traces", "application/json", strings.NewReader("{}"))
	})
}

// waitReady polls probe until it answers 200, failing the test when the
// collector exits or collectorStartTimeout passes.
func waitReady(t *testing.T, c *collector, what string, probe func() (*http.Response, error)) {
	t.Helper()
	deadline := time.Now().Add(collectorStartTimeout)
	for {
		resp, err := probe()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if c.exited() {
			t.Fatalf("collector exited during start-up (%v):\n%s", c.waitErr, c.logTail())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %s (last error: %v):\n%s", what, collectorStartTimeout, err, c.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ---- output ----

// exportedSpan is a span as the file exporter wrote it.
type exportedSpan struct {
	spanID, parentID string
	attrs            pcommon.Map
	// evaluations are the score labels of the span's
	// gen_ai.evaluation.result events.
	evaluations []string
}

// readAnnotatedSpans parses the file exporter's output (one
// ExportTraceServiceRequest JSON per line) into spans keyed by trace/span
// ID. A partly written last line is ignored; the next poll reads it.
func readAnnotatedSpans(t *testing.T, path string) map[string]exportedSpan {
	t.Helper()
	spans := map[string]exportedSpan{}
	forEachExportedSpan(t, path, func(key string, sp exportedSpan) { spans[key] = sp })
	return spans
}

// forEachExportedSpan calls fn with every span of the file exporter's output
// at path, in file order, keyed by spanKey (a span exported twice is seen
// twice). A missing file has no spans; a partly written last line is
// ignored (the next poll reads it).
func forEachExportedSpan(t *testing.T, path string, fn func(key string, sp exportedSpan)) {
	t.Helper()
	forEachExportLine(t, path, "traces", func(line []byte) error {
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(line)
		if err != nil {
			return err
		}
		trajectory.ForEachSpan(td, func(s ptrace.Span) {
			sp := exportedSpan{
				spanID:   s.SpanID().String(),
				parentID: s.ParentSpanID().String(),
				attrs:    s.Attributes(),
			}
			for i := 0; i < s.Events().Len(); i++ {
				if ev := s.Events().At(i); ev.Name() == "gen_ai.evaluation.result" {
					sp.evaluations = append(sp.evaluations, attrString(ev.Attributes(), "gen_ai.evaluation.score.label"))
				}
			}
			fn(spanKey(s.TraceID().String(), s.SpanID().String()), sp)
		})
		return nil
	})
}

// forEachExportLine calls decode with each line of a file exporter's
// output (one OTLP/JSON request of the given signal per line). A missing
// file has no lines; a last line that does not decode is still being
// written and is left for the next poll; any other is a test failure.
func forEachExportLine(t *testing.T, path, signal string, decode func(line []byte) error) {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(b, []byte("\n"))
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := decode(line); err != nil {
			if i == len(lines)-1 {
				break // still being written
			}
			t.Fatalf("%s line %d is not an OTLP/JSON %s request: %v", path, i+1, signal, err)
		}
	}
}

// runSpans returns the exported spans that carry a run's verdict: its root
// span, or, when the root never reached the collector (run_span_id is then
// the missing parent), the spans of the run standing in for it, i.e. the
// children of the missing root.
func runSpans(spans map[string]exportedSpan, w classifyLine) []exportedSpan {
	if sp, ok := spans[spanKey(w.TraceID, w.RunSpanID)]; ok {
		return []exportedSpan{sp}
	}
	prefix := strings.ToLower(w.TraceID) + "/"
	var out []exportedSpan
	for k, sp := range spans {
		if strings.HasPrefix(k, prefix) && strings.EqualFold(sp.parentID, w.RunSpanID) {
			out = append(out, sp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].spanID < out[j].spanID })
	return out
}

func hasVerdict(spans []exportedSpan) bool {
	if len(spans) == 0 {
		return false
	}
	for _, sp := range spans {
		if _, ok := sp.attrs.Get("triage.verdict"); !ok {
			return false
		}
	}
	return true
}

func traceAnnotated(spans map[string]exportedSpan, traceID string) bool {
	for k, sp := range spans {
		if strings.HasPrefix(k, traceID+"/") {
			if _, ok := sp.attrs.Get("triage.verdict"); ok {
				return true
			}
		}
	}
	return false
}

func attrString(m pcommon.Map, key string) string {
	v, ok := m.Get(key)
	if !ok {
		return ""
	}
	return v.AsString()
}

// ---- helpers ----

func spanKey(traceID, spanID string) string {
	return strings.ToLower(traceID) + "/" + strings.ToLower(spanID)
}

func run(t *testing.T, timeout time.Duration, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s", filepath.Base(name), strings.Join(head(args, 4), " "), err, tail(stderr.String(), 4000))
	}
	return stdout.Bytes()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func head(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "…")
	}
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// ---- GenAI log events ----

type lateLogsFixture struct {
	path, logsPath string
	records        int
}

// writeLateLogsFixture copies openai-otel/constraint_leak and its log
// events under one fresh trace ID; the events go to a file not named
// NAME.logs.json.
func writeLateLogsFixture(t *testing.T, shared, work string) lateLogsFixture {
	t.Helper()
	src := filepath.Join(shared, "fixtures", "frameworks", "openai-otel", "constraint_leak")
	copies := freshTraceCopies(t, []string{src + ".json"}, filepath.Join(work, "late"), nil)
	records := logsBeside(t, copies[0]).LogRecordCount()
	logsPath := strings.TrimSuffix(copies[0], ".json") + ".logs.json"
	events := strings.TrimSuffix(copies[0], ".json") + ".events.json"
	if err := os.Rename(logsPath, events); err != nil {
		t.Fatal(err)
	}
	return lateLogsFixture{path: copies[0], logsPath: events, records: records}
}

// hasLogsBeside reports whether a capture's GenAI events reach the
// collector with it: a NAME.logs.json beside it, or the late copy's.
func hasLogsBeside(capture string, late lateLogsFixture) bool {
	if capture == late.path {
		return true
	}
	_, err := os.Stat(strings.TrimSuffix(capture, ".json") + ".logs.json")
	return err == nil
}
