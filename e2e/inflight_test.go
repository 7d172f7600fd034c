//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/trajectory"
)

// The in-flight end-to-end test (issue 10): the ocb-built collector fed the
// shared captures the way a running agent's SDK exports them — everything
// but the root span first, the root (which ends last) afterwards. Loops get
// an in-flight loop_detected decision at the webhook before the root is
// sent; ok and recovered runs get none; once the root is sent, the final
// decision references the in-flight one. A planted non-idempotent tool (MCP
// annotations of an MCP server's tools/list answer) is never retried.

// inFlightWait is decision_wait and settle_wait in this test: long enough
// that no trace is decided while its root is held back. The test sends every
// span but the root at once, so a run whose agent span ended in error looks
// over (settle_wait) although its root is only held back, not lost.
const inFlightWait = 40 * time.Second

func TestInFlightDecisionsBeforeTheRoot(t *testing.T) {
	repo := repoRoot(t)
	shared := sharedDir(t, repo)
	fixtures := fixtureFiles(t, shared)
	constraints := labelledConstraints(t, shared)
	work := t.TempDir()
	otelcol := collectorBinary(t, repo)
	triage := buildTriageCLI(t, repo, work)

	copies := sessionCopies(t, fixtures, filepath.Join(work, "in"), perTraceSession, nil)
	runs := classify(t, triage, constraints, copies)
	byFile := map[string][]classifyLine{}
	for _, r := range runs {
		byFile[r.File] = append(byFile[r.File], r)
	}
	// Captures of one run: the loops the loop rule finds, and the ok and
	// recovered runs.
	loops := map[string]classifyLine{} // by trace ID
	quiet := map[string]classifyLine{}
	var bodies, roots []string
	for _, f := range copies {
		rs := byFile[f]
		if len(rs) != 1 {
			continue
		}
		r := rs[0]
		switch {
		case r.Verdict == "failed" && r.FailureType == "loop_detected" && r.Signal == "loop":
			loops[strings.ToLower(r.TraceID)] = r
		case r.Verdict == "ok" || r.Verdict == "recovered":
			quiet[strings.ToLower(r.TraceID)] = r
		default:
			continue
		}
		body, root := splitRoot(t, f, filepath.Join(work, "split"))
		bodies = append(bodies, body)
		if root != "" {
			roots = append(roots, root)
		}
	}
	if len(loops) < 5 || len(quiet) < 20 {
		t.Fatalf("only %d loop and %d ok/recovered captures: nothing to test", len(loops), len(quiet))
	}
	planted, control, tool := plantedNonIdempotent(t, triage, constraints, fixtures, filepath.Join(work, "planted"))

	hook := newWebhookReceiver(t)
	ports := freePorts(t, 2)
	cfg := decisionsConfig{otlpPort: ports[0], promPort: ports[1], webhookURL: hook.url(), secret: hook.secret,
		constraints: constraints, wait: inFlightWait, settle: inFlightWait}
	cfgPath := filepath.Join(work, "otelcol.yaml")
	writeFile(t, cfgPath, cfg.yaml())
	col := startCollector(t, otelcol, cfgPath, filepath.Join(work, "otelcol.log"))
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	waitHTTPReady(t, col, endpoint)

	// 1. Everything but the roots.
	sentBodies := time.Now()
	run(t, 2*time.Minute, triage, append([]string{"replay", "--endpoint", endpoint}, bodies...)...)
	inFlightOf := func() map[string]decisionDoc {
		out := map[string]decisionDoc{}
		for _, d := range hook.decisions() {
			if d.Phase == "in_flight" {
				out[strings.ToLower(d.TraceID)] = d
			}
		}
		return out
	}
	waitUntil(t, hook, col, decisionsTimeout, "an in-flight decision per loop", func() bool {
		got := inFlightOf()
		for tid := range loops {
			if _, ok := got[tid]; !ok {
				return false
			}
		}
		return true
	})
	latency := time.Since(sentBodies)
	time.Sleep(3 * time.Second) // anything else would show now
	hook.assertNoProblems(t)
	got := inFlightOf()
	for tid, r := range loops {
		d := got[tid]
		if d.Guard != "loop" || d.FailureType != "loop_detected" || d.Action.Kind != "replan" {
			t.Errorf("%s: in-flight decision %s", r.File, d.raw)
		}
	}
	for tid, r := range quiet {
		if d, ok := got[tid]; ok {
			t.Errorf("%s is %s but got an in-flight decision: %s", r.File, r.Verdict, d.raw)
		}
	}
	for _, d := range hook.decisions() {
		if d.Phase != "in_flight" {
			if _, isLoop := loops[strings.ToLower(d.TraceID)]; isLoop {
				t.Errorf("a final decision arrived before the root was sent: %s", d.raw)
			}
		}
	}
	t.Logf("%d in-flight loop decisions within %s of the bodies being sent, none for %d ok/recovered runs", len(loops), latency.Round(time.Millisecond), len(quiet))

	// 2. The roots, and the planted captures sent whole.
	run(t, 2*time.Minute, triage, append([]string{"replay", "--endpoint", endpoint}, append(roots, planted, control)...)...)
	finalOf := func(tid string) (decisionDoc, bool) {
		for _, d := range hook.decisions() {
			if d.Phase == "final" && strings.EqualFold(d.TraceID, tid) {
				return d, true
			}
		}
		return decisionDoc{}, false
	}
	// Rootless loops are decided decision_wait after their last span.
	waitUntil(t, hook, col, inFlightWait+decisionsTimeout, "a final decision per loop", func() bool {
		for tid := range loops {
			if _, ok := finalOf(tid); !ok {
				return false
			}
		}
		return true
	})
	for tid, r := range loops {
		f, _ := finalOf(tid)
		in := got[tid]
		if f.InFlightDecisionID != in.DecisionID || f.FailureType != "loop_detected" || f.Attempt != in.Attempt || f.Action.Kind != in.Action.Kind {
			t.Errorf("%s: final decision does not follow the in-flight one %s:\n%s", r.File, in.DecisionID, f.raw)
		}
	}
	// The planted tool is not retried; the same failure without the
	// annotations is.
	var plantedDoc, controlDoc decisionDoc
	waitUntil(t, hook, col, decisionsTimeout, "the planted captures' decisions", func() bool {
		var ok1, ok2 bool
		plantedDoc, ok1 = finalOfFile(t, hook, planted)
		controlDoc, ok2 = finalOfFile(t, hook, control)
		return ok1 && ok2
	})
	if plantedDoc.Action.Kind == "retry" || plantedDoc.Policy != "non_idempotent:escalate" || !strings.Contains(plantedDoc.raw, "MCP annotation destructiveHint: true") {
		t.Errorf("planted non-idempotent %s: %s", tool, plantedDoc.raw)
	}
	if controlDoc.Action.Kind != "retry" {
		t.Errorf("control (no annotations): %s, want retry", controlDoc.raw)
	}
	time.Sleep(3 * time.Second)
	for _, d := range hook.decisions() {
		if r, ok := quiet[strings.ToLower(d.TraceID)]; ok {
			t.Errorf("%s is %s but got a decision: %s", r.File, r.Verdict, d.raw)
		}
	}
	hook.assertNoProblems(t)
	promURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1])
	m := waitMetrics(t, col, promURL, map[string]float64{"triage_in_flight_decisions_total": float64(len(loops))})
	if m["triage_in_flight_decisions_total"] != float64(len(loops)) {
		t.Errorf("triage_in_flight_decisions_total = %v, want %d", m["triage_in_flight_decisions_total"], len(loops))
	}
	col.stop(t)
}

// splitRoot writes the spans of a capture that have a parent to one file
// and its parentless spans (the roots) to another ("" when there are none).
func splitRoot(t *testing.T, f, dir string) (body, root string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	td := readTraces(t, f)
	withParent, parentless := td, ptrace.NewTraces()
	td.CopyTo(parentless)
	withParent.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(func(s ptrace.Span) bool { return s.ParentSpanID().IsEmpty() })
			return ss.Spans().Len() == 0
		})
		return rs.ScopeSpans().Len() == 0
	})
	parentless.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(func(s ptrace.Span) bool { return !s.ParentSpanID().IsEmpty() })
			return ss.Spans().Len() == 0
		})
		return rs.ScopeSpans().Len() == 0
	})
	base := strings.TrimSuffix(filepath.Base(f), ".json")
	body = filepath.Join(dir, base+".body.json")
	writeTraces(t, body, withParent)
	if parentless.SpanCount() > 0 {
		root = filepath.Join(dir, base+".root.json")
		writeTraces(t, root, parentless)
	}
	return body, root
}

func writeTraces(t *testing.T, path string, td ptrace.Traces) {
	t.Helper()
	enc, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(enc))
}

// plantedNonIdempotent picks a capture whose only run fails on a tool with
// an external fault (answered by a retry), and writes two fresh copies: one
// with an MCP server's tools/list answer planted in the trace stating the
// tool destructiveHint: true, one without (the control).
func plantedNonIdempotent(t *testing.T, triage string, constraints, fixtures []string, dir string) (planted, control, tool string) {
	t.Helper()
	for _, f := range fixtures {
		runs := classify(t, triage, constraints, []string{f})
		if len(runs) != 1 || runs[0].Verdict != "failed" || runs[0].FailureType != "external_fault" {
			continue
		}
		if tool = failingTool(t, f, runs[0].EvidenceSpanID); tool == "" {
			continue
		}
		copies := sessionCopies(t, []string{f, f}, dir, perTraceSession, nil)
		planted, control = copies[0], copies[1]
		td := readTraces(t, planted)
		var parent ptrace.Span
		trajectory.ForEachSpan(td, func(s ptrace.Span) {
			if parent == (ptrace.Span{}) && s.ParentSpanID().IsEmpty() {
				parent = s
			}
		})
		if parent == (ptrace.Span{}) {
			continue
		}
		ss := td.ResourceSpans().At(0).ScopeSpans().AppendEmpty()
		ss.Scope().SetName("planted-mcp-client")
		list := ss.Spans().AppendEmpty()
		list.SetTraceID(parent.TraceID())
		list.SetSpanID(pcommon.SpanID{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4})
		list.SetParentSpanID(parent.SpanID())
		list.SetName("tools/list")
		list.SetStartTimestamp(parent.StartTimestamp())
		list.SetEndTimestamp(parent.StartTimestamp() + 1000)
		list.Attributes().PutStr("mcp.method.name", "tools/list")
		defs, _ := json.Marshal([]map[string]any{{"name": tool, "annotations": map[string]any{"destructiveHint": true}}})
		list.Attributes().PutStr("gen_ai.tool.definitions", string(defs))
		list.Attributes().PutStr(sessionAttr, perTraceSession(0, parent.TraceID().String()))
		writeTraces(t, planted, td)
		return planted, control, tool
	}
	t.Fatal("no capture whose only run fails on a tool with an external fault")
	return "", "", ""
}

// finalOfFile returns the final decision received for the trace of a
// capture copy (its first span's trace).
func finalOfFile(t *testing.T, hook *webhookReceiver, path string) (decisionDoc, bool) {
	var tid string
	trajectory.ForEachSpan(readTraces(t, path), func(s ptrace.Span) {
		if tid == "" {
			tid = s.TraceID().String()
		}
	})
	for _, d := range hook.decisions() {
		if d.Phase == "final" && strings.EqualFold(d.TraceID, tid) {
			return d, true
		}
	}
	return decisionDoc{}, false
}

// failingTool is the tool of the tool step holding the evidence, "" when
// the evidence is not on a tool step.
func failingTool(t *testing.T, f, evidence string) string {
	t.Helper()
	for _, r := range trajectory.Build(readTraces(t, f)) {
		for _, st := range r.Steps {
			if st.Kind == trajectory.StepTool && st.SpanID.String() == evidence {
				return st.ToolName
			}
		}
	}
	return ""
}

// waitUntil polls cond (which may read hook's decisions) until it holds.
func waitUntil(t *testing.T, hook *webhookReceiver, col *collector, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if col.exited() {
			t.Fatalf("collector exited while waiting for %s (%v):\n%s", what, col.waitErr, col.logTail())
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s: %s\ncollector log:\n%s", timeout, what, hook.summary(), col.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
