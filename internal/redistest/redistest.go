// Package redistest holds the one policy the tests that need a real Redis
// share: where redis-server comes from, and what a missing one means.
package redistest

import (
	"os"
	"os/exec"
	"testing"
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
