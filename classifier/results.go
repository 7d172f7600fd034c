package classifier

import (
	"encoding/json"
	"regexp"
	"strings"
	"unsafe"

	"github.com/triage-otel/triage/trajectory"
)

// Error-shaped tool results. Frameworks often catch a tool failure (an
// unknown tool, arguments that fail validation, an exception) and hand it
// to the model as the tool message's content, with no error flag and no
// error status. Such a result is recognised by its shape, never by the
// words of a tool domain:
//
//   - text that opens like an error report: "Error: …", "Error(Type): …",
//     "SomeError: …", "Error invoking tool …", "An error occurred …";
//   - JSON that says it failed: isError/is_error true, a non-empty "error"
//     member, a serialized exception ({name: "…Error", message}), a
//     status of "error" with a message, or a non-empty "errors" list
//     without data;
//   - a first line that a text rule places as a wrong call (unknown tool,
//     invalid arguments), or that opens like a failure ("Failed to …",
//     "Unable to …") and a rule classifies.
//
// Data that merely mentions an error word ("Error rate: 0.2%", a document
// about rate limits, {"status": "failed"} of a domain object) is data.

var (
	// "TypeError: …": read by hand (leadingExceptionMatch, which the
	// tests compare with it).
	leadingException = regexp.MustCompile(`^\s*([A-Za-z_][\w.]*(?:Error|Exception|Fault|Timeout))\s*:\s*`)
	// "Error(UpstreamHTTPError): …" (LlamaIndex's tool error template).
	wrappedException = regexp.MustCompile(`(?i)^\s*(?:error|exception)\s*\(\s*([A-Za-z_][\w.]*)\s*\)\s*:\s*`)
	// Explicit failure statements that framework error templates open
	// with. A bare "Error" must be followed by what an error report
	// continues with (a colon, a bracket, a status code, "while …",
	// "invoking …"), so that "Error rate is 0.2%" stays data.
	errorPrefix = regexp.MustCompile(`(?i)^\s*(?:(?:error|exception)(?:\s*(?:[:(\[]|-\s|–|—|$)|\s+\d{3}\b|\s+(?:code|occurred|while|when|in|during|from|on|at|calling|executing|running|invoking|processing|fetching|getting|retrieving|querying|searching|looking|reading|writing|sending|loading|parsing|connecting|creating|updating|deleting)\b)|an? (?:\w+ )?(?:error|exception) (?:occurred|was raised|has occurred)\b|(?:i )?encountered (?:an? )?(?:error|exception)\b|tool (?:call |execution )?failed\b|the tool (?:call )?failed\b)`)
	// Results that start like a failure but may be ordinary output
	// ("Failed logins: 3") count only when a rule classifies them.
	weakErrorPrefix = regexp.MustCompile(`(?i)^\s*(?:failed|failure|fatal|could not|couldn't|unable to|cannot|sorry, )`)
	// A JavaScript/Python exception class name.
	exceptionName = regexp.MustCompile(`^[A-Za-z_][\w.]*(?:Error|Exception|Fault)$`)
)

// maxResultHead bounds the part of a result read when it does not say
// it failed: the first line of an error message says what it is.
const maxResultHead = 300

// resultHeadFailure reads the start of a result that is not marked as an
// error: it fails the call only when it opens like a failure that a rule
// classifies, or when its first line says the call itself was wrong
// (unknown tool, invalid arguments) — phrasings that ordinary tool output
// does not start with. Anything else (a document mentioning rate limits)
// is data.
func (cl *classification) resultHeadFailure(content string) bool {
	head := strings.TrimSpace(content)
	if i := strings.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	if len(head) > maxResultHead {
		head = head[:maxResultHead]
	}
	if head == "" {
		return false
	}
	weak := mayOpenWeakly(head) && weakErrorPrefix.MatchString(head)
	// Without a failure opening only a wrong-tool or schema reading fails
	// the call: a head that no rule able to give one can match is data,
	// known without running the rules (most results are), and known from
	// those rules' prefilter groups alone (wrongCallKeys).
	if !weak {
		probe := ruleText{scratch: &cl.memo.lower}
		if !probe.prepareWith(head, wrongCallKeys) || !probe.mayPass(wrongCallRules) {
			return false
		}
	}
	rt := ruleText{scratch: &cl.memo.lower}
	if !rt.prepare(head) {
		return false
	}
	f, ok := cl.memo.classifyRuleText(head, &rt)
	if !ok || lateReasonRules[f.Rule] {
		return false
	}
	if weak {
		return true
	}
	return f.Type == WrongToolCalled || f.Type == SchemaMismatch
}

// mayOpenWeakly is a necessary condition for weakErrorPrefix: after white
// space, a match starts with f, c, u or s in either case, or with the
// long s (U+017F, which (?i) folds to s; its UTF-8 form starts 0xC5).
func mayOpenWeakly(head string) bool {
	i := 0
	for i < len(head) && (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\f' || head[i] == '\r') {
		i++
	}
	if i == len(head) {
		return false
	}
	switch head[i] {
	case 'f', 'F', 'c', 'C', 'u', 'U', 's', 'S', 0xC5:
		return true
	}
	return false
}

// resultIsError reports whether a fed-back result reports a failure: the
// convention marked it, or its content is error-shaped (see above).
func resultIsError(r *trajectory.ToolResult) bool {
	if r == nil {
		return false
	}
	return r.IsError || resultTextIsError(r.Content)
}

// resultTextIsError reports whether a result's text is error-shaped.
func resultTextIsError(content string) bool {
	return (*classification)(nil).resultTextIsError(content)
}

// resultTextIsError is the function of that name, through cl's last
// decode (jsonError).
func (cl *classification) resultTextIsError(content string) bool {
	c := strings.TrimSpace(content)
	if c == "" {
		return false
	}
	if opensLikeError(c) {
		return true
	}
	_, ok := cl.jsonError(c)
	return ok
}

// jsonRead is a text jsonError read, and what it read.
type jsonRead struct {
	c    string
	info trajectory.ErrorInfo
	ok   bool
}

// jsonError is the function of that name, through cl's last decode (none
// when cl is nil): callIncidents reads a result's text for its shape
// (readResultText) and, when the call failed, for its evidence
// (textEvidence), and decoding the JSON is most of either reading. The
// decode is known by its text's identity (address and length): the text
// itself is kept until the classification is released, so no other text
// has its address meanwhile, and a string's bytes do not change.
func (cl *classification) jsonError(c string) (trajectory.ErrorInfo, bool) {
	if cl == nil {
		return jsonError(c)
	}
	if last := &cl.lastJSON; last.c != "" && len(last.c) == len(c) && unsafe.StringData(last.c) == unsafe.StringData(c) {
		return last.info, last.ok
	}
	info, ok := jsonError(c)
	cl.lastJSON = jsonRead{c: c, info: info, ok: ok}
	return info, ok
}

// opensLikeError reports whether a trimmed text opens like an error report
// (errorPrefix, leadingException, wrappedException). Every opening they
// match starts, after white space, with an ASCII letter or '_' (the
// letters (?i) folds to from outside ASCII, K and ſ, start none of
// them), which JSON results and most data do not: those are known without
// the expressions, whose matcher clears a bit per instruction and byte of
// the text on every call.
func opensLikeError(c string) bool {
	i := 0
	for i < len(c) && (c[i] == ' ' || c[i] == '\t' || c[i] == '\n' || c[i] == '\f' || c[i] == '\r') {
		i++
	}
	if i == len(c) || !(c[i] == '_' || 'a' <= c[i] && c[i] <= 'z' || 'A' <= c[i] && c[i] <= 'Z') {
		return false
	}
	return mayOpenErrorPrefix(c[i]) && errorPrefix.MatchString(c) || leadingExceptionOpens(c) ||
		mayWrapException(c) && wrappedException.MatchString(c)
}

// mayOpenErrorPrefix is a necessary condition for errorPrefix on a text
// whose first byte after white space is b: its alternatives open with
// error, exception, encountered, a, an, i, tool or the, in either case
// (none of these letters is folded to from outside ASCII).
func mayOpenErrorPrefix(b byte) bool {
	switch b | 0x20 {
	case 'e', 'a', 'i', 't':
		return true
	}
	return false
}

// mayWrapException is a necessary condition for wrappedException on s:
// after white space, error or exception in any case (neither word holds
// a letter (?i) folds to from outside ASCII), white space, then '('. Most
// texts that open with one of the words go on with a colon ("Error: …"),
// and are known without the expression.
func mayWrapException(s string) bool {
	i := skipSpace(s)
	for _, w := range [...]string{"error", "exception"} {
		if len(s)-i >= len(w) && asciiFoldPrefix(s[i:], w) {
			j := i + len(w)
			j += skipSpace(s[j:])
			return j < len(s) && s[j] == '('
		}
	}
	return false
}

// asciiFoldPrefix reports whether s starts with word (lower-case ASCII
// letters) in any case: a byte b is the letter l or its upper case
// exactly when b|0x20 == l.
func asciiFoldPrefix(s, word string) bool {
	for k := 0; k < len(word); k++ {
		if s[k]|0x20 != word[k] {
			return false
		}
	}
	return true
}

// leadingExceptionMatch is leadingException's match of s, read by hand:
// the exception name (its group) and the end of the match. After the
// leading white space the name is the whole run of [\w.] there (a
// shorter one would be followed by a name byte, not by white space or
// ':'), opening with a letter or '_' and ending in a suffix that does not
// make all of it (the expression's first character is not the suffix's);
// then white space, ':', white space.
func leadingExceptionMatch(s string) (name string, end int, ok bool) {
	i := skipSpace(s)
	j := i
	for j < len(s) && (isWordByte(s[j]) || s[j] == '.') {
		j++
	}
	if j == i || isDigit(s[i]) || s[i] == '.' {
		return "", 0, false
	}
	name = s[i:j]
	suffixed := false
	for _, suf := range [...]string{"Error", "Exception", "Fault", "Timeout"} {
		if len(name) > len(suf) && strings.HasSuffix(name, suf) {
			suffixed = true
			break
		}
	}
	if !suffixed {
		return "", 0, false
	}
	j += skipSpace(s[j:])
	if j == len(s) || s[j] != ':' {
		return "", 0, false
	}
	j++
	return name, j + skipSpace(s[j:]), true
}

// leadingExceptionOpens reports whether leadingException matches c.
func leadingExceptionOpens(c string) bool {
	_, _, ok := leadingExceptionMatch(c)
	return ok
}

// skipSpace is the length of s's leading white space (regexp's \s).
func skipSpace(s string) int {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\f' || s[i] == '\r') {
		i++
	}
	return i
}

// maxResultJSON bounds the result decoded to look for an error shape.
const maxResultJSON = 64 << 10

// jsonError reads an error-shaped JSON result and returns what it says.
func jsonError(c string) (trajectory.ErrorInfo, bool) {
	if len(c) < 2 || c[0] != '{' || len(c) > maxResultJSON {
		return trajectory.ErrorInfo{}, false
	}
	if !mayBeJSONError(c) {
		return trajectory.ErrorInfo{}, false
	}
	return jsonErrorShape(c)
}

// jsonErrorShape is jsonError without its prefilter.
func jsonErrorShape(c string) (trajectory.ErrorInfo, bool) {
	var obj map[string]json.RawMessage
	// The text's bytes, not a copy: Unmarshal only reads its input, and
	// RawMessage copies what it keeps.
	if json.Unmarshal(unsafe.Slice(unsafe.StringData(c), len(c)), &obj) != nil {
		return trajectory.ErrorInfo{}, false
	}
	str := func(k string) string {
		var s string
		if v, ok := obj[k]; ok && json.Unmarshal(v, &s) == nil {
			return s
		}
		return ""
	}
	info := trajectory.ErrorInfo{Message: firstNonEmpty(str("message"), str("error_message"), str("errorMessage"), str("detail"), str("reason"))}
	for _, k := range []string{"is_error", "isError"} {
		if string(trimRaw(obj[k])) == "true" {
			return withText(info, c), true
		}
	}
	if e, ok := obj["error"]; ok && !emptyJSON(e) {
		e = trimRaw(e)
		switch e[0] {
		case '{':
			var inner struct {
				Message string          `json:"message"`
				Type    string          `json:"type"`
				Name    string          `json:"name"`
				Code    json.RawMessage `json:"code"`
			}
			if json.Unmarshal(e, &inner) == nil {
				info.Message = firstNonEmpty(inner.Message, info.Message)
				info.Type = firstNonEmpty(inner.Name, inner.Type)
				info.Code = strings.Trim(string(trimRaw(inner.Code)), `"`)
			}
		case '"':
			var s string
			if json.Unmarshal(e, &s) == nil {
				info.Message = firstNonEmpty(s, info.Message)
			}
		}
		return withText(info, c), true
	}
	// A serialized exception: {name: "TypeError", message: "…"}.
	if info.Message != "" {
		for _, k := range []string{"name", "type", "class", "__type__", "exception"} {
			if n := str(k); exceptionName.MatchString(n) {
				info.Type = n
				return info, true
			}
		}
		if _, ok := obj["stack"]; ok {
			return info, true
		}
		if st := strings.ToLower(str("status")); st == "error" {
			return info, true
		}
	}
	if e, ok := obj["errors"]; ok && !emptyJSON(e) && trimRaw(e)[0] == '[' && emptyJSON(obj["data"]) {
		return withText(info, c), true
	}
	return trajectory.ErrorInfo{}, false
}

// mayBeJSONError is a necessary condition for jsonError: every error shape
// has one of the member names jsonErrorShape reads first (error, errors,
// is_error, isError, error_message, errorMessage, message, detail,
// reason; the others count only with a message). Names are matched
// exactly, so without a backslash (an escaped name) one appears in the
// text quoted as it is: it is looked for at each quote, in one pass. Most
// tool results are data and fail it, and are not decoded.
func mayBeJSONError(c string) bool {
	if strings.IndexByte(c, '\\') >= 0 {
		return true
	}
	for i := 0; ; {
		q := strings.IndexByte(c[i:], '"')
		if q < 0 {
			return false
		}
		i += q + 1
		if i < len(c) && errorShapeStart[c[i]] && errorShapeName(c[i:]) {
			return true
		}
	}
}

// errorShapeStart marks the first bytes of errorShapeName's names: most
// quotes are followed by something else and are passed over without a
// call.
var errorShapeStart = [256]bool{'e': true, 'i': true, 'm': true, 'd': true, 'r': true}

// errorShapeName reports whether s starts with one of mayBeJSONError's
// member names and its closing quote.
func errorShapeName(s string) bool {
	if len(s) < len(`error"`) {
		return false
	}
	var names []string
	switch s[0] {
	case 'e':
		names = []string{`error"`, `errors"`, `error_message"`, `errorMessage"`}
	case 'i':
		names = []string{`is_error"`, `isError"`}
	case 'm':
		names = []string{`message"`}
	case 'd':
		names = []string{`detail"`}
	case 'r':
		names = []string{`reason"`}
	default:
		return false
	}
	for _, n := range names {
		if strings.HasPrefix(s, n) {
			return true
		}
	}
	return false
}

// withText keeps the whole result as the message when the shape named no
// message of its own, so text rules still read it.
func withText(info trajectory.ErrorInfo, c string) trajectory.ErrorInfo {
	if info.Message == "" {
		info.Message = c
	}
	return info
}

func trimRaw(r json.RawMessage) json.RawMessage {
	return json.RawMessage(strings.TrimSpace(string(r)))
}

// emptyJSON reports whether a JSON value is absent, null, false, or empty.
func emptyJSON(r json.RawMessage) bool {
	switch string(trimRaw(r)) {
	case "", "null", "false", `""`, "{}", "[]", "0":
		return true
	}
	return false
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// textEvidence turns a result into evidence: a leading exception name
// ("TimeoutError: …", "Error(TimeoutError): …") is read as an exception
// type, an error-shaped JSON result as its name, code and message.
func textEvidence(text string) trajectory.ErrorInfo {
	return (*classification)(nil).textEvidence(text)
}

// textEvidence is the function of that name, through cl's last decode
// (jsonError).
func (cl *classification) textEvidence(text string) trajectory.ErrorInfo {
	if name, end, ok := leadingExceptionMatch(text); ok {
		return trajectory.ErrorInfo{Type: name, Message: text[end:]}
	}
	if mayWrapException(text) {
		if m := wrappedException.FindStringSubmatch(text); m != nil {
			return trajectory.ErrorInfo{Type: m[1], Message: text[len(m[0]):]}
		}
	}
	if info, ok := cl.jsonError(strings.TrimSpace(text)); ok {
		return info
	}
	return trajectory.ErrorInfo{Message: text}
}

// A result that echoes a missing argument. Tools that do not validate
// their input (LlamaIndex's tool(), hand-written functions) run on
// whatever the model sent and return a result in which a missing argument
// shows up as JavaScript's undefined and an unparsable number as NaN
// (JSON-encoded as the string "undefined", or as a bare token in a
// hand-rolled rendering). A value that is exactly one of those, in
// key-value position, is the tool saying it got no valid argument: the
// call did not match the tool's schema. The word anywhere else ("undefined
// behaviour") is text.
var placeholderRe = regexp.MustCompile(`[:=]\s*(?:\\+|["'])?(?:undefined|NaN)(?:\\+|["'])?\s*[,}\]]`)

const confPlaceholderValue = 0.5

// maxPlaceholderScan bounds the result scanned for a placeholder value.
const maxPlaceholderScan = 16 << 10

func placeholderValue(content string) bool {
	c := strings.TrimSpace(content)
	if len(c) > maxPlaceholderScan {
		c = c[:maxPlaceholderScan]
	}
	if len(c) < 2 || (c[0] != '{' && c[0] != '[') {
		return false
	}
	// Most results have no placeholder, and the expression's leading
	// class would be tried at every ':'.
	if !mayHoldPlaceholder(c) {
		return false
	}
	return placeholderRe.MatchString(c)
}

// mayHoldPlaceholder is a necessary condition for placeholderRe: every
// match opens with ':' or '=', white space (\s), then a run of
// backslashes or one quote or neither, then undefined or NaN (the run of
// backslashes is all of them: the word does not start with one). It looks
// at each ':' and '=' of s, which one pass of IndexByte finds, instead of
// searching s twice for the words.
func mayHoldPlaceholder(s string) bool {
	for _, sep := range [...]byte{':', '='} {
		for i := 0; ; {
			k := strings.IndexByte(s[i:], sep)
			if k < 0 {
				break
			}
			i += k + 1
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\f' || s[j] == '\r') {
				j++
			}
			if j < len(s) && s[j] == '\\' {
				for j < len(s) && s[j] == '\\' {
					j++
				}
			} else if j < len(s) && (s[j] == '"' || s[j] == '\'') {
				j++
			}
			if j < len(s) && (s[j] == 'u' && strings.HasPrefix(s[j:], "undefined") || s[j] == 'N' && strings.HasPrefix(s[j:], "NaN")) {
				return true
			}
		}
	}
	return false
}
