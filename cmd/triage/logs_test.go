package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/internal/evalset"
	"github.com/triage-otel/triage/trajectory"
)

// copyCapture copies shared/<stack>/<scenario>.json (and, with logs, its
// .logs.json) into dir and returns the copy's path.
func copyCapture(t *testing.T, dir, name string, logs bool) string {
	t.Helper()
	src := filepath.Join(sharedDir(t), "fixtures", "frameworks", name)
	dst := filepath.Join(dir, filepath.Base(name))
	exts := []string{".json"}
	if logs {
		exts = append(exts, ".logs.json")
	}
	for _, ext := range exts {
		b, err := os.ReadFile(src + ext)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+ext, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst + ".json"
}

func classifyVerdict(t *testing.T, args ...string) (verdict, failureType, stderr string) {
	t.Helper()
	code, stdout, stderr := runCLI(append([]string{"classify", "--constraint", "CONFIDENTIAL"}, args...)...)
	if code != 0 {
		t.Fatalf("classify %v: exit %d: %s", args, code, stderr)
	}
	lines := nonEmptyLines(stdout)
	if len(lines) != 1 {
		t.Fatalf("classify %v: %d lines", args, len(lines))
	}
	var got struct {
		Verdict     string `json:"verdict"`
		FailureType string `json:"failure_type"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	return got.Verdict, got.FailureType, stderr
}

// classify joins NAME.logs.json beside NAME.json, and --logs files, to the
// spans: the leaked answer of openai-otel/constraint_leak is only in them.
func TestClassifyJoinsLogs(t *testing.T) {
	alone := copyCapture(t, t.TempDir(), "openai-otel/constraint_leak", false)
	if v, _, _ := classifyVerdict(t, alone); v != "ok" {
		t.Fatalf("spans alone: verdict %s; the test needs a capture whose evidence is only in its logs", v)
	}
	logs := filepath.Join(sharedDir(t), "fixtures", "frameworks", "openai-otel", "constraint_leak.logs.json")
	if v, ft, _ := classifyVerdict(t, "--logs", logs, alone); v != "failed" || ft != "constraint_ignored" {
		t.Errorf("--logs: %s %s, want failed constraint_ignored", v, ft)
	}
	beside := copyCapture(t, t.TempDir(), "openai-otel/constraint_leak", true)
	if v, ft, _ := classifyVerdict(t, beside); v != "failed" || ft != "constraint_ignored" {
		t.Errorf("NAME.logs.json beside: %s %s, want failed constraint_ignored", v, ft)
	}
	// Listing the logs file too (a shell glob) does not classify it alone.
	_, _, stderr := classifyVerdict(t, beside, strings.TrimSuffix(beside, ".json")+".logs.json")
	if !strings.Contains(stderr, "is joined to "+beside) {
		t.Errorf("stderr %q", stderr)
	}
	code, _, stderr := runCLI("classify", "--logs", filepath.Join(t.TempDir(), "none.logs.json"), beside)
	if code == 0 || !strings.Contains(stderr, "none.logs.json") {
		t.Errorf("missing --logs file: exit %d, stderr %q", code, stderr)
	}
	// --explain says how many log records were joined.
	_, stdout, _ := runCLI("classify", "--explain", beside)
	if !strings.Contains(stdout, "log records 8") {
		t.Errorf("--explain header lacks the log record count:\n%s", stdout)
	}
}

// replay sends a capture's log events to /v1/logs before its spans, with
// the same fresh trace IDs, and a logs file on its own to /v1/logs.
func TestReplayLogs(t *testing.T) {
	dir := t.TempDir()
	capture := copyCapture(t, dir, "openai-otel/constraint_leak", true)
	logsFile := strings.TrimSuffix(capture, ".json") + ".logs.json"
	rec := &recorder{}
	srv := httptest.NewServer(rec.handler(http.StatusOK, `{"partialSuccess":{}}`))
	defer srv.Close()

	code, stdout, stderr := runCLI("replay", "--fresh-ids", "--endpoint", srv.URL+"/v1/traces", capture, logsFile)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if len(rec.paths) != 2 || rec.paths[0] != "/v1/logs" || rec.paths[1] != "/v1/traces" {
		t.Fatalf("requests %v, want the logs then the traces", rec.paths)
	}
	if !strings.Contains(stdout, "8 log records") || !strings.Contains(stderr, "is sent with") {
		t.Errorf("stdout %q stderr %q", stdout, stderr)
	}
	ld, err := evalset.ParseLogs("body", rec.bodies[0])
	if err != nil {
		t.Fatal(err)
	}
	td, err := evalset.ParseTraces("body", rec.bodies[1])
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := evalset.ReadTraces(capture)
	origTrace := spanTraceIDs(orig)[0]
	newTrace := spanTraceIDs(td)[0]
	if newTrace == origTrace {
		t.Fatal("--fresh-ids kept the trace ID")
	}
	spans := map[pcommon.SpanID]bool{}
	trajectory.ForEachSpan(td, func(s ptrace.Span) { spans[s.SpanID()] = true })
	trajectory.ForEachLogRecord(ld, func(lr plog.LogRecord) {
		if lr.TraceID() != newTrace || !spans[lr.SpanID()] {
			t.Errorf("log record names %s/%s, not a span sent (trace %s)", lr.TraceID(), lr.SpanID(), newTrace)
		}
	})

	// A logs file alone goes to /v1/logs; a rejected record is an error.
	before := len(rec.paths)
	if code, _, stderr := runCLI("replay", "--endpoint", srv.URL, logsFile); code != 0 || rec.paths[before] != "/v1/logs" {
		t.Errorf("logs alone: exit %d (%s), path %v", code, stderr, rec.paths[before:])
	}
	partial := httptest.NewServer(rec.handler(http.StatusOK, `{"partialSuccess":{"rejectedLogRecords":"3","errorMessage":"full"}}`))
	defer partial.Close()
	if code, _, stderr := runCLI("replay", "--endpoint", partial.URL, logsFile); code == 0 || !strings.Contains(stderr, "rejected 3 log records: full") {
		t.Errorf("partial success: exit %d, stderr %q", code, stderr)
	}
}
