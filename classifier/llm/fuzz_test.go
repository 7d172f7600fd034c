package llm

import (
	"strings"
	"testing"

	"github.com/triage-otel/triage/classifier"
)

// Whatever a model returns, parsing never panics, and an answer it accepts
// is one of the failure types with a confidence within 0..1; the gates
// never panic either, and a quote they accept occurs in the evidence.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{
		`{"failure_type":"timeout","confidence":0.9,"evidence":"timed out"}`,
		"<think>{not json}</think>\n```json\n{\"failure_type\":\"schema_mismatch\",\"confidence\":\"0.85\",\"evidence\":\"x\"}\n```",
		`{"failure_type":"nope"}{"failure_type":"unknown","confidence":0}`,
		"", "{", "```", "<think>", `{"failure_type":"timeout","confidence":1e309}`,
	} {
		f.Add(s, "the upstream timed out after 30 s")
	}
	f.Fuzz(func(t *testing.T, content, evidence string) {
		a, err := parseAnswer(content)
		if err != nil {
			return
		}
		if _, ok := classifier.ParseFailureType(string(a.FailureType)); !ok || a.Confidence < 0 || a.Confidence > 1 {
			t.Fatalf("accepted %+v from %q", a, content)
		}
		s := &classifier.Subject{Kind: classifier.SubjectRun}
		for _, masked := range []bool{false, true} {
			g, _ := gate(a, s, []string{evidence}, 0.5, masked)
			if g == "" && !masked && !strings.Contains(strings.Join(strings.Fields(strings.ToLower(evidence)), " "), strings.Join(strings.Fields(strings.ToLower(trimQuote(a.Evidence))), " ")) {
				t.Fatalf("accepted quote %q not in %q", a.Evidence, evidence)
			}
		}
	})
}
