package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/internal/evalset"
)

// corpusRequest is one single-line OTLP/JSON request holding one failed run.
func corpusRequest(t *testing.T, session, msg string) []byte {
	t.Helper()
	td := evalset.CorpusTrace(evalset.CorpusEntry{ExceptionType: "TimeoutError", Error: msg, Label: "timeout"}, session)
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A file exporter output with one damaged request: the others are still
// classified, the damaged one is reported by request and line, and the exit
// status says something was wrong.
func TestClassifyMultiRequestFileWithABadLine(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	b.Write(corpusRequest(t, "s1", "request timed out"))
	b.WriteString("\n")
	b.WriteString(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8aa5a2d2c872e8321cf37308d69df2","spanId":"05` + "\n") // cut off
	b.Write(corpusRequest(t, "s2", "deadline exceeded"))
	b.WriteString("\n")
	b.WriteString(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"0102030405060708"}]}]}]}` + "\n") // bad trace ID
	b.Write(corpusRequest(t, "s3", "operation timed out"))
	b.WriteString("\n")
	f := filepath.Join(dir, "exported.json")
	if err := os.WriteFile(f, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("classify", f)
	if code != exitFailed {
		t.Errorf("exit %d, want %d", code, exitFailed)
	}
	if n := len(nonEmptyLines(stdout)); n != 3 {
		t.Errorf("%d runs classified, want the 3 good requests:\n%s\n%s", n, stdout, stderr)
	}
	for _, want := range []string{f + ": request 2 (line 2", f + ": request 4 (line 4)", "trace ID or span ID"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	assertNoLibraryInternals(t, stderr)
}

// Errors say what is wrong in words, without the JSON libraries' function
// names and buffer dumps.
func TestClassifyErrorsWithoutLibraryInternals(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"bad_id.json":    `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"0102030405060708","name":"x"}]}]}]}`,
		"bad_shape.json": `{"resourceSpans":{"x":1}}`,
		"cut.json":       `{"resourceSpans":[`,
		"not_json.json":  "hello",
		"bad_number.json": `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8aa5a2d2c872e8321cf37308d69df2",` +
			`"spanId":"0102030405060708","startTimeUnixNano":"soon"}]}]}]}`,
	} {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI("classify", f)
		if code != exitFailed || !strings.Contains(stderr, f) || !strings.Contains(stderr, "not an OTLP/JSON trace export") {
			t.Errorf("%s: exit %d, stderr %q", name, code, stderr)
		}
		assertNoLibraryInternals(t, stderr)
	}
}

func assertNoLibraryInternals(t *testing.T, stderr string) {
	t.Helper()
	for _, internal := range []string{"ReadObject", "ReadArray", "UnmarshalJSONIter", "error found in #", "bigger context"} {
		if strings.Contains(stderr, internal) {
			t.Errorf("stderr shows JSON-library internals (%s):\n%s", internal, stderr)
		}
	}
}

func TestClassifyReadsStdin(t *testing.T) {
	var out, errb bytes.Buffer
	code := runWithStdin([]string{"classify", "-"}, bytes.NewReader(corpusRequest(t, "s1", "request timed out")), &out, &errb)
	if code != exitOK || len(nonEmptyLines(out.String())) != 1 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	// Errors name it.
	out.Reset()
	errb.Reset()
	code = runWithStdin([]string{"classify", "-"}, strings.NewReader("{"), &out, &errb)
	if code != exitFailed || !strings.Contains(errb.String(), "stdin: request 1") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

func TestClassifyFileWithoutSpansExitsNonZero(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte(`{"resourceSpans":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("classify", empty)
	if code != exitFailed || stdout != "" || !strings.Contains(stderr, empty+" holds no spans") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// --skip-empty: reported, not a failure; the other files still count.
	good := writeCorpusTrace(t, dir)
	code, stdout, stderr = runCLI("classify", "--skip-empty", empty, good)
	if code != exitOK || len(nonEmptyLines(stdout)) != 1 || !strings.Contains(stderr, "holds no spans") {
		t.Fatalf("--skip-empty: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
