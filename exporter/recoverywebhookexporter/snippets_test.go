package recoverywebhookexporter

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeVerifiersAcceptRealRequests runs the Python and JavaScript
// verifiers shipped in testdata (and quoted in the README) on a request the
// exporter really sent, for both secret forms, and checks that they reject a
// tampered body. Skipped for an interpreter that is not installed.
func TestReadmeVerifiersAcceptRealRequests(t *testing.T) {
	type capture struct {
		Headers map[string]string
		Body    string
	}
	var mu sync.Mutex
	var got *capture
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = &capture{Headers: map[string]string{}, Body: string(body)}
		for _, h := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
			got.Headers[h] = r.Header.Get(h)
		}
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	type verifyCase struct {
		Secret  string            `json:"secret"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	var cases []verifyCase
	var want []string
	raw := "raw-secret-for-snippets"
	for _, secret := range []string{testSecret, raw, "whsec_" + base64.StdEncoding.EncodeToString([]byte(raw))} {
		mu.Lock()
		got = nil
		mu.Unlock()
		h := startExporter(t, testConfig(srv.URL, secret))
		require.NoError(t, h.exp.ConsumeLogs(context.Background(), decisionLogs("dec-snippet")))
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return got != nil
		}, 10*time.Second, 10*time.Millisecond)
		h.shutdown(t)

		mu.Lock()
		c := *got
		mu.Unlock()
		cases = append(cases, verifyCase{Secret: secret, Headers: c.Headers, Body: c.Body})
		cases = append(cases, verifyCase{Secret: secret, Headers: c.Headers,
			Body: strings.Replace(c.Body, "backoff_and_retry", "abort", 1)})
		want = append(want, "True", "False")
	}
	// The other secret form of the same key must not verify either.
	cases = append(cases, verifyCase{Secret: raw, Headers: cases[0].Headers, Body: cases[0].Body})
	want = append(want, "False")

	encoded, err := json.Marshal(cases)
	require.NoError(t, err)
	casesFile := filepath.Join(t.TempDir(), "cases.json")
	require.NoError(t, os.WriteFile(casesFile, encoded, 0o600))
	testdata, err := filepath.Abs("testdata")
	require.NoError(t, err)

	runners := map[string][]string{
		"python3": {"-c", `import json, sys; sys.path.insert(0, sys.argv[1]); from verify import verify
for c in json.load(open(sys.argv[2])): print(verify(c["secret"], c["headers"], c["body"].encode()))`},
		"node": {"-e", `const { verify } = require(process.argv[1] + "/verify.js");
for (const c of JSON.parse(require("fs").readFileSync(process.argv[2])))
  console.log(verify(c.secret, c.headers, Buffer.from(c.body)) ? "True" : "False");`},
	}
	for interpreter, args := range runners {
		if _, err := exec.LookPath(interpreter); err != nil {
			t.Logf("%s not installed: snippet not checked", interpreter)
			continue
		}
		out, err := exec.Command(interpreter, append(args, testdata, casesFile)...).CombinedOutput()
		require.NoError(t, err, "%s: %s", interpreter, out)
		require.Equal(t, want, strings.Fields(string(out)), interpreter)
	}
}

// TestExampleReceiver runs testdata/receiver.py (the README's local sink) and
// checks that it accepts signed decisions and acts once per webhook-id.
func TestExampleReceiver(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	require.NoError(t, ln.Close())

	var out syncBuffer
	cmd := exec.Command("python3", filepath.Join("testdata", "receiver.py"), port)
	cmd.Env = append(os.Environ(), "TRIAGE_WEBHOOK_SECRET="+testSecret)
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}, 30*time.Second, 50*time.Millisecond)

	h := startExporter(t, testConfig("http://"+addr+"/", testSecret))
	require.NoError(t, h.exp.ConsumeLogs(context.Background(), decisionLogs("dec-r1", "dec-r2")))
	// The same decision again (as after a lost answer): acknowledged, not acted on.
	require.NoError(t, h.exp.ConsumeLogs(context.Background(), decisionLogs("dec-r1")))
	require.Eventually(t, func() bool {
		return h.counter(t, "recovery_webhook_decisions_delivered", nil) == 3
	}, 30*time.Second, 20*time.Millisecond)
	h.shutdown(t)

	var lines []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]string
		require.NoError(t, json.Unmarshal([]byte(line), &m), out.String())
		lines = append(lines, m)
	}
	require.Len(t, lines, 2, out.String())
	assert.Equal(t, "dec-r1", lines[0]["webhook_id"])
	assert.Equal(t, "dec-r2", lines[1]["webhook_id"])
	assert.Equal(t, "backoff_and_retry", lines[0]["action"])
	assert.Zero(t, h.counter(t, "recovery_webhook_decisions_dropped", nil), "signatures verified")
}

type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
