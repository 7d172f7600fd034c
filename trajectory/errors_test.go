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
	"",
}

func TestProviderCodeMatchesTheRules(t *testing.T) {
	for _, s := range providerCodeSeeds {
		if got, want := providerCode(s), refProviderCode(s); got != want {
			t.Errorf("providerCode(%q) = %q, the rules give %q", s, got, want)
		}
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
	if got, want := providerCode(long), refProviderCode(long); got != want {
		t.Errorf("long text: %q, the rules give %q", got, want)
	}
}

// FuzzProviderCode holds providerCode (the rules tried at their keys'
// occurrences) to the rules run over the whole text.
func FuzzProviderCode(f *testing.F) {
	for _, s := range providerCodeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := providerCode(s), refProviderCode(s); got != want {
			t.Fatalf("providerCode(%q) = %q, the rules give %q", s, got, want)
		}
	})
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
