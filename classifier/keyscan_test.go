package classifier

import (
	"slices"
	"strings"
	"testing"
)

// corpusAndCaptureTexts are the texts the prefilters are held to besides
// the rules' own: every error of the shared corpora, and every error
// message, status message and tool result of the shared captures (each
// once).
func corpusAndCaptureTexts(t testing.TB) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, corpus := range loadCorpora(t) {
		for _, e := range corpus.entries {
			add(e.Error)
		}
	}
	for _, runs := range captureRuns(t) {
		for _, r := range runs {
			for _, se := range r.SpanErrors {
				add(se.StatusMessage)
				for _, e := range se.Errors {
					add(e.Message)
				}
			}
			for _, s := range r.Steps {
				add(s.StatusMessage)
				add(s.Result)
				for _, e := range s.Errors {
					add(e.Message)
				}
				for _, res := range s.InputResults {
					add(res.Content)
				}
				for _, res := range s.ToolResults {
					add(res.Content)
				}
			}
		}
	}
	return out
}

// The scanner reports exactly the groups of which a member occurs in the
// text with its ASCII letters lowered (members bounded to maxMemberLen).
func checkKeyScanner(t *testing.T, k *keyScanner, groups [][]string, s string) {
	t.Helper()
	var hits keyHits
	k.scan(s, &hits)
	lower := asciiLower(s)
	for g, members := range groups {
		want := slices.ContainsFunc(members, func(m string) bool {
			return strings.Contains(lower, asciiLower(truncate(m, maxMemberLen)))
		})
		if got := hits.has(int32(g)); got != want {
			t.Fatalf("group %d %q on %q: scanner %v, substring search %v", g, members, s, got, want)
		}
	}
}

func TestKeyScanner(t *testing.T) {
	groups := [][]string{{"he", "she"}, {"his", "hers"}, {"ushers"}, {"s"}, {"API Key", "x"}, {"é", "—"}, {""}, {"abcdefghijklmnop"}, {"she"}}
	b := newKeyScannerBuilder()
	for i, g := range groups {
		// Equal sets share a group: register each distinct set once here.
		if n := b.group(g); int(n) != i {
			t.Fatalf("group %q numbered %d, want %d", g, n, i)
		}
	}
	if b.group([]string{"she"}) != 8 {
		t.Fatal("an equal set must share its group")
	}
	k := b.build()
	for _, s := range []string{"", "ushers", "USHERS", "his", "api key", "API KEY", "café", "a — b", "abcdefgh", "abcdefg", "xyz", "\xff\xfe", "hehe", "sh"} {
		checkKeyScanner(t, k, groups, s)
	}
	// The rules' scanner (keys and needed literals) on the rules' texts,
	// the corpora and the captures.
	// wrongCallKeys reports the groups it was narrowed to as ruleKeys does,
	// and no other.
	narrowed := groupsReadBy(ruleTypes[WrongToolCalled] | ruleTypes[SchemaMismatch])
	if len(narrowed) == 0 || len(narrowed) == len(ruleKeys.groups) {
		t.Fatalf("wrongCallKeys narrowed to %d of %d groups", len(narrowed), len(ruleKeys.groups))
	}
	for _, s := range append(ruleTestTexts(), corpusAndCaptureTexts(t)...) {
		s = truncate(s, maxTextLen)
		checkKeyScanner(t, ruleKeys, ruleKeys.groups, s)
		var full, narrow keyHits
		ruleKeys.scan(s, &full)
		wrongCallKeys.scan(s, &narrow)
		for g := range ruleKeys.groups {
			if want := narrowed[int32(g)] && full.has(int32(g)); narrow.has(int32(g)) != want {
				t.Fatalf("group %d on %q: narrowed scanner %v, want %v", g, s, narrow.has(int32(g)), want)
			}
		}
	}
	if len(wrongCallKeys.next) >= len(ruleKeys.next) {
		t.Errorf("wrongCallKeys is %d entries, ruleKeys %d: no smaller", len(wrongCallKeys.next), len(ruleKeys.next))
	}
}

// Every prefilter (keys, pre, the alternatives' needed literals, the
// excludes' alternatives, mayClassifyAs, the result prefilters) answers
// as the plain expressions on the corpora and on the texts of the
// captures.
func TestPrefiltersOnCorporaAndCaptures(t *testing.T) {
	texts := corpusAndCaptureTexts(t)
	if len(texts) < 100 {
		t.Fatalf("only %d texts", len(texts))
	}
	for _, s := range texts {
		a, okA := classifyTextWith(s, true)
		b, okB := classifyTextWith(s, false)
		if a != b || okA != okB {
			t.Errorf("%q: prefilter %+v/%v, full %+v/%v", truncate(s, 200), a, okA, b, okB)
		}
		checkMayClassifyAs(t, s)
		checkResultPrefilters(t, s)
		checkAlternatives(t, truncate(s, maxTextLen))
	}
}

// An alternative's needed literals hold on every text it matches (the
// tests above check it through matchAny; here every alternative has some,
// so none of them runs at every position of every text).
func TestAlternativesNeedLiterals(t *testing.T) {
	for _, r := range textRules {
		for _, alts := range [][]alternative{r.alts, r.excludeAlts} {
			for _, a := range alts {
				if len(a.need) == 0 {
					t.Errorf("rule %s: alternative %q needs no literal", r.name, a.re)
				}
			}
		}
	}
}

// lowerSafe refuses what lower-casing the text could change: upper-case
// literals, classes with an upper-case letter and not its lower-case one
// (also [^x], which holds X: refused, though (?i) would fold it).
func TestLowerSafe(t *testing.T) {
	for expr, want := range map[string]bool{
		`abc\s+\w+`: true, `[A-Za-z_]x`: true, `[^'"\n]y`: true, `[^x]y`: false, `\bnot\b`: true, `\S\W\D`: true,
		`ABC`: false, `a[A-Z]`: false, `x(?:y|Q)`: false, `(`: false,
	} {
		if got := lowerSafe(expr); got != want {
			t.Errorf("lowerSafe(%q) = %v, want %v", expr, got, want)
		}
	}
}
