package llm

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/triage-otel/triage/classifier"
)

// The gates decide whether a model's answer may replace an unknown. An
// answer is accepted only when it passes all three; a rejected answer
// leaves the run unknown and is counted by gate. (The first gate of all —
// never asking about a not-retryable unknown — is classifier.Subject.)
const (
	GateConfidence = "confidence" // below confidence_threshold
	GateEvidence   = "evidence"   // the quote does not occur in the evidence that was sent
	GateStructure  = "structure"  // the type contradicts the trace's structure
)

// minTimeoutDuration: a step that ended sooner did not run out of time.
const minTimeoutDuration = 100 * time.Millisecond

// minQuoteChars is how many letters or digits a quote needs to count as
// evidence ("400" or "err" do not show a type).
const minQuoteChars = 4

// gate checks an answer against the subject and the evidence sent; it
// returns the failing gate and why, or "" when the answer is accepted.
// masked compares with ids, numbers and quoted names masked: a cached
// answer was quoted from another occurrence of the same error shape.
func gate(a Answer, s *classifier.Subject, evidence []string, threshold float64, masked bool) (string, string) {
	if a.Confidence < threshold {
		return GateConfidence, fmt.Sprintf("confidence %.2f below %.2f", a.Confidence, threshold)
	}
	if why := quoteMissing(a.Evidence, evidence, masked); why != "" {
		return GateEvidence, why
	}
	if why := contradicts(a.FailureType, s); why != "" {
		return GateStructure, why
	}
	return "", ""
}

// quoteMissing checks the quote: verbatim (case-insensitive, whitespace
// normalised) in one evidence text, with enough substance.
func quoteMissing(quote string, evidence []string, masked bool) string {
	q := trimQuote(quote)
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
	if masked {
		norm = normalise
	}
	nq := norm(q)
	if substance(nq) < minQuoteChars {
		return fmt.Sprintf("quote %q too short to show a type", quote)
	}
	for _, e := range evidence {
		if strings.Contains(norm(e), nq) {
			return ""
		}
	}
	return fmt.Sprintf("quote %q is not in the error evidence sent", shorten(quote, 120))
}

// trimQuote removes what models wrap quotes in: a pair of quotation
// marks, an ellipsis at either end, surrounding spaces.
func trimQuote(q string) string {
	pairs := map[rune]rune{'"': '"', '\'': '\'', '`': '`', '“': '”', '‘': '’'}
	for {
		t := strings.TrimSpace(q)
		for _, e := range []string{"...", "…"} {
			t = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(t, e), e))
		}
		if r := []rune(t); len(r) >= 2 && pairs[r[0]] == r[len(r)-1] && pairs[r[0]] != 0 {
			t = string(r[1 : len(r)-1])
		}
		if t == q {
			return q
		}
		q = t
	}
}

// substance counts the letters and digits outside masks.
func substance(s string) int {
	for _, m := range []string{"<q>", "<url>", "<path>", "<id>", "<n>"} {
		s = strings.ReplaceAll(s, m, " ")
	}
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n++
		}
	}
	return n
}

// contradicts says why a failure type contradicts the trace's structure,
// or "" when it does not.
func contradicts(ft classifier.FailureType, s *classifier.Subject) string {
	switch ft {
	case classifier.LoopDetected, classifier.ConstraintIgnored, classifier.PlanIncomplete:
		return string(ft) + " is read from the trajectory, which shows none"
	case classifier.WrongToolCalled:
		if s.Kind == classifier.SubjectToolCall && s.ToolOffered && s.ToolRan {
			return fmt.Sprintf("the tool %q was offered and a tool span executed it", s.Tool)
		}
	case classifier.SchemaMismatch:
		if s.Kind == classifier.SubjectToolCall && s.ArgsChecked && s.ArgsValid {
			return "the arguments validate against the offered schema"
		}
	case classifier.Timeout:
		if s.Duration > 0 && s.Duration < minTimeoutDuration {
			return fmt.Sprintf("the step ended after %v", s.Duration)
		}
	}
	if ft == classifier.Timeout || ft == classifier.ExternalFault {
		if c := s.HTTPStatus; c >= 400 && c < 500 && c != 408 && c != 429 {
			return fmt.Sprintf("HTTP %d: the request itself was refused", c)
		}
	}
	return ""
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
