package classifier

import (
	"testing"

	"github.com/triage-otel/triage/trajectory"
)

// Phrasings of not-retryable failures from many SDKs and services; each
// must be unknown with its reason.
var notRetryablePhrasings = []struct {
	text, reason string
}{
	{"The model `text-davinci-003` has been deprecated, learn more here: https://platform.example/docs/deprecations", ReasonDeprecated},
	{"model_decommissioned: llama2-70b is no longer supported", ReasonDeprecated},
	{"This API version was retired on 2024-06-01", ReasonDeprecated},
	{"Endpoint reached end-of-life; migrate to /v2", ReasonDeprecated},
	{"Country, region, or territory not supported", ReasonCompliance},
	{"This service is not available in your region", ReasonCompliance},
	{"Your request violates our usage policies", ReasonCompliance},
	{"Blocked: data residency requirements forbid sending this payload outside the EU", ReasonCompliance},
	{"Your account has been suspended. Contact support.", ReasonAuth},
	{"Organization org-xyz is deactivated", ReasonAuth},
	{"API key not valid. Please pass a valid API key.", ReasonAuth},
	{"The request signature we calculated does not match the signature you provided (SignatureDoesNotMatch)", ReasonAuth},
	{"User is not authorized to perform this action on the resource", ReasonAuth},
	{"Budget has been exceeded! Current cost: 10.2, Max budget: 10.0", ReasonBilling},
	{"You are out of credits. Upgrade your plan to continue.", ReasonBilling},
	{"Guardrail intervened and blocked the response", ReasonContentFilter},
	{"Prompt injection detected in tool output", ReasonContentFilter},
	{"Input was blocked by the moderation service", ReasonContentFilter},
	{"Unknown session: 7f3a", ReasonSessionExpired},
	{"Bad Request: No valid session ID provided", ReasonSessionExpired},
	{"The conversation has expired, start a new one", ReasonSessionExpired},
	{"Run cancelled by user", ReasonCancelled},
	{"KeyboardInterrupt", ReasonCancelled},
	{"Interrupted at node: review", ReasonHumanInLoop},
	{"Tool call requires human approval before it can run", ReasonHumanInLoop},
	{"The reviewer rejected the proposed refund", ReasonHumanInLoop},
	{"OPENAI_BASE_URL is misconfigured", ReasonConfiguration},
	{"Environment variable WEATHER_TOKEN_FILE is not set", ReasonConfiguration},
	{"[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain", ReasonConfiguration},
	{"No module named 'pandas'", ReasonConfiguration},
	{"This operation is not implemented for streaming responses", ReasonNotImplemented},
	{"registry.ollama.ai/library/gemma:2b does not support tools", ReasonNotImplemented},
	{"'NoneType' object has no attribute 'get'", ReasonProgramError},
	{"Cannot read properties of undefined (reading 'temperature')", ReasonProgramError},
	{"division by zero", ReasonProgramError},
	{"CUDA out of memory. Tried to allocate 2.00 GiB", ReasonResources},
	{"OSError: [Errno 28] No space left on device", ReasonResources},
}

func TestNotRetryablePhrasings(t *testing.T) {
	for _, tc := range notRetryablePhrasings {
		ft, rule, reason, ok := ClassifyText(tc.text)
		if !ok || ft != Unknown || reason != tc.reason {
			t.Errorf("%q: got %s/%s reason %q ok=%v, want unknown reason %q", tc.text, ft, rule, reason, ok, tc.reason)
		}
		a, okA := classifyTextWith(tc.text, true)
		b, okB := classifyTextWith(tc.text, false)
		if a != b || okA != okB {
			t.Errorf("%q: prefilter %+v/%v, full %+v/%v", tc.text, a, okA, b, okB)
		}
	}
}

// Typed failures that mention the same words keep their type: the
// not-retryable families come after every typed rule.
func TestNotRetryableNeverOverridesTypes(t *testing.T) {
	for _, tc := range []struct {
		text string
		want FailureType
	}{
		{"Tool 'legacy_search' not found: it has been deprecated", WrongToolCalled},
		{"Request timed out after the user cancelled nothing", Timeout},
		{"429 Too Many Requests: budget of requests per minute reached", ExternalFault},
		{"validation failed: field 'region' is not supported", SchemaMismatch},
		{"Internal server error: object has no attribute 'x'", ExternalFault},
	} {
		ft, rule, _, ok := ClassifyText(tc.text)
		if !ok || ft != tc.want {
			t.Errorf("%q: got %s (%s), want %s", tc.text, ft, rule, tc.want)
		}
	}
}

// Ordinary text that mentions the words is not a failure.
func TestNotRetryableNearMisses(t *testing.T) {
	for _, s := range []string{
		"The deprecated flag is ignored",
		"Region: eu-west-1",
		"Session started for user 42",
		"The credit card ending 4242 was charged",
		"Interrupt handlers are registered",
		"memory usage 40%",
		"Configured 3 tools",
	} {
		if ft, rule, reason, ok := ClassifyText(s); ok {
			t.Errorf("%q: got %s/%s reason %q, want no finding", s, ft, rule, reason)
		}
	}
}

func TestNotRetryableExceptionNamesAreHints(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
	}{
		{"langgraph.errors.GraphInterrupt", ReasonHumanInLoop},
		{"NodeInterrupt", ReasonHumanInLoop},
		{"KeyboardInterrupt", ReasonCancelled},
		{"NotImplementedError", ReasonNotImplemented},
		{"ModuleNotFoundError", ReasonConfiguration},
		{"AttributeError", ReasonProgramError},
		{"TypeError", ""},
		{"MemoryError", ReasonResources},
		{"ExpiredTokenException", ReasonSessionExpired},
		{"ModelDeprecatedError", ReasonDeprecated},
	} {
		f, weak, ok := fromExceptionType(tc.name)
		if tc.reason == "" {
			if ok {
				t.Errorf("%s: got %+v, want no finding", tc.name, f)
			}
			continue
		}
		if !ok || !weak || f.Type != Unknown || f.Reason != tc.reason {
			t.Errorf("%s: got %+v weak=%v ok=%v, want weak unknown %q", tc.name, f, weak, ok, tc.reason)
		}
	}
	// A message a text rule classifies decides over the hint.
	ev := evidence{errors: []trajectory.ErrorInfo{{Type: "AttributeError", Message: "upstream returned 503 Service Unavailable"}}}
	if f, ok := classifyEvidence(&ev, nil); !ok || f.Type != ExternalFault {
		t.Errorf("text over hint: got %+v", f)
	}
	ev = evidence{errors: []trajectory.ErrorInfo{{Type: "AttributeError", Message: "'dict' has nothing"}}}
	if f, ok := classifyEvidence(&ev, nil); !ok || f.Reason != ReasonProgramError || f.Signal != SignalExceptionType {
		t.Errorf("hint: got %+v", f)
	}
}

func TestNotRetryableStatusesAndCodes(t *testing.T) {
	ev := evidence{httpStatus: 410, statusMessage: "Gone"}
	if f, ok := classifyEvidence(&ev, nil); !ok || f.Reason != ReasonDeprecated || f.Signal != SignalHTTPStatus {
		t.Errorf("410: got %+v", f)
	}
	// A 501 whose text names a typed failure keeps the type.
	ev = evidence{httpStatus: 501, statusMessage: "tool 'x' not found"}
	if f, ok := classifyEvidence(&ev, nil); !ok || f.Type != WrongToolCalled {
		t.Errorf("501 with text: got %+v", f)
	}
	ev = evidence{errors: []trajectory.ErrorInfo{{Code: "unsupported_country_region_territory", Message: "request failed"}}}
	if f, ok := classifyEvidence(&ev, nil); !ok || f.Reason != ReasonCompliance || f.Signal != SignalProviderCode {
		t.Errorf("provider code: got %+v", f)
	}
	if !NotRetryable(ReasonAuth) || NotRetryable(ReasonNoFinalAnswer) || NotRetryable(ReasonRootLost) || NotRetryable("") {
		t.Error("NotRetryable")
	}
}

// A tool result that opens like a failure is not one on the word of a
// not-retryable family alone.
func TestResultHeadIgnoresLateReasons(t *testing.T) {
	cl := &classification{}
	if cl.resultHeadFailure("Failed logins: 3 today, account locked for user bob") {
		t.Error("a late reason made a result head a failure")
	}
}
