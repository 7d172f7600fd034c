// Package redistest holds the one policy the tests that need a real Redis
// share: where redis-server comes from, and what a missing one means.
package redistest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"
)

// RequireEnv names the variable that turns a missing redis-server into a
// test failure instead of a skip. CI (.ci/run) installs redis-server and
// sets it, so a missing install step cannot pass silently.
const RequireEnv = "TRIAGE_REQUIRE_REDIS"

// Binary returns the path of redis-server on PATH. Without one the test is
// skipped, unless RequireEnv is "1", where it fails.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("redis-server not found and %s=1: %v", RequireEnv, err)
		}
		t.Skipf("redis-server not found (apt-get install -y redis-server; set %s=1 to make this a failure)", RequireEnv)
	}
	return bin
}

// Start runs redis-server (see Binary) on a free loopback port with
// persistence off, waits until it answers, stops it when the test ends,
// and returns its host:port.
func Start(t testing.TB) string {
	t.Helper()
	bin := Binary(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	for range 100 {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, werr := c.Write([]byte("PING\r\n"))
			buf := make([]byte, 7)
			n, rerr := c.Read(buf)
			c.Close()
			if werr == nil && rerr == nil && string(buf[:n]) == "+PONG\r\n" {
				return addr
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("redis-server on %s did not answer", addr)
	return ""
}
