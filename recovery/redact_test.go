package recovery

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRedactPlantedSecrets(t *testing.T) {
	r := NewRedactor(RedactorOptions{MaxLen: -1})
	cases := map[string]struct{ in, secret string }{
		"openai key":       {`{"query":"weather","api_key":"sk-proj-9fQ2xLmN4pRt7VwY1zAb3CdE"}`, "9fQ2xLmN4pRt7VwY1zAb3CdE"},
		"anthropic key":    {`calling with key sk-ant-api03-AbCdEfGhIjKlMnOpQrSt-uv`, "AbCdEfGhIjKlMnOpQrSt"},
		"bearer":           {`Authorization: Bearer abcdef1234567890.token`, "abcdef1234567890"},
		"basic auth":       {`authorization: Basic dXNlcjpodW50ZXIy`, "dXNlcjpodW50ZXIy"},
		"password=":        {`db connect failed: host=db password=hunter2secret user=app`, "hunter2secret"},
		"json password":    {`{"user": "bob", "password": "correct horse"}`, "correct"},
		"aws access key":   {`AccessKeyId AKIAIOSFODNN7EXAMPLE denied`, "AKIAIOSFODNN7EXAMPLE"},
		"aws secret":       {`aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`, "wJalrXUtnFEMI"},
		"github token":     {`token ghp_1234567890abcdefghijABCDEFGHIJ123456 rejected`, "ghp_1234567890"},
		"slack token":      {`xoxb-123456789012-abcdefghijkl`, "xoxb-123456789012"},
		"google key":       {`key=AIzaSyA1234567890abcdefghijklmnopqrstuv`, "AIzaSyA1234567890"},
		"jwt":              {`session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r`, "eyJzdWIiOiIxMjM0NTY3ODkwIn0"},
		"url credentials":  {`redis://app:s3cr3tpass@cache:6379/0`, "s3cr3tpass"},
		"private key":      {"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "MIIEow"},
		"x-api-key header": {`x-api-key: abc123def456`, "abc123def456"},
	}
	for name, c := range cases {
		out := r.Redact(c.in)
		if strings.Contains(out, c.secret) {
			t.Errorf("%s: %q still holds the secret: %q", name, c.in, out)
		}
		if !strings.Contains(out, Redacted) {
			t.Errorf("%s: no redaction marker in %q", name, out)
		}
	}
	// Key=value shapes keep the key, and URL credentials keep the user and host.
	if got := r.Redact("password=hunter2"); got != "password="+Redacted {
		t.Errorf("got %q", got)
	}
	if got := r.Redact("redis://app:pw@cache:6379"); got != "redis://app:"+Redacted+"@cache:6379" {
		t.Errorf("got %q", got)
	}
}

func TestRedactLeavesOrdinaryErrorsAlone(t *testing.T) {
	r := NewRedactor(RedactorOptions{MaxLen: -1})
	for _, s := range []string{
		"HTTP 503 Service Unavailable",
		"tool 'get_wether' not found; available tools: get_weather, search",
		"This model's maximum context length is 8192 tokens; max_tokens: 4096",
		"rate_limit_exceeded: retry after 20s",
		"MCP error -32602: Invalid params: missing required field 'city'",
		"missing bearer token",
	} {
		if got := r.Redact(s); got != s {
			t.Errorf("%q changed to %q", s, got)
		}
	}
}

func TestRedactJSON(t *testing.T) {
	r := NewRedactor(RedactorOptions{ExtraKeys: []string{"ssn"}})
	in := `{"city":"Paris","auth":{"token":12345,"Password":["a","b"]},"ssn":"123-45-6789","note":"key sk-live0123456789abcdefXYZ"}`
	out := r.JSON(in)
	for _, s := range []string{"12345", `"a"`, "123-45-6789", "sk-live0123456789abcdef"} {
		if strings.Contains(out, s) {
			t.Errorf("JSON redaction left %q in %s", s, out)
		}
	}
	if !strings.Contains(out, `"city":"Paris"`) {
		t.Errorf("ordinary values must survive: %s", out)
	}
	if got := r.JSON("not json password=x1"); got != "not json password="+Redacted {
		t.Errorf("non-JSON falls back to text: %q", got)
	}
	deep := strings.Repeat(`{"a":`, 200) + `"sk-abcdefghijklmnopqrstuvwxyz"` + strings.Repeat("}", 200)
	if strings.Contains(r.JSON(deep), "sk-abcdefghijklmnop") {
		t.Error("deep JSON leaked a secret")
	}
}

func TestTruncate(t *testing.T) {
	r := NewRedactor(RedactorOptions{MaxLen: 10})
	got := r.Truncate("héllo wörld, this is long")
	if !utf8.ValidString(got) || !strings.HasPrefix(got, "héllo wö") || !strings.Contains(got, "truncated") {
		t.Errorf("got %q", got)
	}
	if got := r.Truncate("short"); got != "short" {
		t.Errorf("got %q", got)
	}
	if got := r.Text("bad \xff utf8"); !utf8.ValidString(got) {
		t.Errorf("invalid UTF-8 must be repaired: %q", got)
	}
	if _, err := NewRedactorChecked(RedactorOptions{ExtraPatterns: []string{"("}}); err == nil {
		t.Error("an invalid extra pattern must be reported")
	}
	if got := NewRedactor(RedactorOptions{ExtraPatterns: []string{`INTERNAL-\d+`}}).Redact("ref INTERNAL-42"); got != "ref "+Redacted {
		t.Errorf("extra pattern: %q", got)
	}
}

// TestASCIIOnly holds Truncate's word-at-a-time ASCII test to the bytes:
// strings of every length to 24 with a byte past ASCII at each position,
// and none; Truncate leaves ASCII as it is and repairs the others as
// ToValidUTF8 does.
func TestASCIIOnly(t *testing.T) {
	r := NewRedactor(RedactorOptions{})
	for n := 0; n <= 24; n++ {
		base := []byte(strings.Repeat("aZ0~ \x7f\x01.", 3)[:n])
		if !asciiOnly(string(base)) || r.Truncate(string(base)) != string(base) {
			t.Fatalf("%q: not taken as ASCII", base)
		}
		for p := 0; p < n; p++ {
			for _, c := range []byte{0x80, 0xc3, 0xff} {
				b := append([]byte(nil), base...)
				b[p] = c
				if asciiOnly(string(b)) {
					t.Fatalf("%q: taken as ASCII", b)
				}
				if got, want := r.Truncate(string(b)), strings.ToValidUTF8(string(b), "\uFFFD"); got != want {
					t.Fatalf("Truncate(%q) = %q, want %q", b, got, want)
				}
			}
		}
	}
}

func TestTextOnHugeInput(t *testing.T) {
	r := NewRedactor(RedactorOptions{MaxLen: 100})
	key := "sk-" + strings.Repeat("A", 40)
	// The key straddles the cut: it must not survive even partly.
	s := strings.Repeat("x", 90) + " " + key + strings.Repeat("y", 1<<20)
	got := r.Text(s)
	if strings.Contains(got, "AAAA") || !strings.Contains(got, "truncated") || len(got) > 200 {
		t.Fatalf("got %q", got)
	}
	if !utf8.ValidString(r.Text(strings.Repeat("é", 1<<16))) {
		t.Fatal("cut inside a rune")
	}
}
