package recoverywebhookexporter

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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
