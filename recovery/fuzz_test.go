package recovery

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/classifier"
)

func FuzzRedactor(f *testing.F) {
	for _, s := range []string{"", "password=hunter2", `{"api_key":"sk-abcdefghijklmnopqrstuv"}`, "Bearer abcdefghijkl",
		"redis://u:p@h", "\xff\xfe", strings.Repeat("{", 100), "-----BEGIN PRIVATE KEY-----\nabc"} {
		f.Add(s)
	}
	r := NewRedactor(RedactorOptions{MaxLen: 64})
	const key = "sk-FUZZsecretFUZZsecretFUZZ"
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{r.Redact(s), r.Text(s), r.JSON(s), r.Truncate(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("invalid UTF-8 from %q: %q", s, out)
			}
		}
		if len(r.Text(s)) > 64+64 {
			t.Fatalf("Text not bounded: %d bytes", len(r.Text(s)))
		}
		// A planted key surrounded by spaces never survives, whatever the context.
		if strings.Contains(r.Redact(s+" "+key+" "+s), "FUZZsecretFUZZ") && !strings.Contains(s, "FUZZsecretFUZZ") {
			t.Fatalf("planted key survived in %q", s)
		}
	})
}

func FuzzDecideInput(f *testing.F) {
	f.Add("timeout", "conv", testTrace[:], testSpan[:], "reason", 0.5)
	f.Add("", "", []byte{}, []byte{}, "", -1.0)
	f.Add("external_fault", strings.Repeat("s", 300), testTrace[:], []byte{1}, "\xff", 2.0)
	e, err := New(DefaultOptions())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, ft, session string, trace, span []byte, reason string, conf float64) {
		var traceID pcommon.TraceID
		var spanID pcommon.SpanID
		copy(traceID[:], trace)
		copy(spanID[:], span)
		d, err := e.Decide(context.Background(), Input{FailureType: classifier.FailureType(ft), SessionID: session, TraceID: traceID, SpanID: spanID,
			Reason: reason, Confidence: conf, Evidence: []Evidence{{SpanID: spanID, Signal: reason, Reason: reason}}})
		if err != nil {
			return
		}
		raw, err := d.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateDecisionJSON(raw); err != nil {
			t.Fatalf("decision for %q/%q does not validate: %v\n%s", ft, session, err, raw)
		}
	})
}
