package trajectory

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// stdLenient is lenientUnmarshal as it was, with encoding/json only.
func stdLenient(data []byte, v any) bool {
	err := json.Unmarshal(data, v)
	var te *json.UnmarshalTypeError
	return err == nil || errors.As(err, &te)
}

// checkMessageDecode decodes s with encoding/json (leniently, as Build
// did) and with the scanner's decoders, and compares.
func checkMessageDecode(t *testing.T, s string) {
	t.Helper()
	if !json.Valid([]byte(s)) {
		return
	}
	v := strings.TrimSpace(s)
	var a, b jsonMessage
	if !stdLenient([]byte(s), &a) {
		t.Fatalf("%q: valid JSON but encoding/json failed", s)
	}
	decodeMessageJSON(v, &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%q:\nencoding/json %#v\nscanner       %#v", s, a, b)
	}
	var la, lb []jsonMessage
	if stdLenient([]byte(s), &la) {
		setSlice(&lb, v, decodeMessageJSON)
		if !reflect.DeepEqual(la, lb) {
			t.Fatalf("list %q:\nencoding/json %#v\nscanner       %#v", s, la, lb)
		}
	}
	// And through lenientUnmarshal, which dispatches to them.
	var pa, pb []jsonPart
	if stdLenient([]byte(s), &pa) {
		if !lenientUnmarshal([]byte(s), &pb) || !reflect.DeepEqual(pa, pb) {
			t.Fatalf("parts %q:\nencoding/json %#v\nscanner       %#v", s, pa, pb)
		}
	}
}

var messageDecodeCases = []string{
	`{"role":"assistant","parts":[{"type":"tool_call","id":"x","name":"n","arguments":{"a":1}}],"finish_reason":"tool_calls"}`,
	`{"ROLE":"user","Content":"hi","role":"tool"}`, `{"role":7,"content":null,"parts":null}`, `{"parts":[{"type":"text"},3,null,{"isError":true,"is_error":null}]}`,
	`{"parts":[{"text":"a","name":"n"},{"text":"b"}],"parts":[{"type":"t"}]}`, `{"parts":[],"tool_calls":[]}`, `{"parts":{"type":"x"}}`,
	`{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"},"args":null}]}`, `{"additional_kwargs":{"tool_calls":[{"id":"a"}]},"response_metadata":{"finish_reason":"stop"}}`,
	`{"additional_kwargs":[],"response_metadata":"x"}`, `{"lc":1,"id":["a","ToolMessage"],"kwargs":{"content":"r"}}`, `{"name":"a\u00e9\n\"b","status":"\ud800"}`,
	"{\"role\":\"\xff\"}", `{"rolE":"x","toolcallid":"y","tool_call_ID":"z"}`, `[{"role":"a"},{"role":"b","parts":[{"toolCallId":"t","toolcallid":"u"}]}]`,
	`{"\u0072ole":"escaped key"}`, `{"role":"K","kind":"Kelvin K"}`, `[1,"x",null,{}]`, `"string"`, `null`, `{"parts":[{"output":{"type":"error-text","value":"boom"}}]}`,
}

func TestMessageDecodeMatchesEncodingJSON(t *testing.T) {
	for _, s := range messageDecodeCases {
		checkMessageDecode(t, s)
	}
}

func FuzzMessageDecode(f *testing.F) {
	for _, s := range messageDecodeCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkMessageDecode(t, s) })
}
