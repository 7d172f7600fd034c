//go:build e2e

package e2e

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/guard"
)

// TestMeasureInFlightLatency measures, on the ocb-built collector,
// the time from the OTLP request carrying the span that trips the loop
// guard reaching the collector to the in-flight decision's POST reaching a
// webhook receiver: the loop capture's spans before that span are sent
// first, then (timed) the request holding it. One sample is one run (fresh
// trace ID and session); its root is sent afterwards. It logs the p50, p99
// and max of the samples and asserts nothing about them (a measurement, run
// on demand; skipped unless TRIAGE_INFLIGHT_SAMPLES is set):
//
//	TRIAGE_INFLIGHT_SAMPLES=200 go test -tags e2e -count=1 -v -run TestMeasureInFlightLatency ./e2e/
func TestMeasureInFlightLatency(b *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TRIAGE_INFLIGHT_SAMPLES"))
	if n <= 0 {
		b.Skip("a measurement: set TRIAGE_INFLIGHT_SAMPLES to run it")
	}
	repo := repoRoot(b)
	shared := sharedDir(b, repo)
	otelcol := collectorBinary(b, repo)
	work := b.TempDir()
	capture := filepath.Join(shared, "fixtures", "frameworks", "openai-otel", "loop.json")
	before, tripping, root := splitAtTrip(b, capture)

	rec := newArrivalReceiver(b)
	ports := freePorts(b, 1)
	key := make([]byte, 24)
	_, _ = rand.Read(key)
	cfg := decisionsConfig{otlpPort: ports[0], webhookURL: rec.url(), secret: "whsec_" + base64.StdEncoding.EncodeToString(key), wait: time.Minute}
	cfgPath := filepath.Join(work, "otelcol.yaml")
	writeFile(b, cfgPath, cfg.yaml())
	col := startCollector(b, otelcol, cfgPath, filepath.Join(work, "otelcol.log"))
	endpoint := fmt.Sprintf("http://127.0.0.1:%d/v1/traces", ports[0])
	waitHTTPReady(b, col, fmt.Sprintf("http://127.0.0.1:%d", ports[0]))
	client := &http.Client{Timeout: 10 * time.Second}

	samples := make([]time.Duration, 0, n)
	for i := range n {
		var tid pcommon.TraceID
		_, _ = rand.Read(tid[:])
		session := fmt.Sprintf("lat-%d-%s", i, tid)
		post(b, client, endpoint, withTrace(before, tid, session))
		body := withTrace(tripping, tid, session)
		sent := time.Now()
		post(b, client, endpoint, body)
		got, ok := rec.wait(tid.String(), 30*time.Second)
		if !ok {
			b.Fatalf("run %d: no in-flight decision within 30s:\n%s", i, col.logTail())
		}
		samples = append(samples, got.Sub(sent))
		post(b, client, endpoint, withTrace(root, tid, session))
	}
	slices.Sort(samples)
	pct := func(p float64) time.Duration { return samples[min(len(samples)-1, int(p*float64(len(samples))))] }
	b.Logf("%s, %d runs: tripping span's request sent -> in-flight decision POST received: p50 %s, p99 %s, max %s",
		filepath.Base(filepath.Dir(capture))+"/"+filepath.Base(capture), n, pct(0.50).Round(100*time.Microsecond),
		pct(0.99).Round(100*time.Microsecond), samples[len(samples)-1].Round(100*time.Microsecond))
	col.stop(b)
}

// splitAtTrip cuts a capture's spans (in end order, parentless ones held
// back) into those before the span that trips a guard, that span and the
// rest of the run's body, and the roots; the trip is found with the guard
// library the collector runs.
func splitAtTrip(b *testing.T, path string) (before, tripping, roots []byte) {
	b.Helper()
	td := readTraces(b, path)
	type item struct {
		rs ptrace.ResourceSpans
		ss ptrace.ScopeSpans
		s  ptrace.Span
	}
	var body, rootItems []item
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				it := item{rs, ss, ss.Spans().At(k)}
				if it.s.ParentSpanID().IsEmpty() {
					rootItems = append(rootItems, it)
				} else {
					body = append(body, it)
				}
			}
		}
	}
	slices.SortStableFunc(body, func(x, y item) int { return cmp.Compare(x.s.EndTimestamp(), y.s.EndTimestamp()) })
	cls, _ := classifier.New(classifier.Options{})
	g, err := guard.New(guard.DefaultConfig(), cls, nil)
	if err != nil {
		b.Fatal(err)
	}
	run := g.NewRun()
	cut := -1
	for i, it := range body {
		if trips := run.Add([]guard.Span{{Span: it.s, Resource: it.rs.Resource(), Scope: it.ss.Scope().Name()}}); len(trips) > 0 {
			cut = i
			break
		}
	}
	if cut < 0 {
		b.Fatalf("%s trips no guard before its root", path)
	}
	build := func(items []item) []byte {
		out := ptrace.NewTraces()
		for _, it := range items {
			rs := out.ResourceSpans().AppendEmpty()
			it.rs.Resource().CopyTo(rs.Resource())
			ss := rs.ScopeSpans().AppendEmpty()
			it.ss.Scope().CopyTo(ss.Scope())
			it.s.CopyTo(ss.Spans().AppendEmpty())
		}
		enc, err := (&ptrace.JSONMarshaler{}).MarshalTraces(out)
		if err != nil {
			b.Fatal(err)
		}
		return enc
	}
	return build(body[:cut]), build(body[cut:]), build(rootItems)
}

// withTrace gives every span of an OTLP/JSON request the trace ID tid and
// the session attribute.
func withTrace(req []byte, tid pcommon.TraceID, session string) []byte {
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(req)
	if err != nil {
		panic(err)
	}
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			spans := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				spans.At(k).SetTraceID(tid)
				spans.At(k).Attributes().PutStr(sessionAttr, session)
			}
		}
	}
	enc, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	return enc
}

func post(b testing.TB, c *http.Client, url string, body []byte) {
	b.Helper()
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b.Fatalf("POST %s: %s", url, resp.Status)
	}
}

// arrivalReceiver answers every webhook POST 204 and notes when the first
// in-flight decision of each trace arrived.
type arrivalReceiver struct {
	addr string
	mu   sync.Mutex
	at   map[string]time.Time
	cond *sync.Cond
}

func newArrivalReceiver(b testing.TB) *arrivalReceiver {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	r := &arrivalReceiver{addr: ln.Addr().String(), at: map[string]time.Time{}}
	r.cond = sync.NewCond(&r.mu)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now()
		body, _ := io.ReadAll(req.Body)
		var d struct {
			Phase   string `json:"phase"`
			TraceID string `json:"trace_id"`
		}
		if json.Unmarshal(body, &d) == nil && d.Phase == "in_flight" {
			r.mu.Lock()
			if _, seen := r.at[d.TraceID]; !seen {
				r.at[d.TraceID] = now
			}
			r.cond.Broadcast()
			r.mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return r
}

func (r *arrivalReceiver) url() string { return "http://" + r.addr + "/decisions" }

func (r *arrivalReceiver) wait(traceID string, timeout time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(timeout)
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if t, ok := r.at[traceID]; ok {
			return t, true
		}
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
		r.mu.Unlock()
		time.Sleep(time.Millisecond)
		r.mu.Lock()
	}
}
