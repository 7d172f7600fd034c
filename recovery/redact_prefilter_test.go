package recovery

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// redactEveryPattern is Redact without the literal prefilters: every
// pattern is tried on every text.
func (r *Redactor) redactEveryPattern(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	for i := range r.patterns {
		s = r.patterns[i].redact(s)
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

// checkByteSetPrefilter fails when mayMatchIn, which skips literals by the
// bytes of s, answers otherwise than mayMatch for some pattern.
func checkByteSetPrefilter(t *testing.T, r *Redactor, s string) {
	t.Helper()
	var set byteSet
	ascii := set.addString(s)
	for i := range r.patterns {
		p := &r.patterns[i]
		if got, want := p.mayMatchIn(s, ascii, &set), p.mayMatch(s, ascii); got != want {
			t.Fatalf("pattern %d on %q: mayMatchIn %v, mayMatch %v", i, s, got, want)
		}
	}
}

func TestRedactByteSetPrefilter(t *testing.T) {
	r := NewRedactor(RedactorOptions{ExtraPatterns: []string{`internal-[0-9]+`}})
	for _, a := range prefilterTexts {
		for _, b := range prefilterTexts {
			checkByteSetPrefilter(t, r, a+" "+b)
			checkByteSetPrefilter(t, r, strings.ToUpper(a)+b)
		}
	}
	var set byteSet
	set.addString("trace:4bf92f3577b34da6a3ce929d0e0e4736")
	if set.mayHold("token", true) || !set.mayHold("trace", false) || set.mayHold("TRACE", false) {
		t.Error("byteSet.mayHold on a lower-case text")
	}
	set = byteSet{}
	set.addString("TRACE")
	if !set.mayHold("trace", true) || set.mayHold("trace", false) {
		t.Error("byteSet.mayHold ignoring case")
	}
}

// cardCandidate is the expression nextCardCandidate implements.
var cardCandidate = regexp.MustCompile(`(^|[^0-9])([0-9](?:[ -]?[0-9]){12,18})`)

// candidatesByRegexp are cardCandidate's runs in s, as [start, end) pairs.
func candidatesByRegexp(s string) [][2]int {
	var out [][2]int
	for _, m := range cardCandidate.FindAllStringSubmatchIndex(s, -1) {
		out = append(out, [2]int{m[4], m[5]})
	}
	return out
}

func candidatesByScanner(s string) [][2]int {
	var out [][2]int
	for from := 0; ; {
		start, end, ok := nextCardCandidate(s, from)
		if !ok {
			return out
		}
		out = append(out, [2]int{start, end})
		from = end
	}
}

var cardTexts = []string{
	"4111 1111 1111 1111", "4111-1111-1111-1111", "1234567890123", "x123456789012 3", "123456789012",
	"1234  5678 9012 3456", "4bf92f3577b34da6a3ce929d0e0e4736", "2026-12-01T14:00:00Z", "12 34 56 78 90 12 3",
	"12--34567890123", "1795984899503000000", "17959848995030000001234567890123456789", "a 4111111111111111 b 5500 0000 0000 0004",
	"1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1", "-4111111111111111-", "41111111111111111111", "4111 1111 1111 1111 ",
	"123456789012 4111111111111111", "0-1-2-3-4-5-6-7-8-9-0-1-2-", " 378282246310005", "6011111111111117x",
}

func TestCardScannerMatchesRegexp(t *testing.T) {
	for _, a := range cardTexts {
		for _, b := range append([]string{""}, cardTexts...) {
			s := a + b
			if got, want := candidatesByScanner(s), candidatesByRegexp(s); !slices.Equal(got, want) {
				t.Errorf("candidates of %q: scanner %v, regexp %v", s, got, want)
			}
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
	for _, s := range append(prefilterTexts, cardTexts...) {
		f.Add(s)
	}
	r := NewRedactor(RedactorOptions{})
	f.Fuzz(func(t *testing.T, s string) {
		// The same bytes as digits and separators, where card candidates are.
		digits := []byte(s)
		for i, c := range digits {
			digits[i] = "0123456789 -x"[int(c)%13]
		}
		for _, s := range []string{s, string(digits)} {
			if got, want := candidatesByScanner(s), candidatesByRegexp(s); !slices.Equal(got, want) {
				t.Fatalf("card candidates of %q: scanner %v, regexp %v", s, got, want)
			}
		}
		if got, want := r.Redact(s), r.redactEveryPattern(s); got != want {
			t.Fatalf("Redact(%q) = %q, every pattern tried: %q", s, got, want)
		}
		checkByteSetPrefilter(t, r, s)
		checkByteSetPrefilter(t, r, strings.ToUpper(s))
	})
}

// BenchmarkRedactPrefilter compares Redact with every pattern tried, on
// texts a decision redacts: a trace's session id, an error reason, a
// conversation id with a millisecond timestamp.
func BenchmarkRedactPrefilter(b *testing.B) {
	r := NewRedactor(RedactorOptions{})
	texts := []string{
		"trace:4bf92f3577b34da6a3ce929d0e0e4736",
		"HTTP 503 from the flights API: upstream connect error or disconnect/reset before headers",
		"conv-1795984899503-checkout",
	}
	b.Run("patterns=prefiltered", func(b *testing.B) {
		for b.Loop() {
			for _, s := range texts {
				_ = r.Redact(s)
			}
		}
	})
	b.Run("patterns=every", func(b *testing.B) {
		for b.Loop() {
			for _, s := range texts {
				_ = r.redactEveryPattern(s)
			}
		}
	})
}
