package trajectory

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// toolMessageFull is toolMessage as a full decode of the message gives
// it, without a memo: what the textless, memoized decode must equal.
func toolMessageFull(out string) (ToolResult, bool) {
	if !looksJSON(out) || !strings.Contains(out, "ToolMessage") {
		return ToolResult{}, false
	}
	raw := json.RawMessage(bytesOf(out))
	o, ok := rawMemberJSON(raw, "output")
	if !ok {
		return ToolResult{}, false
	}
	if len(o) > 0 {
		raw = o
	}
	m, ok := decodeValidMessage(raw, false)
	if !ok || m.Role != "tool" || len(m.Results) == 0 {
		return ToolResult{}, false
	}
	return m.Results[0], true
}

// A ToolMessage's result read textless through a Build's memo (first
// seen, then seen again, and after the chain's textless decode of the
// same text) is the full decode's, on every span output of the captures
// and on hand-made ones (wrapped in {"output": ...}, string-encoded,
// error status, not a ToolMessage).
func TestToolMessageTextlessMatchesFull(t *testing.T) {
	outs := []string{
		`{"lc":1,"type":"constructor","id":["langchain","schema","messages","ToolMessage"],"kwargs":{"content":"42","tool_call_id":"c1","name":"calc","status":"success"}}`,
		`{"output":{"lc":1,"type":"constructor","id":["langchain","schema","messages","ToolMessage"],"kwargs":{"content":"boom","tool_call_id":"c2","name":"fetch","status":"error"}}}`,
		`"{\"lc\":1,\"type\":\"constructor\",\"id\":[\"langchain\",\"schema\",\"messages\",\"ToolMessage\"],\"kwargs\":{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"tool_call_id\":\"c3\"}}"`,
		`{"lc":1,"type":"constructor","id":["langchain","schema","messages","AIMessage"],"kwargs":{"content":"ToolMessage"}}`,
		`{"output":"ToolMessage"}`,
	}
	for _, f := range traceCaptures(t) {
		ForEachSpan(loadFixture(t, f), func(sp ptrace.Span) {
			for _, k := range []string{"output.value", "traceloop.entity.output"} {
				if v, ok := sp.Attributes().Get(k); ok {
					outs = append(outs, v.AsString())
				}
			}
		})
	}
	found := 0
	for _, out := range outs {
		want, wantOK := toolMessageFull(out)
		if wantOK {
			found++
		}
		var mm messageMemo
		for pass := 0; pass < 2; pass++ {
			got, ok := toolMessage(&mm, out)
			if ok != wantOK || !reflect.DeepEqual(got, want) {
				t.Fatalf("pass %d on %.120q:\ngot  %+v %v\nwant %+v %v", pass, out, got, ok, want, wantOK)
			}
		}
		if got, ok := toolMessage(nil, out); ok != wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("without a memo on %.120q: got %+v %v, want %+v %v", out, got, ok, want, wantOK)
		}
	}
	t.Logf("%d ToolMessages among %d outputs", found, len(outs))
	if found < 3 {
		t.Fatalf("only %d ToolMessages among %d outputs: the test reads none of the captures'", found, len(outs))
	}
}
