package recovery

import (
	"encoding/hex"
	"math/rand/v2"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// TestAlphabetRedactorMatchesRedact holds the trace sessions' redactor to
// Redact and textOnce: trace sessions of random ids, ones with a card
// number's digits in the id, texts with bytes outside the alphabet, and
// redactors whose extra patterns match (and change) trace sessions.
func TestAlphabetRedactorMatchesRedact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var texts []string
	for range 3000 {
		var id pcommon.TraceID
		for i := range id {
			id[i] = byte(rng.Uint32())
		}
		texts = append(texts, traceSession(id))
	}
	texts = append(texts, "", "trace:", "trace:4111111111111111abcdefabcdef0123", "trace:0000411111111111111100000000000",
		"trace:5555555555554444", "trace:ABCDEF", "trace: bearer 0123456789abcdef", "trace:é", "trace:\xff",
		"bearerbearer0123456789abcdef", "trace:sk-abcdefghijklmnopqrstuvwx", "trace:a.b@example.com")
	redactors := map[string]*Redactor{
		"default": NewRedactor(RedactorOptions{}),
		"hex":     NewRedactor(RedactorOptions{ExtraPatterns: []string{`[0-9a-f]{8}`}}),
		"prefix":  NewRedactor(RedactorOptions{ExtraPatterns: []string{`trace:[0-9]`}, MaxLen: 12}),
	}
	for name, r := range redactors {
		a := r.over(traceSessionAlphabet)
		if name == "default" && len(a.patterns) >= len(r.patterns) {
			t.Fatalf("every pattern kept for trace sessions: %d of %d", len(a.patterns), len(r.patterns))
		}
		for _, s := range texts {
			if got, want := a.Redact(s), r.Redact(s); got != want {
				t.Fatalf("%s: Redact(%q) = %q, want %q", name, s, got, want)
			}
			if got, want := a.textOnce(s), r.textOnce(s); got != want {
				t.Fatalf("%s: textOnce(%q) = %q, want %q", name, s, got, want)
			}
		}
	}
	// The ids' hex is what traceSession writes.
	if got := traceSession(pcommon.TraceID{0xab, 15: 0x01}); got != "trace:"+hex.EncodeToString([]byte{0xab, 14: 0, 15: 0x01}) {
		t.Fatalf("traceSession = %q", got)
	}
}
