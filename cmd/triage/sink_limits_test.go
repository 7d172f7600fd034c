package main

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startSink serves a sink with the given limits on a loopback port.
func startSink(t *testing.T, l sinkLimits) (addr string, out, errs *syncBuffer) {
	t.Helper()
	out, errs = &syncBuffer{}, &syncBuffer{}
	h, err := newSinkHandler(devWebhookSecret, 5*time.Minute, out, errs)
	if err != nil {
		t.Fatal(err)
	}
	h.maxBody = l.maxBody
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newSinkServer(h, l)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), out, errs
}

// A client that stops half-way through its headers, or announces a body and
// never finishes it, is cut off by the read timeout instead of holding the
// connection for ever.
func TestSinkCutsOffStalledRequests(t *testing.T) {
	l := defaultSinkLimits
	l.readTimeout = 300 * time.Millisecond
	addr, _, _ := startSink(t, l)
	for name, partial := range map[string]string{
		"headers": "POST /decisions HTTP/1.1\r\nHost: x\r\n",
		"body":    "POST /decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"decision_id\":",
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(conn, partial)
		start := time.Now()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = io.ReadAll(conn) // until the sink closes the connection
		conn.Close()
		if err != nil {
			t.Fatalf("stalled %s: the sink did not close the connection: %v", name, err)
		}
		if waited := time.Since(start); waited > 5*time.Second {
			t.Fatalf("stalled %s: connection held %s", name, waited)
		}
	}
}

func TestSinkRefusesOversizedRequests(t *testing.T) {
	l := defaultSinkLimits
	l.maxBody = 64
	addr, out, errs := startSink(t, l)
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(devWebhookSecret, "whsec_"))
	big := `{"decision_id":"` + strings.Repeat("x", 100) + `"}`

	// Announced too large.
	r := signedRequest(t, key, "dec-big", time.Now(), big)
	r.RequestURI = ""
	r.URL.Scheme, r.URL.Host = "http", addr
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("announced oversized body: status %d, want 413", resp.StatusCode)
	}

	// Chunked, with no length announced: cut at the limit.
	if code := rawStatus(t, addr, fmt.Sprintf("POST /d HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nwebhook-id: dec-chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(big), big)); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked oversized body: status %d, want 413", code)
	}
	// Huge headers.
	if code := rawStatus(t, addr, fmt.Sprintf("POST /d HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\n\r\n", strings.Repeat("p", 2*sinkMaxHeaderBytes))); code != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("oversized headers: status %d, want 431", code)
	}
	if out.String() != "" {
		t.Fatalf("nothing may be printed as a decision, got %q", out.String())
	}
	if !strings.Contains(errs.String(), "dec-chunked") {
		t.Fatalf("the rejection is reported: %q", errs.String())
	}
}

func TestSinkLimitFlagsValidated(t *testing.T) {
	var stdout, stderr strings.Builder
	if code := run([]string{"sink", "--read-timeout", "0s"}, &stdout, &stderr); code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	if !strings.Contains(stderr.String(), "must be positive") {
		t.Fatalf("stderr: %q", stderr.String())
	}
}

// rawStatus writes a raw HTTP/1.1 request to addr and returns the status of
// the answer.
func rawStatus(t *testing.T, addr, request string) int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
