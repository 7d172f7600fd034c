package trajectory

import (
	"regexp"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// errorEvidence is the convention-neutral error evidence of one span: span
// status, exception events, error.type, HTTP status and JSON-RPC code.
type errorEvidence struct {
	StatusError   bool
	StatusMessage string
	Errors        []ErrorInfo
	HTTPStatus    int
	JSONRPCCode   int
	HasJSONRPC    bool
}

func (e *errorEvidence) failed() bool {
	return e.StatusError || len(e.Errors) > 0 || e.HTTPStatus >= 400 || e.HasJSONRPC
}

// MaxExceptionsPerSpan bounds the exception events recorded per span: the
// first MaxExceptionsPerSpan-1 and the last one are kept (a span with
// thousands of retried exceptions would otherwise make merging quadratic).
const MaxExceptionsPerSpan = 32

func lastException(events ptrace.SpanEventSlice) int {
	for i := events.Len() - 1; i >= 0; i-- {
		if events.At(i).Name() == "exception" {
			return i
		}
	}
	return -1
}

// maxErrorTextScan bounds how much of an error message is scanned for a
// provider error code or an HTTP status (error bodies are short; stack
// traces after them are not needed).
const maxErrorTextScan = 64 << 10

// errorAttrSig is the signature of the span attributes readErrors reads.
var errorAttrSig = keySig("error.type", "http.response.status_code", "http.status_code", "rpc.jsonrpc.error_code")

// readErrors collects the error evidence common to all conventions (attrs
// are the span's).
func readErrors(sp ptrace.Span, attrs attrMap) errorEvidence {
	var e errorEvidence
	if sp.Status().Code() == ptrace.StatusCodeError {
		e.StatusError = true
		e.StatusMessage = sp.Status().Message()
	}
	e.readExceptions(sp.Events())
	// Most spans have none of the error attributes: one test of the
	// signature answers the four lookups.
	if attrs.mayHoldAny(&errorAttrSig) {
		e.readErrorType(attrStr(attrs, "error.type"))
		if code, ok := firstInt(attrs, "http.response.status_code", "http.status_code"); ok && code > 0 && code < 1000 {
			e.HTTPStatus = int(code)
		}
		if code, ok := firstInt(attrs, "rpc.jsonrpc.error_code"); ok && code != 0 {
			e.JSONRPCCode, e.HasJSONRPC = int(code), true
		}
	}
	if e.HTTPStatus == 0 && (e.StatusError || len(e.Errors) > 0) {
		e.HTTPStatus = httpStatusFromText(e)
	}
	if !e.HasJSONRPC {
		for _, msg := range e.messages() {
			if n, ok := mcpErrorCode(msg); ok {
				e.JSONRPCCode, e.HasJSONRPC = n, true
				break
			}
		}
	}
	return e
}

// readExceptions reads the span's exception events (at most
// MaxExceptionsPerSpan, the last one always among them): type, message and
// the provider's error code.
func (e *errorEvidence) readExceptions(events ptrace.SpanEventSlice) {
	last := -1
	if events.Len() >= MaxExceptionsPerSpan {
		last = lastException(events)
	}
	for i := 0; i < events.Len(); i++ {
		ev := events.At(i)
		if ev.Name() != "exception" {
			continue
		}
		if len(e.Errors) >= MaxExceptionsPerSpan-1 && i != last {
			continue
		}
		ea := anyAttrs(ev.Attributes())
		info := ErrorInfo{
			Type:    attrStr(ea, "exception.type"),
			Message: attrStr(ea, "exception.message"),
		}
		if info.Type == "" && info.Message == "" {
			continue
		}
		info.Code = providerCode(info.Message)
		if info.Code == "" {
			info.Code = attrStr(ea, "exception.code")
		}
		if info.Code == "" && isCodeLike(info.Type) {
			// Agents that rethrow a provider error often use its code as
			// the exception type (OpenAI error.code, Anthropic error.type).
			info.Code = info.Type
		}
		e.Errors = append(e.Errors, info)
	}
}

// readErrorType reads error.type: a status code for HTTP and JSON-RPC
// spans, else an error type (unless an exception already named it).
func (e *errorEvidence) readErrorType(et string) {
	if et == "" {
		return
	}
	if n, err := strconv.Atoi(strings.TrimSpace(et)); err == nil {
		// error.type holds a status code for HTTP and JSON-RPC spans.
		switch {
		case n < 0:
			e.JSONRPCCode, e.HasJSONRPC = n, true
		case n >= 400 && n <= 599:
			e.HTTPStatus = n
		}
	} else if et != "_OTHER" {
		dup := false
		for _, x := range e.Errors {
			if x.Type == et {
				dup = true
				break
			}
		}
		if !dup {
			info := ErrorInfo{Type: et, Message: e.StatusMessage, Code: providerCode(e.StatusMessage)}
			if info.Code == "" && isCodeLike(et) {
				info.Code = et
			}
			e.Errors = append(e.Errors, info)
		}
	}
}

func (e *errorEvidence) messages() []string {
	out := make([]string, 0, 1+len(e.Errors))
	if e.StatusMessage != "" {
		out = append(out, e.StatusMessage)
	}
	for _, x := range e.Errors {
		if x.Message != "" {
			out = append(out, x.Message)
		}
	}
	return out
}

var (
	// "MCP error -32602: ..." is how the MCP SDKs render a JSON-RPC error
	// (McpError.message).
	mcpErrorRe = regexp.MustCompile(`MCP error (-?\d{1,6})\b`)
	// OpenAI/Anthropic SDK error text: Python "Error code: 429 - {...}",
	// JS "429 Rate limit reached..." (APIError.message is "<status> <msg>").
	pyStatusRe = regexp.MustCompile(`Error code: ([1-5]\d\d)\b`)
	jsStatusRe = regexp.MustCompile(`^(?:[A-Za-z]*Error: )?([45]\d\d) [A-Za-z({"]`)
	// The literals every match of mcpErrorRe and pyStatusRe holds: the
	// expressions run only on a text that holds them.
	mcpErrorLiteral, pyStatusLiteral = "MCP error ", "Error code: "
	// A provider error body, as JSON or as a Python dict repr:
	// {"error": {"code": "context_length_exceeded", "type": "..."}},
	// {"type": "error", "error": {"type": "overloaded_error"}}.
	// Each rule is a quoted key and what follows it, tried where the key
	// occurs (keyedRule.find).
	// ["']error["']\s*:\s*\{
	errorObjKey = keyedRule{keys: []string{"error"}, open: `"'`, close: `"'`, value: valueRule{kind: objectValue}}
	// ["']code["']\s*:\s*["']([A-Za-z0-9_.\-]{2,80})["']
	codeKey = keyedRule{keys: []string{"code"}, open: `"'`, close: `"'`, value: providerCodeToken}
	// ["']type["']\s*:\s*["']([A-Za-z0-9_.\-]{2,80})["']
	typeKey           = keyedRule{keys: []string{"type"}, open: `"'`, close: `"'`, value: providerCodeToken}
	providerCodeToken = valueRule{kind: tokenValue, quotes: `"'`, class: bytesOfClass("A-Z", "a-z", "0-9", "_", ".", "-"), min: 2, max: 80}
)

// mayStartWithStatus is a necessary condition for jsStatusRe to match s:
// s starts with a 4 or 5, or its leading run of ASCII letters ends in
// "Error" and is followed by ": " (the letters [A-Za-z]* takes cannot go
// past the first byte that is not one, and "Error: " ends the group).
func mayStartWithStatus(s string) bool {
	p := 0
	for p < len(s) && s[p]|0x20 >= 'a' && s[p]|0x20 <= 'z' {
		p++
	}
	if p == 0 {
		return len(s) > 0 && (s[0] == '4' || s[0] == '5')
	}
	return p >= 5 && s[p-5:p] == "Error" && strings.HasPrefix(s[p:], ": ")
}

// isCodeLike reports whether s is a snake_case error code
// ("context_length_exceeded", "overloaded_error") rather than a class name.
func isCodeLike(s string) bool {
	if len(s) < 3 || len(s) > 80 || !strings.Contains(s, "_") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return s[0] != '_'
}

func mcpErrorCode(msg string) (int, bool) {
	if len(msg) > maxErrorTextScan {
		msg = msg[:maxErrorTextScan]
	}
	if !strings.Contains(msg, mcpErrorLiteral) {
		return 0, false // every match holds it
	}
	m := mcpErrorRe.FindStringSubmatch(msg)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n == 0 {
		return 0, false
	}
	return n, true
}

// httpStatusFromText reads an HTTP status out of the messages the OpenAI and
// Anthropic SDKs produce for API errors, when no http.* attribute says it.
// Only the SDKs' own formats are read: "Error code: 429 - {...}" (Python) and
// a message that starts with the status ("503 The server is overloaded",
// JS APIError). A status merely mentioned inside a message (a tool saying
// "request failed: 502 Bad Gateway") is not taken as the span's status.
func httpStatusFromText(e errorEvidence) int {
	for _, msg := range e.messages() {
		if len(msg) > maxErrorTextScan {
			msg = msg[:maxErrorTextScan]
		}
		if strings.Contains(msg, pyStatusLiteral) {
			if m := pyStatusRe.FindStringSubmatch(msg); m != nil {
				n, _ := strconv.Atoi(m[1])
				return n
			}
		}
		if mayStartWithStatus(msg) {
			if m := jsStatusRe.FindStringSubmatch(msg); m != nil {
				n, _ := strconv.Atoi(m[1])
				return n
			}
		}
	}
	return 0
}

// providerCode extracts a provider error code from an error body embedded in
// a message: error.code when set, else the innermost error.type (Anthropic's
// overloaded_error, OpenAI's invalid_request_error). "" when the message has
// no provider error object.
func providerCode(msg string) string {
	if msg == "" {
		return ""
	}
	if len(msg) > maxErrorTextScan {
		msg = msg[:maxErrorTextScan]
	}
	if !strings.Contains(msg, "error") {
		return "" // every match of errorObjRe holds the word
	}
	end, _, ok := errorObjKey.find(msg, 0)
	if !ok {
		return ""
	}
	body := msg[end:]
	if _, code, ok := codeKey.find(body, 0); ok {
		return code
	}
	// The first of the first four (non-overlapping) type matches that is
	// not "error".
	from := 0
	for range 4 {
		end, typ, ok := typeKey.find(body, from)
		if !ok {
			break
		}
		if typ != "error" {
			return typ
		}
		from = end
	}
	return ""
}

// mergeEvidence copies e into the step's error fields.
func (e *errorEvidence) applyTo(st *Step) {
	st.StatusError = e.StatusError
	st.StatusMessage = e.StatusMessage
	st.Errors = e.Errors
	st.HTTPStatus = e.HTTPStatus
	st.JSONRPCCode = e.JSONRPCCode
	st.HasJSONRPC = e.HasJSONRPC
}

func (e *errorEvidence) spanError(sp ptrace.Span, isRoot bool) SpanError {
	return SpanError{
		SpanID:        sp.SpanID(),
		Name:          sp.Name(),
		IsRoot:        isRoot,
		End:           sp.EndTimestamp(),
		StatusError:   e.StatusError,
		StatusMessage: e.StatusMessage,
		Errors:        e.Errors,
		HTTPStatus:    e.HTTPStatus,
		JSONRPCCode:   e.JSONRPCCode,
		HasJSONRPC:    e.HasJSONRPC,
	}
}
