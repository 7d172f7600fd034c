package evalset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/trajectory"
)

func failedRun(ft classifier.FailureType, end uint64) RunResult {
	return RunResult{
		Run:     trajectory.Run{End: pcommon.Timestamp(end)},
		Verdict: classifier.Verdict{Outcome: classifier.OutcomeFailed, FailureType: ft},
	}
}

func okRun(o classifier.Outcome) RunResult {
	return RunResult{Verdict: classifier.Verdict{Outcome: o}}
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name         string
		label        string
		allowUnknown bool
		runs         []RunResult
		wantKind     Kind
		wantPass     bool
		wantPred     string
	}{
		{"ok run, no failure", "none", false, []RunResult{okRun(classifier.OutcomeOK)}, KindCorrect, true, "none"},
		{"recovered run", "none", false, []RunResult{okRun(classifier.OutcomeRecovered)}, KindCorrect, true, "none"},
		{"false failure", "none", false, []RunResult{failedRun(classifier.Timeout, 1)}, KindFalseFailure, false, "timeout"},
		{"correct", "timeout", false, []RunResult{failedRun(classifier.Timeout, 1)}, KindCorrect, true, "timeout"},
		{"missed", "timeout", false, []RunResult{okRun(classifier.OutcomeOK)}, KindMissed, false, "none"},
		{"no runs built", "timeout", false, nil, KindMissed, false, "none"},
		{"misroute", "timeout", false, []RunResult{failedRun(classifier.ExternalFault, 1)}, KindMisroute, false, "external_fault"},
		{"unknown on capture fails", "timeout", false, []RunResult{failedRun(classifier.Unknown, 1)}, KindUnknown, false, "unknown"},
		{"unknown on corpus passes", "timeout", true, []RunResult{failedRun(classifier.Unknown, 1)}, KindUnknown, true, "unknown"},
		{"misroute of unknown label", "unknown", true, []RunResult{failedRun(classifier.Timeout, 1)}, KindMisroute, false, "timeout"},
		{"ok on corpus fails", "timeout", true, []RunResult{okRun(classifier.OutcomeOK)}, KindMissed, false, "none"},
		{"last failed run is scored", "timeout", false,
			[]RunResult{failedRun(classifier.ExternalFault, 1), okRun(classifier.OutcomeOK), failedRun(classifier.Timeout, 5)},
			KindConflict, false, "timeout"},
		{"agreeing failed runs pass", "timeout", false,
			[]RunResult{failedRun(classifier.Timeout, 9), failedRun(classifier.Timeout, 5)},
			KindCorrect, true, "timeout"},
		{"failed verdict without type", "timeout", false, []RunResult{failedRun("", 1)}, KindMisroute, false, "(no type)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it := Judge(tc.label, tc.allowUnknown, tc.runs)
			if it.Kind != tc.wantKind || it.Pass != tc.wantPass || it.Predicted != tc.wantPred {
				t.Errorf("got kind=%s pass=%v predicted=%s, want kind=%s pass=%v predicted=%s",
					it.Kind, it.Pass, it.Predicted, tc.wantKind, tc.wantPass, tc.wantPred)
			}
		})
	}
}

func TestStatsAndReport(t *testing.T) {
	set := Set{Name: "synthetic", Items: []Item{
		{Label: "timeout", Predicted: "timeout", Kind: KindCorrect, Pass: true},
		{Label: "timeout", Predicted: "external_fault", Kind: KindMisroute},
		{Label: "external_fault", Predicted: "external_fault", Kind: KindCorrect, Pass: true},
		{Label: "none", Predicted: "timeout", Kind: KindFalseFailure},
		{Label: "none", Predicted: "none", Kind: KindCorrect, Pass: true},
		{Label: "timeout", Predicted: "none", Kind: KindNotScorable},
		{Label: "timeout", Kind: KindError},
	}}
	st := set.Stats()
	if st.Passed != 3 || st.Failed != 3 || st.NotScorable != 1 || st.Errors != 1 || st.Misroutes != 1 || st.FalseFailures != 1 || st.OKRuns != 2 {
		t.Fatalf("stats = %+v", st)
	}
	var timeout, external TypeStats
	for _, ts := range st.Types {
		switch ts.Type {
		case "timeout":
			timeout = ts
		case "external_fault":
			external = ts
		}
	}
	// timeout: labelled 2 (scorable), predicted 2 (one true, one on an ok run), correct 1.
	if p, _ := timeout.Precision(); p != 0.5 {
		t.Errorf("timeout precision = %v, want 0.5 (%+v)", p, timeout)
	}
	if r, _ := timeout.Recall(); r != 0.5 {
		t.Errorf("timeout recall = %v, want 0.5 (%+v)", r, timeout)
	}
	if p, _ := external.Precision(); p != 0.5 {
		t.Errorf("external_fault precision = %v, want 0.5 (%+v)", p, external)
	}

	var b strings.Builder
	passed, failed := WriteReport(&b, []Set{set, set}, false)
	if passed != 6 || failed != 6 {
		t.Errorf("totals = %d, %d", passed, failed)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if last := lines[len(lines)-1]; last != "6 passed, 6 failed" {
		t.Errorf("last line = %q", last)
	}
	if !strings.Contains(b.String(), "misroutes 1") || !strings.Contains(b.String(), "false failures 1 of 2") {
		t.Errorf("report lacks counts:\n%s", b.String())
	}
}

func TestCorpusTrace(t *testing.T) {
	code := -32602
	e := CorpusEntry{ExceptionType: "McpError", Error: "MCP error -32602: bad params", Label: "schema_mismatch", HTTPStatus: 400, JSONRPCCode: &code}
	td := CorpusTrace(e, "x#1")
	if td.SpanCount() != 1 {
		t.Fatalf("spans = %d", td.SpanCount())
	}
	span := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	if span.TraceID().IsEmpty() || span.SpanID().IsEmpty() {
		t.Error("empty IDs")
	}
	if span.Status().Code() != ptrace.StatusCodeError {
		t.Error("status not ERROR")
	}
	if v, _ := span.Attributes().Get("gen_ai.operation.name"); v.Str() != "invoke_agent" {
		t.Errorf("operation = %q", v.Str())
	}
	if v, ok := span.Attributes().Get("http.response.status_code"); !ok || v.Int() != 400 {
		t.Error("missing http status")
	}
	if v, ok := span.Attributes().Get("rpc.jsonrpc.error_code"); !ok || v.Int() != -32602 {
		t.Error("missing jsonrpc code")
	}
	if span.Events().Len() != 1 || span.Events().At(0).Name() != "exception" {
		t.Fatal("no exception event")
	}
	ev := span.Events().At(0).Attributes()
	if v, _ := ev.Get("exception.type"); v.Str() != "McpError" {
		t.Error("exception.type")
	}
	if v, _ := ev.Get("exception.message"); v.Str() != e.Error {
		t.Error("exception.message")
	}
	// No metadata, no attributes; other key, other IDs.
	td2 := CorpusTrace(CorpusEntry{Error: "x", Label: "unknown"}, "x#2")
	span2 := td2.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	if _, ok := span2.Attributes().Get("http.response.status_code"); ok {
		t.Error("http status without metadata")
	}
	if span2.TraceID() == span.TraceID() {
		t.Error("IDs not distinct per key")
	}
}

func TestLoadCorpusMetadata(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.json")
	os.WriteFile(p, []byte(`[{"exception_type":"E","error":"m","label":"timeout","status_code":504},
		{"exception_type":"E","error":"m","label":"unknown","rpc.jsonrpc.error_code":-32000}]`), 0o644)
	es, err := LoadCorpus(p)
	if err != nil {
		t.Fatal(err)
	}
	if es[0].HTTPStatus != 504 || es[0].JSONRPCCode != nil {
		t.Errorf("entry 0 = %+v", es[0])
	}
	if es[1].JSONRPCCode == nil || *es[1].JSONRPCCode != -32000 {
		t.Errorf("entry 1 = %+v", es[1])
	}
	os.WriteFile(p, []byte(`{"not":"a list"}`), 0o644)
	if _, err := LoadCorpus(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("bad corpus error = %v", err)
	}
}

func TestLoadLabelsAndScoreCapture(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "fw"), 0o755)
	os.WriteFile(filepath.Join(dir, "fw", "empty.json"), []byte(`{"resourceSpans":[]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "fw", "bad.json"), []byte(`{"resourceSpans":[`), 0o644)
	labels := filepath.Join(dir, "labels.json")
	os.WriteFile(labels, []byte(`[
		{"framework":"fw","scenario":"empty","label":"timeout","capture_file":"fw/empty.json"},
		{"framework":"fw","scenario":"bad","label":"none","capture_file":"fw/bad.json"},
		{"framework":"fw","scenario":"missing","label":"none","capture_file":"fw/missing.json"},
		{"framework":"fw","scenario":"badlabel","label":"oops","capture_file":"fw/empty.json"}]`), 0o644)
	caps, err := LoadLabels(labels)
	if err != nil {
		t.Fatal(err)
	}
	if caps[0].Path != filepath.Join(dir, "fw", "empty.json") {
		t.Errorf("path = %s", caps[0].Path)
	}
	set, err := ScoreCaptures(labels)
	if err != nil {
		t.Fatal(err)
	}
	want := []Kind{KindNotScorable, KindError, KindError, KindError}
	for i, it := range set.Items {
		if it.Kind != want[i] {
			t.Errorf("%s: kind %s, want %s (%s)", it.Name, it.Kind, want[i], it.Detail)
		}
	}
	if !strings.Contains(set.Items[1].Detail, "bad.json") {
		t.Errorf("error does not name the file: %s", set.Items[1].Detail)
	}
	st := set.Stats()
	if st.NotScorable != 1 || st.Failed != 3 || st.Passed != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestFindShared(t *testing.T) {
	root := t.TempDir()
	// CI layout: <dir>/<any name> is the clone, <dir>/shared beside it.
	clone := filepath.Join(root, "checkout-123", "cmd", "triage")
	os.MkdirAll(clone, 0o755)
	if above, err := FindShared(filepath.Dir(root)); err == nil {
		// This machine has a shared/ above its temporary folder: the walk
		// up finds that one, so only the positive case can be checked.
		t.Logf("a shared/ exists above the temporary folder (%s)", above)
	} else if _, err := FindShared(clone); err == nil {
		t.Fatal("found shared/ where there is none")
	}
	os.MkdirAll(filepath.Join(root, "shared"), 0o755)
	os.WriteFile(filepath.Join(root, "shared", "DESIGN.md"), []byte("x"), 0o644)
	got, err := FindShared(clone)
	if err != nil {
		t.Fatal(err)
	}
	if got != filepath.Join(root, "shared") {
		t.Errorf("got %s", got)
	}
}

func TestParseTracesConcatenated(t *testing.T) {
	var m ptrace.JSONMarshaler
	one, _ := m.MarshalTraces(CorpusTrace(CorpusEntry{Error: "a", Label: "unknown"}, "a"))
	two, _ := m.MarshalTraces(CorpusTrace(CorpusEntry{Error: "b", Label: "unknown"}, "b"))
	lines := append(append(append([]byte{}, one...), '\n'), two...)
	td, err := ParseTraces("lines.json", lines)
	if err != nil {
		t.Fatal(err)
	}
	if td.SpanCount() != 2 {
		t.Errorf("merged %d spans, want 2", td.SpanCount())
	}
	for _, bad := range [][]byte{nil, []byte("  \n"), append(append([]byte{}, one...), []byte(`{"resourceSpans":[`)...), []byte(`[1,2]`)} {
		if _, err := ParseTraces("bad.json", bad); err == nil || !strings.Contains(err.Error(), "bad.json") {
			t.Errorf("%.30q: err = %v, want an error naming the file", bad, err)
		}
	}
}
