package trajectory

import (
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// isContentKeyRef is isContentKey as it was: the map, then every prefix.
func isContentKeyRef(k string, attrs attrMap) bool {
	if contentKeys[k] {
		return true
	}
	for _, p := range contentPrefixes {
		if strings.HasPrefix(k, p) {
			return strings.HasSuffix(k, ".content") || strings.HasSuffix(k, ".arguments") ||
				strings.Contains(k, ".contents.") || strings.HasSuffix(k, ".text")
		}
	}
	if k == "input" || k == "output" {
		_, mastra := attrs.Get("mastra.span.type")
		return mastra
	}
	return false
}

// fuzzAttrs is a map of the keys in spec (split at ';', each "key=value";
// a key written #N is the Nth of pool), in order, repeats kept.
func fuzzAttrs(spec string, pool []string) pcommon.Map {
	m := pcommon.NewMap()
	for _, kv := range strings.Split(spec, ";") {
		k, v, _ := strings.Cut(kv, "=")
		if len(k) > 1 && k[0] == '#' && len(pool) > 0 {
			k = pool[int(k[1])%len(pool)]
		}
		switch {
		case v == "int":
			m.PutEmpty(k).SetInt(7) // PutEmpty appends: keys may repeat
		default:
			m.PutEmpty(k).SetStr(v)
		}
	}
	return m
}

// FuzzSignatureGates holds the signature gates to the code they skip:
// readSpanNames (nameSig) to firstStr key by key, isContentKey
// (contentSig, contentPrefixGroups) to isContentKeyRef.
func FuzzSignatureGates(f *testing.F) {
	f.Add("#\x00=a;#\x05=b;x=c", "llm.input_messages.0.message.content")
	f.Add("#\x01=;#\x01=second;#\x10=int", "input")
	f.Add("session.id=s;gen_ai.agent.name=", "gen_ai.prompt.0.text")
	f.Add("mastra.span.type=x", "output")
	f.Add("", "gen_ai.input.messages")
	var pool []string
	pool = append(pool, agentKeys...)
	pool = append(pool, weakAgentKeys...)
	pool = append(pool, sessionKeys...)
	for k := range contentKeys {
		pool = append(pool, k)
	}
	pool = append(pool, "mastra.span.type", "input", "output", "llm.output_messages.1.message.tool_calls.0.tool_call.function.arguments")
	f.Fuzz(func(t *testing.T, spec, key string) {
		m := fuzzAttrs(spec, pool)
		for _, a := range []attrMap{spanAttrs(m), anyAttrs(m)} {
			want := spanNames{agent: firstStr(a, agentKeys...), weakAgent: firstStr(a, weakAgentKeys...), session: firstStr(a, sessionKeys...)}
			if got := readSpanNames(a); got != want {
				t.Fatalf("readSpanNames(%q) = %+v, want %+v", spec, got, want)
			}
			for _, k := range append([]string{key}, pool...) {
				if got, want := isContentKey(k, a), isContentKeyRef(k, a); got != want {
					t.Fatalf("isContentKey(%q) = %v, want %v", k, got, want)
				}
			}
		}
	})
}

// FuzzErrorTextPrefilters: a text the literal prefilters of mcpErrorCode
// and httpStatusFromText pass over is one their expressions do not match.
func FuzzErrorTextPrefilters(f *testing.F) {
	for _, s := range []string{"MCP error -32602: x", "Error code: 429 - {}", "503 The server", "429 Rate", "APIError: 503 Service",
		"RateLimitError: 429 {", "Error: 500 x", "error: 500 x", "TypeError: 4xx", "XError:  503 a", "4", "", "5005 a", "Err: 503 a",
		"ÉError: 503 a", "_Error: 503 a", "Error code: 9", "MCP error"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !strings.Contains(s, mcpErrorLiteral) && mcpErrorRe.MatchString(s) {
			t.Fatalf("mcpErrorRe matches %q without %q", s, mcpErrorLiteral)
		}
		if !strings.Contains(s, pyStatusLiteral) && pyStatusRe.MatchString(s) {
			t.Fatalf("pyStatusRe matches %q without %q", s, pyStatusLiteral)
		}
		if !mayStartWithStatus(s) && jsStatusRe.MatchString(s) {
			t.Fatalf("jsStatusRe matches %q, mayStartWithStatus says it cannot", s)
		}
	})
}
