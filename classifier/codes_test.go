package classifier

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/triage-otel/triage/trajectory"
)

func TestFromHTTPStatus(t *testing.T) {
	cases := []struct {
		code   int
		want   FailureType
		reason string
		ok     bool
	}{
		{408, Timeout, "", true},
		{504, Timeout, "", true},
		{429, ExternalFault, "", true},
		{500, ExternalFault, "", true},
		{502, ExternalFault, "", true},
		{503, ExternalFault, "", true},
		{529, ExternalFault, "", true},
		{401, Unknown, ReasonAuth, true},
		{403, Unknown, ReasonAuth, true},
		// ambiguous alone
		{400, "", "", false},
		{404, "", "", false},
		{422, "", "", false},
		{200, "", "", false},
		{501, "", "", false},
	}
	for _, tc := range cases {
		f, ok := fromHTTPStatus(tc.code)
		if ok != tc.ok || f.Type != tc.want || f.Reason != tc.reason {
			t.Errorf("%d: got %+v %v, want %s/%s %v", tc.code, f, ok, tc.want, tc.reason, tc.ok)
		}
	}
}

func TestFromJSONRPC(t *testing.T) {
	cases := []struct {
		code int
		text string
		want FailureType
		ok   bool
	}{
		{-32601, "Method not found", WrongToolCalled, true},
		{-32602, "Invalid params: expected number", SchemaMismatch, true},
		{-32602, "MCP error -32602: Tool get_forecast not found", WrongToolCalled, true},
		{-32603, "Internal error", ExternalFault, true},
		{-32000, "server error", ExternalFault, true},
		{-32001, "Request timed out", Timeout, true},
		{-32700, "Parse error", SchemaMismatch, true},
		{-1, "", "", false},
		{0, "", "", false},
	}
	for _, tc := range cases {
		f, ok := fromJSONRPC(tc.code, func() string { return tc.text })
		if ok != tc.ok || f.Type != tc.want {
			t.Errorf("%d %q: got %+v %v, want %s %v", tc.code, tc.text, f, ok, tc.want, tc.ok)
		}
	}
}

func TestFromProviderCode(t *testing.T) {
	cases := map[string]FailureType{
		"context_length_exceeded": ContextOverflow,
		"rate_limit_exceeded":     ExternalFault,
		"overloaded_error":        ExternalFault,
		"RATE-LIMIT-EXCEEDED":     ExternalFault,
		"invalid_api_key":         Unknown,
		"insufficient_quota":      Unknown,
		"content_filter":          Unknown,
	}
	for code, want := range cases {
		f, ok := fromProviderCode(code)
		if !ok || f.Type != want {
			t.Errorf("%s: got %+v %v, want %s", code, f, ok, want)
		}
	}
	for _, code := range []string{"invalid_request_error", "", "not_found_error", "_OTHER"} {
		if f, ok := fromProviderCode(code); ok {
			t.Errorf("%q is ambiguous, got %+v", code, f)
		}
	}
}

func TestFromExceptionType(t *testing.T) {
	cases := []struct {
		name   string
		want   FailureType
		reason string
		weak   bool
	}{
		{"openai.RateLimitError", ExternalFault, "", false},
		{"anthropic.InternalServerError", ExternalFault, "", false},
		{"ThrottlingException", ExternalFault, "", false},
		{"google.api_core.exceptions.ResourceExhausted", ExternalFault, "", false},
		{"APIConnectionTimeoutError", Timeout, "", false},
		{"httpx.ReadTimeout", Timeout, "", false},
		{"asyncio.TimeoutError", Timeout, "", false},
		{"DeadlineExceeded", Timeout, "", false},
		{"AI_NoSuchToolError", WrongToolCalled, "", false},
		{"ToolNotFoundError", WrongToolCalled, "", false},
		{"KernelFunctionNotFoundError", WrongToolCalled, "", false},
		{"AI_InvalidToolInputError", SchemaMismatch, "", false},
		{"InvalidToolArgumentsError", SchemaMismatch, "", false},
		{"pydantic_core.ValidationError", SchemaMismatch, "", false},
		{"ZodError", SchemaMismatch, "", false},
		{"json.JSONDecodeError", SchemaMismatch, "", false},
		{"OutputParserException", SchemaMismatch, "", false},
		{"ContextWindowExceededError", ContextOverflow, "", false},
		{"AuthenticationError", Unknown, ReasonAuth, false},
		{"PermissionDeniedError", Unknown, ReasonAuth, false},
		{"SessionExpiredError", Unknown, ReasonSessionExpired, false},
		{"HILTimeoutError", Unknown, ReasonHumanInLoop, false},
		{"ContentFilterFinishReasonError", Unknown, ReasonContentFilter, false},
		{"APIConnectionError", Unknown, ReasonConnection, true},
		{"httpx.ConnectError", Unknown, ReasonConnection, true},
		{"MaxStepsExceededError", stepLimitType, "", false},
		{"GraphRecursionError", stepLimitType, "", false},
		{"MaxTurnsExceeded", stepLimitType, "", false},
	}
	for _, tc := range cases {
		f, weak, ok := fromExceptionType(tc.name)
		if !ok || f.Type != tc.want || f.Reason != tc.reason || weak != tc.weak {
			t.Errorf("%s: got %+v weak=%v ok=%v, want %s/%s weak=%v", tc.name, f, weak, ok, tc.want, tc.reason, tc.weak)
		}
	}
	// Generic names carry no class.
	for _, name := range []string{"Error", "Exception", "ValueError", "KeyError", "BadRequestError", "APIError", "McpToolError", "UpstreamHTTPError", "RetryError", "TypeError", ""} {
		if f, _, ok := fromExceptionType(name); ok {
			t.Errorf("%q is generic, got %+v", name, f)
		}
	}
}

func TestClassifyEvidenceOrder(t *testing.T) {
	// A status code beats the words around it.
	ev := evidence{httpStatus: 503, errors: []trajectory.ErrorInfo{{Type: "Error", Message: "request timed out"}}}
	if f, ok := classifyEvidence(&ev, nil); !ok || f.Type != ExternalFault || f.Signal != SignalHTTPStatus {
		t.Errorf("http 503: got %+v", f)
	}
	// An ambiguous 400 lets the provider code decide.
	ev = evidence{httpStatus: 400, errors: []trajectory.ErrorInfo{{Type: "BadRequestError", Code: "context_length_exceeded", Message: "too long"}}}
	if f, ok := classifyEvidence(&ev, nil); !ok || f.Type != ContextOverflow || f.Signal != SignalProviderCode {
		t.Errorf("400 + code: got %+v", f)
	}
	// error.type holding a number is read as a code.
	ev = evidence{errors: []trajectory.ErrorInfo{{Type: "-32602", Message: "Tool x not found"}}}
	if f, ok := classifyEvidence(&ev, nil); !ok || f.Type != WrongToolCalled || f.Signal != SignalJSONRPCCode {
		t.Errorf("error.type -32602: got %+v", f)
	}
	// A weak exception hint gives way to the text, and decides otherwise.
	ev = evidence{errors: []trajectory.ErrorInfo{{Type: "ServerConnectionError", Message: "Server disconnected after 30.0 seconds of inactivity"}}}
	if f, ok := classifyEvidence(&ev, nil); !ok || f.Type != Timeout {
		t.Errorf("weak hint + text: got %+v", f)
	}
	ev = evidence{errors: []trajectory.ErrorInfo{{Type: "APIConnectionError", Message: "boom"}}}
	if f, ok := classifyEvidence(&ev, nil); !ok || f.Type != Unknown || f.Reason != ReasonConnection || f.Signal != SignalExceptionType {
		t.Errorf("weak hint alone: got %+v", f)
	}
	// Nothing decisive.
	ev = evidence{errors: []trajectory.ErrorInfo{{Type: "Error", Message: "something went wrong"}}}
	if f, ok := classifyEvidence(&ev, nil); ok {
		t.Errorf("generic error classified: %+v", f)
	}
}

// A family's substrings are looked for only when the name scanner reports
// them: the same answer as looking for every one, on every member in
// names around it and on other names.
func TestNameFamiliesScanned(t *testing.T) {
	plain := func(f *nameFamily, n string) bool {
		return slices.ContainsFunc(f.contains, func(s string) bool { return strings.Contains(n, s) }) ||
			slices.ContainsFunc(f.suffixes, func(s string) bool { return strings.HasSuffix(n, s) }) || slices.Contains(f.exact, n)
	}
	names := []string{"", "x", "error", "valueerror", "typeerror", "exception"}
	for _, f := range nameFamilies() {
		for _, m := range slices.Concat(f.contains, f.suffixes, f.exact) {
			names = append(names, m, "x"+m, m+"error", m[:len(m)/2], m[1:], "ab"+m[:len(m)-1])
		}
	}
	for _, n := range names {
		var h keyHits
		nameKeys.scan(n, &h)
		for _, f := range nameFamilies() {
			if got, want := f.match(n, &h), plain(f, n); got != want {
				t.Errorf("family %v on %q: scanned %v, plain %v", f.contains, n, got, want)
			}
		}
	}
}

// exceptionNameKey answers as the library calls it replaces, in its buffer
// or not (non-ASCII, longer than the buffer).
func TestExceptionNameKey(t *testing.T) {
	for _, n := range []string{"", "TimeoutError", "Rate_Limit-Error x", "APIConnectionError", "_-_ -", "ÉrrorÀ", "KelvinError\u212a",
		strings.Repeat("Ab_", 21), strings.Repeat("Ab_", 22), strings.Repeat("A", maxStackName), strings.Repeat("A", maxStackName+1)} {
		var buf [maxStackName]byte
		if got, want := exceptionNameKey(n, &buf), strings.ToLower(nameSeparators.Replace(n)); got != want {
			t.Errorf("exceptionNameKey(%q) = %q, want %q", n, got, want)
		}
	}
}

// normCodeIn answers as normCode, in its buffer or not.
func TestNormCodeIn(t *testing.T) {
	for _, c := range []string{"", " Rate-Limit Exceeded ", "UpstreamHTTPError", "context_length_exceeded", "ÉRROR-x", "a\u212a",
		strings.Repeat("A-", maxStackName/2), strings.Repeat("A-", maxStackName/2) + "b"} {
		var buf [maxStackName]byte
		if got, want := normCodeIn(c, &buf), normCode(c); got != want {
			t.Errorf("normCodeIn(%q) = %q, want %q", c, got, want)
		}
	}
}

// decimalInt answers as strconv.Atoi does, on numbers and on the codes
// that are not (signs alone, separators, other bases, overflow).
func TestDecimalIntIsAtoi(t *testing.T) {
	for _, s := range []string{"", "+", "-", "0", "429", "+429", "-32601", "-0", "007", "1_000", "0x1F", "1e3", " 1", "1 ",
		"++1", "+-1", "12a", "a12", "９", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
		"99999999999999999999", "rate_limit_exceeded", "RESOURCE_EXHAUSTED"} {
		n, err := strconv.Atoi(s)
		got, ok := decimalInt(s)
		if ok != (err == nil) || ok && got != n {
			t.Errorf("decimalInt(%q) = %d, %v; Atoi gives %d, %v", s, got, ok, n, err)
		}
	}
}
