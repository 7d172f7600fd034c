package trajectory

import (
	"encoding/json"
	"reflect"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// toolMessageFull is toolMessage as a full decode of the message gives
// it, without a memo: what the textless, memoized decode must equal.
func toolMessageFull(out string) (ToolResult, bool) {
	text, ok := toolMessageText(out)
	if !ok {
		return ToolResult{}, false
	}
	if m, ok := decodeValidMessage(json.RawMessage(text), false); ok && m.Role == "tool" && len(m.Results) > 0 {
		return m.Results[0], true
	}
	return ToolResult{}, false
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
	if found < 3 {
		t.Fatalf("only %d ToolMessages among %d outputs: the test reads none of the captures'", found, len(outs))
	}
}

// A pooled message scratch decodes each message as into a new one, also
// after a message whose repeated key decoded a shorter list over a longer
// one, and keeps the room past each list's length zero (what lets it clear
// a list up to its length only).
func TestMessageScratchReuseAfterRepeatedKey(t *testing.T) {
	texts := []string{
		`{"parts":[{"text":"a","name":"n"},{"text":"b","name":"m"},{"text":"c"}],"parts":[{"type":"t"}],` +
			`"tool_calls":[{"id":"1","name":"f"},{"id":"2","name":"g"}],"tool_calls":[]}`,
		`{"parts":[{"type":"x"},{"type":"y"},{"type":"z"}],"tool_calls":[{"id":"3"},{"id":"4"}]}`,
		`{"parts":[{"text":"only"}]}`,
		`{"parts":null,"tool_calls":[{"id":"5"}]}`,
		`{"role":"user","parts":[{"type":"text","text":"p"},{"type":"text"}]}`,
	}
	var ms messageScratch
	for round := 0; round < 2; round++ {
		for i, v := range texts {
			got := ms.decode(v)
			var want jsonMessage
			decodeMessageJSON(v, &want)
			if !reflect.DeepEqual(normalized(got.Parts), normalized(want.Parts)) || !reflect.DeepEqual(normalized(got.ToolCalls), normalized(want.ToolCalls)) {
				t.Fatalf("round %d, text %d: scratch decode\n%+v\nwant\n%+v", round, i, *got, want)
			}
			for k, p := range got.Parts[len(got.Parts):cap(got.Parts)] {
				if !reflect.ValueOf(p).IsZero() {
					t.Fatalf("round %d, text %d: part room %d past the list is %+v", round, i, len(got.Parts)+k, p)
				}
			}
			for k, c := range got.ToolCalls[len(got.ToolCalls):cap(got.ToolCalls)] {
				if !reflect.ValueOf(c).IsZero() {
					t.Fatalf("round %d, text %d: call room %d past the list is %+v", round, i, len(got.ToolCalls)+k, c)
				}
			}
		}
	}
	ms.release()
}

// normalized treats a nil list as an empty one (a scratch keeps its room
// where a fresh decode has none).
func normalized[T any](p []T) []T {
	if len(p) == 0 {
		return nil
	}
	return p[:len(p):len(p)]
}
