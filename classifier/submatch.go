package classifier

import (
	"regexp/syntax"
	"slices"
	"strings"
)

// The rules with a check (an HTTP status or JSON-RPC code written in the
// text) need the groups of their leftmost match, so they cannot be tried
// as a set of alternatives that only say whether they match. Run whole,
// such a rule is one large case-insensitive program whose alternatives
// start with a class, an anchor or a group, which Go's backtracker tries
// at every position of the text (the HTTP status rule cost ≈ 17 % of
// Classify on the captures).
//
// A leftmost-first match is found from the alternatives alone: the match
// of a|b starts at the least position where one of them matches, and at
// that position it is the match of the first one that matches there,
// with that one's groups. So each alternative is compiled for lower-cased
// text (as splitCaseInsensitive does), a leading group of alternatives
// distributed ((?:P|Q)X is PX|QX, tried in that order), and the rule's
// match is the leftmost of theirs, the earlier alternative on a tie. An
// alternative \bP X whose P starts with a literal is found from P X (a
// literal prefix Go's matcher skips to), whose leftmost match is the
// alternative's when it starts at a word boundary.

// submatchAlternative is one alternative of a rule with a check.
type submatchAlternative struct {
	alternative
	// groups[i] is the rule's group number of the alternative's group i+1.
	groups []int
	// byLoose: loose[0] is the alternative without its leading \b (the same
	// groups), tried first.
	byLoose bool
}

// splitSubmatch splits a (?i) expression with groups into the
// alternatives its leftmost match is found from, and reports whether they
// answer on any text the prefilter reads (as splitCaseInsensitive); nil
// when the expression is not of that form.
func splitSubmatch(src string, groups int, b *keyScannerBuilder) ([]submatchAlternative, bool) {
	body, ok := strings.CutPrefix(src, "(?i)")
	if !ok || !lowerSafe(body) {
		return nil, false
	}
	var out []submatchAlternative
	next := 1 // the rule's number of the next alternative's first group
	for _, alt := range splitAlternatives(body) {
		boundary, rest := "", alt
		if r, ok := strings.CutPrefix(alt, `\b`); ok {
			boundary, rest = `\b`, r
		}
		heads, tail := []string{rest}, ""
		if strings.HasPrefix(rest, "(?:") {
			if end := groupEnd(rest); end > 0 && (end+1 == len(rest) || strings.IndexByte("?*+{", rest[end+1]) < 0) {
				heads, tail = splitAlternatives(rest[len("(?:"):end]), rest[end+1:]
			}
		}
		headGroups, all := make([]int, len(heads)), 0
		for i, h := range heads {
			headGroups[i] = maxCap(h)
			all += headGroups[i]
		}
		tailGroups := maxCap(tail)
		first := next
		for i, h := range heads {
			expr := boundary + h + tail
			sa := submatchAlternative{alternative: newAlternative(expr, b)}
			for g := range headGroups[i] {
				sa.groups = append(sa.groups, first+g)
			}
			for g := range tailGroups {
				sa.groups = append(sa.groups, next+all+g)
			}
			if sa.re.NumSubexp() != len(sa.groups) {
				return nil, false
			}
			// The \b may also be the head's own (\bstatus..., \bhttp... in a
			// leading group of alternatives).
			sa.byLoose = len(sa.loose) == 1 && sa.loose[0].re.String() == expr[len(`\b`):]
			first += headGroups[i]
			out = append(out, sa)
		}
		next += all + tailGroups
	}
	if next-1 != groups {
		return nil, false
	}
	return out, !slices.ContainsFunc(out, func(a submatchAlternative) bool { return !foldSafe(a.re.String()) })
}

// maxCap is the number of capture groups of an expression's source (-1
// when it does not parse, which fails splitSubmatch's count).
func maxCap(src string) int {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return -1
	}
	return re.MaxCap()
}

// leftmostSubmatch is what FindStringSubmatch of the rule answers on
// text, from its alternatives on lower (text with its ASCII letters
// lowered); hits must hold every keyScanner group of text.
func leftmostSubmatch(alts []submatchAlternative, groups int, text, lower string, hits *keyHits) []string {
	var best []int
	bestAlt := -1
	for k := range alts {
		loc := alts[k].leftmost(lower, hits)
		if loc != nil && (best == nil || loc[0] < best[0]) {
			best, bestAlt = loc, k
			if best[0] == 0 {
				break
			}
		}
	}
	if best == nil {
		return nil
	}
	m := make([]string, groups+1)
	m[0] = text[best[0]:best[1]]
	for i, g := range alts[bestAlt].groups {
		if lo, hi := best[2*i+2], best[2*i+3]; lo >= 0 {
			m[g] = text[lo:hi]
		}
	}
	return m
}

// leftmost is the alternative's leftmost match on s with its groups, as
// FindStringSubmatchIndex gives it.
func (a *submatchAlternative) leftmost(s string, hits *keyHits) []int {
	if !hits.allOf(a.need) {
		return nil
	}
	if a.byLoose {
		l := &a.loose[0]
		if !hits.allOf(l.need) {
			return nil
		}
		loc := l.re.FindStringSubmatchIndex(s)
		if loc == nil {
			return nil
		}
		if wordBoundary(s, loc[0]) {
			return loc
		}
	}
	if a.start != nil {
		return a.start.leftmost(s)
	}
	return a.re.FindStringSubmatchIndex(s)
}
