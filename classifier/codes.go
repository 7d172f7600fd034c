package classifier

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/triage-otel/triage/internal/smallmap"
	"github.com/triage-otel/triage/trajectory"
)

// Codes are structured evidence: HTTP status, JSON-RPC error codes,
// provider error codes and exception type names. They are read before any
// text rule because they are defined by a protocol or an SDK, not phrased.

const (
	confHTTP          = 0.9
	confJSONRPC       = 0.9
	confProviderCode  = 0.9
	confExceptionType = 0.8
)

// fromHTTPStatus maps an HTTP status. 400, 404, 409 and 422 are left
// undecided: providers use them for unknown models, bad schemas and context
// overflow alike, so only the accompanying text can tell.
func fromHTTPStatus(code int) (finding, bool) {
	switch {
	case code == 408 || code == 504:
		return finding{Type: Timeout}, true
	case code == 429:
		return finding{Type: ExternalFault}, true
	case code == 401 || code == 403 || code == 407:
		return finding{Type: Unknown, Reason: ReasonAuth}, true
	case code == 501 || code == 505:
		// Not implemented / version not supported: permanent, not transient.
		return finding{}, false
	case code >= 500 && code <= 599:
		return finding{Type: ExternalFault}, true
	}
	return finding{}, false
}

// fromJSONRPC maps a JSON-RPC error code. text disambiguates -32602: the
// MCP SDKs answer an unknown tool with "invalid params" too (asked for
// only then: the evidence's texts are joined for it).
func fromJSONRPC(code int, text func() string) (finding, bool) {
	switch {
	case code == -32601:
		return finding{Type: WrongToolCalled}, true
	case code == -32602:
		if wrongToolText(text()) {
			return finding{Type: WrongToolCalled}, true
		}
		return finding{Type: SchemaMismatch}, true
	case code == -32700:
		// Parse error: the request was not valid JSON.
		return finding{Type: SchemaMismatch}, true
	case code == -32001:
		// MCP SDKs use -32001 for request timeouts.
		return finding{Type: Timeout}, true
	case code == -32603 || (code <= -32000 && code >= -32099):
		return finding{Type: ExternalFault}, true
	}
	return finding{}, false
}

// fromProviderCode maps the error codes and types that model providers put
// in their error bodies (OpenAI code/type, Anthropic error.type, ...).
func fromProviderCode(code string) (finding, bool) { return fromNormCode(normCode(code)) }

// normCode is a provider code as fromNormCode and notRetryableNormCode
// read it: trimmed, lower-cased, '-' and ' ' read as '_'. classifyCodes
// asks both of one code: it normalizes the code once.
func normCode(code string) string {
	return codeSeparators.Replace(strings.ToLower(strings.TrimSpace(code)))
}

// normCodeIn is normCode(code), made in buf when code is ASCII and fits
// (provider codes are), without a copy: the caller reads it before buf is
// reused.
func normCodeIn(code string, buf *[maxStackName]byte) string {
	code = strings.TrimSpace(code)
	if c, ok := foldASCIIIn(code, '_', buf); ok {
		return c
	}
	return normCode(code)
}

// foldASCIIIn is s lower-cased with its separators ('_', '-', ' ') written
// as sep, or dropped when sep is 0, made in buf (no copy: the caller reads
// it before buf is reused). ok is false when s is not ASCII or does not
// fit: the caller uses the library calls then.
func foldASCIIIn(s string, sep byte, buf *[maxStackName]byte) (string, bool) {
	if len(s) > len(buf) || !isASCII(s) {
		return "", false
	}
	k := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '_' || c == '-' || c == ' ':
			if sep == 0 {
				continue
			}
			buf[k] = sep
		case 'A' <= c && c <= 'Z':
			buf[k] = c + 'a' - 'A'
		default:
			buf[k] = c
		}
		k++
	}
	return unsafe.String(&buf[0], k), true
}

// fromNormCode is fromProviderCode of a code normCode gave.
func fromNormCode(c string) (finding, bool) {
	switch c {
	case "context_length_exceeded", "context_window_exceeded", "string_above_max_length",
		"model_context_window_exceeded", "prompt_too_long", "request_too_large_for_context":
		return finding{Type: ContextOverflow}, true
	case "rate_limit_exceeded", "rate_limit_error", "rate_limited", "too_many_requests",
		"overloaded_error", "overloaded", "server_error", "api_error", "internal_error",
		"internal_server_error", "service_unavailable", "resource_exhausted", "unavailable",
		"throttling_exception", "throttlingexception", "engine_overloaded":
		return finding{Type: ExternalFault}, true
	case "timeout", "request_timeout", "timeout_error", "deadline_exceeded", "gateway_timeout":
		return finding{Type: Timeout}, true
	case "invalid_api_key", "authentication_error", "permission_error", "permission_denied",
		"unauthenticated", "unauthorized", "forbidden", "access_denied", "invalid_authentication":
		return finding{Type: Unknown, Reason: ReasonAuth}, true
	case "insufficient_quota", "billing_hard_limit_reached", "billing_not_active":
		// Out of credit: not transient, retrying will not help.
		return finding{Type: Unknown, Reason: ReasonBilling}, true
	case "content_filter", "content_policy_violation", "content_filtered", "safety", "moderation_blocked":
		return finding{Type: Unknown, Reason: ReasonContentFilter}, true
	case "tool_not_found", "unknown_tool", "function_not_found", "no_such_tool", "method_not_found":
		return finding{Type: WrongToolCalled}, true
	case "invalid_tool_arguments", "invalid_arguments", "invalid_params", "invalid_tool_input",
		"json_validate_failed", "tool_use_failed", "validation_error":
		return finding{Type: SchemaMismatch}, true
	}
	return finding{}, false
}

// Exception type families. A type is matched on its last dotted component
// (openai.RateLimitError → RateLimitError), lower-cased without separators,
// against word families rather than exact class lists, so that SDK
// namespaces and naming styles don't matter. Names are matched on every
// failing span: which families' substrings a name may hold is read for
// all of them in one keyScanner pass (nameKeys), and only those families'
// substrings are looked for.
type nameFamily struct {
	contains []string // any of these substrings
	suffixes []string // or any of these suffixes
	exact    []string // or exactly one of these
	group    int32    // the nameKeys group of contains
}

// match reports whether the lower-cased name n is of the family; h holds
// n's nameKeys groups.
func (f *nameFamily) match(n string, h *keyHits) bool {
	if len(f.contains) > 0 && h.has(f.group) {
		for _, s := range f.contains {
			if strings.Contains(n, s) {
				return true
			}
		}
	}
	for _, s := range f.suffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	for _, s := range f.exact {
		if n == s {
			return true
		}
	}
	return false
}

var (
	excNotRetryable = []struct {
		fam    nameFamily
		reason string
	}{
		{nameFamily{contains: []string{"humanintheloop", "hildenied", "hiltimeout", "hilrejected", "approvaldenied", "approvalrejected", "approvaltimeout"}}, ReasonHumanInLoop},
		{nameFamily{contains: []string{"authenticat", "unauthori", "unauthenticated", "permissiondenied", "permissionerror", "accessdenied", "forbidden", "invalidapikey", "apikeyerror", "apikeyinvalid", "credential"}}, ReasonAuth},
		{nameFamily{contains: []string{"contentfilter", "contentpolicy", "moderation", "safetyerror", "safetyexception", "safetyblock", "responsibleai"}}, ReasonContentFilter},
		{nameFamily{contains: []string{"sessionexpired", "sessionnotfound", "sessioninvalid", "tokenexpired"}}, ReasonSessionExpired},
		{nameFamily{contains: []string{"insufficientquota", "billing", "paymentrequired"}}, ReasonBilling},
	}
	// Order matters: argument errors about a tool before tool-not-found.
	excFamilies = []struct {
		fam nameFamily
		typ FailureType
	}{
		{nameFamily{
			contains: []string{"invalidtoolarg", "invalidtoolcallarg", "invalidtoolinput", "invalidtoolcallinput", "invalidtoolparam",
				"toolinputerror", "toolinputexception", "toolinputparsing", "toolinputvalidation", "toolargument", "toolargs", "toolcallargument", "toolcallinput",
				"argumentserror", "validationerror", "validationexception", "schemaerror", "schemaexception", "schemamismatch", "schemavalidation",
				"typevalidation", "jsondecodeerror", "jsonparse", "outputparser", "unprocessableentity"},
			suffixes: []string{"invalidargument", "invalidarguments", "invalidargumenterror", "invalidargumentserror", "invalidargumentexception",
				"invalidargumentsexception", "jsonerror", "jsonexception", "jsonschemaerror", "jsonschemaexception", "parseerror", "parseexception"},
			exact: []string{"zoderror"},
		}, SchemaMismatch},
		{nameFamily{
			contains: []string{"nosuchtool", "toolnotfound", "unknowntool", "toolnotregistered", "unregisteredtool", "functionnotfound",
				"methodnotfound", "nosuchfunction", "unknownfunction"},
			suffixes: []string{"invalidtool", "invalidtoolerror", "invalidtoolexception", "invalidtoolname", "invalidtoolnameerror", "invalidtoolnameexception"},
		}, WrongToolCalled},
		{nameFamily{contains: []string{"contextlengthexceeded", "contextlengtherror", "contextlengthexception", "contextwindowexceeded", "contextwindowerror",
			"contextwindowexception", "contextsizeexceeded", "contextoverflow", "prompttoolong", "tokenlimitexceeded", "tokenlimiterror"}}, ContextOverflow},
		{nameFamily{contains: []string{"timeout", "timedout", "deadlineexceeded"}}, Timeout},
		{nameFamily{
			contains: []string{"ratelimit", "toomanyrequests", "throttl", "resourceexhausted", "quotaexceeded", "serviceunavailable",
				"internalservererror", "badgateway", "overloaded"},
			suffixes: []string{"servererror", "servererrorexception"},
		}, ExternalFault},
		{nameFamily{
			contains: []string{"recursionlimit", "recursionerror", "graphrecursion", "steplimit", "iterationlimit", "turnlimit",
				"maxsteps", "maxturns", "maxiterations", "maxiteration", "maxrounds", "maximumsteps", "maximumturns", "maximumiterations"},
		}, stepLimitType},
	}
	excConnection = nameFamily{
		contains: []string{"connectionerror", "connectionexception", "connectionrefused", "connectionreset", "connecterror", "connectexception",
			"clientconnector", "urlerror", "networkerror", "socketerror"},
		exact: []string{"oserror"},
	}
)

// nameKeys is the scanner of every exception name family's substrings.
var nameKeys *keyScanner

func init() {
	b := newKeyScannerBuilder()
	for _, f := range nameFamilies() {
		if len(f.contains) > 0 {
			f.group = b.group(f.contains)
		}
	}
	nameKeys = b.build()
}

// nameFamilies are the exception name families, in no particular order.
func nameFamilies() []*nameFamily {
	out := []*nameFamily{&excConnection}
	for i := range excNotRetryable {
		out = append(out, &excNotRetryable[i].fam)
	}
	for i := range excFamilies {
		out = append(out, &excFamilies[i].fam)
	}
	for i := range excNotRetryableHints {
		out = append(out, &excNotRetryableHints[i].fam)
	}
	return out
}

var (
	codeSeparators = strings.NewReplacer("-", "_", " ", "_")
	nameSeparators = strings.NewReplacer("_", "", "-", "", " ", "")
)

// maxStackName bounds the exception names exceptionNameKey reads into
// its caller's buffer.
const maxStackName = 64

// exceptionNameKey is strings.ToLower(nameSeparators.Replace(n)), made in
// buf when n is ASCII and fits (exception names are), without a copy:
// fromExceptionType reads it only while it runs (the compiler keeps buf on
// its stack), and the two library calls allocated a copy each.
func exceptionNameKey(n string, buf *[maxStackName]byte) string {
	if k, ok := foldASCIIIn(n, 0, buf); ok {
		return k
	}
	return strings.ToLower(nameSeparators.Replace(n))
}

// stepLimitType marks an exception family that needs the trajectory to
// decide: a step-limit stop is a loop when the calls repeat and
// plan_incomplete when they do not.
const stepLimitType FailureType = "_step_limit"

// fromExceptionType maps an exception or error.type name. The returned
// weak flag says the name only hints (connection errors): text rules get
// to decide first, and the hint is used when they find nothing.
func fromExceptionType(name string) (f finding, weak, ok bool) {
	n := strings.TrimSpace(name)
	if n == "" {
		return finding{}, false, false
	}
	if i := strings.LastIndexAny(n, ".:"); i >= 0 && i < len(n)-1 {
		n = n[i+1:]
	}
	var buf [maxStackName]byte
	key := exceptionNameKey(n, &buf)
	var h keyHits
	nameKeys.scan(key, &h)
	for _, r := range excNotRetryable {
		if r.fam.match(key, &h) {
			return finding{Type: Unknown, Reason: r.reason}, false, true
		}
	}
	for _, fam := range excFamilies {
		if fam.fam.match(key, &h) {
			return finding{Type: fam.typ}, false, true
		}
	}
	if reason, ok := notRetryableName(key, &h); ok {
		return finding{Type: Unknown, Reason: reason}, true, true
	}
	if excConnection.match(key, &h) {
		return finding{Type: Unknown, Reason: ReasonConnection}, true, true
	}
	return finding{}, false, false
}

// evidence is the error evidence of one span (step or not) plus, for tool
// calls, the result text fed back to the model.
type evidence struct {
	httpStatus    int
	jsonrpcCode   int
	hasJSONRPC    bool
	statusMessage string
	errors        []trajectory.ErrorInfo
	texts         []string // further texts: tool result content
}

func stepEvidence(s *trajectory.Step) evidence {
	ev := evidence{
		httpStatus: s.HTTPStatus, jsonrpcCode: s.JSONRPCCode, hasJSONRPC: s.HasJSONRPC,
		statusMessage: s.StatusMessage, errors: s.Errors,
	}
	if s.Kind == trajectory.StepTool && s.ResultIsError && s.Result != "" {
		ev.texts = append(ev.texts, s.Result)
	}
	return ev
}

func spanErrorEvidence(e *trajectory.SpanError) evidence {
	return evidence{
		httpStatus: e.HTTPStatus, jsonrpcCode: e.JSONRPCCode, hasJSONRPC: e.HasJSONRPC,
		statusMessage: e.StatusMessage, errors: e.Errors,
	}
}

func (ev *evidence) allTexts() []string {
	out := make([]string, 0, len(ev.errors)+len(ev.texts)+1)
	for _, e := range ev.errors {
		if e.Message != "" {
			out = append(out, e.Message)
		}
	}
	if ev.statusMessage != "" {
		out = append(out, ev.statusMessage)
	}
	out = append(out, ev.texts...)
	return out
}

// firstResult is the tool result text already in ev, if any.
func (ev *evidence) firstResult() string {
	if len(ev.texts) > 0 {
		return ev.texts[0]
	}
	return ""
}

func (ev *evidence) empty() bool {
	return ev.httpStatus == 0 && !ev.hasJSONRPC && ev.statusMessage == "" && len(ev.errors) == 0 && len(ev.texts) == 0
}

// memo caches text and exception-name classifications within one
// Classify call: retries and wrapper spans repeat the same messages. A nil
// memo classifies without caching.
type memo struct {
	text smallmap.Map[string, memoText]
	exc  smallmap.Map[string, memoExc]
	// shared, when set, is the Classifier's table of the text rules'
	// findings (textmemo.go), used as mode says (resultsKeep: read and
	// kept; resultsTake: taken; resultsRead: not used).
	shared *sharedTexts
	mode   resultTextMode
	// lower is room for the lower-cased text the rules read (ruleText's
	// scratch), reused text after text: a lowered text lives only while
	// its rules run, and the memo is one classification's.
	lower []byte
}

type memoText struct {
	f  finding
	ok bool
}

type memoExc struct {
	f        finding
	weak, ok bool
}

// maxMemoEntries bounds the memo of one Classify call.
const maxMemoEntries = 4096

func (m *memo) classifyText(s string) (finding, bool) {
	if m == nil {
		return classifyText(s)
	}
	if r, ok := m.text.Get(s); ok {
		return r.f, r.ok
	}
	f, ok := m.classifySharedText(s)
	if m.text.Len() < maxMemoEntries {
		m.text.Put(s, memoText{f, ok})
	}
	return f, ok
}

// classifySharedText is classifyText(s), through the shared table as the
// memo's mode says.
func (m *memo) classifySharedText(s string) (finding, bool) {
	if m.shared == nil || m.mode == resultsRead || s == "" {
		return classifyTextIn(s, true, &m.lower)
	}
	h := m.shared.hash(s)
	if f, ok, hit := m.shared.get(s, h, m.mode == resultsTake); hit {
		return f, ok
	}
	f, ok := classifyTextIn(s, true, &m.lower)
	if m.mode == resultsKeep {
		m.shared.put(s, h, f, ok)
	}
	return f, ok
}

// classifyRuleText is classifyText(s) with s already prepared as rt.
func (m *memo) classifyRuleText(s string, rt *ruleText) (finding, bool) {
	if r, ok := m.text.Get(s); ok {
		return r.f, r.ok
	}
	f, ok := rt.classify(true)
	if m.text.Len() < maxMemoEntries {
		m.text.Put(s, memoText{f, ok})
	}
	return f, ok
}

func (m *memo) exceptionType(name string) (finding, bool, bool) {
	if m == nil {
		return fromExceptionType(name)
	}
	if r, ok := m.exc.Get(name); ok {
		return r.f, r.weak, r.ok
	}
	f, weak, ok := fromExceptionType(name)
	if m.exc.Len() < maxMemoEntries {
		m.exc.Put(name, memoExc{f, weak, ok})
	}
	return f, weak, ok
}

// classifyCodes reads the structured codes of ev. It returns a decisive
// finding, or a weak hint to use when the text rules find nothing.
func classifyCodes(ev *evidence, m *memo) (f finding, hint *finding, ok bool) {
	// buf holds the normalized provider code of one codeString call, read
	// before the next.
	var buf [maxStackName]byte
	joinedText, joined := "", false
	text := func() string {
		if !joined {
			joinedText, joined = strings.Join(ev.allTexts(), "\n"), true
		}
		return joinedText
	}
	if ev.httpStatus > 0 {
		if f, ok := fromHTTPStatus(ev.httpStatus); ok {
			return f.with(SignalHTTPStatus, "", confHTTP), nil, true
		}
		if f, ok := notRetryableStatus(ev.httpStatus); ok {
			h := f.with(SignalHTTPStatus, "", confHTTP)
			hint = &h
		}
	}
	if ev.hasJSONRPC {
		if f, ok := fromJSONRPC(ev.jsonrpcCode, text); ok {
			return f.with(SignalJSONRPCCode, "", confJSONRPC), nil, true
		}
	}
	for _, e := range ev.errors {
		if e.Code == "" {
			continue
		}
		f, norm, ok := codeString(e.Code, text, &buf)
		if ok {
			return f, nil, true
		}
		if f, ok := notRetryableNormCode(norm); ok && hint == nil {
			h := f.with(SignalProviderCode, "", confProviderCode)
			hint = &h
		}
	}
	for _, e := range ev.errors {
		if e.Type == "" {
			continue
		}
		// error.type may hold a status or JSON-RPC code, or a provider
		// code such as rate_limit_exceeded.
		f, norm, ok := codeString(e.Type, text, &buf)
		if ok {
			return f, nil, true
		}
		if f, ok := notRetryableNormCode(norm); ok {
			if hint == nil {
				h := f.with(SignalProviderCode, "", confProviderCode)
				hint = &h
			}
			continue
		}
		ef, weak, ok := m.exceptionType(e.Type)
		if !ok {
			continue
		}
		ef = ef.with(SignalExceptionType, "", confExceptionType)
		if weak {
			if hint == nil {
				h := ef
				hint = &h
			}
			continue
		}
		return ef, nil, true
	}
	return finding{}, hint, false
}

// codeString reads a code written as a string: a number (HTTP status or
// JSON-RPC code) or a provider code. norm is the provider code normCode
// made of it, for notRetryableCode's reading ("" for a number: no
// provider code is one).
func codeString(code string, text func() string, buf *[maxStackName]byte) (f finding, norm string, ok bool) {
	code = strings.TrimSpace(code)
	if n, ok := decimalInt(code); ok {
		if n >= 100 && n <= 599 {
			if f, ok := fromHTTPStatus(n); ok {
				return f.with(SignalHTTPStatus, "", confHTTP), "", true
			}
			return finding{}, "", false
		}
		if n <= -32000 && n >= -32768 {
			if f, ok := fromJSONRPC(n, text); ok {
				return f.with(SignalJSONRPCCode, "", confJSONRPC), "", true
			}
		}
		return finding{}, "", false
	}
	norm = normCodeIn(code, buf)
	if f, ok := fromNormCode(norm); ok {
		return f.with(SignalProviderCode, "", confProviderCode), norm, true
	}
	return finding{}, norm, false
}

// decimalInt is strconv.Atoi(s) and whether it succeeded, without the
// error Atoi allocates for a code that is not a number (most provider
// codes): Atoi accepts exactly a sign or none, then decimal digits, so
// anything else is answered without it.
func decimalInt(s string) (int, bool) {
	digits := s
	if digits != "" && (digits[0] == '+' || digits[0] == '-') {
		digits = digits[1:]
	}
	if digits == "" {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if !isDigit(digits[i]) {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// classifyEvidence runs codes, then text rules, over one span's evidence.
func classifyEvidence(ev *evidence, m *memo) (finding, bool) {
	f, hint, ok := classifyCodes(ev, m)
	if ok {
		return f, true
	}
	for _, t := range ev.allTexts() {
		if f, ok := m.classifyText(t); ok {
			return f, true
		}
	}
	if hint != nil {
		return *hint, true
	}
	return finding{}, false
}
