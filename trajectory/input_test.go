package trajectory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// applyInputJSON must give exactly what decoding the whole list gives.
func checkInputJSON(t *testing.T, s string) {
	t.Helper()
	var lazy, whole Step
	applyInputJSON(&lazy, s, nil, nil)
	applyInput(&whole, decodeMessages(s))
	assert.Equal(t, whole.InputResults, lazy.InputResults, "%.300s", s)
	// With a memo, twice (the second reading takes the texts the first
	// decoded), and the list wrapped (other list texts, the same values).
	var memo messageMemo
	for _, w := range []string{s, s, `{"messages":` + s + `}`} {
		var memoed, ref Step
		applyInputJSON(&memoed, w, nil, &memo)
		applyInputJSON(&ref, w, nil, nil)
		assert.Equal(t, ref.InputResults, memoed.InputResults, "memo: %.300s", w)
	}
	memo.reset()
}

var inputCases = []string{
	`[]`, `[{}]`, `["x", null, 1]`, `[{"role":"tool"}]`, `{"messages":[{"role":"tool","content":"r","tool_call_id":"c"}]}`,
	`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]`,
	`[{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"c1","content":"a"},{"role":"assistant","content":"","tool_calls":[{"id":"c2","function":{"name":"g"}}]},{"role":"tool","tool_call_id":"c1","content":"late"},{"role":"tool","tool_call_id":"c2","content":"b"}]`,
	`[{"role":"assistant","parts":[{"type":"tool_call","id":"x","name":"n"}]},{"role":"tool","parts":[{"type":"tool_call_response","id":"x","response":"r"}]},{"role":"assistant","parts":[{"type":"text","content":"t"}]},{"role":"tool","parts":[{"type":"tool_call_response","id":"x","response":"again"}]}]`,
	`[{"role":"assistant"},{"role":"user","content":"result as user text"},{"role":"system","content":"s"}]`,
	`[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f"}},{"id":"b","function":{"name":"g"}}]},{"role":"tool","content":"r1"},{"role":"tool","content":"r2"}]`,
	`[{"role":"tool","tool_call_id":"c9","content":"no call anywhere"}]`,
	`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}`,
	`[{"role":"assistant","tool_calls":"not a list"},{"role":"tool","tool_call_id":5,"content":"x"}]`,
	`[{"lc":1,"type":"constructor","id":["langchain","schema","messages","ToolMessage"],"kwargs":{"content":"r","tool_call_id":"c"}}]`,
	`[[{"role":"tool","content":"batch"}]]`,
}

func TestApplyInputJSONMatchesWholeDecode(t *testing.T) {
	for _, s := range inputCases {
		checkInputJSON(t, s)
	}
	// Every message list of the shared captures.
	files, _ := filepath.Glob(filepath.Join(fixturesDir, "*", "*.json"))
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "labels.json") || strings.HasSuffix(f, ".logs.json") {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			continue
		}
		td := loadFixture(t, f)
		ForEachSpan(td, func(sp ptrace.Span) {
			sp.Attributes().Range(func(k string, v pcommon.Value) bool {
				if v.Type() == pcommon.ValueTypeStr && strings.Contains(k, "messages") {
					checkInputJSON(t, v.Str())
					n++
				}
				return true
			})
		})
	}
	t.Logf("%d message attributes of the captures compared", n)
}

func FuzzApplyInputJSON(f *testing.F) {
	fuzzStrings(f, inputCases, checkInputJSON)
}
