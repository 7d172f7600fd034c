package strategy

import (
	"fmt"
	"testing"

	"github.com/triage-otel/triage/classifier"
)

// manifestHint and stepPath write what fmt.Sprintf wrote before them.
func FuzzManifestHintMatchesSprintf(f *testing.F) {
	for _, s := range []string{"", "search", `say "hi"`, "tab\there", "ünïcode", "\xff\xfe bad utf-8", "back\\slash", "\x00\x7f"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, tool string, i int) {
		for _, ft := range []classifier.FailureType{classifier.SchemaMismatch, "tool_not_found"} {
			base := manifestHint(ft, "")
			want := base
			if tool != "" {
				want = fmt.Sprintf("The previous call to tool %q was rejected. %s", tool, base)
			}
			if got := manifestHint(ft, tool); got != want {
				t.Fatalf("manifestHint(%q, %q) = %q, want %q", ft, tool, got, want)
			}
		}
		if got, want := stepPath(tool, i), fmt.Sprintf("%s.steps[%d]", tool, i); got != want {
			t.Fatalf("stepPath = %q, want %q", got, want)
		}
	})
}
