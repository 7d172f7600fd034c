package recovery

import (
	"strings"
	"testing"
)

// Secrets after "_" (a \b boundary does not exist there), glued into other
// text, and the personal data decisions must not carry.
func TestRedactAfterUnderscoreGluedAndPersonalData(t *testing.T) {
	r := NewRedactor(RedactorOptions{MaxLen: -1})
	cases := map[string]struct{ in, secret string }{
		"aws after _":            {"agent key_AKIA2E0A8F3B244C9986 failed", "AKIA2E0A8F3B244C9986"},
		"aws glued both sides":   {"idAKIA2E0A8F3B244C9986x", "AKIA2E0A8F3B244C9986"},
		"openai project after _": {"tool id_sk-proj-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk", "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk"},
		"openai project glued":   {"toolsk-proj-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk", "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk"},
		"legacy sk after _":      {"key_sk-0123456789abcdefABCDEF", "0123456789abcdefABCDEF"},
		"anthropic glued":        {"xsk-ant-api03-AbCdEfGhIjKlMnOpQrSt", "AbCdEfGhIjKlMnOpQrSt"},
		"github glued":           {"repoghp_1234567890abcdefghijABCDEFGHIJ123456", "1234567890abcdefghijABCDEFGHIJ"},
		"google after _":         {"k_AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA1234567890"},
		"jwt glued":              {"tokeneyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r", "eyJzdWIiOiIxMjM0NTY3ODkwIn0"},
		"bearer after _":         {"auth_Bearer abcdefghij0123456789", "abcdefghij0123456789"},
		"password after _":       {"db_password=hunter2hunter2", "hunter2hunter2"},
		"url token user":         {"git clone https://x0123456789abcdefghij@github.com/o/r", "x0123456789abcdefghij"},
		"email":                  {"ask jane.doe+agents@example.co.uk now", "jane.doe+agents@example.co.uk"},
		"email after _":          {"user_jane.doe@example.com", "jane.doe@example.com"},
		"visa":                   {"card 4111111111111111 declined", "4111111111111111"},
		"visa spaced":            {"card 4111 1111 1111 1111 declined", "4111 1111 1111 1111"},
		"mastercard dashed":      {"5500-0000-0000-0004", "5500-0000-0000-0004"},
		"amex glued":             {"card378282246310005exp", "378282246310005"},
		"card after _":           {"pan_4012888888881881", "4012888888881881"},
		"mastercard 2-series":    {"2223003122003222", "2223003122003222"},
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
	// What surrounds a glued secret stays.
	if got := r.Redact("idAKIA2E0A8F3B244C9986x"); got != "id"+Redacted+"x" {
		t.Errorf("glued: %q", got)
	}
	if got := r.Redact("key_sk-0123456789abcdefABCDEF"); got != "key_"+Redacted {
		t.Errorf("after _: %q", got)
	}
}

// Numbers, words and package names that look a little like secrets stay.
func TestRedactLeavesLookalikesAlone(t *testing.T) {
	r := NewRedactor(RedactorOptions{MaxLen: -1})
	for _, s := range []string{
		"timestamp 1795990865123 order 12345678901234",   // no card prefix
		"card 4111111111111112 declined",                 // fails Luhn
		"account 41111111111111111111111111 closed",      // too long a number
		"trace 4bf92f3577b34da6a3ce929d0e0e4736",         // hex id
		"id 01a22965-c5e6-7814-8155-eaeed9129064",        // UUID
		"task-management-service-queue-worker restarted", // "sk-" inside a word
		"disk-usage-threshold-exceeded-on-node",
		"@opentelemetry/instrumentation-openai@0.48.0",
		"react@18.2.0 failed to render",
		"phone +1 415 555 2671",
		"TAKIA", // too short
	} {
		if got := r.Redact(s); got != s {
			t.Errorf("%q changed to %q", s, got)
		}
	}
}

func TestCardNumberLuhnAndIssuer(t *testing.T) {
	for run, want := range map[string]bool{
		"4111111111111111":    true,
		"4111-1111-1111-1111": true,
		"378282246310005":     true,
		"6011111111111117":    true,
		"3530111333300000":    true,
		"30569309025904":      true,
		"4111111111111112":    false, // Luhn
		"1111111111111117":    false, // no issuer starts with 1
		"9111111111111111":    false,
		"411111111111":        false, // 12 digits
	} {
		if got := cardNumber(run); got != want {
			t.Errorf("cardNumber(%q) = %v, want %v", run, got, want)
		}
	}
}

// Redaction shrinks text: a secret cut by Text's window must not be pulled
// back into the part it keeps.
func TestTextNeverKeepsASecretCutByItsWindow(t *testing.T) {
	r := NewRedactor(RedactorOptions{MaxLen: 512})
	const key = "AIzaSyPl4nt3dG00gl3K3y0123456789abcdefg"
	long := " sk-proj-" + strings.Repeat("Q", 60) // 69 bytes, redacted to 11
	for start := 1024 - len(key); start < 1024; start++ {
		// Dense long secrets before the key shrink to a sixth when
		// redacted; the key starts at start and is cut by the window.
		var b strings.Builder
		for b.Len()+len(long) < start-2 {
			b.WriteString(long)
		}
		b.WriteString(strings.Repeat(" ", start-2-b.Len()))
		b.WriteString(" x" + key + " tail")
		b.WriteString(strings.Repeat(" more text", 10))
		out := r.Text(b.String())
		if strings.Contains(out, "Pl4nt3dG00g") {
			t.Fatalf("key at %d: a cut key survived: %q", start, out)
		}
		if len(out) > 512+64 {
			t.Fatalf("key at %d: not bounded: %d bytes", start, len(out))
		}
	}
}
