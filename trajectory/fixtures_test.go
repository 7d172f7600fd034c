package trajectory

import (
	"os"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

const fixturesDir = "/work/shared/fixtures/frameworks"

func loadFixture(tb testing.TB, path string) ptrace.Traces {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Skipf("fixture not available: %v", err)
	}
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(data)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return td
}
