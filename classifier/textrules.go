package classifier

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// Text rules read error messages. They are the weakest signal and run last
// among the error signals, so each rule names a family of phrasings shared
// by many SDKs rather than one SDK's sentence: the classifier is scored on
// wordings it has never seen, and a rule that fires on the wrong family
// misroutes recovery, which is worse than answering unknown.
//
// Rules are tried in order and the first match decides. The order resolves
// overlaps: not-retryable classes (auth, content filter, session) first, so
// that "invalid API key" never reads as a schema problem; tool-not-found
// before schema, because "invalid value for tool_choice: no function named
// x" is about the tool; context overflow before schema and rate limits,
// because providers report it as a 400 "invalid request" that also mentions
// tokens; connection refusals before timeouts, because a refused connection
// often echoes its configured "connect timeout=30".

// maxTextLen bounds the text a rule scans: error messages can be huge
// (stack traces, echoed prompts) and the evidence is at the start.
const maxTextLen = 4096

type textRule struct {
	name    string
	typ     FailureType
	reason  string // for Unknown: why the class is not retryable
	conf    float64
	re      *regexp.Regexp
	exclude *regexp.Regexp // optional: a match here vetoes the rule
	// keys are lower-case words of which every match contains at least
	// one: a cheap test that skips the regular expression for most texts.
	// TestTextRulePrefilter and FuzzTextRules check that it never changes
	// an answer.
	keys []string
	// pre, when set, is a cheaper necessary condition than keys, on the
	// lower-cased text: false means the rule cannot match. Checked by the
	// same tests as keys.
	pre func(lower string) bool
	// check, when set, refines a match into a finding; it returns ok=false
	// when the match is not decisive (e.g. an ambiguous HTTP 400).
	check func(m []string, text string) (finding, bool)
	// yields lists every failure type check can return
	// (TestCheckYields enumerates the inputs), for mayClassifyAs.
	yields []FailureType
	// alts are the top-level alternatives of a case-insensitive re,
	// compiled apart and matched against lower-cased ASCII text. One large
	// alternation runs on Go's NFA at a cost per character proportional
	// to its size; small alternatives run on the backtracker and use
	// their literal prefixes, which is orders of magnitude faster.
	alts []alternative
	// subAlts, for a rule with a check, are the alternatives its leftmost
	// match is found from (submatch.go), matched on lower-cased text.
	subAlts []submatchAlternative
	// anyText: the alternatives (alts or subAlts) answer as re on any text
	// the prefilter reads (not only ASCII), because they hold no letter
	// outside ASCII (foldSafe).
	anyText bool
	// excludeAlts, excludeAnyText: the same for exclude.
	excludeAlts    []alternative
	excludeAnyText bool
	// keyGroup is the keyScanner group of keys (when there are keys).
	keyGroup int32
	// gives is the set of typ and yields (ruleTypes), for mayClassifyAs.
	gives typeSet
}

// typeSet is a set of the failure types the text rules give, one bit each
// (ruleTypes).
type typeSet uint64

// ruleTypes numbers the failure types the text rules give (their typ and
// yields).
var ruleTypes = map[FailureType]typeSet{}

// alternative is one top-level alternative of a rule with the literal
// sets every match of it needs (neededLiterals), tested before the
// expression runs.
type alternative struct {
	re *regexp.Regexp
	// need are the keyScanner groups of those sets: a text the scanner
	// reports without one of them cannot match.
	need []int32
	// An alternative \bP X (a word boundary, then a literal P: most of
	// them) gives Go's matcher no literal prefix to skip to, so it tries
	// every position of the text. loose is P X: every match of the
	// alternative is one of it, and Go finds its matches from the
	// occurrences of P alone, so a text it does not match is rejected at
	// the cost of a substring search. For \b(?:P1|P2...) X, loose holds
	// P1 X, P2 X, ...: a match of the alternative is a match of one. A
	// match of one that starts at a word boundary is a match of the
	// alternative, so the alternative itself runs only when none does.
	loose []looseAlternative
	// start, for an alternative without loose forms that starts with a
	// class of bytes, tries it only where one of them is (startclass.go).
	start *startClass
}

// looseAlternative is one P X of an alternative \bP X, with the literal
// sets it needs (as alternative.need).
type looseAlternative struct {
	re   *regexp.Regexp
	need []int32
}

// newAlternative compiles one alternative (on lower-cased text) and
// registers the literal sets it needs with b.
func newAlternative(expr string, b *keyScannerBuilder) alternative {
	a := alternative{re: regexp.MustCompile(expr), need: neededGroups(expr, b)}
	for _, l := range withoutLeadingBoundary(expr) {
		a.loose = append(a.loose, looseAlternative{re: regexp.MustCompile(l), need: neededGroups(l, b)})
	}
	if a.loose == nil {
		a.start = newStartClass(expr)
	}
	return a
}

// neededGroups registers with b the literal sets every match of expr needs.
func neededGroups(expr string, b *keyScannerBuilder) []int32 {
	var need []int32
	for _, set := range neededLiterals(expr) {
		need = append(need, b.group(set))
	}
	return need
}

// withoutLeadingBoundary is P X for an expression \bP X, or each Pi X for
// \b(?:P1|P2...) X, where each P starts with a literal character (not
// made optional or repeated); nil for any other form. It cuts the source
// text: printing a parsed expression back costs far more than compiling
// it (Go's syntax printer recomputes its flags at every node), and these
// are built at every process start.
func withoutLeadingBoundary(expr string) []string {
	rest, ok := strings.CutPrefix(expr, `\b`)
	if !ok {
		return nil
	}
	heads, tail := []string{rest}, ""
	if strings.HasPrefix(rest, "(?:") {
		end := groupEnd(rest)
		if end < 0 || end+1 < len(rest) && strings.IndexByte("?*+{", rest[end+1]) >= 0 {
			return nil
		}
		heads, tail = splitAlternatives(rest[len("(?:"):end]), rest[end+1:]
	}
	out := make([]string, 0, len(heads))
	for _, h := range heads {
		if !startsWithLiteral(h) {
			return nil
		}
		out = append(out, h+tail)
	}
	return out
}

// startsWithLiteral reports whether an expression's source starts with a
// literal letter or digit that no quantifier applies to.
func startsWithLiteral(src string) bool {
	if src == "" || !isWordByte(src[0]) {
		return false
	}
	return len(src) == 1 || strings.IndexByte("?*+{", src[1]) < 0
}

// groupEnd is the index of the ')' that closes the group src opens with,
// -1 when there is none (read as splitAlternatives reads the source).
func groupEnd(src string) int {
	end := -1
	eachOutsideClass(src, func(i int, c byte, depth int) bool {
		if c == ')' && depth == 0 {
			end = i
			return false
		}
		return true
	})
	return end
}

// ruleKeys is the scanner of every rule's keys and of the literals the
// alternatives need.
var ruleKeys *keyScanner

// wrongCallKeys is ruleKeys narrowed to the groups that the prefilters of
// the rules able to give WrongToolCalled or SchemaMismatch read
// (ruleText.passes): the question resultHeadFailure asks of every result
// that does not open like a failure, nearly all of them data.
var wrongCallKeys *keyScanner

// wrongCallRules are the rules able to give WrongToolCalled or
// SchemaMismatch, in order (indexes into textRules): resultHeadFailure
// asks of nearly every result whether one of them passes its prefilters
// (ruleText.mayPass), and they are a few of the rules.
var wrongCallRules []int32

func init() {
	b := newKeyScannerBuilder()
	for i := range textRules {
		r := &textRules[i]
		for _, t := range append([]FailureType{r.typ}, r.yields...) {
			if _, ok := ruleTypes[t]; !ok {
				if len(ruleTypes) == 64 {
					panic("classifier: more than 64 failure types in the text rules")
				}
				ruleTypes[t] = 1 << len(ruleTypes)
			}
			r.gives |= ruleTypes[t]
		}
		if len(r.keys) > 0 {
			r.keyGroup = b.group(r.keys)
		}
		if r.check == nil {
			r.alts, r.anyText = splitCaseInsensitive(r.re, b)
		} else {
			r.subAlts, r.anyText = splitSubmatch(r.re.String(), r.re.NumSubexp(), b)
		}
		if r.exclude != nil {
			r.excludeAlts, r.excludeAnyText = splitCaseInsensitive(r.exclude, b)
		}
	}
	ruleKeys = b.build()
	read := groupsReadBy(ruleTypes[WrongToolCalled] | ruleTypes[SchemaMismatch])
	wrongCallKeys = b.buildOf(func(g int32) bool { return read[g] })
	wrongCallRules = rulesGiving(ruleTypes[WrongToolCalled] | ruleTypes[SchemaMismatch])
}

// rulesGiving lists the rules able to give one of types (their gives), in
// order.
func rulesGiving(types typeSet) []int32 {
	var rules []int32
	for i := range textRules {
		if textRules[i].gives&types != 0 {
			rules = append(rules, int32(i))
		}
	}
	return rules
}

// groupsReadBy is the set of keyScanner groups that the prefilters of the
// rules able to give one of types read (ruleText.passes: the rule's keys,
// its alternatives' and their loose forms' needed literals).
func groupsReadBy(types typeSet) map[int32]bool {
	read := map[int32]bool{}
	for i := range textRules {
		r := &textRules[i]
		if r.gives&types == 0 {
			continue
		}
		if len(r.keys) > 0 {
			read[r.keyGroup] = true
		}
		for _, a := range r.alts {
			for _, g := range a.need {
				read[g] = true
			}
			for _, l := range a.loose {
				for _, g := range l.need {
					read[g] = true
				}
			}
		}
	}
	return read
}

// splitCaseInsensitive compiles the top-level alternatives of a (?i)
// expression for lower-cased text, and reports whether they answer on any
// text the prefilter reads (foldSafe) or only on ASCII; nil when the
// expression is not of that form or lower-casing could change an answer
// (lowerSafe).
func splitCaseInsensitive(re *regexp.Regexp, b *keyScannerBuilder) ([]alternative, bool) {
	src := re.String()
	if !strings.HasPrefix(src, "(?i)") || !lowerSafe(src[len("(?i)"):]) {
		return nil, false
	}
	var alts []alternative
	for _, alt := range splitAlternatives(src[len("(?i)"):]) {
		alts = append(alts, newAlternative(alt, b))
	}
	return alts, !slices.ContainsFunc(alts, func(a alternative) bool { return !foldSafe(a.re.String()) })
}

// foldSafe reports whether the expression (matched on lower-cased text
// without (?i)) answers as its case-insensitive form on the text itself for
// text that is not all ASCII, provided the text holds neither of the two
// runes (?i) folds to ASCII letters (K U+212A, ſ U+017F: prefilterText
// gives up on those): asciiLower leaves every other rune as it is, and
// (?i) relates no other rune to an ASCII one. So it holds when every
// literal is ASCII and every character class holds all of the other
// non-ASCII runes or none of them (a negated class like [^'"\n], or an
// ASCII one): then folding a non-ASCII rune of the text changes no answer.
func foldSafe(expr string) bool { return everyNode(expr, foldSafeNode) }

// everyNode reports whether expr parses and ok holds for every node of its
// syntax tree.
func everyNode(expr string, ok func(*syntax.Regexp) bool) bool {
	re, err := syntax.Parse(expr, syntax.Perl)
	return err == nil && holdsEverywhere(re, ok)
}

func holdsEverywhere(re *syntax.Regexp, ok func(*syntax.Regexp) bool) bool {
	if !ok(re) {
		return false
	}
	for _, sub := range re.Sub {
		if !holdsEverywhere(sub, ok) {
			return false
		}
	}
	return true
}

func foldSafeNode(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r >= utf8.RuneSelf {
				return false
			}
		}
	case syntax.OpCharClass:
		// The class's ranges above ASCII, the two folding runes left out,
		// cover nothing or everything.
		covered := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := max(re.Rune[i], utf8.RuneSelf), re.Rune[i+1]
			if lo > hi {
				continue
			}
			covered += int(hi-lo) + 1
			for _, f := range [...]rune{'\u017f', '\u212a'} {
				if lo <= f && f <= hi {
					covered--
				}
			}
		}
		if all := int(unicode.MaxRune-utf8.RuneSelf) + 1 - 2; covered != 0 && covered != all {
			return false
		}
	}
	return true
}

// splitAlternatives splits a regular expression at its top-level '|'.
func splitAlternatives(src string) []string {
	var out []string
	start := 0
	eachOutsideClass(src, func(i int, c byte, depth int) bool {
		if c == '|' && depth == 0 {
			out = append(out, src[start:i])
			start = i + 1
		}
		return true
	})
	return append(out, src[start:])
}

// eachOutsideClass calls f with each byte of an expression's source that
// is neither escaped nor in a character class, and the depth of groups
// after it; it stops when f returns false.
func eachOutsideClass(src string, f func(i int, c byte, depth int) bool) {
	depth, inClass := 0, false
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		default:
			if c == '(' {
				depth++
			} else if c == ')' {
				depth--
			}
			if !f(i, c, depth) {
				return
			}
		}
	}
}

const (
	confTextRule    = 0.7
	confTextRuleLow = 0.6
)

// Reasons attached to unknown findings whose class is clear but not one of
// the agent-failure classes.
const (
	ReasonAuth           = "auth"
	ReasonContentFilter  = "content_filter"
	ReasonSessionExpired = "session_expired"
	ReasonConnection     = "connection"
	ReasonBilling        = "billing"
	ReasonNoFinalAnswer  = "no_final_answer"
	ReasonHumanInLoop    = "human_in_the_loop"
	ReasonRootLost       = "root_span_lost"
)

func rx(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// A tool or function name as it appears in messages: quoted or bare.
const toolIdent = `(?:['"\x60][^'"\x60\n]{1,80}['"\x60]|[\w.:/\-]+)`

// textRules are the typed rules and the not-retryable families of
// notretryable.go, which come last so they never change a typed answer.
var textRules = append([]textRule{
	{
		name: "auth",
		keys: []string{"api key", "api_key", "apikey", "api-key", "authori", "authenticat", "permission", "access denied", "access_denied", "forbidden", "credential", "token", "iam role", "access to", "insufficient"}, typ: Unknown, reason: ReasonAuth, conf: confTextRule,
		re: rx(`(?i)\b(?:incorrect|invalid|missing|expired|revoked|bad|no)[ _-]api[ _-]?key|\bapi[ _-]?key\b[^.\n]{0,40}\b(?:invalid|incorrect|not valid|expired|revoked|missing|required)|\binvalid[ _](?:x-)?api[ _-]?key|\bunauthori[sz]ed\b|\bunauthenticated\b|\bauthentication(?:[ _]error| failed| required|error)|\bnot authori[sz]ed\b|\bpermission[ _]denied\b|\baccess[ _]denied\b|\b403 forbidden\b|^\s*forbidden\b|\baccess (?:is )?forbidden\b|\bforbidden:|\binvalid (?:authentication )?credentials|\binvalid (?:bearer token|access token|auth(?:entication)? token)|\b(?:does not|doesn't|do not) have (?:the )?(?:required )?(?:permission|iam role|access to (?:this|the) (?:resource|project|organization))|\binsufficient (?:permissions|privileges|scope)`),
	},
	{
		name: "content_filter",
		keys: []string{"content", "safety", "blocked", "flagged", "responsible", "prohibited", "moderation"}, typ: Unknown, reason: ReasonContentFilter, conf: confTextRule,
		re: rx(`(?i)\bcontent[ _-](?:filter|policy|management policy|moderation)|\bsafety (?:filter|system|settings|reasons|policy|block)|\bblocked (?:by|due to) (?:the )?(?:safety|content|moderation)|\bflagged (?:by|as|for) (?:the )?(?:moderation|safety|content|inappropriate|unsafe)|\bresponsible ai\b|\bprohibited[ _]content\b|\bmoderation (?:endpoint|filter|flagged)`),
	},
	{
		name: "session_expired",
		keys: []string{"session", "token"}, typ: Unknown, reason: ReasonSessionExpired, conf: confTextRule,
		re: rx(`(?i)\bsession (?:has |is )?(?:expired|not found|no longer valid|invalid|terminated)|\bsession[ _-]?(?:expired|not[ _-]found)|\b(?:access |auth |refresh )?token (?:has )?expired\b`),
	},
	{
		// "unknown tool x", "Model tried to call unavailable tool 'x'",
		// "unsupported function", "undefined tool".
		name: "unknown_tool",
		keys: []string{"tool", "function"}, typ: WrongToolCalled, conf: confTextRule,
		re:      rx(`(?i)\b(?:unknown|unavailable|unregistered|undefined|unrecognized|unrecogni[sz]ed|nonexistent|non-existent|unsupported|invalid)\s+(?:tool|function)(?:\s+name)?\b`),
		exclude: rx(`(?i)\b(?:unknown|unavailable|unregistered|undefined|unrecognized|unrecogni[sz]ed|nonexistent|non-existent|unsupported|invalid)\s+(?:tool|function)\s+(?:call\s+)?(?:argument|args|input|param|parameter|schema|result|output|response|error|execution|choice|format|type|call id|call_id|id)`),
	},
	{
		// "Tool 'x' not found", "tool with name 'x' was not found",
		// "Function x does not exist", "Tool x is not registered".
		name: "tool_not_found",
		keys: []string{"tool", "function", "action"}, typ: WrongToolCalled, conf: confTextRule,
		re: rx(`(?i)\b(?:tool|function|action)(?:\s+with(?:\s+the)?\s+name|\s+named|\s+name|\s+call\s+name|\s+called)?\s+` + toolIdent + `\s+(?:is\s+|was\s+|has\s+been\s+)?(?:not\s+found|not\s+registered|not\s+defined|not\s+available|not\s+recogni[sz]ed|not\s+supported|not\s+a\s+valid\s+(?:tool|function|action)|not\s+in\s+(?:the\s+)?(?:tool|function)s?|does\s+not\s+exist|doesn't\s+exist|don't\s+exist|do\s+not\s+exist|could\s+not\s+be\s+found|cannot\s+be\s+found|missing\s+from)`),
		// "tool input is not valid", "function arguments not found": about
		// the call, not the tool.
		exclude: rx(`(?i)\b(?:tool|function|action)\s+(?:input|inputs|arguments?|args|call|calls|output|result|results|parameters?|params|schema|response|definition)\s+(?:is\s+|was\s+|are\s+|were\s+)?(?:not|does|doesn't|don't|could|cannot|missing)`),
	},
	{
		// "no such tool", "no function named 'x'", "could not find tool
		// with name x", "x is not a valid tool", "'x' is not a registered
		// agent tool".
		name: "no_such_tool",
		keys: []string{"tool", "function"}, typ: WrongToolCalled, conf: confTextRule,
		re: rx(`(?i)\bno\s+such\s+(?:tool|function)\b|\b(?:no|could\s+not\s+find|couldn't\s+find|cannot\s+find|can't\s+find|unable\s+to\s+find|did\s+not\s+find|failed\s+to\s+find)\s+(?:a\s+|any\s+)?(?:tool|function)\s+(?:named|with\s+(?:the\s+)?name|called|matching)\b|\b(?:could\s+not|couldn't|cannot|can't|unable\s+to)\s+find\s+(?:tool|function)\s+['"\x60]|\bis\s+not\s+an?\s+(?:valid|registered|known|recogni[sz]ed|available|supported|existing)(?:\s+[\w-]+)?\s+(?:tool|function)\b|\btried\s+to\s+(?:use|call)\s+(?:the\s+)?(?:tool|function)\s+` + toolIdent + `,?\s+but\s+it\s+(?:does\s+not|doesn't)\s+exist|\b(?:tool|function)\s+` + toolIdent + `,?\s+(?:which|that)\s+(?:is|was)\s+not\s+(?:in|among|part\s+of|one\s+of|available|defined|registered|found|provided)\b|\bdoes\s+not\s+contain\s+(?:a\s+|the\s+)?(?:plugin\s+and/or\s+)?(?:tool|function)\b`),
	},
	{
		// Providers and routers report a missing model/deployment/endpoint
		// in the same terms as a missing tool: the agent addressed
		// something that does not exist.
		name: "target_not_found",
		keys: []string{"model", "deployment", "endpoint", "agent", "resource"}, typ: WrongToolCalled, conf: confTextRuleLow,
		// Only targets that are models, deployments or agents: a tool's own
		// "resource not found" (an order, a file) is about its data.
		re: rx(`(?i)\b(?:model|deployment|agent)\s+` + toolIdent + `\s+(?:is\s+|was\s+)?(?:not\s+found|does\s+not\s+exist|doesn't\s+exist|could\s+not\s+be\s+found)|\bthe\s+(?:model|deployment)\s+['"\x60][^'"\x60\n]{1,200}['"\x60]\s+(?:was\s+not\s+found|does\s+not\s+exist|could\s+not\s+be\s+found)|\bthe\s+resource\s+['"\x60][^'"\x60\n]{0,200}/(?:deployments|models|agents|endpoints)/[^'"\x60\n]{1,100}['"\x60](?:\s+under\s+[^\n]{0,120}?)?\s+(?:was\s+not\s+found|does\s+not\s+exist|could\s+not\s+be\s+found)|\bendpoint\s+[^\s'"\x60]*/(?:endpoints|models|deployments)/[^\s'"\x60]+\s+(?:is\s+|was\s+)?not\s+found|\bis\s+not\s+a\s+valid\s+model(?:\s+id)?\b|\bno\s+(?:model|deployment|agent)\s+with\s+(?:the\s+)?(?:name|id)\s+` + toolIdent + `\s+(?:was\s+)?found`),
	},
	{
		// Step and recursion limits: a loop when the calls repeat,
		// plan_incomplete when they do not; the trajectory decides.
		name: "step_limit",
		keys: []string{"recursion", "max", "limit", "count", "stopped"}, typ: stepLimitType, conf: confTextRule,
		re: rx(`(?i)\brecursion limit\b|\bmax(?:imum)?[ _]?(?:number of )?(?:steps|turns|iterations|rounds)\b[^\n]{0,30}\b(?:exceeded|reached|hit)|\b(?:step|turn|iteration|round)[ _]?(?:limit|count)\b[^\n]{0,30}\b(?:exceeded|reached|hit)|\b(?:reached|hit|exceeded) (?:the )?(?:max(?:imum)?|step|turn|iteration)[ _]?(?:steps|turns|iterations|limit)\b|\bstopped after \d+ (?:steps|turns|iterations|rounds)\b|\bstopped due to (?:max )?iteration limit`),
	},
	{
		name: "context_overflow",
		keys: []string{"context", "too long", "token", "reduce the length", "maximum prompt", "maximum input"}, typ: ContextOverflow, conf: confTextRule,
		re:      rx(`(?i)\bcontext[ _-]?(?:length|window|size|limit)\b[^\n]{0,80}?\b(?:exceed|exceeded|exceeds|too long|too large|overflow|limit|maximum|is \d+)|\bmaximum context(?:[ _]length)?\b|\bcontext[ _](?:length[ _]exceeded|window[ _]exceeded|overflow)|\bprompt is too long\b|\b(?:input|prompt|request|message)s? (?:is |are )?too long\b|\btoo many (?:input |prompt )?tokens\b|\b(?:input|prompt) token count\b[^\n]{0,60}\bexceeds?\b|\bexceeds? (?:the )?(?:model'?s? )?(?:maximum|max|allowed) (?:number of )?(?:context|input|prompt)? ?tokens?\b|\breduce the length of the (?:messages|prompt|input)|\b(?:input|prompt)s?\W{0,3}\s*tokens?\b[^\n]{0,60}?\bmust be (?:<=|less than|at most|no more than)|\b(?:request|prompt|input|messages?)s? (?:is |are |was )?too (?:large|big)\b[^\n]{0,80}?\btokens?\b|\b(?:supports?|allows?|accepts?|handles?) (?:at most|up to|a maximum of|no more than|only) [\d,.]+k? (?:input |prompt |context )?tokens\b|\b(?:prompt|input|request|messages?) (?:has|have|contains?|uses?|is|are) [\d,.]+ (?:input |prompt )?tokens\b[^\n]{0,80}?\b(?:limit|maximum|max|at most|exceed|exceeds|only|supports?)\b|\bexceeds? (?:the )?(?:model'?s? )?(?:maximum |max )?context (?:length|window|size|limit)\b|\bmaximum (?:prompt|input) (?:length|size)\b`),
		exclude: rx(`(?i)\btokens? per (?:min|minute|day|hour)|\b(?:tpm|rpm)\b|\brate[ _-]?limit`),
	},
	{
		name: "schema_validation",
		keys: []string{"valid", "field", "missing", "required", "match", "conform", "satisf", "should", "must", "expect", "pars", "decode", "json", "column", "unterminated", "trailing", "key", "schema", "argument", "param", "propert", "extra", "unprocessable", "of type", "unmarshal", "deserializ"}, typ: SchemaMismatch, conf: confTextRule,
		re: rx(`(?i)\b\d+ validation errors? for\b|\bvalidation (?:error|failed|failure)|\b(?:schema|type|input|argument|arguments|parameter|parameters|params|json) validation (?:error|failed|failure)|\bvalidat(?:e|ion)[ _]failed\b|\bfailed to validate\b|\bfield required\b|\bmissing (?:required )?(?:field|property|parameter|argument|key)s?\b|\brequired (?:property|field|parameter|argument)s? (?:is |are )?missing|\bis a required (?:property|field|parameter|argument)|\bmust have required propert|\b(?:did not|does not|doesn't|didn't) (?:match|conform to|satisfy) (?:the )?(?:expected |required |tool'?s? |input |json |output )*(?:json )?(?:schema|format|type)|\bconforms? to the (?:json )?schema\b|\binvalid (?:input|arguments?|args|parameters?|params|tool (?:call )?(?:input|arguments?)|request body|json|type|value for)\b|\binvalid_type\b|\binvalid[ _]argument\b|\b(?:input|value) (?:should|must) be (?:a )?(?:valid )?\w+|\bvalue is not a valid\b|\bexpected (?:a |an |type )?['"]?(?:string|number|integer|int|float|double|boolean|bool|object|array|list|dict|map|null|str|tuple|date|enum|json)['"]?,? (?:but )?(?:got|received|found|was given|instead)\b|\bunable to parse\b|\b(?:could not|couldn't|cannot|failed to) (?:parse|decode) (?:the )?(?:tool |function )?(?:arguments|args|input|json|output|response)|\bnot (?:a )?valid json\b|\bmalformed json\b|\binvalid json\b|\bjson (?:parse|decode|syntax) error|\bunexpected (?:token|end)\b[^\n]{0,40}\bjson\b|\bexpecting (?:value|property name|',' delimiter|':' delimiter)|\bline \d+ column \d+ \(char \d+\)|\bunterminated string\b|\billegal trailing comma\b|\bobject key followed by\b|\boutput_parsing_failure\b|\bgot invalid (?:output|return|json)|\bschema mismatch\b|\bunprocessable entity\b|\bmust be (?:a |an )?(?:string|number|integer|boolean|object|array|null)\b|\bis not of type\b|\bcannot unmarshal\b|\bcannot deserialize\b|\bnot a valid (?:key, value )?(?:dictionary|dict|json|object|mapping)\b|\bmissing (?:value|values) for (?:the )?(?:required )?(?:parameter|argument|field|property)|\bmissing \d+ required (?:positional |keyword(?:-only)? )?arguments?\b|\bunexpected keyword argument\b|\b(?:argument|parameter|field|property|param)s?\s+(?:['"\x60][^'"\x60\n]+['"\x60]|\w+)\s+(?:is|are)\s+(?:required|missing)\b|['"\x60][^'"\x60\n]+['"\x60]\s+(?:argument|parameter|field|property)\s+(?:is|are)\s+(?:required|missing)\b|\b(?:unknown|unrecognized|unexpected) (?:argument|parameter|field|property|key)s?\b|\bextra (?:fields|inputs|arguments) (?:are )?not permitted\b|\badditional propert(?:y|ies)\b`),
	},
	{
		// A status code written in the text: "429 Too Many Requests",
		// "Status 503:", "Error code: 400", "503 The server is
		// overloaded" (OpenAI's Node SDK prefixes messages with the status).
		name: "http_status_text", conf: confTextRule,
		pre: hasStatusNumber,
		re:  rx(`(?i)(?:^\s*(?:[\w.]*(?:error|exception)\s*[:\-]\s*)?|\bstatus(?:[ _]code)?\s*[:=]?\s*|\bhttp(?:/\d(?:\.\d)?)?\s*[:=]?\s*|\berror[ _]code\s*[:=]?\s*|\bcode\s*[:=]\s*|['"(])([1-5]\d\d)(?:\s|:|-|'|"|\)|,|$)|\b([1-5]\d\d)\s+(?:client error|server error|too many requests|internal server error|bad gateway|service unavailable|service temporarily unavailable|gateway time-?out|request time-?out|unauthorized|forbidden|unprocessable entity|bad request|not found)\b`),
		// "(500 tokens)", "503 records": quantities, not statuses.
		exclude: rx(`(?i)\b[1-5]\d\d\s+(?:tokens?|items?|records?|ms|milliseconds?|secs?|seconds?|minutes?|bytes?|kb|mb|characters?|chars?|results?|rows?|files?|lines?|words?|steps?|calls?|times?|users?|documents?|pages?|entries|messages?)\b`),
		check:   checkHTTPText,
		yields:  []FailureType{Timeout, ExternalFault, Unknown},
	},
	{
		// JSON-RPC errors quoted in text: "MCP error -32602: ...".
		name: "jsonrpc_text",
		keys: []string{"-3"}, conf: confTextRule,
		pre:    hasJSONRPCCode,
		re:     rx(`(?i)\b(?:mcp|json-?rpc|rpc)\s+error\s*[:(]?\s*(-3\d{4})\b|"code"\s*:\s*(-3\d{4})\b`),
		check:  checkJSONRPCText,
		yields: []FailureType{WrongToolCalled, SchemaMismatch, Timeout, ExternalFault},
	},
	{
		name: "connection_refused",
		keys: []string{"connect", "econn", "establish", "service not known", "getaddrinfo", "enotfound", "route", "unreachable", "hang up"}, typ: Unknown, reason: ReasonConnection, conf: confTextRule,
		re: rx(`(?i)\bconnection (?:refused|reset|aborted|error)\b|\beconn(?:refused|reset)\b|\bfailed to establish a new connection\b|\bcannot connect to host\b|\b(?:could not|couldn't|unable to|failed to) connect\b|\bname or service not known\b|\bgetaddrinfo\b|\benotfound\b|\bno route to host\b|\bnetwork is unreachable\b|\bsocket hang up\b|\bremote end closed connection\b`),
	},
	{
		name: "timeout",
		keys: []string{"time", "deadline", "respond", "too long", "inactivity"}, typ: Timeout, conf: confTextRule,
		re: rx(`(?i)\btimed?[ _-]?out\b|\btimeouts?\b|\bdeadline[ _](?:exceeded|expired)|\bdeadline of [\d.]+\s*m?s exceeded|\betimedout\b|\besockettimedout\b|\bdid not respond (?:within|in time)|\btook too long\b|\bseconds of inactivity\b|\bread timeout\b|\baborted due to timeout\b`),
		// "timeout" as a setting or a retry hint is not a timeout.
		exclude: rx(`(?i)\b(?:increase|set|configure|raise|adjust)\s+(?:the\s+)?(?:\w+\s+)?timeout\b|\btimeout\s+(?:must|should) be\b|\binvalid timeout\b`),
	},
	{
		// Out of credit: not transient, retrying will not help.
		name: "billing",
		keys: []string{"billing", "insufficient", "payment", "credit"}, typ: Unknown, reason: ReasonBilling, conf: confTextRule,
		re: rx(`(?i)\bbilling (?:details|hard limit|issue|account|is not active)|\binsufficient[ _](?:credits?|balance|funds|quota)\b|\bpayment required\b|\bcredit balance is too low\b|\bcheck your plan and billing\b`),
	},
	{
		name: "rate_limit",
		keys: []string{"rate", "too many", "toomany", "throttl", "quota", "exhaust", "limited to", "per ", "retry after"}, typ: ExternalFault, conf: confTextRule,
		re: rx(`(?i)\brate[ _-]?limit|\brate (?:exceeded|exhausted)\b|\btoo many requests\b|\btoomanyrequests\b|\bthrottl|\bquota (?:exceeded|exhausted)|\bexceeded (?:your |the )?(?:current )?quota\b|\bresource[ _]exhausted\b|\bresources? (?:has|have) been exhausted\b|\blimited to \d+ [\w ]{0,30}(?:/|per) ?(?:second|minute|hour|day|min|sec)\b|\b(?:requests?|tokens?) per (?:second|minute|min|hour|day)\b|\bretry after \d+`),
	},
	{
		name: "service_unavailable",
		keys: []string{"overload", "unavailable", "gateway", "server", "upstream", "capacity", "not ready", "transient"}, typ: ExternalFault, conf: confTextRule,
		re: rx(`(?i)\boverloaded\b|\bservice (?:is )?(?:temporarily |currently )?unavailable\b|\bserviceunavailable\b|\bserver (?:is )?(?:temporarily |currently )?unavailable\b|\bbad gateway\b|\binternal server error\b|\bserver had an error\b|\bserver error\b|\bupstream (?:error|connect error|request failed|service (?:error|failure))|\btemporarily unavailable\b|\bat capacity\b|\bover capacity\b|\bnot ready yet\b|\btransient (?:error|failure|condition)\b`),
	},
	{
		// gRPC canonical codes, written upper case by Google SDKs.
		name: "grpc_status",
		keys: []string{"unavailable", "deadline_exceeded", "resource_exhausted", "invalid_argument", "unauthenticated", "permission_denied"}, conf: confTextRuleLow,
		re:     rx(`\b(UNAVAILABLE|DEADLINE_EXCEEDED|RESOURCE_EXHAUSTED|INVALID_ARGUMENT|UNAUTHENTICATED|PERMISSION_DENIED)\b`),
		check:  checkGRPC,
		yields: []FailureType{ExternalFault, Timeout, SchemaMismatch, Unknown},
	},
}, notRetryableRules...)

// matchedCode is the numeric code a rule's pattern captured in its first
// group or, when the pattern's other alternative matched, its second.
func matchedCode(m []string) (int, bool) {
	code := m[1]
	if code == "" {
		code = m[2]
	}
	n, err := strconv.Atoi(code)
	return n, err == nil
}

func checkHTTPText(m []string, _ string) (finding, bool) {
	n, ok := matchedCode(m)
	if !ok {
		return finding{}, false
	}
	return fromHTTPStatus(n)
}

func checkJSONRPCText(m []string, text string) (finding, bool) {
	n, ok := matchedCode(m)
	if !ok {
		return finding{}, false
	}
	return fromJSONRPC(n, func() string { return text })
}

func checkGRPC(m []string, _ string) (finding, bool) {
	switch m[1] {
	case "UNAVAILABLE", "RESOURCE_EXHAUSTED":
		return finding{Type: ExternalFault}, true
	case "DEADLINE_EXCEEDED":
		return finding{Type: Timeout}, true
	case "INVALID_ARGUMENT":
		return finding{Type: SchemaMismatch}, true
	case "UNAUTHENTICATED", "PERMISSION_DENIED":
		return finding{Type: Unknown, Reason: ReasonAuth}, true
	}
	return finding{}, false
}

// ClassifyText runs the text rules over an error message and returns the
// first decisive finding. It never panics and is deterministic.
func ClassifyText(text string) (ft FailureType, rule, reason string, ok bool) {
	f, ok := classifyText(text)
	return f.Type, f.Rule, f.Reason, ok
}

func classifyText(text string) (finding, bool) {
	return classifyTextWith(text, true)
}

func classifyTextWith(text string, prefilter bool) (finding, bool) {
	return classifyTextIn(text, prefilter, nil)
}

// classifyTextIn is classifyTextWith lowering the text into scratch (see
// ruleText.scratch; nil: a copy of its own).
func classifyTextIn(text string, prefilter bool, scratch *[]byte) (finding, bool) {
	rt := ruleText{scratch: scratch}
	if !rt.prepare(text) {
		return finding{}, false
	}
	return rt.classify(prefilter)
}

// ruleText is a text as the rules read it: bounded and trimmed, with what
// the prefilters read of it.
type ruleText struct {
	text string
	// exact: the prefilters are exact on text (prefilterText).
	exact bool
	// alts: the compiled alternatives may be matched on lower (ASCII text).
	alts bool
	// lower is text with its ASCII letters lowered, made when first asked
	// for (lowered).
	lower   string
	lowered bool
	// scratch, when set, is room lower is made in (grown as needed): the
	// caller's, reused for its next text, so lower must not be kept past
	// the rules' reading (nothing keeps it: findings and submatches are
	// made of text).
	scratch *[]byte
	// hits are the keyScanner groups of text (when exact).
	hits keyHits
}

// prepare reads text for the rules; false when nothing is left to read.
func (rt *ruleText) prepare(text string) bool { return rt.prepareWith(text, ruleKeys) }

// prepareWith is prepare with the hits of keys only (ruleKeys or a
// narrowing of it, which answers for the rules it was narrowed to).
func (rt *ruleText) prepareWith(text string, keys *keyScanner) bool {
	if len(text) > maxTextLen {
		text = text[:maxTextLen]
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return false
	}
	rt.text = text
	rt.alts, rt.exact = prefilterText(text)
	if rt.exact {
		keys.scan(text, &rt.hits)
	}
	return true
}

func (rt *ruleText) lowerText() string {
	if !rt.lowered {
		rt.lower, rt.lowered = asciiLowerIn(rt.text, rt.scratch), true
	}
	return rt.lower
}

// passes reports whether rule r passes its prefilters (keys, pre, its
// alternatives) on the text; matched says whether the alternatives were
// asked, and so already matched.
func (rt *ruleText) passes(r *textRule) (ok, matched bool) {
	if len(r.keys) > 0 && !rt.hits.has(r.keyGroup) {
		return false, false
	}
	if r.pre != nil && !r.pre(rt.lowerText()) {
		return false, false
	}
	if (rt.alts || r.anyText) && len(r.alts) > 0 {
		return matchAny(r.alts, rt.lowerText(), &rt.hits), true
	}
	return true, false
}

// submatch is r.re.FindStringSubmatch of the text, from the rule's
// alternatives when they answer on it; the prefilters must be exact on
// the text (rt.exact: rt.hits are its groups).
func (rt *ruleText) submatch(r *textRule) []string {
	if (rt.alts || r.anyText) && r.subAlts != nil {
		return leftmostSubmatch(r.subAlts, r.re.NumSubexp(), rt.text, rt.lowerText(), &rt.hits)
	}
	return r.re.FindStringSubmatch(rt.text)
}

// excluded reports whether r's exclude matches the text.
func (rt *ruleText) excluded(r *textRule, prefilter bool) bool {
	if prefilter && (rt.alts || r.excludeAnyText) && len(r.excludeAlts) > 0 {
		return matchAny(r.excludeAlts, rt.lowerText(), &rt.hits)
	}
	return r.exclude.MatchString(rt.text)
}

// classify runs the rules over the text, through the prefilters when
// prefilter is set (and they are exact on it).
func (rt *ruleText) classify(prefilter bool) (finding, bool) {
	prefilter = prefilter && rt.exact
	text := rt.text
	for i := range textRules {
		r := &textRules[i]
		var m []string
		if prefilter {
			ok, matched := rt.passes(r)
			if !ok {
				continue
			}
			if !matched {
				if m = rt.submatch(r); m == nil {
					continue
				}
			}
		} else if m = r.re.FindStringSubmatch(text); m == nil {
			continue
		}
		if r.exclude != nil && rt.excluded(r, prefilter) {
			continue
		}
		f := finding{Type: r.typ, Reason: r.reason}
		if r.check != nil {
			var ok bool
			f, ok = r.check(m, text)
			if !ok {
				continue
			}
		}
		f.Signal = SignalTextRule
		f.Rule = r.name
		f.Confidence = r.conf
		return f, true
	}
	return finding{}, false
}

// mayClassifyAs reports whether the text rules could classify text as one
// of types: false when no rule that can give one of those types (its type,
// or for a rule with a check every type the check yields) passes its
// prefilter on text. A false answer is exact; true only means classifyText
// must be asked.
func mayClassifyAs(text string, types ...FailureType) bool {
	var rt ruleText
	if !rt.prepare(text) {
		return false
	}
	return rt.mayClassifyAs(types...)
}

// mayClassifyAs lists the rules giving types on every call (the tests
// ask it of many types; resultHeadFailure asks mayPass of a list made
// once).
func (rt *ruleText) mayClassifyAs(types ...FailureType) bool {
	var asked typeSet
	for _, t := range types {
		asked |= ruleTypes[t]
	}
	return rt.mayPass(rulesGiving(asked))
}

// mayPass is mayClassifyAs(types...) with rules = rulesGiving(types):
// the rules able to give them, listed once, instead of every rule's gives
// tested against the types for each text.
func (rt *ruleText) mayPass(rules []int32) bool {
	if !rt.exact {
		return true
	}
	for _, i := range rules {
		if ok, _ := rt.passes(&textRules[i]); ok {
			return true
		}
	}
	return false
}

// prefilterText reports whether the compiled alternatives may be matched
// on the text lowered (alts), and whether the rules' prefilters (keys,
// pre, on the lowered text) are exact on it at all (ok). Case folding in
// (?i) maps exactly two non-ASCII letters to ASCII ones, the Kelvin sign
// (k) and the long s (s): in a text without them every ASCII letter a
// match needs is an ASCII letter of the text, so the keys are found in
// the text with its ASCII letters lowered. The alternatives, compiled for
// lower-cased ASCII text, are used on ASCII text, and on the other text
// for the rules whose alternatives hold no letter outside ASCII (anyText).
func prefilterText(text string) (alts, ok bool) {
	if isASCII(text) {
		return true, true
	}
	if strings.ContainsRune(text, '\u212a') || strings.ContainsRune(text, '\u017f') {
		return false, false
	}
	return false, true
}

// asciiLower lowers the ASCII letters of s and leaves every other byte
// (s itself when it has no upper-case ASCII letter).
func asciiLower(s string) string { return asciiLowerIn(s, nil) }

// asciiLowerIn is asciiLower, writing a lowered copy into *scratch (grown
// as needed) when scratch is set.
func asciiLowerIn(s string, scratch *[]byte) string {
	i := lowerWords(s)
	for i < len(s) && !('A' <= s[i] && s[i] <= 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	var b []byte
	if scratch != nil {
		b = slices.Grow((*scratch)[:0], len(s))[:len(s)]
		*scratch = b
	} else {
		b = make([]byte, len(s))
	}
	copy(b, s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return unsafe.String(&b[0], len(b))
}

// matchAny reports whether one of alts matches s; hits must hold every
// keyScanner group of s (more may be set: they only let an expression
// run).
func matchAny(alts []alternative, s string, hits *keyHits) bool {
	for i := range alts {
		a := &alts[i]
		if !hits.allOf(a.need) {
			continue
		}
		if a.loose != nil {
			found, bounded := matchLoose(a.loose, s, hits)
			if bounded {
				return true
			}
			if !found {
				continue
			}
		}
		if a.start != nil {
			if a.start.matches(s) {
				return true
			}
			continue
		}
		if a.re.MatchString(s) {
			return true
		}
	}
	return false
}

// matchLoose reports whether one of an alternative's loose forms matches
// s (found), and whether one's leftmost match starts at a word boundary
// (bounded: then the alternative matches there).
func matchLoose(loose []looseAlternative, s string, hits *keyHits) (found, bounded bool) {
	for i := range loose {
		l := &loose[i]
		if !hits.allOf(l.need) {
			continue
		}
		loc := l.re.FindStringIndex(s)
		if loc == nil {
			continue
		}
		if wordBoundary(s, loc[0]) {
			return true, true
		}
		found = true
	}
	return found, false
}

func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if word8(s[i:i+8])&highs8 != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

const (
	ones8  = 0x0101010101010101
	highs8 = 0x8080808080808080
)

// word8 is the 8 bytes of w (len(w) == 8) as one little-endian word (the
// compiler loads it at once).
func word8(w string) uint64 {
	_ = w[7]
	return uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
}

// lowerWords is the index of the first 8-byte word of s with a byte that
// is an upper-case ASCII letter or not ASCII (or the last whole word's
// end): asciiLower's scan for the first upper-case letter skips the words
// before it at once. For a byte b below 0x80, b+0x3f has its high bit set
// when b >= 'A' and b+0x25 when b > 'Z', with no carry into the next byte.
func lowerWords(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := word8(s[i : i+8])
		if x&highs8 != 0 || (x+0x3f*ones8)&^(x+0x25*ones8)&highs8 != 0 {
			break
		}
	}
	return i
}

// hasStatusNumber reports whether s holds what every match of the HTTP
// status rule holds: a three-digit number from 100 to 599 followed by the
// end of the text, white space or one of :-'"),. Most texts hold digits
// (ids, prices, sizes); few hold that.
func hasStatusNumber(s string) bool {
	for i := 0; i+3 <= len(s); i++ {
		if s[i] < '1' || s[i] > '5' || !isDigit(s[i+1]) || !isDigit(s[i+2]) {
			continue
		}
		if i+3 == len(s) {
			return true
		}
		switch s[i+3] {
		case ' ', '\t', '\n', '\f', '\r', ':', '-', '\'', '"', ')', ',':
			return true
		}
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// hasJSONRPCCode reports whether s holds what every match of the JSON-RPC
// text rule holds: -3 and four more digits, not followed by a fifth (the
// JSON-RPC 2.0 reserved codes -32768..-32000). The key "-3" alone is in
// many ids, SKUs and dates ("SKU-3312", "2026-03").
func hasJSONRPCCode(s string) bool {
	for i := 0; ; {
		k := strings.Index(s[i:], "-3")
		if k < 0 {
			return false
		}
		i += k + 2
		if i+4 <= len(s) && isDigit(s[i]) && isDigit(s[i+1]) && isDigit(s[i+2]) && isDigit(s[i+3]) &&
			(i+4 == len(s) || !isWordByte(s[i+4])) {
			return true
		}
	}
}

// isWordByte is an ASCII word character (regexp's \w, whose boundary \b is).
func isWordByte(c byte) bool {
	return isDigit(c) || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// wrongToolText reports whether text says a tool does not exist. JSON-RPC
// -32602 (invalid params) is what the MCP SDKs answer for an unknown tool
// too, so that code needs the text to tell the two apart.
func wrongToolText(text string) bool {
	if len(text) > maxTextLen {
		text = text[:maxTextLen]
	}
	for _, r := range toolNotFoundRules {
		if r.re.MatchString(text) && (r.exclude == nil || !r.exclude.MatchString(text)) {
			return true
		}
	}
	return false
}

// toolNotFoundRules are the text rules saying a tool does not exist (not
// a model or deployment). Filled in init: textRules refers to
// wrongToolText through the JSON-RPC check.
var toolNotFoundRules []*textRule

func init() {
	for i := range textRules {
		r := &textRules[i]
		if r.typ == WrongToolCalled && r.name != "target_not_found" {
			toolNotFoundRules = append(toolNotFoundRules, r)
		}
	}
}
