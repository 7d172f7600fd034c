package classifier

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// An alternative that starts with a character class (\b[1-5]\d\d ...,
// ['"(]..., \b\d+ validation ...) gives Go's matcher no literal prefix:
// it tries the whole expression at every position of the text, and on a
// long text (a stack trace) an expression too large for its backtracker
// runs on the NFA. Every match of such an alternative starts with a byte
// of the class, so it is tried only there, anchored: the expression
// without its leading \b, compiled as ^(?:X), is matched on the text from
// that byte (the \b is checked on the whole text). Nothing else in X looks
// before that byte: its first part consumes it.

// startClass is an alternative tried only at the bytes its first class
// holds.
type startClass struct {
	bytes    [256]bool
	boundary bool // the alternative starts with \b
	anchored *regexp.Regexp
}

// newStartClass reads an expression of the form [\b] C X, C a class of
// ASCII bytes that the expression's first part consumes (through
// captures and repetitions of at least one); nil for any other form.
func newStartClass(expr string) *startClass {
	rest, boundary := strings.CutPrefix(expr, `\b`)
	re, err := syntax.Parse(rest, syntax.Perl)
	if err != nil {
		return nil
	}
	first := re
	for {
		switch {
		case first.Op == syntax.OpConcat && len(first.Sub) > 0, first.Op == syntax.OpCapture,
			first.Op == syntax.OpPlus, first.Op == syntax.OpRepeat && first.Min >= 1:
			// A repetition at least once starts with what it repeats.
			first = first.Sub[0]
			continue
		}
		break
	}
	if first.Op != syntax.OpCharClass || len(first.Rune) == 0 {
		return nil
	}
	sc := &startClass{boundary: boundary}
	for i := 0; i+1 < len(first.Rune); i += 2 {
		if first.Rune[i+1] >= utf8.RuneSelf {
			return nil
		}
		for c := first.Rune[i]; c <= first.Rune[i+1]; c++ {
			sc.bytes[c] = true
		}
	}
	anchored, err := regexp.Compile(`^(?:` + rest + `)`)
	if err != nil {
		return nil
	}
	sc.anchored = anchored
	return sc
}

// leftmost is the leftmost match of the alternative on s with its groups,
// as FindStringSubmatchIndex gives it.
func (sc *startClass) leftmost(s string) []int {
	for q := 0; q < len(s); q++ {
		if !sc.bytes[s[q]] || sc.boundary && !wordBoundary(s, q) {
			continue
		}
		if loc := sc.anchored.FindStringSubmatchIndex(s[q:]); loc != nil {
			for i := range loc {
				if loc[i] >= 0 {
					loc[i] += q
				}
			}
			return loc
		}
	}
	return nil
}

// matches reports whether the alternative matches s.
func (sc *startClass) matches(s string) bool {
	for q := 0; q < len(s); q++ {
		if !sc.bytes[s[q]] || sc.boundary && !wordBoundary(s, q) {
			continue
		}
		if sc.anchored.MatchString(s[q:]) {
			return true
		}
	}
	return false
}
