package trajectory

import (
	"regexp"
	"strings"
	"testing"
)

// The provider-code rules as written before they were anchored at their
// keys (quotedKey): the reference providerCode is held to.
var (
	refErrorObjRe = regexp.MustCompile(`["']error["']\s*:\s*\{`)
	refCodeRe     = regexp.MustCompile(`["']code["']\s*:\s*["']([A-Za-z0-9_.\-]{2,80})["']`)
	refTypeRe     = regexp.MustCompile(`["']type["']\s*:\s*["']([A-Za-z0-9_.\-]{2,80})["']`)
)

// The Mastra body rules as written unanchored (the reference of
// scanJSONString).
var refBodyRules = []struct {
	rule keyedRule
	ref  *regexp.Regexp
}{
	{finishReasonRe, regexp.MustCompile(`"(?:finish_reason|finishReason|stop_reason)"\s*:\s*"([A-Za-z_\-]{1,40})"`)},
	{inputTokensRe, regexp.MustCompile(`"(?:prompt_tokens|input_tokens|inputTokens|promptTokens)"\s*:\s*(\d{1,12})\b`)},
	{outputTokensRe, regexp.MustCompile(`"(?:completion_tokens|output_tokens|outputTokens|completionTokens)"\s*:\s*(\d{1,12})\b`)},
}

func refScanJSONString(s string, re *regexp.Regexp) string {
	if len(s) > maxErrorTextScan {
		s = s[:maxErrorTextScan]
	}
	if m := re.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// checkKeyedRules fails when providerCode or a body rule finds in s other
// than the unanchored rules find.
func checkKeyedRules(t *testing.T, s string) {
	t.Helper()
	if got, want := providerCode(s), refProviderCode(s); got != want {
		t.Fatalf("providerCode(%q) = %q, the rules give %q", s, got, want)
	}
	for i, r := range refBodyRules {
		if got, want := scanJSONString(s, r.rule), refScanJSONString(s, r.ref); got != want {
			t.Fatalf("body rule %d on %q: %q, the rule gives %q", i, s, got, want)
		}
	}
}

func refProviderCode(msg string) string {
	if msg == "" {
		return ""
	}
	if len(msg) > maxErrorTextScan {
		msg = msg[:maxErrorTextScan]
	}
	loc := refErrorObjRe.FindStringIndex(msg)
	if loc == nil {
		return ""
	}
	body := msg[loc[1]:]
	if m := refCodeRe.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	for _, m := range refTypeRe.FindAllStringSubmatch(body, 4) {
		if m[1] != "error" {
			return m[1]
		}
	}
	return ""
}

var providerCodeSeeds = []string{
	`Error code: 400 - {'error': {'message': "This model's maximum context length is 8192 tokens", 'type': 'invalid_request_error', 'param': 'messages', 'code': 'context_length_exceeded'}}`,
	`{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`,
	`{"type":"error","error":{"type":"error","type":"error","type":"error","type":"rate_limit_error"}}`,
	`{"type":"error","error":{"type":"error","type":"a","type":"rate_limit_error"}}`,
	`"error" : {  "code":"x", "code" : "ok_code"}`,
	`'error':{"code":"` + strings.Repeat("a", 81) + `","type":"t1"}`,
	`x"error":{"code":"ab"'`,
	`error"error"error":{"type":"errorerror"}`,
	`"error"error":{` + "\xe2\"code\":\"c\xff\"" + `,"code":"cc"}`,
	`"error":\n\t{"type":'` + "\n" + `'}`,
	`no provider body: error at line 3`,
	`{"id":"x","choices":[{"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":12,"completion_tokens":"7","completionTokens":8}}`,
	`{"stop_reason": "end_turn", "finishReason":"stop", "usage": {"input_tokens": 1234567890123, "inputTokens": 5, "output_tokens":3x, "outputTokens": 9}}`,
	`"finishReason""finish_reason":"` + strings.Repeat("a", 41) + `","stop_reason":"max_tokens"`,
	"",
}

func TestKeyedRulesMatchTheRules(t *testing.T) {
	for _, s := range providerCodeSeeds {
		checkKeyedRules(t, s)
	}
	if got := scanJSONInt(providerCodeSeeds[len(providerCodeSeeds)-4], inputTokensRe); got != 12 {
		t.Errorf("prompt_tokens: %d", got)
	}
	if got := scanJSONString(providerCodeSeeds[len(providerCodeSeeds)-3], finishReasonRe); got != "end_turn" {
		t.Errorf("stop_reason: %q", got)
	}
	if got := providerCode(providerCodeSeeds[0]); got != "context_length_exceeded" {
		t.Errorf("OpenAI body: %q", got)
	}
	if got := providerCode(providerCodeSeeds[1]); got != "overloaded_error" {
		t.Errorf("Anthropic body: %q", got)
	}
	// A long stack trace is read in one pass, not the rules tried at every
	// byte (which the rules' result does not show; the benchmark does).
	long := strings.Repeat("  at frame (file.js:1:2) 'x' \"y\"\n", 2000) + providerCodeSeeds[1]
	checkKeyedRules(t, long)
	// Several keys of one rule: the first that matches counts, whichever
	// key it is (the rules' keys share a suffix, searched once).
	for _, s := range []string{
		`{"stop_reason":"a","finish_reason":"b","finishReason":"c"}`,
		`{"finishReason":1,"stop_reason":"a","finish_reason":"b"}`,
		`{"usage":{"completion_tokens":"x","output_tokens":7,"completionTokens":8,"prompt_tokens":9,"inputTokens":3}}`,
		`{"max_tokens":100,"xinput_tokens":5,"promptTokens" : 6}`,
	} {
		checkKeyedRules(t, s)
	}
}

// FuzzKeyedRules holds providerCode and the Mastra body rules (each rule
// tried at its keys' occurrences, keyedRule) to the rules run unanchored
// over the whole text.
func FuzzKeyedRules(f *testing.F) {
	for _, s := range providerCodeSeeds {
		f.Add(s)
	}
	f.Fuzz(checkKeyedRules)
}

func BenchmarkProviderCode(b *testing.B) {
	long := strings.Repeat("  at frame (file.js:1:2) 'x' \"y\"\n", 200) + providerCodeSeeds[1]
	b.ReportAllocs()
	for b.Loop() {
		if providerCode(long) != "overloaded_error" {
			b.Fatal("no code")
		}
	}
}
