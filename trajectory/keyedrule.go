package trajectory

import "strings"

// A keyedRule (attrs.go) is matched by hand where one of its keys occurs:
// a quote, the key, a quote, white space, a colon, white space and the
// value. Each rule was a regular expression anchored at the quote; Go's
// matcher, started at every key occurrence of a provider response body or
// an error text, was most of what the rules cost. The expressions the
// matchers stand for are the rules' documentation (and, unanchored, their
// reference in FuzzKeyedRules): valueRule says which part of them each
// field is.

// valueKind is the shape of the value after a keyedRule's colon.
type valueKind uint8

const (
	// objectValue is `\{`: the match ends past the brace.
	objectValue valueKind = iota
	// tokenValue is `Q([class]{min,max})Q`, each Q one of quotes: the
	// group is the token.
	tokenValue
	// digitsValue is `(\d{1,max})\b`: the group is the digits.
	digitsValue
)

// valueRule is what a keyedRule's colon (and the white space after it) is
// followed by.
type valueRule struct {
	kind     valueKind
	quotes   string   // tokenValue: the quotes before and after the token
	class    *byteSet // tokenValue: the token's bytes
	min, max int      // the token's or the digits' length
}

// byteSet is a set of bytes.
type byteSet [256]bool

// bytesOfClass is the set of the bytes of ranges, each "a-z" or one byte.
func bytesOfClass(ranges ...string) *byteSet {
	var b byteSet
	for _, r := range ranges {
		lo, hi := r[0], r[len(r)-1]
		for c := int(lo); c <= int(hi); c++ {
			b[c] = true
		}
	}
	return &b
}

// matchAt matches the rule at the occurrence of key at s[at:] (the quote
// before it at s[at-1]): the end of the match and its group.
func (q keyedRule) matchAt(s string, at int, key string) (end int, group string, ok bool) {
	if at < 1 || strings.IndexByte(q.open, s[at-1]) < 0 {
		return 0, "", false
	}
	i := at + len(key)
	if q.close != "" {
		if i >= len(s) || strings.IndexByte(q.close, s[i]) < 0 {
			return 0, "", false
		}
		i++
	}
	i = skipRegexpSpace(s, i)
	if i >= len(s) || s[i] != ':' {
		return 0, "", false
	}
	return q.value.match(s, skipRegexpSpace(s, i+1))
}

// match matches the value at s[i:]: its end and group.
func (v *valueRule) match(s string, i int) (end int, group string, ok bool) {
	switch v.kind {
	case objectValue:
		if i < len(s) && s[i] == '{' {
			return i + 1, "", true
		}
	case tokenValue:
		if i >= len(s) || strings.IndexByte(v.quotes, s[i]) < 0 {
			return 0, "", false
		}
		j := i + 1
		for j < len(s) && v.class[s[j]] {
			j++
		}
		// The class holds no quote: the repetition, greedy, stops at the
		// first byte outside it, and backtracking cannot make a byte of
		// the class a quote.
		if n := j - i - 1; n >= v.min && n <= v.max && j < len(s) && strings.IndexByte(v.quotes, s[j]) >= 0 {
			return j + 1, s[i+1 : j], true
		}
	case digitsValue:
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		// \b after at most max digits: fewer digits would end between
		// two digits, no boundary either; so the run itself must end at
		// a byte that is not a word byte, or at the end.
		if n := j - i; n >= 1 && n <= v.max && (j == len(s) || !isWordByte(s[j])) {
			return j, s[i:j], true
		}
	}
	return 0, "", false
}

// skipRegexpSpace is the index of the first byte of s from i on that is
// not in \s, RE2's [\t\n\f\r ] (no \v).
func skipRegexpSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\f' || s[i] == '\r') {
		i++
	}
	return i
}

// isWordByte reports whether c is in \w, [0-9A-Za-z_].
func isWordByte(c byte) bool {
	return isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'z' || c == '_'
}
