package classifier

import (
	"strings"
	"testing"
)

// canonicalSeeds are arguments of the shapes tools get, and the cases
// canonicalFast must leave to the decoding path.
var canonicalSeeds = []string{
	`{"b":1,"a":"x"}`, `{ "a" : "x", "b" : 1 }`, "{\n\"a\": {\"d\":1, \"c\":2}\n}",
	`{"q":"Zürich weather","limit":10,"tags":["a","b"],"deep":{"z":[{"y":null,"x":true}],"w":false}}`,
	`{"n":-0.5e+10,"m":0,"k":1E3,"j":-12.0}`, `[]`, `{}`, `[1, 2 ,3]`, `null`, `true`, `12`,
	`{"a":1,"a":2}`, `{"a":"x\"y"}`, `{"a":"tab\there"}`, `"{\"a\":1}"`, `{"a":1} }`, `{"a":1}x`,
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":tru}`, `{"s":"line\u2028sep"}`, "{\"s\":\"a\u2028b\"}",
	"{\"s\":\"bad \xff\"}", `{"<html>":"&amp;"}`, `{"a":[}`, `{"a" 1}`, `{,}`, `[1,]`, `{"a":1,}`,
	"{\"a\":\"\x7f\"}", `{"B":1,"a":2,"_":3,"1":4}`, strings.Repeat("[", 70) + strings.Repeat("]", 70),
}

// FuzzCanonicalArgs: whatever canonicalFast writes is what decoding and
// encoding again writes.
func FuzzCanonicalArgs(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			return
		}
		if got, ok := canonicalFast(raw); ok {
			if want := canonicalDecoded(raw); got != want {
				t.Fatalf("canonicalFast(%q) = %q, decoding gives %q", raw, got, want)
			}
		}
	})
}

// The fast path takes the arguments tools usually get and leaves the
// others; the tool-call arguments of the shared captures come out of it as
// they come out of the decoding path.
func TestCanonicalFastCoversArguments(t *testing.T) {
	for _, raw := range []string{
		`{"b":1,"a":"x"}`, `{"q":"Zürich","limit":10,"tags":["a","b"],"deep":{"z":[{"y":null}]}}`, `[1,2]`, `{}`,
	} {
		if _, ok := canonicalFast(raw); !ok {
			t.Errorf("canonicalFast(%q) left it to decoding", raw)
		}
	}
	for _, raw := range []string{`{"a":1,"a":2}`, `{"a":"x\"y"}`, `"{\"a\":1}"`, `{"a":1} }`, "{\"s\":\"bad \xff\"}"} {
		if _, ok := canonicalFast(raw); ok {
			t.Errorf("canonicalFast(%q) took what only decoding gets right", raw)
		}
	}
	n, fast := 0, 0
	for _, runs := range captureRuns(t) {
		for _, run := range runs {
			for _, st := range run.Steps {
				for _, tc := range st.Requested {
					raw := strings.TrimSpace(tc.Arguments)
					if raw == "" {
						continue
					}
					n++
					if got, ok := canonicalFast(raw); ok {
						fast++
						if want := canonicalDecoded(raw); got != want {
							t.Errorf("canonicalFast(%q) = %q, decoding gives %q", raw, got, want)
						}
					}
				}
			}
		}
	}
	t.Logf("%d of %d requested tool-call arguments canonicalised without decoding", fast, n)
	if n == 0 || fast*10 < n*8 {
		t.Errorf("only %d of %d capture arguments took the fast path", fast, n)
	}
}

// BenchmarkCanonicalArgs: the loop rule's canonical form of typical tool
// arguments, by canonicalArgs and by the decoding path alone.
func BenchmarkCanonicalArgs(b *testing.B) {
	args := `{"query":"orders shipped to Zürich last week","limit":25,"filters":{"status":["shipped","delivered"],"warehouse":"ZRH-2"},"include_returns":false}`
	for _, bc := range []struct {
		name string
		fn   func(string) string
	}{{"path=canonicalArgs", canonicalArgs}, {"path=decoded", canonicalDecoded}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = bc.fn(args)
			}
		})
	}
}
