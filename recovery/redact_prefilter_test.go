package recovery

import (
	"strings"
	"testing"
)

// redactEveryPattern is Redact without the literal prefilters: every
// pattern is tried on every text.
func (r *Redactor) redactEveryPattern(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	for _, p := range r.patterns {
		if !p.re.MatchString(s) {
			continue
		}
		if p.repl == "" {
			s = p.re.ReplaceAllLiteralString(s, Redacted)
		} else {
			s = p.re.ReplaceAllString(s, p.repl)
		}
	}
	return redactCardNumbers(s)
}

// prefilterTexts hold a secret of every built-in shape (in several cases
// and glued to other text), the non-ASCII letters that case-insensitive
// patterns fold to ASCII, and text with none.
var prefilterTexts = []string{
	"", "trace:4bf92f3577b34da6a3ce929d0e0e4736", "checkout-agent", "HTTP 503 from upstream",
	"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
	"Authorization: Bearer abcdefgh12345678", "BEARER abcdefgh12345678", "x-bearer abcdefghijkl",
	"AUTHORIZATION: Basic dXNlcjpwYXNzd29yZA==", "authorization='basic dXNlcjpwYXNzd29yZA=='",
	"key sk-proj-abcdefghijklmnopqrstuv", "id_sk-abcdefghijklmnopqrstuv", "task-abcdefghijklmnopqrstuv",
	"sk_live_abcdefghijklmnop1234", "rk_test_abcdefghijklmnop1234", "gsk_abcdefghijklmnopqrstuvwx",
	"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "github_pat_11ABCDEF0123456789_zyxwvutsrqponmlkji",
	"glpat-abcdefghijklmnopqrstu", "xoxb-1234567890-abcdef", "hf_abcdefghijklmnopqrstuvwxyz0123456",
	"AIzaSyA-abcdefghijklmnopqrstuvwxyz01234", "idAKIAABCDEFGHIJKLMNOP", "ASIAABCDEFGHIJKLMNOP",
	"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijk", "redis://user:hunter2@cache:6379",
	"https://abcdefghijklmnopqrstuv@github.com/x", "mail jane.doe@example.com now",
	"password=hunter2", "PASSWORD: hunter2", `{"Api_Key": "abc123"}`, "x-api-key=abc", "PwD=1",
	"refresh-token: abc", "Credentials=abc", "client_secret=abc", "AWS_SECRET_ACCESS_KEY=abc",
	"to\u212Aen=abc", "pa\u017F\u017F=hunter2", "\u017Fecret: x", "api\u212Aey=abc", "bearer\u00a0abcdefghijkl",
	"card 4111 1111 1111 1111", "4111111111111111", "\xff\xfe password=x",
}

func TestRedactPrefilterChangesNothing(t *testing.T) {
	r := NewRedactor(RedactorOptions{ExtraPatterns: []string{`internal-[0-9]+`}})
	for _, a := range prefilterTexts {
		for _, b := range prefilterTexts {
			s := a + " " + b
			if got, want := r.Redact(s), r.redactEveryPattern(s); got != want {
				t.Errorf("Redact(%q) = %q, every pattern tried: %q", s, got, want)
			}
		}
	}
}

func TestMayHoldCard(t *testing.T) {
	for s, want := range map[string]bool{
		"4111 1111 1111 1111": true, "4111-1111-1111-1111": true, "1234567890123": true, "x123456789012 3": true,
		"123456789012": false, "1234  5678 9012 3456": false, "4bf92f3577b34da6a3ce929d0e0e4736": false,
		"2026-12-01T14:00:00Z": false, "12 34 56 78 90 12 3": true, "12--34567890123": false,
	} {
		if got := mayHoldCard(s); got != want {
			t.Errorf("mayHoldCard(%q) = %v, want %v", s, got, want)
		}
		if !mayHoldCard(s) && cardCandidate.MatchString(s) {
			t.Errorf("mayHoldCard(%q) is false, cardCandidate matches", s)
		}
	}
}

func TestRedactPrefilterSkips(t *testing.T) {
	r := NewRedactor(RedactorOptions{})
	skipped := 0
	for i := range r.patterns {
		if !r.patterns[i].mayMatch("trace:4bf92f3577b34da6a3ce929d0e0e4736", true) {
			skipped++
		}
	}
	if skipped != len(r.patterns) {
		t.Errorf("a trace session id runs %d of %d patterns, want none", len(r.patterns)-skipped, len(r.patterns))
	}
	if r.patterns[1].mayMatch("be\u212Arer", false) != true {
		t.Error("a case-insensitive pattern is skipped on non-ASCII text")
	}
}

func FuzzRedactPrefilter(f *testing.F) {
	for _, s := range prefilterTexts {
		f.Add(s)
	}
	r := NewRedactor(RedactorOptions{})
	f.Fuzz(func(t *testing.T, s string) {
		if !mayHoldCard(s) && cardCandidate.MatchString(s) {
			t.Fatalf("mayHoldCard(%q) is false, cardCandidate matches", s)
		}
		if got, want := r.Redact(s), r.redactEveryPattern(s); got != want {
			t.Fatalf("Redact(%q) = %q, every pattern tried: %q", s, got, want)
		}
	})
}
