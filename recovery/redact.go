package recovery

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Redactor removes secrets from text and bounds its length, so that
// decisions and the events built from them can be published: error texts,
// tool arguments and messages routinely carry API keys and tokens.
type Redactor struct {
	maxLen   int
	patterns []secretPattern
	keys     *regexp.Regexp
	memo     *textMemo // Text's answers for short inputs (redact_memo.go)
	// empty is Text(""): most optional names and hints of a decision are
	// empty.
	empty string
}

// RedactorOptions configure a Redactor.
type RedactorOptions struct {
	// MaxLen bounds the bytes kept by Truncate and Text (default 512;
	// negative: no bound).
	MaxLen int
	// ExtraPatterns are additional regular expressions whose matches are
	// replaced by [REDACTED].
	ExtraPatterns []string
	// ExtraKeys are additional JSON keys (case-insensitive, exact) whose
	// values JSON redacts.
	ExtraKeys []string
}

// Redacted replaces a secret.
const Redacted = "[REDACTED]"

type secretPattern struct {
	re *regexp.Regexp
	// repl is the replacement template; "" replaces the whole match. Key=value
	// shapes keep their key ("${1}[REDACTED]"), and shapes that must not
	// follow a letter or digit keep the character before them ("${1}…").
	repl string
	// need lists literals of which every match contains at least one
	// (lower-case ones matched ignoring ASCII case when fold is set): text
	// without any of them skips the pattern. Empty: always run.
	need []string
	fold bool
}

// mayMatch reports whether p can match s: false only when s contains none
// of the literals every match of p contains. A case-insensitive pattern
// also matches non-ASCII letters that fold to ASCII ones (U+212A KELVIN
// SIGN to k, U+017F LONG S to s), so text that is not all ASCII always
// runs it.
func (p *secretPattern) mayMatch(s string, ascii bool) bool {
	if len(p.need) == 0 || (p.fold && !ascii) {
		return true
	}
	for _, lit := range p.need {
		if p.fold && containsFoldASCII(s, lit) || !p.fold && strings.Contains(s, lit) {
			return true
		}
	}
	return false
}

// mayMatchIn is mayMatch (the same answer) for s whose bytes are all in
// set: a literal with a byte that is not in set (nor, ignoring ASCII case,
// its upper-case form) cannot be in s and is not looked for. The set is
// taken once per text, for all patterns: most texts a decision redacts
// (names, ids) hold none of most literals' letters.
func (p *secretPattern) mayMatchIn(s string, ascii bool, set *byteSet) bool {
	if len(p.need) == 0 || (p.fold && !ascii) {
		return true
	}
	for _, lit := range p.need {
		if !set.mayHold(lit, p.fold) {
			continue
		}
		if p.fold && containsFoldASCII(s, lit) || !p.fold && strings.Contains(s, lit) {
			return true
		}
	}
	return false
}

// byteSet is a set of byte values.
type byteSet [4]uint64

func (b *byteSet) add(c byte)      { b[c>>6] |= 1 << (c & 63) }
func (b *byteSet) has(c byte) bool { return b[c>>6]&(1<<(c&63)) != 0 }

// addString adds the bytes of s to b and reports whether they are all
// ASCII.
func (b *byteSet) addString(s string) (ascii bool) {
	var high byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		high |= c
		b[c>>6] |= 1 << (c & 63)
	}
	return high < utf8.RuneSelf
}

// mayHold reports whether a text whose bytes are in b can contain lit
// (with fold, lit is lower-case and matched ignoring ASCII case): false
// when some byte of lit is in none of its forms in b.
func (b *byteSet) mayHold(lit string, fold bool) bool {
	for i := 0; i < len(lit); i++ {
		c := lit[i]
		if b.has(c) || fold && 'a' <= c && c <= 'z' && b.has(c-'a'+'A') {
			continue
		}
		return false
	}
	return true
}

// containsFoldASCII reports whether s contains lit (lower-case ASCII),
// ignoring ASCII case.
func containsFoldASCII(s, lit string) bool {
	first, upper := lit[0], lit[0]-'a'+'A'
	for i := 0; i+len(lit) <= len(s); i++ {
		if c := s[i]; c != first && c != upper {
			continue
		}
		if strings.EqualFold(s[i:i+len(lit)], lit) {
			return true
		}
	}
	return false
}

const keepKey = "${1}" + Redacted

// notAfterAlnum starts a shape that must not continue a word — but may
// follow "_" (id_sk-…) or any punctuation; the character it matched is kept
// by keepKey. Shapes with a distinctive prefix (AKIA…, sk-proj-…, ghp_…,
// eyJ….eyJ…) need no boundary at all: they are found glued inside other
// text too.
const notAfterAlnum = `(^|[^A-Za-z0-9])`

// builtinPatterns are the shapes of well-known credentials. Key=value forms
// keep their key so the reader still knows what was removed. Order matters:
// URL credentials go before e-mail addresses.
var builtinPatterns = []secretPattern{
	// PEM private keys.
	{re: regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)`), need: []string{"-----BEGIN "}},
	// Authorization headers and bearer/basic tokens.
	{re: regexp.MustCompile(`(?i)((?:^|[^A-Za-z0-9])bearer\s+)[A-Za-z0-9._~+/=-]{8,}`), repl: keepKey, need: []string{"bearer"}, fold: true},
	{re: regexp.MustCompile(`(?i)((?:^|[^A-Za-z0-9])authorization["']?\s*[:=]\s*["']?basic\s+)[A-Za-z0-9+/=]{8,}`), repl: keepKey, need: []string{"authorization"}, fold: true},
	// Provider keys with a distinctive prefix, glued or not: OpenAI project
	// and service-account keys, Anthropic, OpenRouter.
	{re: regexp.MustCompile(`sk-(?:proj|svcacct|admin|ant|or)-[A-Za-z0-9_-]{16,}`), need: []string{"sk-"}},
	// Other sk-… keys (OpenAI legacy, DeepSeek, …): "sk-" is common inside
	// words (task-, disk-), so not after a letter or digit.
	{re: regexp.MustCompile(notAfterAlnum + `sk-[A-Za-z0-9_-]{16,}`), repl: keepKey, need: []string{"sk-"}},
	// Stripe live/test secret and restricted keys.
	{re: regexp.MustCompile(`(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}`), need: []string{"_live_", "_test_"}},
	// Groq, GitHub, GitLab, Slack, Hugging Face, Google API keys.
	{re: regexp.MustCompile(`gsk_[A-Za-z0-9]{20,}`), need: []string{"gsk_"}},
	{re: regexp.MustCompile(`(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`), need: []string{"gh", "github_pat_"}},
	{re: regexp.MustCompile(`glpat-[A-Za-z0-9_-]{20,}`), need: []string{"glpat-"}},
	{re: regexp.MustCompile(`xox[abposr]-[A-Za-z0-9-]{10,}`), need: []string{"xox"}},
	{re: regexp.MustCompile(`hf_[A-Za-z0-9]{30,}`), need: []string{"hf_"}},
	{re: regexp.MustCompile(`AIza[0-9A-Za-z_-]{35}`), need: []string{"AIza"}},
	// AWS access key ids, glued too (key_AKIA…, idAKIA…).
	{re: regexp.MustCompile(`(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}`), need: []string{"AKIA", "ASIA", "ABIA", "ACCA"}},
	// JSON Web Tokens.
	{re: regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), need: []string{"eyJ"}},
	// Credentials in URLs: scheme://user:password@host, and a long user
	// part alone (scheme://<token>@host).
	{re: regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:)[^/\s@]+(@)`), repl: keepKey + "${2}", need: []string{"://"}},
	{re: regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s:@]{16,}(@)`), repl: keepKey + "${2}", need: []string{"://"}},
	// E-mail addresses (personal data).
	{re: regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`), need: []string{"@"}},
	// key=value, key: value and "key": "value" for secret-looking keys
	// (password, secret, token, api key, AWS secret access key, ...).
	{re: regexp.MustCompile(`(?i)((?:\b|_)(?:password|passwd|pwd|pass|secret|client_secret|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|aws_secret_access_key|private[_-]?key|access[_-]?token|refresh[_-]?token|auth[_-]?token|token|credentials?|x-api-key|authorization)["']?\s*[:=]\s*["']?)([^\s"',;&}]+)`), repl: keepKey,
		need: []string{"pass", "pwd", "secret", "key", "token", "credential", "authorization"}, fold: true},
}

// defaultSecretKeys are JSON keys whose values JSON always redacts.
var defaultSecretKeys = []string{
	"password", "passwd", "pwd", "secret", "client_secret", "api_key", "apikey", "api-key",
	"x-api-key", "access_key", "secret_key", "aws_secret_access_key", "private_key",
	"access_token", "refresh_token", "auth_token", "token", "authorization", "cookie",
	"set-cookie", "credentials", "credential",
}

// NewRedactor returns a redactor. Invalid extra patterns are reported by
// NewRedactorChecked; NewRedactor skips them.
func NewRedactor(o RedactorOptions) *Redactor {
	r, _ := NewRedactorChecked(o)
	return r
}

// NewRedactorChecked is NewRedactor that reports invalid extra patterns
// (the redactor it returns then omits them).
func NewRedactorChecked(o RedactorOptions) (*Redactor, error) {
	r := &Redactor{maxLen: o.MaxLen, patterns: append([]secretPattern(nil), builtinPatterns...), memo: &textMemo{}}
	if r.maxLen == 0 {
		r.maxLen = 512
	}
	var bad []string
	for _, p := range o.ExtraPatterns {
		re, err := regexp.Compile(p)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", p, err))
			continue
		}
		r.patterns = append(r.patterns, secretPattern{re: re})
	}
	keys := append(append([]string(nil), defaultSecretKeys...), o.ExtraKeys...)
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = regexp.QuoteMeta(strings.ToLower(k))
	}
	r.keys = regexp.MustCompile(`^(?:` + strings.Join(quoted, "|") + `)$`)
	r.empty = r.textOnce("")
	if len(bad) > 0 {
		return r, fmt.Errorf("redaction patterns: %s", strings.Join(bad, "; "))
	}
	return r, nil
}

// Redact replaces every secret in s with [REDACTED]. Invalid UTF-8 is
// replaced first so the result is always valid text.
func (r *Redactor) Redact(s string) string {
	var set byteSet
	ascii := set.addString(s)
	if !ascii {
		// (ASCII text is valid UTF-8 as it is.)
		if v := strings.ToValidUTF8(s, "\uFFFD"); v != s {
			s = v
			set.addString(s)
		}
	}
	for i := range r.patterns {
		if p := &r.patterns[i]; p.mayMatchIn(s, ascii, &set) {
			if v := p.redact(s); v != s {
				// What a replacement writes besides parts of s.
				s = v
				set.addString(Redacted)
			}
		}
	}
	return redactCardNumbers(s)
}

// redact replaces the pattern's matches in s.
func (p *secretPattern) redact(s string) string {
	switch {
	case !p.re.MatchString(s):
		return s
	case p.repl == "":
		return p.re.ReplaceAllLiteralString(s, Redacted)
	default:
		return p.re.ReplaceAllString(s, p.repl)
	}
}

// Truncate bounds s to MaxLen bytes at a rune boundary, saying how much was cut.
func (r *Redactor) Truncate(s string) string {
	if !asciiOnly(s) {
		// (ASCII text is valid UTF-8 as it is: most names, rules and
		// signals are, and ToValidUTF8 decodes them rune by rune.)
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if r.maxLen < 0 || len(s) <= r.maxLen {
		return s
	}
	return truncateBytes(s, r.maxLen) + fmt.Sprintf("…[truncated %d bytes]", len(s)-len(truncateBytes(s, r.maxLen)))
}

// asciiOnly reports whether every byte of s is ASCII, eight at a time.
func asciiOnly(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if word8(s, i)&highs8 != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// redactSlack is how far past MaxLen Text looks, so that a secret that
// starts before the cut is still recognised whole and redacted.
const redactSlack = 512

// Text redacts then truncates. Text far past MaxLen is dropped before the
// redaction so that huge inputs cost little more than small ones.
func (r *Redactor) Text(s string) string {
	if s == "" && r.memo != nil {
		return r.empty
	}
	if len(s) <= maxMemoTextLen && r.memo != nil {
		if v, ok := r.memo.get(s); ok {
			return v
		}
		v := r.Truncate(r.Redact(s))
		r.memo.put(s, v)
		return v
	}
	return r.textOnce(s)
}

// textOnce is Text without the memo: for a text that is not asked for
// again (a trace's own session id), which would only push the names
// that repeat out of the memo.
func (r *Redactor) textOnce(s string) string {
	if r.maxLen < 0 || len(s) <= r.maxLen+redactSlack {
		return r.Truncate(r.Redact(s))
	}
	total := len(s)
	// A secret cut by the window's end is not recognised, and its part is
	// at the end of the redacted window; with redactSlack bytes kept after
	// MaxLen it falls in what is cut away. Redaction shrinks the text
	// (a key becomes [REDACTED]), which can pull that part back under
	// MaxLen: widen the window until the redacted text is long enough, or
	// covers the whole input.
	for w := r.maxLen + redactSlack; ; w *= 2 {
		red := r.Redact(truncateBytes(s, w))
		if len(red) >= r.maxLen+redactSlack || w >= len(s) {
			return truncateBytes(red, r.maxLen) + fmt.Sprintf("…[truncated, %d bytes in all]", total)
		}
	}
}

// JSON redacts a JSON document (tool arguments, messages): the values of
// secret-looking keys are replaced whatever their shape, every other string
// is redacted as text; the result is truncated. Text that is not JSON is
// redacted as text.
func (r *Redactor) JSON(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return r.Text(s)
	}
	out, err := json.Marshal(r.redactValue(v, 0))
	if err != nil {
		return r.Text(s)
	}
	return r.Truncate(string(out))
}

// maxJSONDepth stops the walk of absurdly nested documents; deeper parts
// are dropped rather than published unredacted.
const maxJSONDepth = 64

func (r *Redactor) redactValue(v any, depth int) any {
	if depth > maxJSONDepth {
		return Redacted
	}
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if r.keys.MatchString(strings.ToLower(k)) {
				x[k] = Redacted
				continue
			}
			x[k] = r.redactValue(val, depth+1)
		}
		return x
	case []any:
		for i := range x {
			x[i] = r.redactValue(x[i], depth+1)
		}
		return x
	case string:
		return r.Redact(x)
	}
	return v
}

// truncateBytes cuts s to at most n bytes without splitting a rune.
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
