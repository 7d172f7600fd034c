package trajectory

import (
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// checkAttrSig holds attrMap.Get (through the key signature) to
// pcommon.Map.Get: for every key of the map, every key a reader asks for
// and variants of them, the same presence and the same value.
func checkAttrSig(t *testing.T, keys, queries []string) {
	t.Helper()
	m := pcommon.NewMap()
	for i, k := range keys {
		m.PutInt(k, int64(i))
	}
	a := spanAttrs(m)
	check := func(q string) {
		want, wok := m.Get(q)
		got, gok := a.Get(q)
		if gok != wok || wok && got.Int() != want.Int() {
			t.Fatalf("keys %q: Get(%q) = %v %v, want %v %v", keys, q, got.AsString(), gok, want.AsString(), wok)
		}
		if g, w := anyAttrs(m).Get(q); w != wok || wok && g.Int() != want.Int() {
			t.Fatalf("anyAttrs: Get(%q) = %v", q, w)
		}
	}
	for _, q := range append(append([]string{""}, keys...), queries...) {
		check(q)
		check(q + "x")
		if len(q) > 0 {
			check(q[:len(q)-1])
			check(strings.ToUpper(q))
		}
	}
}

var attrSigKeys = []string{
	"gen_ai.operation.name", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.input.messages",
	"gen_ai.output.messages", "gen_ai.tool.call.id", "llm.request.type", "traceloop.span.kind",
	"openinference.span.kind", "mastra.span.type", "http.response.status_code", "error.type", "a", "",
}

func TestAttrSigMatchesMapGet(t *testing.T) {
	checkAttrSig(t, attrSigKeys, nil)
	checkAttrSig(t, attrSigKeys[:3], attrSigKeys)
	checkAttrSig(t, nil, attrSigKeys)
}

// FuzzAttrSig: keys and queries are NUL-separated lists.
func FuzzAttrSig(f *testing.F) {
	f.Add(strings.Join(attrSigKeys[:5], "\x00"), strings.Join(attrSigKeys, "\x00"))
	f.Add("", "a\x00b")
	f.Fuzz(func(t *testing.T, keys, queries string) {
		checkAttrSig(t, strings.Split(keys, "\x00"), strings.Split(queries, "\x00"))
	})
}
