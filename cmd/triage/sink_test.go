package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/triage-otel/triage/exporter/recoverywebhookexporter"
)

// syncBuffer is a bytes.Buffer safe for the handler's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) lines() []string {
	var out []string
	for _, l := range strings.Split(s.String(), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// signedRequest builds a request signed as the Standard Webhooks spec says,
// written out here rather than shared with the sink.
func signedRequest(t *testing.T, key []byte, id string, ts time.Time, body string) *http.Request {
	t.Helper()
	tsStr := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", id, tsStr, body)
	r := httptest.NewRequest(http.MethodPost, "/decisions", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("webhook-id", id)
	r.Header.Set("webhook-timestamp", tsStr)
	r.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return r
}

func serve(h http.Handler, r *http.Request) int {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec.Code
}

func TestSinkVerifiesDedupesAndPrints(t *testing.T) {
	devKey, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(devWebhookSecret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1795986000, 0)
	decision := `{"decision_id":"d-1",  "failure_type":"timeout", "action":{"kind":"replan"}}`

	for _, tc := range []struct {
		name     string
		secret   string
		req      func() *http.Request
		wantCode int
		wantOut  int
	}{
		{"whsec secret", devWebhookSecret, func() *http.Request { return signedRequest(t, devKey, "d-1", now, decision) }, http.StatusNoContent, 1},
		{"raw secret", "plain-secret", func() *http.Request { return signedRequest(t, []byte("plain-secret"), "d-1", now, decision) }, http.StatusNoContent, 1},
		{"wrong secret", devWebhookSecret, func() *http.Request { return signedRequest(t, []byte("other"), "d-1", now, decision) }, http.StatusUnauthorized, 0},
		{"altered body", devWebhookSecret, func() *http.Request {
			r := signedRequest(t, devKey, "d-1", now, decision)
			r.Body = httptestBody(strings.Replace(decision, "replan", "abort__", 1))
			return r
		}, http.StatusUnauthorized, 0},
		{"altered id", devWebhookSecret, func() *http.Request {
			r := signedRequest(t, devKey, "d-1", now, decision)
			r.Header.Set("webhook-id", "d-2")
			return r
		}, http.StatusUnauthorized, 0},
		{"stale timestamp", devWebhookSecret, func() *http.Request { return signedRequest(t, devKey, "d-1", now.Add(-6*time.Minute), decision) }, http.StatusUnauthorized, 0},
		{"future timestamp", devWebhookSecret, func() *http.Request { return signedRequest(t, devKey, "d-1", now.Add(6*time.Minute), decision) }, http.StatusUnauthorized, 0},
		{"unsigned", devWebhookSecret, func() *http.Request {
			r := signedRequest(t, devKey, "d-1", now, decision)
			r.Header.Del("webhook-signature")
			return r
		}, http.StatusUnauthorized, 0},
		{"second of several signatures", devWebhookSecret, func() *http.Request {
			r := signedRequest(t, devKey, "d-1", now, decision)
			r.Header.Set("webhook-signature", "v1,AAAA "+r.Header.Get("webhook-signature"))
			return r
		}, http.StatusNoContent, 1},
		{"not a JSON object", devWebhookSecret, func() *http.Request { return signedRequest(t, devKey, "d-1", now, `["x"]`) }, http.StatusBadRequest, 0},
		{"GET", devWebhookSecret, func() *http.Request { return httptest.NewRequest(http.MethodGet, "/", nil) }, http.StatusMethodNotAllowed, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errw syncBuffer
			h, err := newSinkHandler(tc.secret, 5*time.Minute, &out, &errw)
			if err != nil {
				t.Fatal(err)
			}
			h.now = func() time.Time { return now }
			if code := serve(h, tc.req()); code != tc.wantCode {
				t.Fatalf("status %d, want %d (stderr: %s)", code, tc.wantCode, errw.String())
			}
			if got := out.lines(); len(got) != tc.wantOut {
				t.Fatalf("printed %d lines, want %d: %q", len(got), tc.wantOut, got)
			}
			if tc.wantOut == 1 {
				// One compact JSON line, the document unchanged.
				var got, want map[string]any
				if err := json.Unmarshal([]byte(out.lines()[0]), &got); err != nil {
					t.Fatal(err)
				}
				_ = json.Unmarshal([]byte(decision), &want)
				if fmt.Sprint(got) != fmt.Sprint(want) || strings.Contains(out.lines()[0], "  ") {
					t.Errorf("printed %s, want the compacted decision %s", out.lines()[0], decision)
				}
			}
		})
	}

	t.Run("duplicate webhook-id", func(t *testing.T) {
		var out, errw syncBuffer
		h, _ := newSinkHandler(devWebhookSecret, 5*time.Minute, &out, &errw)
		h.now = func() time.Time { return now }
		for i := range 3 {
			// A retry is re-signed with a later timestamp.
			if code := serve(h, signedRequest(t, devKey, "d-1", now.Add(time.Duration(i)*time.Second), decision)); code != http.StatusNoContent {
				t.Fatalf("attempt %d: status %d, want 204 (duplicates are acknowledged)", i, code)
			}
		}
		if n := len(out.lines()); n != 1 {
			t.Fatalf("printed %d lines for one webhook-id, want 1", n)
		}
		serve(h, signedRequest(t, devKey, "d-2", now, decision))
		if n := len(out.lines()); n != 2 {
			t.Fatalf("printed %d lines after a second webhook-id, want 2", n)
		}
	})

	t.Run("bounded memory of ids", func(t *testing.T) {
		var out, errw syncBuffer
		h, _ := newSinkHandler(devWebhookSecret, 5*time.Minute, &out, &errw)
		h.now = func() time.Time { return now }
		h.maxIDs = 2
		for _, id := range []string{"a", "b", "c", "a"} {
			serve(h, signedRequest(t, devKey, id, now, decision))
		}
		// "a" was forgotten when "c" came, so it prints again.
		if n := len(out.lines()); n != 4 || len(h.seen) != 2 {
			t.Fatalf("printed %d lines, remembers %d ids; want 4 and 2", n, len(h.seen))
		}
	})
}

func httptestBody(s string) *readCloser { return &readCloser{strings.NewReader(s)} }

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

func TestSinkRejectsBadSecrets(t *testing.T) {
	for _, s := range []string{"", "whsec_not base64!"} {
		if _, err := newSinkHandler(s, time.Minute, &syncBuffer{}, &syncBuffer{}); err == nil {
			t.Errorf("secret %q accepted", s)
		}
	}
	if code, _, _ := runCLI("sink", "--secret", ""); code != exitUsage {
		t.Errorf("triage sink --secret '': exit %d, want %d", code, exitUsage)
	}
	if code, _, _ := runCLI("sink", "extra"); code != exitUsage {
		t.Errorf("triage sink extra: exit %d, want %d", code, exitUsage)
	}
}

// The sink accepts what the real recovery_webhook exporter sends with the
// same secret, and refuses it with another.
func TestSinkReceivesTheWebhookExporter(t *testing.T) {
	for _, tc := range []struct {
		name           string
		exporterSecret string
		wantPrinted    int
	}{
		{"same secret", devWebhookSecret, 2},
		{"other secret", "whsec_" + base64.StdEncoding.EncodeToString([]byte("another-secret-entirely-32-bytes")), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errw syncBuffer
			h, err := newSinkHandler(devWebhookSecret, 5*time.Minute, &out, &errw)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()

			f := recoverywebhookexporter.NewFactory()
			cfg := f.CreateDefaultConfig().(*recoverywebhookexporter.Config)
			cfg.ClientConfig.Endpoint = srv.URL + "/decisions"
			cfg.Secret = configopaque.String(tc.exporterSecret)
			cfg.RetryConfig.Enabled = false
			exp, err := f.CreateLogs(context.Background(), exportertest.NewNopSettings(component.MustNewType("recovery_webhook")), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := exp.Start(context.Background(), componenttest.NewNopHost()); err != nil {
				t.Fatal(err)
			}
			ld := plog.NewLogs()
			lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
			for _, id := range []string{"dec-a", "dec-b", "dec-a"} {
				lr := lrs.AppendEmpty()
				lr.Body().SetStr(`{"decision_id":"` + id + `","failure_type":"timeout","action":{"kind":"replan"}}`)
				lr.Attributes().PutStr("triage.decision.id", id)
			}
			_ = exp.ConsumeLogs(context.Background(), ld)
			// Shutdown drains the sending queue.
			if err := exp.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := out.lines()
			if len(got) != tc.wantPrinted {
				t.Fatalf("sink printed %d decisions, want %d: %q (stderr: %s)", len(got), tc.wantPrinted, got, errw.String())
			}
			if tc.wantPrinted == 0 && !strings.Contains(errw.String(), "no v1 signature matches") {
				t.Errorf("rejection not explained on stderr: %q", errw.String())
			}
		})
	}
}

// config.example.yaml falls back to the sink's development secret, so
// `make run` and `triage sink` agree when TRIAGE_WEBHOOK_SECRET is unset.
func TestExampleConfigUsesTheSinkDevSecret(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := "${env:TRIAGE_WEBHOOK_SECRET:-" + devWebhookSecret + "}"
	if !bytes.Contains(b, []byte(want)) {
		t.Errorf("config.example.yaml does not use %s as the webhook secret", want)
	}
}
