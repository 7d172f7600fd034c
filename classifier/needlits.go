package classifier

import (
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// neededLiterals reads, from an expression's syntax tree, sets of strings
// of which every match holds a member of each: `\bnot authori[sz]ed\b`
// needs one of "not authorised", "not authorized"; `\b(?:unknown|invalid)
// \s+(?:tool|function)` needs one of "unknown", "invalid" and one of
// "tool", "function". A text without a member of one of the sets cannot
// match, which the keyScanner tells for all the rules' alternatives in one
// pass (an alternative that starts with a class or an optional part has no
// literal prefix for Go's matcher to skip to, and runs at every position
// of the text). Sets whose shortest member is shorter than
// minNeededLiteral are left out (they hold for nearly every text); nil
// when the expression needs nothing known.
func neededLiterals(expr string) [][]string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	info := literalsOf(re.Simplify())
	need := info.need
	if usefulSet(info.exact) {
		need = append(need, info.exact)
	}
	var sets [][]string
	for _, n := range need {
		if !slices.ContainsFunc(sets, func(s []string) bool { return slices.Equal(s, n) }) {
			sets = append(sets, n)
		}
	}
	need = sets
	// The most selective first: longest shortest member.
	slices.SortStableFunc(need, func(a, b []string) int { return shortest(b) - shortest(a) })
	if len(need) > maxNeededSets {
		need = need[:maxNeededSets]
	}
	return need
}

const (
	minNeededLiteral = 2
	maxNeededSets    = 4
	// maxExactSet bounds the strings a part of an expression is known to
	// match exactly (products of alternatives and small classes).
	maxExactSet = 8
	// maxClassRunes: a character class of at most this many runes is read
	// as the set of them.
	maxClassRunes = 4
	// maxUnionSet bounds a set made of one set from each alternative.
	maxUnionSet = 64
)

// literalInfo is what literalsOf knows of a node: exact, when not nil,
// holds every string it matches; need, sets of which every match holds a
// member of each.
type literalInfo struct {
	exact []string
	need  [][]string
}

func literalsOf(re *syntax.Regexp) literalInfo {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return literalInfo{exact: []string{""}}
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return literalInfo{}
		}
		return literalInfo{exact: []string{string(re.Rune)}}
	case syntax.OpCharClass:
		n := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			n += int(re.Rune[i+1]-re.Rune[i]) + 1
		}
		if n == 0 || n > maxClassRunes {
			return literalInfo{}
		}
		var set []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if !utf8.ValidRune(r) {
					return literalInfo{}
				}
				set = append(set, string(r))
			}
		}
		return literalInfo{exact: set}
	case syntax.OpCapture:
		return literalsOf(re.Sub[0])
	case syntax.OpQuest:
		sub := literalsOf(re.Sub[0])
		if sub.exact == nil || len(sub.exact) >= maxExactSet {
			return literalInfo{}
		}
		return literalInfo{exact: union(sub.exact, []string{""})}
	case syntax.OpPlus:
		return atLeastOnce(literalsOf(re.Sub[0]))
	case syntax.OpRepeat:
		if re.Min == 1 && re.Max == 1 {
			return literalsOf(re.Sub[0])
		}
		if re.Min >= 1 {
			return atLeastOnce(literalsOf(re.Sub[0]))
		}
		return literalInfo{}
	case syntax.OpConcat:
		return concatLiterals(re.Sub)
	case syntax.OpAlternate:
		return alternateLiterals(re.Sub)
	}
	return literalInfo{}
}

// atLeastOnce is what a node repeated one or more times needs: what one
// repetition needs.
func atLeastOnce(sub literalInfo) literalInfo {
	need := sub.need
	if usefulSet(sub.exact) {
		need = append(need, sub.exact)
	}
	return literalInfo{need: need}
}

// concatLiterals: consecutive parts known exactly make one set (their
// product, while it stays small); every part's needs hold.
func concatLiterals(subs []*syntax.Regexp) literalInfo {
	var need [][]string
	run, whole := []string{""}, true
	flush := func() {
		if usefulSet(run) {
			need = append(need, run)
		}
		run = []string{""}
	}
	for _, s := range subs {
		sub := literalsOf(s)
		need = append(need, sub.need...)
		if sub.exact == nil {
			whole = false
			flush()
			continue
		}
		if len(run)*len(sub.exact) > maxExactSet {
			whole = false
			flush()
			run = slices.Clone(sub.exact)
			continue
		}
		run = product(run, sub.exact)
	}
	if whole {
		return literalInfo{exact: run, need: need}
	}
	flush()
	return literalInfo{need: need}
}

// alternateLiterals: a match of the alternation is a match of one
// alternative, so it holds a member of the union of one set from each.
func alternateLiterals(subs []*syntax.Regexp) literalInfo {
	var exact, set []string
	exactOK, setOK := true, true
	for _, s := range subs {
		sub := literalsOf(s)
		if exactOK && sub.exact != nil && len(exact)+len(sub.exact) <= maxExactSet {
			exact = union(exact, sub.exact)
		} else {
			exactOK = false
		}
		best := bestSet(sub)
		if best == nil {
			setOK = false
			continue
		}
		set = union(set, best)
	}
	if exactOK {
		return literalInfo{exact: exact}
	}
	if setOK && len(set) <= maxUnionSet && usefulSet(set) {
		return literalInfo{need: [][]string{set}}
	}
	return literalInfo{}
}

// bestSet is the most selective set a node needs (nil when none).
func bestSet(info literalInfo) []string {
	var best []string
	consider := func(s []string) {
		if usefulSet(s) && (best == nil || shortest(s) > shortest(best)) {
			best = s
		}
	}
	consider(info.exact)
	for _, s := range info.need {
		consider(s)
	}
	return best
}

func usefulSet(s []string) bool { return len(s) > 0 && shortest(s) >= minNeededLiteral }

func shortest(s []string) int {
	n := -1
	for _, x := range s {
		if n < 0 || len(x) < n {
			n = len(x)
		}
	}
	return n
}

func product(a, b []string) []string {
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return dedupFirst(out)
}

func union(a, b []string) []string { return dedupFirst(append(slices.Clone(a), b...)) }

// dedupFirst keeps the first of each repeated element, in order (the
// literal sets and the scanner's groups are a few elements each).
func dedupFirst[T comparable](s []T) []T {
	var out []T
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// lowerSafe reports whether the expression, matched on lower-cased text
// without (?i), answers as its case-insensitive form on the text itself
// (for the letters ASCII lowering changes): no literal holds an upper-case
// ASCII letter, and every character class that holds an upper-case ASCII
// letter holds its lower-case one (\w, [A-Za-z], [^x]).
func lowerSafe(expr string) bool { return everyNode(expr, lowerSafeNode) }

func lowerSafeNode(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		if strings.ContainsFunc(string(re.Rune), func(r rune) bool { return 'A' <= r && r <= 'Z' }) {
			return false
		}
	case syntax.OpCharClass:
		in := func(c rune) bool {
			for i := 0; i+1 < len(re.Rune); i += 2 {
				if re.Rune[i] <= c && c <= re.Rune[i+1] {
					return true
				}
			}
			return false
		}
		for c := 'A'; c <= 'Z'; c++ {
			if in(c) && !in(c+'a'-'A') {
				return false
			}
		}
	}
	return true
}
