//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/trajectory"
)

// The two-tier layout (deploy/, README "Scaling out") end to end: two
// tier-1 collectors on deploy/tier1-static.yaml routing by trace ID to three
// tier-2 collectors on deploy/tier2.yaml that share one redis-server, each
// with a small override of loopback ports, output files and the test's
// short waits (--config deploy/... --config override). Every capture is
// replayed with each trace's spans (and its GenAI log events) split across
// both tier-1s, as a Kubernetes Service spreads an SDK's export batches.

const (
	nTier1 = 2
	nTier2 = 3
	// tier1RetryBudget is the tier-1 loadbalancing exporter's
	// max_elapsed_time in the test: shorter than reshardOutage, so part of
	// what is routed to the stopped instance is given up (and counted) and
	// part is delivered once it is back.
	tier1RetryBudget = 2 * time.Second
	reshardOutage    = 5 * time.Second
	// reshardPace spaces the captures of the resharding replay so that it
	// lasts through the outage; reshardSpread spaces the batches of one
	// trace, so traces are in flight when the instance stops and restarts.
	reshardPace   = 40 * time.Millisecond
	reshardSpread = 400 * time.Millisecond
)

func TestTwoTiers(t *testing.T) {
	repo := repoRoot(t)
	shared := sharedDir(t, repo)
	work := t.TempDir()
	redisAddr := startRedisServer(t, work) // skips without redis-server
	fixtures := fixtureFiles(t, shared)
	constraints := labelledConstraints(t, shared)
	otelcol := collectorBinary(t, repo)
	triage := buildTriageCLI(t, repo, work)
	walkCapture, walkType := singleFailedRun(t, triage, constraints, fixtures)

	hook := newWebhookReceiver(t)
	tiers := startTiers(t, repo, otelcol, work, redisAddr, hook, constraints, sessionWalkPolicy(walkType))

	// ---- 1. every capture, split across both tier-1s ----
	in := prepareReplay(t, fixtures, filepath.Join(work, "pass1"), "e2e-1")
	runs := classify(t, triage, constraints, in.copies)
	failed := failedRuns(runs)
	replayStart := time.Now()
	in.send(t, tiers, 4)
	if len(in.refused) > 0 {
		t.Fatalf("tier 1 refused %d spans of the first pass: %v", len(in.refused), head(sortedKeys(in.refused), 5))
	}
	tiers.waitDecisions(t, hook, len(failed))
	out := tiers.waitForSpans(t, in.sent, outputTimeout)
	decidedIn := time.Since(replayStart)
	time.Sleep(quietPeriod)
	hook.assertNoProblems(t)
	out = tiers.readOutputs(t)

	// Routing: every span forwarded exactly once, all spans of a trace on
	// one tier-2 instance, the one the hash ring names.
	traceOwner := map[string]int{}
	for key, n := range out.count {
		if !in.sent[key] {
			continue
		}
		if n != 1 {
			t.Errorf("span %s forwarded %d times by tier 2, want once", key, n)
		}
		tid := strings.SplitN(key, "/", 2)[0]
		for _, inst := range out.where[key] {
			if prev, ok := traceOwner[tid]; ok && prev != inst {
				t.Errorf("trace %s reached tier-2 instances %d and %d: not routed by trace ID", tid, prev, inst)
			}
			traceOwner[tid] = inst
		}
	}
	perInstance := make([]int, nTier2)
	for tid, inst := range traceOwner {
		perInstance[inst]++
		if want := tiers.ownerOf(t, tid); want != inst {
			t.Errorf("trace %s decided by tier-2 instance %d, the hash ring (replica of the exporter's) says %d", tid, inst, want)
		}
	}

	// Every run decided once, as `triage classify` decides it.
	mismatches := 0
	for _, w := range runs {
		targets := runSpans(out.spans, w)
		if !hasVerdict(targets) {
			mismatches++
			t.Errorf("%s run %s/%s: no triage.verdict on its root span (or the spans standing in for it)", filepath.Base(w.File), w.TraceID, w.RunSpanID)
			continue
		}
		wantVals := map[string]string{"verdict": w.Verdict, "failure_type": w.FailureType, "signal": w.Signal, "rule": w.Rule}
		for _, sp := range targets {
			for _, c := range comparedAttrs {
				if got := attrString(sp.attrs, c.attr); got != wantVals[c.name] {
					mismatches++
					t.Errorf("%s run %s/%s, span %s: %s = %q, triage classify says %q", filepath.Base(w.File), w.TraceID, w.RunSpanID, sp.spanID, c.attr, got, wantVals[c.name])
				}
			}
		}
	}
	// Exactly one decision per failed run, with classify's failure type.
	byRun := map[string][]decisionDoc{}
	for _, d := range finalDecisions(hook) {
		byRun[spanKey(d.TraceID, d.SpanID)] = append(byRun[spanKey(d.TraceID, d.SpanID)], d)
	}
	for _, r := range runs {
		got := byRun[spanKey(r.TraceID, r.RunSpanID)]
		switch {
		case r.Verdict != "failed" && len(got) > 0:
			t.Errorf("%s run %s is %s but got %d decision(s)", filepath.Base(r.File), r.TraceID, r.Verdict, len(got))
		case r.Verdict == "failed" && len(got) != 1:
			t.Errorf("%s failed run %s/%s (%s): %d decisions, want exactly 1", filepath.Base(r.File), r.TraceID, r.RunSpanID, r.FailureType, len(got))
		case r.Verdict == "failed" && got[0].FailureType != r.FailureType:
			t.Errorf("%s run %s: decision failure_type %q, triage classify says %q", filepath.Base(r.File), r.TraceID, got[0].FailureType, r.FailureType)
		}
	}
	if n := len(finalDecisions(hook)); n != len(failed) {
		t.Errorf("%d final decisions for %d failed runs", n, len(failed))
	}
	// Each trace decided exactly once, none of its spans after its decision
	// (a span that comes after the decision would only be annotated from
	// the decision cache, not classified): root_wait covers the skew
	// between the tier-1 instances.
	telemetry := tiers.scrapeTier2(t)
	if got := telemetry.sum("otelcol_processor_triage_traces_decided"); int(got) != len(in.traces) {
		t.Errorf("tier 2 decided %v traces, %d were sent (each exactly once)", got, len(in.traces))
	}
	if got := telemetry.sum("otelcol_processor_triage_late_spans"); got != 0 {
		t.Errorf("%v spans reached tier 2 after their trace was decided: root_wait (deploy/tier2.yaml) does not cover the skew between tier-1 instances", got)
	}
	// GenAI log events met their trace on its tier-2 instance.
	for tid, n := range in.logRecords {
		owner, ok := traceOwner[tid]
		if !ok {
			owner = tiers.ownerOf(t, tid)
		}
		for inst := range nTier2 {
			want := 0
			if inst == owner {
				want = n
			}
			if got := out.logRecords[inst][tid]; got != want {
				t.Errorf("trace %s: tier-2 instance %d received %d of its log records, want %d (owner: instance %d)", tid, inst, got, want, owner)
			}
		}
	}
	t.Logf("pass 1: %d captures, %d traces (%d spans, %d log records) in %d tier-1 requests; traces per tier-2 instance %v; %d runs compared (%d mismatching attributes), %d decisions; all forwarded %s after the replay began",
		len(in.copies), len(in.traces), len(in.sent), in.nLogRecords(), in.requests, perInstance, len(runs), mismatches, len(hook.decisions()), decidedIn.Round(100*time.Millisecond))

	// ---- 2. one session walking its budget across the tier-2 instances ----
	session := "e2e-walk-" + randomHex(t, 4)
	for i := range sessionWalk {
		target := i % nTier2
		copyPath := sessionCopies(t, []string{walkCapture}, filepath.Join(work, fmt.Sprintf("walk-%d", i)), func(int, string) string { return session }, nil)[0]
		walk := prepareReplay(t, []string{copyPath}, filepath.Join(work, fmt.Sprintf("walk-%d-split", i)), "")
		tid := walk.routeTo(t, tiers, target)
		before := len(hook.decisions())
		walk.send(t, tiers, 1)
		tiers.waitDecisions(t, hook, before+1)
		var d decisionDoc
		for _, x := range hook.decisions() {
			if strings.EqualFold(x.TraceID, tid) {
				d = x
			}
		}
		checkWalkStep(t, i, fmt.Sprintf("tier-2 instance %d", target), d, session, walkType)
	}
	time.Sleep(quietPeriod)
	hook.assertNoProblems(t)
	if n := len(finalDecisions(hook)); n != len(failed)+len(sessionWalk) {
		t.Errorf("after the walk: %d final decisions, want %d", n, len(failed)+len(sessionWalk))
	}
	waitStreamLen(t, redisAddr, len(hook.decisions()))
	checkDecisionStream(t, redisAddr, hook.decisions())

	// ---- 3. resharding: one tier-2 instance stopped mid-replay, restarted ----
	baseline := tiers.scrapeTier1(t)
	re := prepareReplay(t, fixtures, filepath.Join(work, "pass3"), "e2e-3")
	victim := tiers.tier2[0]
	var stoppedAt, restartedAt time.Time
	restart := func() {
		victim.col.awaitExit(t)
		tiers.restartTier2(t, 0)
		restartedAt = time.Now()
	}
	// SIGTERM a quarter into the replay, while it goes on; the same
	// instance back reshardOutage later.
	replayLength := time.Duration(len(re.copies)) * reshardPace
	re.sendSpread(t, tiers, reshardPace, reshardSpread, func(elapsed time.Duration) {
		if stoppedAt.IsZero() && elapsed >= replayLength/4 {
			victim.col.terminate(t)
			stoppedAt = time.Now()
		}
		if !stoppedAt.IsZero() && restartedAt.IsZero() && time.Since(stoppedAt) >= reshardOutage {
			restart()
		}
	})
	if restartedAt.IsZero() {
		time.Sleep(time.Until(stoppedAt.Add(reshardOutage)))
		restart()
	}
	// Count what is missing only when nothing is in flight any more (not
	// at a fixed time after tier 1's queues emptied: tier 2 may still be
	// deciding a healthy instance's trace then, slower under load).
	replayed := time.Now()
	queuesEmpty, settled := tiers.waitSettled(t, decisionsTimeout)
	time.Sleep(quietPeriod)
	out = tiers.readOutputs(t)
	after := tiers.scrapeTier1(t)

	dropped := after.sum("otelcol_exporter_send_failed_spans", `exporter="loadbalancing"`) - baseline.sum("otelcol_exporter_send_failed_spans", `exporter="loadbalancing"`) +
		after.sum("otelcol_exporter_enqueue_failed_spans", `exporter="loadbalancing"`) - baseline.sum("otelcol_exporter_enqueue_failed_spans", `exporter="loadbalancing"`)
	failedAttempts := after.sum("otelcol_loadbalancer_backend_outcome", `success="false"`) - baseline.sum("otelcol_loadbalancer_backend_outcome", `success="false"`)
	var missing []string
	duplicated, victimTraces := 0, map[string]bool{}
	for key := range re.sent {
		tid := strings.SplitN(key, "/", 2)[0]
		owner := tiers.ownerOf(t, tid)
		if owner == 0 {
			victimTraces[tid] = true
		}
		switch n := out.count[key]; {
		case n == 0 && !re.refused[key]:
			missing = append(missing, key)
			if owner != 0 {
				t.Errorf("span %s of a trace owned by the healthy tier-2 instance %d is lost", key, owner)
			}
		case n > 1:
			duplicated++
		}
	}
	if failedAttempts == 0 {
		t.Errorf("tier 1 saw no failed export while tier-2 instance 0 was down: the outage was not exercised")
	}
	if float64(len(missing)) > dropped {
		sort.Strings(missing)
		t.Errorf("%d spans reached no tier-2 output, but tier 1 counts only %v spans as dropped (send_failed + enqueue_failed); first missing: %v", len(missing), dropped, head(missing, 5))
	}
	// What the membership change cost: traces of the stopped instance
	// decided on both sides of the restart (with what it held at its
	// shutdown, then with the rest), and runs decided twice.
	missingIn := map[string]bool{}
	for _, key := range missing {
		missingIn[strings.SplitN(key, "/", 2)[0]] = true
	}
	twice, partial := 0, 0
	for tid := range victimTraces {
		decided := len(out.decidedIn(tid))
		if decided > 1 {
			twice++
		}
		if decided > 0 && missingIn[tid] {
			partial++
		}
	}
	perRun := map[string]int{}
	for _, d := range hook.decisions() {
		if victimTraces[strings.ToLower(d.TraceID)] {
			perRun[spanKey(d.TraceID, d.SpanID)]++
		}
	}
	runsTwice := 0
	for _, n := range perRun {
		if n > 1 {
			runsTwice++
		}
	}
	t.Logf("pass 3 (resharding): %d spans of %d traces sent; tier-2 instance 0 (owner of %d traces) stopped %s into a %s replay, back %s later; tier 1: %v failed export attempts, %v spans given up after %s of retries (counted); %d spans missing, all of the stopped instance's traces; %d spans forwarded more than once (a retried batch goes again to the healthy instances); %d of its traces decided on both sides of the restart, %d decided without some of their spans, %d runs with two decisions; %d spans refused to the sender; tier-1 queues empty %s after the replay, everything settled after %s",
		len(re.sent), len(re.traces), len(victimTraces), replayLength/4, replayLength, restartedAt.Sub(stoppedAt).Round(100*time.Millisecond),
		failedAttempts, dropped, tier1RetryBudget, len(missing), duplicated, twice, partial, runsTwice, len(re.refused),
		queuesEmpty.Sub(replayed).Round(100*time.Millisecond), settled.Sub(replayed).Round(100*time.Millisecond))

	for _, inst := range tiers.all() {
		inst.col.stop(t)
	}
	hook.assertNoProblems(t)
	checkDecisionStream(t, redisAddr, hook.decisions())
}

// ---- the collectors ----

type tierInstance struct {
	col          *collector
	cfgs, env    []string
	logPath      string
	telemetryURL string
	spansPath    string
	logsPath     string
	// files of earlier runs of a restarted instance
	oldSpans, oldLogs []string
	restarts          int
}

type twoTiers struct {
	bin, work      string
	tier1, tier2   []*tierInstance
	tier1HTTP      []string // OTLP/HTTP base URLs of tier 1
	tier2Endpoints []string // as tier 1 lists them
	ring           hashRing
	// routingAttr is the attribute tier 1 stamps the trace ID in and
	// routes by (deploy/tier1-static.yaml routing_attributes).
	routingAttr string
}

func startTiers(t *testing.T, repo, bin, work, redisAddr string, hook *webhookReceiver, constraints []string, policy string) *twoTiers {
	t.Helper()
	tt := &twoTiers{bin: bin, work: work}
	global, _ := json.Marshal(constraints)
	env := []string{
		"TRIAGE_REDIS_ENDPOINT=" + redisAddr,
		"TRIAGE_REDIS_PASSWORD=",
		"TRIAGE_WEBHOOK_URL=" + hook.url(),
		"TRIAGE_WEBHOOK_SECRET=" + hook.secret,
		"TRIAGE_TRACES_ENDPOINT=http://127.0.0.1:9", // unused: the test exports to files
	}
	for i := range nTier2 {
		ports := freePorts(t, 3)
		inst := &tierInstance{
			env:          env,
			telemetryURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[2]),
		}
		tt.tier2Endpoints = append(tt.tier2Endpoints, fmt.Sprintf("127.0.0.1:%d", ports[0]))
		override := filepath.Join(work, fmt.Sprintf("tier2-%d.override.yaml", i))
		inst.spansPath = filepath.Join(work, fmt.Sprintf("tier2-%d.spans.json", i))
		inst.logsPath = filepath.Join(work, fmt.Sprintf("tier2-%d.logs.json", i))
		writeFile(t, override, fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
processors:
  triage:
    decision_wait: %s
    constraints:
      global: %s
    recovery:
      # generous: on this small, shared machine a slow decision would
      # otherwise be given up (recovery_errors)
      timeout: 10s
      session_attributes: [%s]
      policy:
        %s
      history:
        redis:
          # generous: a slow call on this small machine would fall back to
          # memory and the instances would stop sharing the history
          timeout: 2s
connectors:
  triage:
    metrics_flush_interval: 1s
exporters:
  recovery_webhook:
    retry_on_failure:
      initial_interval: 100ms
      max_interval: 500ms
      max_elapsed_time: 0
  recovery_stream:
    stream: %s
  prometheus:
    endpoint: 127.0.0.1:%d
  file:
    path: ${env:E2E_SPANS_PATH}
    flush_interval: 100ms
  file/events:
    path: ${env:E2E_LOGS_PATH}
    flush_interval: 100ms
%s  pipelines:
    traces:
      exporters: [triage, file]
    logs/events:
      exporters: [file/events]
`, ports[0], decisionWait, global, sessionAttr, policy, decisionStream, ports[1], telemetryReader(ports[2])))
		inst.cfgs = []string{filepath.Join(repo, "deploy", "tier2.yaml"), override}
		inst.logPath = filepath.Join(work, fmt.Sprintf("tier2-%d.log", i))
		tt.tier2 = append(tt.tier2, inst)
	}
	tt.ring = newHashRing(tt.tier2Endpoints)
	var tier1 map[string]any
	readYAML(t, filepath.Join(repo, "deploy", "tier1-static.yaml"), &tier1)
	attrs, _ := dig(tier1, "exporters", "loadbalancing", "routing_attributes").([]any)
	if len(attrs) != 1 {
		t.Fatalf("deploy/tier1-static.yaml: want one routing attribute, got %v", attrs)
	}
	tt.routingAttr = fmt.Sprint(attrs[0])
	hostnames, _ := json.Marshal(tt.tier2Endpoints)
	for i := range nTier1 {
		ports := freePorts(t, 3)
		override := filepath.Join(work, fmt.Sprintf("tier1-%d.override.yaml", i))
		writeFile(t, override, fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
      http:
        endpoint: 127.0.0.1:%d
exporters:
  loadbalancing:
    retry_on_failure:
      initial_interval: 100ms
      max_interval: 500ms
      max_elapsed_time: %s
    resolver:
      static:
        hostnames: %s
%s`, ports[0], ports[1], tier1RetryBudget, hostnames, telemetryReader(ports[2])))
		inst := &tierInstance{
			cfgs:         []string{filepath.Join(repo, "deploy", "tier1-static.yaml"), override},
			env:          []string{"TRIAGE_TIER2_0=" + tt.tier2Endpoints[0], "TRIAGE_TIER2_1=" + tt.tier2Endpoints[1], "TRIAGE_TIER2_2=" + tt.tier2Endpoints[2]},
			logPath:      filepath.Join(work, fmt.Sprintf("tier1-%d.log", i)),
			telemetryURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[2]),
		}
		tt.tier1 = append(tt.tier1, inst)
		tt.tier1HTTP = append(tt.tier1HTTP, fmt.Sprintf("http://127.0.0.1:%d", ports[1]))
	}
	// Start all, then wait for all: start-up overlaps on the small machine.
	for _, inst := range tt.tier2 {
		tt.start(t, inst)
	}
	for _, inst := range tt.tier1 {
		tt.start(t, inst)
	}
	for _, inst := range tt.all() {
		waitTelemetryReady(t, inst.col, inst.telemetryURL)
	}
	for i, inst := range tt.tier1 {
		waitHTTPReady(t, inst.col, tt.tier1HTTP[i])
	}
	return tt
}

func (tt *twoTiers) start(t *testing.T, inst *tierInstance) {
	t.Helper()
	env := append([]string{"E2E_SPANS_PATH=" + inst.spansPath, "E2E_LOGS_PATH=" + inst.logsPath}, inst.env...)
	inst.col = startCollectorWith(t, tt.bin, inst.cfgs, env, inst.logPath)
}

// restartTier2 starts tier-2 instance i again (after stop) on the same
// ports, writing to new output files.
func (tt *twoTiers) restartTier2(t *testing.T, i int) {
	t.Helper()
	inst := tt.tier2[i]
	inst.restarts++
	inst.oldSpans, inst.oldLogs = append(inst.oldSpans, inst.spansPath), append(inst.oldLogs, inst.logsPath)
	inst.spansPath = strings.TrimSuffix(inst.spansPath, ".json") + fmt.Sprintf(".%d.json", inst.restarts)
	inst.logsPath = strings.TrimSuffix(inst.logsPath, ".json") + fmt.Sprintf(".%d.json", inst.restarts)
	inst.logPath = strings.TrimSuffix(inst.logPath, ".log") + fmt.Sprintf(".%d.log", inst.restarts)
	tt.start(t, inst)
	waitTelemetryReady(t, inst.col, inst.telemetryURL)
}

func (tt *twoTiers) all() []*tierInstance {
	return append(append([]*tierInstance{}, tt.tier1...), tt.tier2...)
}

// ownerOf is the tier-2 instance the ring gives a trace ID (hex) to.
func (tt *twoTiers) ownerOf(t *testing.T, traceID string) int {
	t.Helper()
	var id pcommon.TraceID
	if b, err := hex.DecodeString(traceID); err != nil || len(b) != len(id) {
		t.Fatalf("trace id %q: not 16 hex bytes (%v)", traceID, err)
	} else {
		copy(id[:], b)
	}
	ep := tt.ring.endpointFor(tt.routingKey(id))
	for i, e := range tt.tier2Endpoints {
		if e == ep {
			return i
		}
	}
	t.Fatalf("ring endpoint %q is none of %v", ep, tt.tier2Endpoints)
	return -1
}

// routingKey is the key the exporter hashes for a trace routed by the
// attribute holding its ID: "name=value|" (attribute_routing.go).
func (tt *twoTiers) routingKey(id pcommon.TraceID) []byte {
	return []byte(tt.routingAttr + "=" + id.String() + "|")
}

// tierOutputs is what the tier-2 instances forwarded.
type tierOutputs struct {
	spans      map[string]exportedSpan // by spanKey, the last copy seen
	count      map[string]int          // copies of each span, over all instances
	where      map[string][]int        // instances that forwarded each span
	logRecords []map[string]int        // per instance: trace ID -> log records
	// decisions: per trace ID, the output files (one per tier-2 process)
	// holding a span of it with a verdict, i.e. where it was decided
	decisions map[string]map[string]bool
}

func (o tierOutputs) decidedIn(traceID string) []string {
	var out []string
	for f := range o.decisions[traceID] {
		out = append(out, f)
	}
	return out
}

func (tt *twoTiers) readOutputs(t *testing.T) tierOutputs {
	t.Helper()
	o := tierOutputs{spans: map[string]exportedSpan{}, count: map[string]int{}, where: map[string][]int{}, decisions: map[string]map[string]bool{}}
	for i, inst := range tt.tier2 {
		for _, path := range append(append([]string{}, inst.oldSpans...), inst.spansPath) {
			forEachExportedSpan(t, path, func(key string, sp exportedSpan) {
				o.spans[key] = sp
				o.count[key]++
				o.where[key] = append(o.where[key], i)
				if _, ok := sp.attrs.Get("triage.verdict"); ok {
					tid := strings.SplitN(key, "/", 2)[0]
					if o.decisions[tid] == nil {
						o.decisions[tid] = map[string]bool{}
					}
					o.decisions[tid][path] = true
				}
			})
		}
		recs := map[string]int{}
		for _, path := range append(append([]string{}, inst.oldLogs...), inst.logsPath) {
			forEachExportedLogRecord(t, path, func(r plog.LogRecord) { recs[strings.ToLower(r.TraceID().String())]++ })
		}
		o.logRecords = append(o.logRecords, recs)
	}
	return o
}

// waitForSpans waits until every span in want was forwarded by tier 2.
func (tt *twoTiers) waitForSpans(t *testing.T, want map[string]bool, timeout time.Duration) tierOutputs {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		o := tt.readOutputs(t)
		missing := 0
		for k := range want {
			if o.count[k] == 0 {
				missing++
			}
		}
		if missing == 0 {
			return o
		}
		for _, inst := range tt.all() {
			if inst.col.exited() {
				t.Fatalf("a collector exited while waiting for spans:\n%s", inst.col.logTail())
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, %d of %d spans were not forwarded by any tier-2 instance", timeout, missing, len(want))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// waitDecisions waits until the webhook accepted n distinct decisions; on
// timeout it reports what the tier-2 processors say about recovery.
func (tt *twoTiers) waitDecisions(t *testing.T, hook *webhookReceiver, n int) {
	t.Helper()
	deadline := time.Now().Add(decisionsTimeout)
	for hook.deliveredCount() < n {
		for _, inst := range tt.all() {
			if inst.col.exited() {
				t.Fatalf("a collector exited while waiting for decisions:\n%s", inst.col.logTail())
			}
		}
		if time.Now().After(deadline) {
			m := tt.scrapeTier2(t)
			t.Fatalf("waited %s for %d decisions: %s; tier 2: %v stamped, %v recovery errors, %v history calls served from memory, %v traces decided, %v held",
				decisionsTimeout, n, hook.summary(), m.sum("otelcol_processor_triage_recovery_decisions"), m.sum("otelcol_processor_triage_recovery_errors"),
				m.sum("otelcol_processor_triage_recovery_degraded"), m.sum("otelcol_processor_triage_traces_decided"), m.sum("otelcol_processor_triage_traces_held"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitSettled waits until nothing is in flight any more: every span and log
// record a tier-1 instance accepted is settled by its loadbalancing exporter
// (sent, or given up and counted in send_failed / enqueue_failed), and every
// span a tier-2 instance accepted (or added: an in-flight decision's span)
// is forwarded to its output (or counted: failed, invalid). Empty tier-1
// sending queues are not that: a batch can still sit in tier 1's batch
// processor, and tier 2 forwards a trace only once it is decided
// (root_wait, decision_wait, then the decision itself, seconds under load).
// Only after this is a span that reached no output lost rather than late;
// a tier that loses spans without counting them never settles, and the test
// fails here. It returns when the sending queues were first seen empty and
// when everything had settled.
func (tt *twoTiers) waitSettled(t *testing.T, timeout time.Duration) (queuesEmpty, settled time.Time) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var unsettled []string
		queued := 0.0
		for i, inst := range tt.tier1 {
			m := scrapeAll(t, []*tierInstance{inst})
			queued += m.sum("otelcol_exporter_queue_size", `exporter="loadbalancing"`)
			for _, sig := range []string{"spans", "log_records"} {
				accepted := m.sum("otelcol_receiver_accepted_"+sig, `receiver="otlp"`)
				out := m.sum("otelcol_exporter_sent_"+sig, `exporter="loadbalancing"`) +
					m.sum("otelcol_exporter_send_failed_"+sig, `exporter="loadbalancing"`) +
					m.sum("otelcol_exporter_enqueue_failed_"+sig, `exporter="loadbalancing"`)
				if out != accepted {
					unsettled = append(unsettled, fmt.Sprintf("tier-1 instance %d: %v %s accepted, %v sent or counted as failed", i, accepted, sig, out))
				}
			}
		}
		if queued == 0 && queuesEmpty.IsZero() {
			queuesEmpty = time.Now()
		}
		if len(unsettled) == 0 {
			for i, inst := range tt.tier2 {
				m := scrapeAll(t, []*tierInstance{inst})
				// in: what tier 1 sent it, plus the decision span of every
				// in-flight decision (an added span); out: its output.
				accepted := m.sum("otelcol_receiver_accepted_spans", `receiver="otlp"`) + m.sum("otelcol_processor_triage_in_flight_decisions")
				out := m.sum("otelcol_exporter_sent_spans", `exporter="file"`) +
					m.sum("otelcol_exporter_send_failed_spans", `exporter="file"`) +
					m.sum("otelcol_exporter_enqueue_failed_spans", `exporter="file"`) +
					m.sum("otelcol_processor_triage_spans_invalid")
				if out != accepted {
					unsettled = append(unsettled, fmt.Sprintf("tier-2 instance %d: %v spans accepted or added, %v forwarded or counted as failed", i, accepted, out))
				}
			}
		}
		if len(unsettled) == 0 {
			return queuesEmpty, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, not every span is forwarded or counted as dropped (lost uncounted, or still in flight): %v", timeout, unsettled)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func (tt *twoTiers) scrapeTier1(t *testing.T) promSeries { return scrapeAll(t, tt.tier1) }
func (tt *twoTiers) scrapeTier2(t *testing.T) promSeries { return scrapeAll(t, tt.tier2) }

// ---- inputs ----

// tierReplay is a set of capture copies (fresh trace IDs, one session per
// trace) cut into the requests two tier-1 instances receive.
type tierReplay struct {
	copies     []string
	batches    [][]tierBatch   // per copy
	traces     map[string]bool // trace IDs (hex, lower case)
	sent       map[string]bool // span keys
	logRecords map[string]int  // trace ID -> log records sent
	refused    map[string]bool // span keys tier 1 did not accept
	requests   int
	errs       []error
	mu         sync.Mutex
}

// tierBatch is one OTLP/JSON request to one tier-1 instance.
type tierBatch struct {
	tier1 int
	logs  bool
	td    ptrace.Traces
	ld    plog.Logs
}

// prepareReplay copies each capture with fresh trace IDs (and, with a
// session prefix, one session per trace) into dir, and cuts every trace into
// export batches as an SDK sends them (spans in end-time order, the root
// last) spread over the tier-1 instances; the capture's GenAI log events
// (the .logs.json beside it) follow their trace's new ID and are spread too.
func prepareReplay(t *testing.T, captures []string, dir, sessionPrefix string) *tierReplay {
	t.Helper()
	r := &tierReplay{traces: map[string]bool{}, sent: map[string]bool{}, logRecords: map[string]int{}, refused: map[string]bool{}}
	if sessionPrefix == "" {
		r.copies = captures
	} else {
		r.copies = sessionCopies(t, captures, dir, func(file int, trace string) string {
			return fmt.Sprintf("%s-%03d-%s", sessionPrefix, file, trace)
		}, nil)
	}
	for ci, path := range r.copies {
		td := readTraces(t, path)
		var batches []tierBatch
		byTrace := map[pcommon.TraceID][]spanAt{}
		var order []pcommon.TraceID
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				spans := sss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					s := spans.At(k)
					if _, ok := byTrace[s.TraceID()]; !ok {
						order = append(order, s.TraceID())
					}
					byTrace[s.TraceID()] = append(byTrace[s.TraceID()], spanAt{rs: i, ss: j, span: s})
					r.sent[spanKey(s.TraceID().String(), s.SpanID().String())] = true
				}
			}
		}
		for ti, tid := range order {
			r.traces[strings.ToLower(tid.String())] = true
			spans := byTrace[tid]
			sort.SliceStable(spans, func(a, b int) bool { return spans[a].span.EndTimestamp() < spans[b].span.EndTimestamp() })
			// Up to three batches per trace, alternating between the
			// tier-1 instances (where it starts varies by trace).
			size := max(1, (len(spans)+2)/3)
			for b := 0; b*size < len(spans); b++ {
				chunk := spans[b*size : min(len(spans), (b+1)*size)]
				batches = append(batches, tierBatch{tier1: (ci + ti + b) % nTier1, td: spansBatch(td, chunk)})
			}
		}
		if logs := logsBeside(t, captures[ci]); logs != (plog.Logs{}) {
			ids := traceIDMap(t, readTraces(t, captures[ci]), td)
			for i, ld := range splitLogs(logs, ids, nTier1) {
				batches = append(batches, tierBatch{tier1: (ci + i) % nTier1, logs: true, ld: ld})
				trajectory.ForEachLogRecord(ld, func(rec plog.LogRecord) { r.logRecords[strings.ToLower(rec.TraceID().String())]++ })
			}
			// Beside the copy, with its new trace IDs, as NAME.logs.json
			// beside a capture: `triage classify` on the copy reads them.
			if path != captures[ci] {
				enc, err := (&plog.JSONMarshaler{}).MarshalLogs(logs)
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, strings.TrimSuffix(path, ".json")+".logs.json", string(enc))
			}
		}
		r.batches = append(r.batches, batches)
	}
	return r
}

func (r *tierReplay) nLogRecords() int {
	n := 0
	for _, c := range r.logRecords {
		n += c
	}
	return n
}

// routeTo gives the replay's single trace a new ID that the hash ring
// routes to tier-2 instance target, and returns it (hex).
func (r *tierReplay) routeTo(t *testing.T, tt *twoTiers, target int) string {
	t.Helper()
	if len(r.traces) != 1 {
		t.Fatalf("routeTo needs a replay of one trace, this one has %d", len(r.traces))
	}
	var id pcommon.TraceID
	for {
		if _, err := rand.Read(id[:]); err != nil {
			t.Fatal(err)
		}
		if tt.ring.endpointFor(tt.routingKey(id)) == tt.tier2Endpoints[target] {
			break
		}
	}
	r.traces, r.sent = map[string]bool{strings.ToLower(id.String()): true}, map[string]bool{}
	for _, batches := range r.batches {
		for _, b := range batches {
			if b.logs {
				trajectory.ForEachLogRecord(b.ld, func(rec plog.LogRecord) { rec.SetTraceID(id) })
				continue
			}
			trajectory.ForEachSpan(b.td, func(s ptrace.Span) {
				s.SetTraceID(id)
				r.sent[spanKey(id.String(), s.SpanID().String())] = true
			})
		}
	}
	return id.String()
}

// send posts every capture's batches, the batches of one capture at the
// same time (so they race through the two tier-1 instances), workers
// captures at a time.
func (r *tierReplay) send(t *testing.T, tt *twoTiers, workers int) {
	t.Helper()
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ci := range jobs {
				var cwg sync.WaitGroup
				for _, b := range r.batches[ci] {
					cwg.Go(func() { r.post(tt, b) })
				}
				cwg.Wait()
			}
		})
	}
	for ci := range r.batches {
		jobs <- ci
	}
	close(jobs)
	wg.Wait()
	r.logRefused(t)
}

// sendSpread posts the captures one every pace, the k-th batch of each
// trace spread later after its first, as an agent's spans are exported
// over its run; so traces are in flight at any moment. tick runs between
// posts with the time since the start (in the test goroutine).
func (r *tierReplay) sendSpread(t *testing.T, tt *twoTiers, pace, spread time.Duration, tick func(elapsed time.Duration)) {
	t.Helper()
	type job struct {
		at time.Duration
		b  tierBatch
	}
	var jobs []job
	for ci, batches := range r.batches {
		for k, b := range batches {
			jobs = append(jobs, job{at: time.Duration(ci)*pace + time.Duration(k%3)*spread, b: b})
		}
	}
	sort.SliceStable(jobs, func(i, j int) bool { return jobs[i].at < jobs[j].at })
	start := time.Now()
	var wg sync.WaitGroup
	for _, j := range jobs {
		time.Sleep(time.Until(start.Add(j.at)))
		tick(time.Since(start))
		wg.Go(func() { r.post(tt, j.b) })
	}
	wg.Wait()
	r.logRefused(t)
}

var replayClient = &http.Client{Timeout: 30 * time.Second}

// post sends one batch; what tier 1 does not accept is remembered as
// refused (the sender knows it was not taken).
func (r *tierReplay) post(tt *twoTiers, b tierBatch) {
	err := postBatch(replayClient, tt.tier1HTTP[b.tier1], b)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if err != nil {
		r.errs = append(r.errs, err)
		trajectory.ForEachSpan(b.td, func(s ptrace.Span) {
			r.refused[spanKey(s.TraceID().String(), s.SpanID().String())] = true
		})
	}
}

func (r *tierReplay) logRefused(t *testing.T) {
	t.Helper()
	for i, err := range r.errs {
		if i == 3 {
			t.Logf("… %d more refused requests", len(r.errs)-3)
			break
		}
		t.Logf("tier 1 refused a request: %v", err)
	}
}

func postBatch(client *http.Client, base string, b tierBatch) error {
	var body []byte
	var err error
	path := "/v1/traces"
	if b.logs {
		path = "/v1/logs"
		body, err = (&plog.JSONMarshaler{}).MarshalLogs(b.ld)
	} else {
		body, err = (&ptrace.JSONMarshaler{}).MarshalTraces(b.td)
	}
	if err != nil {
		return err
	}
	resp, err := client.Post(base+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var ps struct {
		PartialSuccess struct {
			RejectedSpans      string `json:"rejectedSpans"`
			RejectedLogRecords string `json:"rejectedLogRecords"`
			ErrorMessage       string `json:"errorMessage"`
		} `json:"partialSuccess"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&ps)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s%s: %s %s", base, path, resp.Status, ps.PartialSuccess.ErrorMessage)
	}
	if n := ps.PartialSuccess.RejectedSpans + ps.PartialSuccess.RejectedLogRecords; n != "" && n != "0" {
		return fmt.Errorf("POST %s%s: rejected %s: %s", base, path, n, ps.PartialSuccess.ErrorMessage)
	}
	return nil
}

type spanAt struct {
	rs, ss int
	span   ptrace.Span
}

// spansBatch copies spans (with their resource and scope) out of td.
func spansBatch(td ptrace.Traces, spans []spanAt) ptrace.Traces {
	out := ptrace.NewTraces()
	scopes := map[[2]int]ptrace.SpanSlice{}
	for _, s := range spans {
		dst, ok := scopes[[2]int{s.rs, s.ss}]
		if !ok {
			rs := td.ResourceSpans().At(s.rs)
			drs := out.ResourceSpans().AppendEmpty()
			rs.Resource().CopyTo(drs.Resource())
			drs.SetSchemaUrl(rs.SchemaUrl())
			ss := rs.ScopeSpans().At(s.ss)
			dss := drs.ScopeSpans().AppendEmpty()
			ss.Scope().CopyTo(dss.Scope())
			dss.SetSchemaUrl(ss.SchemaUrl())
			dst = dss.Spans()
			scopes[[2]int{s.rs, s.ss}] = dst
		}
		s.span.CopyTo(dst.AppendEmpty())
	}
	return out
}

// logsBeside reads the GenAI log events of a capture (X.logs.json beside
// X.json), or returns the zero Logs when there are none.
func logsBeside(t *testing.T, capture string) plog.Logs {
	t.Helper()
	path := strings.TrimSuffix(capture, ".json") + ".logs.json"
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return plog.Logs{}
	}
	if err != nil {
		t.Fatal(err)
	}
	ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return ld
}

// traceIDMap pairs the trace IDs of a capture with those of its copy (the
// copy has the same spans in the same order).
func traceIDMap(t *testing.T, orig, cp ptrace.Traces) map[pcommon.TraceID]pcommon.TraceID {
	t.Helper()
	var a, b []pcommon.TraceID
	trajectory.ForEachSpan(orig, func(s ptrace.Span) { a = append(a, s.TraceID()) })
	trajectory.ForEachSpan(cp, func(s ptrace.Span) { b = append(b, s.TraceID()) })
	if len(a) != len(b) {
		t.Fatalf("copy has %d spans, capture %d", len(b), len(a))
	}
	m := map[pcommon.TraceID]pcommon.TraceID{}
	for i := range a {
		m[a[i]] = b[i]
	}
	return m
}

// splitLogs gives the records their trace's new ID (records of a trace not
// in the capture get a fresh one) and deals them over n requests.
func splitLogs(ld plog.Logs, ids map[pcommon.TraceID]pcommon.TraceID, n int) []plog.Logs {
	out := make([]plog.Logs, n)
	for i := range out {
		out[i] = plog.NewLogs()
	}
	i := 0
	rls := ld.ResourceLogs()
	for a := 0; a < rls.Len(); a++ {
		rl := rls.At(a)
		sls := rl.ScopeLogs()
		for b := 0; b < sls.Len(); b++ {
			sl := sls.At(b)
			recs := sl.LogRecords()
			for c := 0; c < recs.Len(); c++ {
				rec := recs.At(c)
				if !rec.TraceID().IsEmpty() {
					id, ok := ids[rec.TraceID()]
					if !ok {
						_, _ = rand.Read(id[:])
						ids[rec.TraceID()] = id
					}
					rec.SetTraceID(id)
				}
				dst := out[i%n]
				i++
				drl := dst.ResourceLogs().AppendEmpty()
				rl.Resource().CopyTo(drl.Resource())
				dsl := drl.ScopeLogs().AppendEmpty()
				sl.Scope().CopyTo(dsl.Scope())
				rec.CopyTo(dsl.LogRecords().AppendEmpty())
			}
		}
	}
	var nonEmpty []plog.Logs
	for _, l := range out {
		if l.LogRecordCount() > 0 {
			nonEmpty = append(nonEmpty, l)
		}
	}
	return nonEmpty
}

// forEachExportedLogRecord reads a file exporter's logs output (one
// OTLP/JSON logs request per line).
func forEachExportedLogRecord(t *testing.T, path string, fn func(plog.LogRecord)) {
	t.Helper()
	forEachExportLine(t, path, "logs", func(line []byte) error {
		ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(line)
		if err == nil {
			trajectory.ForEachLogRecord(ld, fn)
		}
		return err
	})
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ---- telemetry ----

// promSeries maps each series of a Prometheus text exposition (name{labels})
// to its value, summed over the scraped collectors.
type promSeries map[string]float64

// sum adds the series of a metric (with or without the _total suffix)
// whose labels contain every given name="value".
func (m promSeries) sum(name string, labels ...string) float64 {
	var total float64
	for series, v := range m {
		n, rest, _ := strings.Cut(series, "{")
		if strings.TrimSuffix(n, "_total") != name {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(rest, l) {
				ok = false
			}
		}
		if ok {
			total += v
		}
	}
	return total
}

func scrapeAll(t *testing.T, insts []*tierInstance) promSeries {
	t.Helper()
	out := promSeries{}
	for _, inst := range insts {
		resp, err := promClient.Get(inst.telemetryURL)
		if err != nil {
			t.Fatalf("scraping %s: %v", inst.telemetryURL, err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "#") {
				continue
			}
			sp := strings.LastIndexByte(line, ' ')
			if sp < 0 {
				continue
			}
			if v, err := strconv.ParseFloat(line[sp+1:], 64); err == nil {
				out[line[:sp]] += v
			}
		}
		resp.Body.Close()
	}
	return out
}

// telemetryReader is the service.telemetry block of a collector config
// that serves its own metrics for Prometheus on a loopback port.
func telemetryReader(port int) string {
	return fmt.Sprintf(`service:
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: %d
`, port)
}

func waitTelemetryReady(t *testing.T, c *collector, url string) {
	t.Helper()
	waitReady(t, c, "telemetry endpoint "+url, func() (*http.Response, error) { return promClient.Get(url) })
}

// waitStreamLen waits until the decision stream holds at least n entries
// (the stream exporter delivers from its own queue, after the webhook may
// already have them).
func waitStreamLen(t *testing.T, addr string, n int) {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	deadline := time.Now().Add(decisionsTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, err := client.XLen(ctx, decisionStream).Result()
		cancel()
		if err == nil && got >= int64(n) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream %s holds %d entries after %s, want %d (%v)", decisionStream, got, decisionsTimeout, n, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ---- the load-balancing exporter's hash ring ----

// hashRing replicates the consistent hash ring of contrib's
// loadbalancingexporter v0.161.0 (consistent_hashing.go): 200 points per
// endpoint at crc32(endpoint || uint32le(i)) mod 131071, collisions probed
// forward up to 10 positions; a routing key goes to the first point at or
// after crc32(key) mod 131071. The test uses it to send a session's runs to
// chosen tier-2 instances, and checks it against where every trace of the
// first pass actually went, so a drift from the exporter fails loudly.
type hashRing struct {
	pos []uint32
	ep  []string
}

const (
	ringPositions = 131071
	ringWeight    = 200
	ringProbes    = 10
)

func newHashRing(endpoints []string) hashRing {
	type cand struct {
		pos, hash uint32
		ep        string
	}
	var cands []cand
	buf := make([]byte, 4)
	for _, ep := range endpoints {
		for i := range ringWeight {
			h := crc32.NewIEEE()
			binary.LittleEndian.PutUint32(buf, uint32(i))
			h.Write([]byte(ep))
			h.Write(buf)
			s := h.Sum32()
			cands = append(cands, cand{pos: s % ringPositions, hash: s, ep: ep})
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].pos != cands[j].pos {
			return cands[i].pos < cands[j].pos
		}
		if cands[i].hash != cands[j].hash {
			return cands[i].hash < cands[j].hash
		}
		return cands[i].ep < cands[j].ep
	})
	type item struct {
		pos uint32
		ep  string
	}
	var items []item
	used := map[uint32]bool{}
	for _, c := range cands {
		p, probed := c.pos, 0
		for used[p] && probed < ringProbes {
			p, probed = (p+1)%ringPositions, probed+1
		}
		if probed >= ringProbes {
			continue
		}
		used[p] = true
		items = append(items, item{p, c.ep})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].pos < items[j].pos })
	var r hashRing
	for _, it := range items {
		r.pos, r.ep = append(r.pos, it.pos), append(r.ep, it.ep)
	}
	return r
}

func (r hashRing) endpointFor(key []byte) string {
	p := crc32.ChecksumIEEE(key) % ringPositions
	i := sort.Search(len(r.pos), func(i int) bool { return r.pos[i] >= p })
	if i == len(r.pos) {
		i = 0
	}
	return r.ep[i]
}
