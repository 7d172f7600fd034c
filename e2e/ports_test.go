//go:build e2e

package e2e

import (
	"testing"

	"github.com/triage-otel/triage/internal/loopback"
)

// freePorts returns n distinct loopback ports for collectors the test
// starts (loopback.FreePorts: below the ephemeral range, none twice).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := loopback.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}
