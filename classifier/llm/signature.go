package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/recovery"
)

// An error signature names an error shape: the subject's kind and error
// texts (with credentials removed) lower-cased, with the parts
// that vary between occurrences masked — quoted names, URLs, paths, ids,
// numbers — and whitespace collapsed. Two failures with one signature get
// one answer: the cache and the corrections are keyed by it.

// SignaturePrefix starts every signature; it changes when the masking
// does, so old cache entries and corrections stop matching.
const SignaturePrefix = "sig1:"

var masks = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`'[^'\n]{1,120}'|"[^"\n]{1,120}"|` + "`[^`\n]{1,120}`"), "<q>"},
	{regexp.MustCompile(`\b[a-z][a-z0-9+.-]*://[^\s'"<>]+`), "<url>"},
	{regexp.MustCompile(`(?:[a-z]:\\|~?/)[^\s'"<>:]*[/\\][^\s'"<>:]*`), "<path>"},
	{regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "<id>"},
	// Tokens mixing letters and digits (call_8fK2, req-41ab, 0x1f3e) and
	// long hex runs.
	{regexp.MustCompile(`\b[\w-]*[a-z_][\w-]*\d[\w-]*\b|\b\d[\w-]*[a-z_][\w-]*\b`), "<id>"},
	{regexp.MustCompile(`\d+(?:\.\d+)?`), "<n>"},
}

// normalise lower-cases, masks and collapses whitespace.
func normalise(s string) string {
	s = strings.ToLower(s)
	for _, m := range masks {
		s = m.re.ReplaceAllString(s, m.repl)
	}
	return strings.Join(strings.Fields(s), " ")
}

// maxSignaturePart bounds each normalised text hashed: the evidence is at
// the start, and the bound does not depend on any redaction setting.
const maxSignaturePart = 512

// sigRedactor removes the built-in credential shapes before hashing,
// without truncating: signatures do not depend on redaction settings, so
// the CLI and every collector compute the same one.
var sigRedactor = recovery.NewRedactor(recovery.RedactorOptions{MaxLen: -1})

// Signature returns the signature of a subject's error shape and the
// normalised text it hashes (shown by --explain, so a correction can be
// checked against it).
func Signature(s *classifier.Subject) (sig, text string) {
	parts := []string{string(s.Kind)}
	for _, e := range s.ErrorTexts() {
		n := normalise(sigRedactor.Redact(e))
		if len(n) > maxSignaturePart {
			n = n[:maxSignaturePart]
		}
		parts = append(parts, n)
	}
	if s.HTTPStatus > 0 {
		parts = append(parts, fmt.Sprintf("http %d", s.HTTPStatus))
	}
	if s.HasJSONRPC {
		parts = append(parts, fmt.Sprintf("json-rpc %d", s.JSONRPCCode))
	}
	text = strings.Join(parts, " | ")
	sum := sha256.Sum256([]byte(text))
	return SignaturePrefix + hex.EncodeToString(sum[:8]), text
}
