package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/internal/evalset"
	"github.com/triage-otel/triage/trajectory"
)

func sharedDir(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := evalset.FindShared(wd)
	if err != nil {
		t.Fatalf("fixtures not found: %v", err)
	}
	return dir
}

func captures(t *testing.T) []evalset.Capture {
	t.Helper()
	caps, err := evalset.LoadLabels(filepath.Join(sharedDir(t), "fixtures", "frameworks", "labels.json"))
	if err != nil {
		t.Fatal(err)
	}
	return caps
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

var outputKeys = []string{"agent", "confidence", "evidence_span_id", "failure_type", "incidents", "rule",
	"run_span_id", "service", "session", "signal", "trace_id", "verdict"}

// The JSON lines of classify say what Build+Classify say for the same file.
func TestClassifyMatchesLibrary(t *testing.T) {
	for _, c := range captures(t) {
		t.Run(c.Name(), func(t *testing.T) {
			args := []string{"classify"}
			for _, s := range c.Constraints {
				args = append(args, "--constraint", s)
			}
			code, stdout, stderr := runCLI(append(args, c.Path)...)
			td, err := evalset.ReadTraces(c.Path)
			if err != nil {
				t.Fatal(err)
			}
			if td.SpanCount() == 0 {
				// A capture whose instrumentation exported nothing: there
				// is nothing to classify, which is not a success.
				if code != exitFailed || !strings.Contains(stderr, "holds no spans") || stdout != "" {
					t.Fatalf("no spans: exit %d, stderr %q, stdout %q; want %d and a notice", code, stderr, stdout, exitFailed)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			cl, err := classifier.New(classifier.Options{Constraints: c.Constraints})
			if err != nil {
				t.Fatal(err)
			}
			var opts []trajectory.Option
			if lf := evalset.LogsFileFor(c.Path); lf != "" {
				ld, err := evalset.ReadLogs(lf)
				if err != nil {
					t.Fatal(err)
				}
				opts = append(opts, trajectory.WithLogs(ld))
			}
			runs := trajectory.Build(td, opts...)
			lines := nonEmptyLines(stdout)
			if td.SpanCount() > 0 && len(runs) == 0 {
				t.Errorf("a capture with %d spans gave no run", td.SpanCount())
			}
			if len(lines) != len(runs) {
				t.Fatalf("%d lines for %d runs:\n%s", len(lines), len(runs), stdout)
			}
			for i, line := range lines {
				var got map[string]any
				if err := json.Unmarshal([]byte(line), &got); err != nil {
					t.Fatalf("line %d is not JSON: %v\n%s", i, err, line)
				}
				checkShape(t, got)
				run := runs[i]
				v := cl.Classify(&run)
				want := map[string]any{
					"trace_id":         run.TraceID.String(),
					"run_span_id":      run.RootSpanID.String(),
					"service":          run.Service,
					"agent":            run.Agent,
					"session":          run.Session,
					"verdict":          string(v.Outcome),
					"signal":           string(v.Signal),
					"rule":             v.Rule,
					"confidence":       v.Confidence,
					"evidence_span_id": v.EvidenceSpanID.String(),
					"failure_type":     "",
				}
				if v.Outcome == classifier.OutcomeFailed {
					want["failure_type"] = string(v.FailureType)
				}
				for k, w := range want {
					if !reflect.DeepEqual(got[k], w) {
						t.Errorf("run %d %s = %#v, library says %#v", i, k, got[k], w)
					}
				}
				incs, _ := got["incidents"].([]any)
				if len(incs) != len(v.Incidents) {
					t.Fatalf("run %d: %d incidents, library says %d", i, len(incs), len(v.Incidents))
				}
				for j, in := range v.Incidents {
					m := incs[j].(map[string]any)
					if m["span_id"] != in.SpanID.String() || m["failure_type"] != string(in.FailureType) ||
						m["signal"] != string(in.Signal) || m["recovered"] != in.Recovered {
						t.Errorf("run %d incident %d = %v, library says %+v", i, j, m, in)
					}
				}
			}
		})
	}
}

func checkShape(t *testing.T, got map[string]any) {
	t.Helper()
	var keys []string
	for k := range got {
		if k != "reason" { // present only when the verdict has one
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, outputKeys) {
		t.Errorf("keys = %v, want %v", keys, outputKeys)
	}
	switch got["verdict"] {
	case "ok", "recovered":
		if got["failure_type"] != "" {
			t.Errorf("failure_type %v on a %v run", got["failure_type"], got["verdict"])
		}
	case "failed":
		if _, ok := classifier.ParseFailureType(got["failure_type"].(string)); !ok {
			t.Errorf("failed run with failure_type %q", got["failure_type"])
		}
	default:
		t.Errorf("verdict = %v", got["verdict"])
	}
	if _, ok := got["incidents"].([]any); !ok {
		t.Errorf("incidents = %#v, want a list", got["incidents"])
	}
	for _, k := range []string{"trace_id", "run_span_id"} {
		if s, _ := got[k].(string); !regexp.MustCompile(`^[0-9a-f]+$`).MatchString(s) {
			t.Errorf("%s = %q, want hex", k, s)
		}
	}
}

func nonEmptyLines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			out = append(out, sc.Text())
		}
	}
	return out
}

// A trace made in the test, so the CLI's plumbing is checked on input the
// test controls: an agent run that failed with an exception.
func writeCorpusTrace(t *testing.T, dir string) string {
	t.Helper()
	td := evalset.CorpusTrace(evalset.CorpusEntry{ExceptionType: "TimeoutError", Error: "request timed out", Label: "timeout"}, "cli-test")
	var m ptrace.JSONMarshaler
	b, err := m.MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "run.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestClassifyBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := writeCorpusTrace(t, dir)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":12`), 0o644)
	notOTLP := filepath.Join(dir, "binary.json")
	os.WriteFile(notOTLP, []byte{0xff, 0xfe, 0x00, 0x01}, 0o644)
	missing := filepath.Join(dir, "missing.json")

	code, stdout, stderr := runCLI("classify", bad, good, missing, notOTLP)
	if code == 0 {
		t.Error("exit 0 with bad files")
	}
	for _, f := range []string{bad, missing, notOTLP} {
		if !strings.Contains(stderr, f) {
			t.Errorf("stderr does not name %s:\n%s", f, stderr)
		}
	}
	if strings.Contains(stderr, good) {
		t.Errorf("the good file was reported:\n%s", stderr)
	}
	// The good file is still classified.
	td, _ := evalset.ReadTraces(good)
	if want := len(trajectory.Build(td)); len(nonEmptyLines(stdout)) != want {
		t.Errorf("%d lines for the good file, want %d", len(nonEmptyLines(stdout)), want)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil, {"nope"}, {"classify"}, {"classify", "--no-such-flag", "x"}, {"eval"}, {"eval", "stray"}, {"replay"},
	} {
		if code, _, stderr := runCLI(args...); code != exitUsage || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want %d and a message", args, code, stderr, exitUsage)
		}
	}
	if code, stdout, _ := runCLI("help"); code != 0 || !strings.Contains(stdout, "triage classify") {
		t.Errorf("help: exit %d\n%s", code, stdout)
	}
}

func TestParseInterleaved(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cs stringList
	fs.Var(&cs, "constraint", "")
	explain := fs.Bool("explain", false, "")
	files, err := parseInterleaved(fs, []string{"a.json", "--constraint", "X", "b.json", "--explain", "--", "--c.json"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(files, []string{"a.json", "b.json", "--c.json"}) || !*explain || !reflect.DeepEqual([]string(cs), []string{"X"}) {
		t.Errorf("files=%v explain=%v constraints=%v", files, *explain, cs)
	}
}

// --explain prints the trajectory and the verdict of every run.
func TestClassifyExplain(t *testing.T) {
	for _, c := range captures(t) {
		if c.Scenario != "bad_args" && c.Scenario != "ok_multi_step" {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			code, stdout, stderr := runCLI("classify", "--explain", c.Path)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			td, _ := evalset.ReadTraces(c.Path)
			runs := trajectory.Build(td)
			if len(runs) == 0 {
				t.Fatal("no run built")
			}
			if n := strings.Count(stdout, "  verdict: "); n != len(runs) {
				t.Errorf("%d verdicts for %d runs:\n%s", n, len(runs), stdout)
			}
			if n := strings.Count(stdout, "  trajectory ("); n != len(runs) {
				t.Errorf("%d trajectories for %d runs", n, len(runs))
			}
			steps := 0
			for _, r := range runs {
				steps += len(r.Steps)
			}
			if n := regexp.MustCompile(`(?m)^    #\d+ `).FindAllStringIndex(stdout, -1); len(n) != steps {
				t.Errorf("%d step lines for %d steps:\n%s", len(n), steps, stdout)
			}
			if json.Valid([]byte(strings.TrimSpace(stdout))) {
				t.Error("--explain printed JSON")
			}
		})
	}
}

var closingLine = regexp.MustCompile(`^(\d+) passed, (\d+) failed$`)

func TestEval(t *testing.T) {
	shared := sharedDir(t)
	labels := filepath.Join(shared, "fixtures", "frameworks", "labels.json")
	corpus := filepath.Join(shared, "corpora", "triage_corpus_a.json")
	code, stdout, stderr := runCLI("eval", "--labels", labels, "--corpus", corpus)
	lines := nonEmptyLines(stdout)
	if len(lines) == 0 {
		t.Fatalf("no output; stderr: %s", stderr)
	}
	m := closingLine.FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		t.Fatalf("last line %q is not \"N passed, N failed\"", lines[len(lines)-1])
	}
	passed, _ := strconv.Atoi(m[1])
	failed, _ := strconv.Atoi(m[2])
	caps, _ := evalset.LoadLabels(labels)
	entries, _ := evalset.LoadCorpus(corpus)
	// Captures without spans (a failing first call that exported nothing)
	// are reported as not scorable and counted in neither figure.
	notScorable := 0
	for _, c := range caps {
		if evalset.ScoreCapture(c).Kind == evalset.KindNotScorable {
			notScorable++
		}
	}
	if passed+failed+notScorable != len(caps)+len(entries) {
		t.Errorf("%d passed + %d failed + %d not scorable != %d items", passed, failed, notScorable, len(caps)+len(entries))
	}
	// The exit status counts the failures other than a typed failure
	// answered unknown (the safe default); --strict counts them all.
	hard := 0
	for _, f := range []func() (evalset.Set, error){
		func() (evalset.Set, error) { return evalset.ScoreCaptures(labels) },
		func() (evalset.Set, error) { return evalset.ScoreCorpus(corpus) },
	} {
		set, err := f()
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range set.Items {
			if !it.Pass && it.Kind != evalset.KindNotScorable && it.Kind != evalset.KindUnknown {
				hard++
			}
		}
	}
	if (hard > 0) != (code != 0) {
		t.Errorf("exit %d with %d failed, %d of them not unknown", code, failed, hard)
	}
	if code, _, _ := runCLI("eval", "--strict", "--labels", labels, "--corpus", corpus); (failed > 0) != (code != 0) {
		t.Errorf("--strict: exit %d with %d failed", code, failed)
	}
	for _, want := range []string{"precision", "recall", "misroutes", "false failures"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if code, _, stderr := runCLI("eval", "--labels", filepath.Join(t.TempDir(), "none.json")); code == 0 || !strings.Contains(stderr, "none.json") {
		t.Errorf("missing labels file: exit %d, stderr %q", code, stderr)
	}
}

// A file with two traces linked to each other, to check --fresh-ids keeps
// the file consistent.
func writeTwoTraces(t *testing.T, dir string) (string, ptrace.Traces) {
	t.Helper()
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	tA := pcommon.TraceID{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	tB := pcommon.TraceID{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}
	outside := pcommon.TraceID{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}
	for i, tid := range []pcommon.TraceID{tA, tA, tB} {
		s := spans.AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(pcommon.SpanID{byte(i + 1), 1, 1, 1, 1, 1, 1, 1})
		s.SetName("invoke_agent")
	}
	// The first span links to a trace that comes later in the file and to
	// one outside it.
	spans.At(0).Links().AppendEmpty().SetTraceID(tB)
	spans.At(0).Links().AppendEmpty().SetTraceID(outside)
	var m ptrace.JSONMarshaler
	b, _ := m.MarshalTraces(td)
	p := filepath.Join(dir, "two.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, td
}

type recorder struct {
	mu     sync.Mutex
	bodies [][]byte
	types  []string
	paths  []string
}

func (r *recorder) handler(status int, reply string) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, b)
		r.types = append(r.types, req.Header.Get("Content-Type"))
		r.paths = append(r.paths, req.URL.Path)
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, reply)
	}
}

func spanTraceIDs(td ptrace.Traces) []pcommon.TraceID {
	var ids []pcommon.TraceID
	trajectory.ForEachSpan(td, func(s ptrace.Span) { ids = append(ids, s.TraceID()) })
	return ids
}

func TestReplay(t *testing.T) {
	dir := t.TempDir()
	file, orig := writeTwoTraces(t, dir)
	rec := &recorder{}
	srv := httptest.NewServer(rec.handler(http.StatusOK, `{}`))
	defer srv.Close()

	code, stdout, stderr := runCLI("replay", "--endpoint", srv.URL+"/", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "3 spans") {
		t.Errorf("stdout = %q", stdout)
	}
	code, _, stderr = runCLI("replay", "--fresh-ids", "--endpoint", srv.URL, file, file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if len(rec.bodies) != 3 {
		t.Fatalf("%d requests, want 3", len(rec.bodies))
	}
	var sent []ptrace.Traces
	for i, b := range rec.bodies {
		if rec.paths[i] != "/v1/traces" || rec.types[i] != "application/json" {
			t.Errorf("request %d: path %s, content type %s", i, rec.paths[i], rec.types[i])
		}
		td, err := evalset.ParseTraces("body", b)
		if err != nil {
			t.Fatalf("request %d is not OTLP/JSON: %v", i, err)
		}
		if td.SpanCount() != orig.SpanCount() {
			t.Fatalf("request %d: %d spans, want %d", i, td.SpanCount(), orig.SpanCount())
		}
		sent = append(sent, td)
	}
	origIDs := spanTraceIDs(orig)
	if !reflect.DeepEqual(spanTraceIDs(sent[0]), origIDs) {
		t.Error("IDs changed without --fresh-ids")
	}
	for _, td := range sent[1:] {
		ids := spanTraceIDs(td)
		// Fresh, and the same mapping for every span of one trace.
		if ids[0] == origIDs[0] || ids[2] == origIDs[2] || ids[0] != ids[1] || ids[0] == ids[2] {
			t.Errorf("fresh IDs %v from %v", ids, origIDs)
		}
		links := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Links()
		if links.At(0).TraceID() != ids[2] {
			t.Error("link into the file does not follow its trace")
		}
		if links.At(1).TraceID() != orig.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Links().At(1).TraceID() {
			t.Error("link out of the file changed")
		}
	}
	if spanTraceIDs(sent[1])[0] == spanTraceIDs(sent[2])[0] {
		t.Error("two fresh replays got the same IDs")
	}
}

// Replaying a real capture sends all of its spans.
func TestReplayFixture(t *testing.T) {
	c := captures(t)[0]
	rec := &recorder{}
	srv := httptest.NewServer(rec.handler(http.StatusOK, `{"partialSuccess":{}}`))
	defer srv.Close()
	if code, _, stderr := runCLI("replay", "--fresh-ids", "--endpoint", srv.URL, c.Path); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	orig, _ := evalset.ReadTraces(c.Path)
	td, err := evalset.ParseTraces("body", rec.bodies[0])
	if err != nil || td.SpanCount() != orig.SpanCount() {
		t.Fatalf("sent %d spans (err %v), file has %d", td.SpanCount(), err, orig.SpanCount())
	}
}

func TestReplayErrors(t *testing.T) {
	dir := t.TempDir()
	file, _ := writeTwoTraces(t, dir)
	rec := &recorder{}

	failing := httptest.NewServer(rec.handler(http.StatusServiceUnavailable, `{"message":"overloaded"}`))
	defer failing.Close()
	code, _, stderr := runCLI("replay", "--endpoint", failing.URL, file)
	if code == 0 || !strings.Contains(stderr, "503") || !strings.Contains(stderr, file) {
		t.Errorf("HTTP 503: exit %d, stderr %q", code, stderr)
	}

	partial := httptest.NewServer(rec.handler(http.StatusOK, `{"partialSuccess":{"rejectedSpans":"2","errorMessage":"too big"}}`))
	defer partial.Close()
	code, _, stderr = runCLI("replay", "--endpoint", partial.URL, file)
	if code == 0 || !strings.Contains(stderr, "rejected 2 spans") {
		t.Errorf("partial success: exit %d, stderr %q", code, stderr)
	}

	before := len(rec.bodies)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`not json`), 0o644)
	code, _, stderr = runCLI("replay", "--endpoint", failing.URL, bad)
	if code == 0 || !strings.Contains(stderr, bad) || len(rec.bodies) != before {
		t.Errorf("bad file: exit %d, stderr %q, sent %d", code, stderr, len(rec.bodies)-before)
	}

	// A file without spans (a logs export beside the captures) is skipped,
	// with a notice, and is not an error.
	empty := filepath.Join(dir, "x.logs.json")
	os.WriteFile(empty, []byte(`{"resourceLogs":[]}`), 0o644)
	before = len(rec.bodies)
	code, _, stderr = runCLI("replay", "--endpoint", failing.URL, empty)
	if code != 0 || !strings.Contains(stderr, "skipped "+empty) || len(rec.bodies) != before {
		t.Errorf("file without spans: exit %d, stderr %q, sent %d", code, stderr, len(rec.bodies)-before)
	}

	// Nobody listening.
	closed := httptest.NewServer(http.NotFoundHandler())
	url := closed.URL
	closed.Close()
	code, _, stderr = runCLI("replay", "--endpoint", url, file)
	if code == 0 || !strings.Contains(stderr, file) {
		t.Errorf("closed endpoint: exit %d, stderr %q", code, stderr)
	}
}
