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
	"math"
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

// TestMeasureDecisionLatency measures, on the ocb-built collector, how
// long a decision takes from the OTLP request that makes it reaching the
// collector to its webhook POST reaching a receiver:
//
//   - in-flight: the loop capture's spans before the span that trips the
//     loop guard are sent first, then (timed) the request holding that
//     span; the clock stops when the in-flight decision's POST arrives;
//   - final: then (timed) the request holding the run's root; the clock
//     stops when the final decision's POST arrives.
//
// One sample is one run (fresh trace ID and session), runs one after the
// other on an otherwise idle collector. The start time is taken just
// before the OTLP/HTTP request is written (loopback), the stop time when
// the receiver has read the POST's body. It logs p50, p90, p99 and max of
// each series and asserts nothing about them: a measurement, run on demand
// (skipped unless TRIAGE_LATENCY_SAMPLES is set; make latency):
//
//	TRIAGE_LATENCY_SAMPLES=300 go test -tags e2e -count=1 -v -run TestMeasureDecisionLatency ./e2e/
//
// TRIAGE_LATENCY_QUEUE=file puts the webhook exporter's sending queue on
// file_storage, as config.example.yaml does (default: the in-memory queue).
func TestMeasureDecisionLatency(b *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TRIAGE_LATENCY_SAMPLES"))
	if n <= 0 {
		b.Skip("a measurement: set TRIAGE_LATENCY_SAMPLES to run it (make latency)")
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
	queue := cmp.Or(os.Getenv("TRIAGE_LATENCY_QUEUE"), "memory")
	switch queue {
	case "memory":
	case "file":
		cfg.storageDir = filepath.Join(work, "queue")
	default:
		b.Fatalf("TRIAGE_LATENCY_QUEUE=%q: want memory or file", queue)
	}
	cfgPath := filepath.Join(work, "otelcol.yaml")
	writeFile(b, cfgPath, cfg.yaml())
	col := startCollector(b, otelcol, cfgPath, filepath.Join(work, "otelcol.log"))
	endpoint := fmt.Sprintf("http://127.0.0.1:%d/v1/traces", ports[0])
	waitHTTPReady(b, col, fmt.Sprintf("http://127.0.0.1:%d", ports[0]))
	client := &http.Client{Timeout: 10 * time.Second}

	// timed sends body and waits for the trace's decision of that phase.
	timed := func(i int, body []byte, tid pcommon.TraceID, phase string) time.Duration {
		sent := time.Now()
		post(b, client, endpoint, body)
		got, ok := rec.wait(tid.String(), phase, 30*time.Second)
		if !ok {
			b.Fatalf("run %d: no %s decision within 30s:\n%s", i, phase, col.logTail())
		}
		return got.Sub(sent)
	}
	inFlight := make([]time.Duration, 0, n)
	final := make([]time.Duration, 0, n)
	for i := range n {
		var tid pcommon.TraceID
		_, _ = rand.Read(tid[:])
		session := fmt.Sprintf("lat-%d-%s", i, tid)
		post(b, client, endpoint, withTrace(before, tid, session))
		inFlight = append(inFlight, timed(i, withTrace(tripping, tid, session), tid, "in_flight"))
		final = append(final, timed(i, withTrace(root, tid, session), tid, "final"))
	}
	name := filepath.Base(filepath.Dir(capture)) + "/" + filepath.Base(capture)
	b.Logf("%s, %d runs, %s queue: tripping span's request sent -> in-flight decision POST received: %s", name, n, queue, percentiles(inFlight))
	b.Logf("%s, %d runs, %s queue: root span's request sent -> final decision POST received: %s", name, n, queue, percentiles(final))
	col.stop(b)
}

// percentiles says p50, p90, p99 (nearest rank) and max of samples.
func percentiles(samples []time.Duration) string {
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		return s[max(0, int(math.Ceil(p*float64(len(s))))-1)].Round(10 * time.Microsecond)
	}
	return fmt.Sprintf("p50 %s, p90 %s, p99 %s, max %s", rank(0.50), rank(0.90), rank(0.99), s[len(s)-1].Round(10*time.Microsecond))
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
// decision of each phase of each trace arrived.
type arrivalReceiver struct {
	addr string
	mu   sync.Mutex
	at   map[arrivalKey]time.Time
}

type arrivalKey struct{ traceID, phase string }

func newArrivalReceiver(b testing.TB) *arrivalReceiver {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	r := &arrivalReceiver{addr: ln.Addr().String(), at: map[arrivalKey]time.Time{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now()
		body, _ := io.ReadAll(req.Body)
		var d struct {
			Phase   string `json:"phase"`
			TraceID string `json:"trace_id"`
		}
		if json.Unmarshal(body, &d) == nil {
			k := arrivalKey{d.TraceID, d.Phase}
			r.mu.Lock()
			if _, seen := r.at[k]; !seen {
				r.at[k] = now
			}
			r.mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return r
}

func (r *arrivalReceiver) url() string { return "http://" + r.addr + "/decisions" }

func (r *arrivalReceiver) wait(traceID, phase string, timeout time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(timeout)
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if t, ok := r.at[arrivalKey{traceID, phase}]; ok {
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
