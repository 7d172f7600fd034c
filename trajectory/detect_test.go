package trajectory

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// checkRolePicks holds spanAttrsRoles's picks to pcommon.Map.Get for every
// role key (the same presence and value; the first of duplicate keys, as
// a map decoded from the wire may hold) and its signature to spanAttrs's.
func checkRolePicks(t *testing.T, keys []string) {
	t.Helper()
	var kvs []string
	for i, k := range keys {
		name, _ := json.Marshal(k)
		kvs = append(kvs, fmt.Sprintf(`{"key":%s,"value":{"intValue":"%d"}}`, name, i))
	}
	doc := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"s","attributes":[` + strings.Join(kvs, ",") + `]}]}]}]}`
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	m := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
	if m.Len() != len(keys) {
		t.Fatalf("keys %q: map holds %d", keys, m.Len())
	}
	var p roleAttrs
	a := spanAttrsRoles(m, &p)
	if s := spanAttrs(m); s.k0 != a.k0 || s.k1 != a.k1 || s.k2 != a.k2 || s.k3 != a.k3 {
		t.Fatalf("keys %q: signature differs from spanAttrs's", keys)
	}
	for k, name := range roleKeys {
		want, wok := m.Get(name)
		got, gok := p.get(k)
		if gok != wok || wok && got.Int() != want.Int() {
			t.Fatalf("keys %q: role key %q = %v %v, want %v %v", keys, name, got.AsString(), gok, want.AsString(), wok)
		}
		if w := attrStr(anyAttrs(m), name); p.str(k) != w {
			t.Fatalf("keys %q: str(%q) = %q, want %q", keys, name, p.str(k), w)
		}
	}
}

func TestRolePicksMatchMapGet(t *testing.T) {
	all := roleKeys[:]
	checkRolePicks(t, nil)
	checkRolePicks(t, all)
	checkRolePicks(t, append(append([]string{}, all...), all...)) // every key twice: the first counts
	// Keys of the same signature bit as a role key, and near misses.
	var near []string
	for _, k := range all {
		near = append(near, k+"x", strings.ToUpper(k), k[:len(k)-1])
	}
	checkRolePicks(t, near)
	checkRolePicks(t, append(near, all[3:7]...))
	checkRolePicks(t, append(attrSigKeys, all[:2]...))
}
