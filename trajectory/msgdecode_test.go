package trajectory

import (
	"encoding/json"
	"errors"
	"fmt"
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
	checkUnwrap(t, s)
	// The decoders' skipping of validated text stays within any text.
	eachMember(s, func(string, string) {})
	eachElement(s, func(int, string) {})
	if !json.Valid([]byte(s)) {
		return
	}
	v := strings.TrimSpace(s)
	// On valid text it ends each value where the validating scan does.
	checkSkipValid(t, v)
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
	// A LangChain id list's last element, read without the list.
	var ids []string
	wantLast, wantOK := "", false
	if stdLenient([]byte(s), &ids) && len(ids) > 0 {
		wantLast, wantOK = ids[len(ids)-1], true
	}
	if last, ok := lastIDElement([]byte(s)); last != wantLast || ok != wantOK {
		t.Fatalf("%q: last id element %q %v, of the list %q %v", s, last, ok, wantLast, wantOK)
	}
	// And through lenientUnmarshal, which dispatches to them.
	checkLenient[[]jsonPart](t, s)
	checkLenient[[]json.RawMessage](t, s)
	checkLenient[[]string](t, s)
	checkLenient[metadataIDs](t, s)
	checkLenient[jsonGenerations](t, s)
	checkScanned[mastraModelMetadata](t, s)
	checkScanned[mastraOutput](t, s)
	checkScanned[mastraInput](t, s)
	checkScanned[mastraRequest](t, s)
	checkScanned[mastraChunk](t, s)
	checkScanned[jsonErrorObject](t, s)
	checkScanned[mcpEntityInput](t, s)
	checkScanned[mcpEntityOutput](t, s)
	checkScanned[tlEntityInput](t, s)
	checkScanned[vercelToolOutput](t, s)
	checkScanned[resultErrorFlags](t, s)
	checkScanned[toolCallList](t, s)
	checkRawMember(t, s)
	checkToolMessageFilter(t, s)
	checkMessageCalls(t, s)
}

// checkMessageCalls: decoding only the calls and results (oiFill's
// completion of flattened messages) gives what the whole decoding gives,
// less the messages' text and the results' content (decodeGenerations
// reads a message list as decodeMessages or decodeMessageCalls do).
func checkMessageCalls(t *testing.T, s string) {
	t.Helper()
	for _, v := range []string{s, "[" + s + "]", `{"messages":[` + s + `]}`, "[[" + s + "]]",
		`{"generations":[[{"text":"t","message":` + s + `}]]}`} {
		want, got := decodeGenerations(v, false), decodeGenerations(v, true)
		for i := range want {
			want[i].Text = ""
			for k := range want[i].Results {
				want[i].Results[k].Content = ""
			}
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%q: decoded %#v, calls only %#v", v, want, got)
		}
	}
}

// checkToolMessageFilter: the messages mayBeToolMessage skips are never
// tool messages (chainMessages reads only those).
func checkToolMessageFilter(t *testing.T, s string) {
	t.Helper()
	tools := func(ms []message) []message {
		var out []message
		for _, m := range ms {
			if m.Role == "tool" {
				out = append(out, m)
			}
		}
		return out
	}
	for _, v := range []string{s, "[" + s + "]", `{"messages":[` + s + `]}`} {
		all, filtered := tools(decodeMessages(v)), tools(decodeMessagesWhere(v, mayBeToolMessage))
		if !reflect.DeepEqual(all, filtered) {
			t.Fatalf("%q: tool messages %#v, filtered %#v", v, all, filtered)
		}
	}
}

// checkRawMember compares rawMemberJSON with encoding/json decoding into a
// one-field struct.
func checkRawMember(t *testing.T, s string) {
	t.Helper()
	var m struct {
		Messages json.RawMessage `json:"messages"`
	}
	var o struct {
		Output json.RawMessage `json:"output"`
	}
	okM, okO := stdLenient([]byte(s), &m), stdLenient([]byte(s), &o)
	gotM, gM := rawMemberJSON([]byte(s), "messages")
	gotO, gO := rawMemberJSON([]byte(s), "output")
	if okM != gM || okO != gO || !reflect.DeepEqual(m.Messages, gotM) || !reflect.DeepEqual(o.Output, gotO) {
		t.Fatalf("%q: encoding/json %q/%v %q/%v, scanner %q/%v %q/%v", s, m.Messages, okM, o.Output, okO, gotM, gM, gotO, gO)
	}
}

// checkLenient decodes the valid JSON s into a T with encoding/json
// (leniently) and with lenientUnmarshal, and compares.
func checkLenient[T any](t *testing.T, s string) {
	t.Helper()
	var a, b T
	if stdLenient([]byte(s), &a) != lenientUnmarshal([]byte(s), &b) || !reflect.DeepEqual(a, b) {
		t.Fatalf("%T %q:\nencoding/json %#v\nscanner       %#v", a, s, a, b)
	}
}

// checkScanned decodes s into a T with encoding/json (leniently, as these
// shapes were decoded before) and with T's decodeValid on validText's
// text, and compares: on any text, so invalid JSON too.
func checkScanned[T any, P interface {
	*T
	decodeValid(string)
}](t *testing.T, s string) {
	t.Helper()
	var a, b T
	okA := stdLenient([]byte(s), &a)
	text, okB := validText(s)
	if okB {
		P(&b).decodeValid(text)
	}
	if okA != okB || !reflect.DeepEqual(a, b) {
		t.Fatalf("%T %q:\nencoding/json %v %#v\nscanner       %v %#v", a, s, okA, a, okB, b)
	}
}

// toolCallList is Vercel's ai.response.toolCalls as vercelFill decodes it.
type toolCallList []jsonToolCall

func (l *toolCallList) decodeValid(v string) { setSliceAt((*[]jsonToolCall)(l), v, decodeToolCallAt) }

// checkStringDecode compares decodeJSONString with json.Unmarshal into a
// string, on any text.
func checkStringDecode(t *testing.T, s string) {
	t.Helper()
	// rawJSONText and jsonTextEmpty take raw values of validated text:
	// there they say what the validating decoding says (rawJSONTextChecked,
	// rawJSONText as it was); on any other text they do not panic.
	e, text := jsonTextEmpty([]byte(s)), rawJSONText([]byte(s))
	if json.Valid([]byte(s)) {
		if e != (text == "") {
			t.Fatalf("%q: jsonTextEmpty %v, rawJSONText %q", s, e, text)
		}
		if want := rawJSONTextChecked([]byte(s)); text != want {
			t.Fatalf("%q: rawJSONText %q, validating %q", s, text, want)
		}
	}
	got, ok := decodeJSONString(s)
	var want string
	err := json.Unmarshal([]byte(s), &want)
	// It takes exactly one literal: no white space around it.
	if ok != (err == nil && strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`)) || (ok && got != want) {
		t.Fatalf("%q: decodeJSONString %q %v, encoding/json %q (%v)", s, got, ok, want, err)
	}
}

var messageDecodeCases = []string{
	`{"role":"assistant","parts":[{"type":"tool_call","id":"x","name":"n","arguments":{"a":1}}],"finish_reason":"tool_calls"}`,
	`{"ROLE":"user","Content":"hi","role":"tool"}`, `{"role":7,"content":null,"parts":null}`, `{"parts":[{"type":"text"},3,null,{"isError":true,"is_error":null}]}`,
	`{"parts":[{"text":"a","name":"n"},{"text":"b"}],"parts":[{"type":"t"}]}`, `{"parts":[],"tool_calls":[]}`, `{"parts":{"type":"x"}}`,
	`{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"},"args":null}]}`, `{"additional_kwargs":{"tool_calls":[{"id":"a"}]},"response_metadata":{"finish_reason":"stop"}}`,
	`{"additional_kwargs":[],"response_metadata":"x"}`, `{"lc":1,"id":["a","ToolMessage"],"kwargs":{"content":"r"}}`, `{"name":"a\u00e9\n\"b","status":"\ud800"}`,
	"{\"role\":\"\xff\"}", `{"rolE":"x","toolcallid":"y","tool_call_ID":"z"}`, `[{"role":"a"},{"role":"b","parts":[{"toolCallId":"t","toolcallid":"u"}]}]`,
	`{"\u0072ole":"escaped key"}`, `{"messages":[{"role":"user"}],"Messages":null}`, `{"MESSAGES":[[1]]}`, `{"output":{"lc":1},"OutPut":"x"}`, `{"role":"TOOL","content":"r"}`, `{"type":"function_call_output","call_id":"c","output":"o"}`, `{"lc":1,"type":"constructor","id":["langchain","ToolMessage"],"kwargs":{"content":"x","tool_call_id":"c"}}`, `{"lc":1,"id":["FunctionMessage"],"kwargs":{"content":"y"}}`, `{"Role":"To\u006fl","content":"z"}`, `{"type":"tool","content":"w"}`, `{"session_id":"s","Thread_ID":"t","lc_agent_name":3,"conversation_id":null}`, `[" a ",{"x":1}, null ,[2]]`, `["a\tb","\ud83d\ude00","\ud83dx","\udc00\ud800","\/"]`, `{"role":"K","kind":"Kelvin K"}`, `[1,"x",null,{}]`, `"string"`, `null`, `{"parts":[{"output":{"type":"error-text","value":"boom"}}]}`,
	`{"generations":[[{"text":"a","message":{"role":"ai"}},7,null],null,{"x":1},[]],"Generations":[[{"TEXT":"b","Message":null,"text":3}]]}`, `{"generations":{"text":"x"}}`, `{"generations":[{"text":"x"}]}`,
	`{"lc":1,"id":["AIMessage"],"kwargs":{"content":"a\nb","tool_calls":[{"id":"c1","name":"f","args":{"x":1}}]}}`, `{"lc":1,"id":["ToolMessage"],"kwargs":{"content":"\"\"","tool_call_id":"c1","status":"error"}}`,
	`[[[{"role":"a"}]],[1],{"messages":[{"role":"b"}]}]`, `{"messages":{"Messages":[[{}]],"messages":[[],[{"role":"x"}]]}}`, `[[ ] , "x" ]`, `{"messages":[]}`, `[[{"a":1}],[[{"b":2}]]]`,
	`{"text":"a","toolCalls":[{"toolCallId":"c","toolName":"f","args":{"x":1}},7],"finishReason":"tool-calls","FINISHREASON":3}`,
	`{"body":"{\"messages\":[],\"tools\":[{\"name\":\"t\"}]}","Body":null}`, `{"messages":[{"role":"user"}],"tools":null,"TOOLS":[1]}`,
	`{"toolName":"f","toolCallId":"c","toolInput":"{}","args":[1],"input":null,"result":{"isError":true},"output":{"type":"json","value":2},"error":{"name":"E","message":"m","code":429},"finishReason":"stop","text":"t"}`,
	`{"error":"boom","Text":3,"TOOLCALLID":null}`, `{"name":"E","type":"T","message":7,"code":"x","Message":"m"}`,
	`{"tool_name":"a","name":"b","arguments":{"q":1},"result":"r","is_error":true,"isError":false,"content":[{"type":"text","text":"x"}]}`,
	`{"args":["a",{"b":1}],"kwargs":{"k":1},"arguments":"{}","ARGS":null}`, `{"args":"x","is_error":"true","isError":null}`,
	`{"type":"error-text","value":"v","reason":"r","Type":1}`, `{"modelProvider":"openai","ModelProvider":null}`,
	`{"role":"tool","parts":[{"type":"text","content":"\"\\\"\\\"\""},{"type":"tool_call_response","response":{"isError":true}},{"type":"tool-result","output":{"type":"error-text","value":"v"}}]}`,
}

func TestMessageDecodeMatchesEncodingJSON(t *testing.T) {
	for _, s := range messageDecodeCases {
		checkMessageDecode(t, s)
	}
}

// rawJSONTextChecked is rawJSONText as it was before it took its literal
// as valid: the literal checked by decodeJSONString too.
func rawJSONTextChecked(r json.RawMessage) string {
	r = trimJSON(r)
	if len(r) == 0 || string(r) == "null" {
		return ""
	}
	if r[0] == '"' {
		s, ok := decodeJSONString(stringOf(r))
		if !ok {
			return stringOf(r)
		}
		for depth := 0; depth < 2 && len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"'; depth++ {
			inner, ok := decodeJSONString(s)
			if !ok {
				break
			}
			s = inner
		}
		return s
	}
	return stringOf(r)
}

var stringDecodeCases = []string{`"abc"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u00E9"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ud83d\u0041"`,
	`"\ude00\ud83d"`, `"\ud83d\ud83d\ude00"`, "\"\xff\xfe a\"", "\"\xe2\x82\"", `""`, `"`, `"a" `, ` "a"`, `"a\x"`, "\"tab\t\"", `"\u12"`, `"é"`, `"\"`,
	`"\"\""`, `"\u0022\u0022"`, `"abc\"`, `"\"`, `"\u00"`, `"a\`, `"\"\\\"\\\"\""`, `"\"\\u0022\\u0022\""`, `"\u0022\\u0022\\u0022\u0022"`, `""`, ` "" `, `null`, `"\"x\""`,
	`"abcdefghijklmnop\nqrstuvwxyz0123456789é"`, "\"abcdefgh\xffijklmnopq\\\"rstuvwxyz\"", `"0123456789abcdef\u00e9 0123456789abcdef"`}

func TestStringDecodeMatchesEncodingJSON(t *testing.T) {
	for _, s := range stringDecodeCases {
		checkStringDecode(t, s)
	}
}

// uEscaped is a JSON literal of s with every byte written \u00XX.
func uEscaped(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, `\u%04x`, s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// TestJSONTextEmptyBound: the longest literal whose text is empty
// (maxEmptyTextLiteral bytes) is decoded, not taken as non-empty by its
// length.
func TestJSONTextEmptyBound(t *testing.T) {
	lit := uEscaped(uEscaped(`""`))
	if len(lit) != maxEmptyTextLiteral || rawJSONText([]byte(lit)) != "" || !jsonTextEmpty([]byte(lit)) {
		t.Fatalf("%q (%d bytes): text %q, jsonTextEmpty %v", lit, len(lit), rawJSONText([]byte(lit)), jsonTextEmpty([]byte(lit)))
	}
	checkStringDecode(t, lit)
}

func FuzzStringDecode(f *testing.F) {
	fuzzStrings(f, stringDecodeCases, checkStringDecode)
}

func FuzzMessageDecode(f *testing.F) {
	fuzzStrings(f, messageDecodeCases, checkMessageDecode)
}

// checkSkipValid compares skipValid with the validating scanner on the
// valid JSON value v and on each of its members' or elements' values.
func checkSkipValid(t *testing.T, v string) {
	t.Helper()
	full, skip := jsonScanner{s: v}, jsonScanner{s: v}
	if !full.value(0) {
		t.Fatalf("%q: valid JSON rejected by the scanner", v)
	}
	if skip.skipValid(); skip.i != full.i {
		t.Fatalf("%q: skipValid ends at %d, the scan at %d", v, skip.i, full.i)
	}
	check := func(val string) {
		if val == "" || !validJSON(val) {
			t.Fatalf("%q: part %q is not one JSON value", v, val)
		}
		if k := jsonKind(val); k == '{' || k == '[' {
			checkSkipValid(t, val)
		}
	}
	switch jsonKind(v) {
	case '{':
		eachMember(v, func(_, val string) { check(val) })
	case '[':
		eachElement(v, func(_ int, val string) { check(val) })
	}
}

// checkUnwrap compares unwrapMessageList's one pass with validating the
// text and then unwrapping it (unwrapValidMessageList), on any text and
// on it in a wrapper and a batch.
func checkUnwrap(t *testing.T, s string) {
	t.Helper()
	for _, v := range []string{s, "[" + s + "]", `{"messages":` + s + `}`, "[[" + s + "],[" + s + "]]", `{"MESSAGES":[` + s + `],"x":` + s + `}`} {
		for depth := 0; depth <= 4; depth++ {
			want := []json.RawMessage(nil)
			if r := trimJSON([]byte(v)); len(r) > 0 && depth <= 3 && (r[0] == '{' || r[0] == '[') && json.Valid(r) {
				want = unwrapValidMessageList(r, depth)
			}
			if got := unwrapMessageList([]byte(v), depth); !reflect.DeepEqual(got, want) {
				t.Fatalf("%q at depth %d: one pass %q, validate then unwrap %q", v, depth, got, want)
			}
		}
	}
}

// unwrapValidMessageList is unwrapMessageList on valid JSON, read in
// passes: the way it was read before messageList.
func unwrapValidMessageList(r json.RawMessage, depth int) []json.RawMessage {
	r = trimJSON(r)
	if len(r) == 0 || depth > 3 {
		return nil
	}
	switch r[0] {
	case '{':
		var m json.RawMessage
		eachMember(stringOf(r), func(key, val string) {
			if fieldIndex(key, messagesField) == 0 {
				setRaw(&m, val)
			}
		})
		if len(m) > 0 {
			return unwrapValidMessageList(m, depth+1)
		}
		return nil
	case '[':
		list := []json.RawMessage{}
		eachElement(stringOf(r), func(_ int, v string) { list = append(list, bytesOf(v)) })
		if len(list) > 0 {
			if f := trimJSON(list[0]); len(f) > 0 && f[0] == '[' {
				var flat []json.RawMessage
				for _, inner := range list {
					flat = append(flat, unwrapValidMessageList(inner, depth+1)...)
				}
				return flat
			}
		}
		return list
	}
	return nil
}

// checkMessageMemo holds the memo to decoding without it: a list decoded
// through a memo, the first time and again (every message then comes from
// the memo), and wrapped in a batch and a {"messages": ...} wrapper, is
// what decodeMessagesAs gives, fully and calls only.
func checkMessageMemo(t *testing.T, s string) {
	t.Helper()
	var memo messageMemo
	for _, callsOnly := range []bool{false, true} {
		want := decodeMessagesAs(s, callsOnly)
		for k := 0; k < 2; k++ {
			if got := decodeMessagesAsMemo(s, callsOnly, &memo); !reflect.DeepEqual(got, want) {
				t.Fatalf("%q callsOnly %v pass %d: %+v, want %+v", s, callsOnly, k, got, want)
			}
		}
		for _, w := range []string{"[" + s + "]", `{"messages":` + s + `}`} {
			want := decodeMessagesAs(w, callsOnly)
			if got := decodeMessagesMemo(w, nil, callsOnly, &memo); !reflect.DeepEqual(got, want) {
				t.Fatalf("%q callsOnly %v: %+v, want %+v", w, callsOnly, got, want)
			}
			keep := func(m string) bool { return len(m)%2 == 0 }
			if got, want := decodeMessagesMemo(w, keep, callsOnly, &memo), decodeMessagesWhereAs(w, keep, callsOnly); !reflect.DeepEqual(got, want) {
				t.Fatalf("%q callsOnly %v, kept: %+v, want %+v", w, callsOnly, got, want)
			}
		}
	}
	// decodeTextless: the full decoding without the text, memo or not.
	if json.Valid([]byte(s)) {
		var jm jsonMessage
		decodeMessageJSON(s, &jm)
		want, wok := messageFromAs(&jm, false)
		want.Text = ""
		for _, mm := range []*messageMemo{nil, &memo, &memo} {
			if got, ok := mm.decodeTextless(s); ok != wok || !reflect.DeepEqual(got, want) {
				t.Fatalf("%q textless (memo %v): %+v %v, want %+v %v", s, mm != nil, got, ok, want, wok)
			}
		}
		// Another text of the same message (a memo miss) takes the
		// values' texts the first one decoded.
		if got, ok := memo.decodeTextless(s + " "); ok != wok || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q textless again: %+v %v, want %+v %v", s, got, ok, want, wok)
		}
	}
	memo.reset()
}

func TestMessageMemo(t *testing.T) {
	for _, s := range messageDecodeCases {
		checkMessageMemo(t, s)
	}
}

func FuzzMessageMemo(f *testing.F) {
	fuzzStrings(f, messageDecodeCases, checkMessageMemo)
}

// checkMessageScratch holds messageScratch to decoding into a new
// jsonMessage: the valid message text s, decoded after each of the seed
// messages (which leave parts and tool calls in the scratch's arrays),
// makes the same message, fully and calls only.
func checkMessageScratch(t *testing.T, s string) {
	t.Helper()
	for _, w := range []string{s, "[" + s + "]", "[" + s + "," + s + "]"} {
		for _, callsOnly := range []bool{false, true} {
			if got, want := decodeMessagesAs(w, callsOnly), decodeMessagesAsRef(w, callsOnly); !reflect.DeepEqual(got, want) {
				t.Fatalf("decodeMessagesAs(%q, %v) = %+v, want %+v", w, callsOnly, got, want)
			}
		}
	}
	if !json.Valid([]byte(s)) {
		return
	}
	ms := messageScratchPool.Get().(*messageScratch)
	defer ms.release()
	for _, before := range append([]string{`{}`, s}, messageDecodeCases...) {
		if json.Valid([]byte(before)) {
			ms.decode(before)
		}
		for _, callsOnly := range []bool{false, true} {
			var fresh jsonMessage
			decodeMessageJSON(s, &fresh)
			want, wok := messageFromAs(&fresh, callsOnly)
			got, gok := messageFromAs(ms.decode(s), callsOnly)
			if gok != wok || !reflect.DeepEqual(got, want) {
				t.Fatalf("%q after %q callsOnly %v: %+v %v, want %+v %v", s, before, callsOnly, got, gok, want, wok)
			}
		}
	}
}

func TestMessageScratch(t *testing.T) {
	for _, s := range messageDecodeCases {
		checkMessageScratch(t, s)
	}
	checkMessageScratch(t, `{"parts":[{"type":"text","text":"a"}],"parts":[{"type":"tool_call","id":"x","isError":true}],"tool_calls":[{"id":"1"},{"id":"2"}],"tool_calls":[{"name":"n"}]}`)
}

func FuzzMessageScratch(f *testing.F) {
	fuzzStrings(f, messageDecodeCases, checkMessageScratch)
}

// decodeMessagesAsRef is decodeMessagesAs as it was before its plain
// lists were decoded through a messageScratch: the whole list decoded
// (setSlice), then each message made.
func decodeMessagesAsRef(s string, callsOnly bool) []message {
	if !looksJSON(s) {
		return nil
	}
	if t := trimJSON(bytesOf(s)); t[0] == '[' {
		if f := trimJSON(t[1:]); len(f) > 0 && f[0] == '{' {
			text, ok := lenientText(t, false)
			if !ok {
				return nil
			}
			var list []jsonMessage
			setSlice(&list, text, decodeMessageJSON)
			out := make([]message, 0, len(list))
			for i := range list {
				if m, ok := messageFromAs(&list[i], callsOnly); ok {
					out = append(out, m)
				}
			}
			return out
		}
	}
	return decodeMessagesWhereAs(s, nil, callsOnly)
}

// checkMessageTextless holds messageFromText's textless decoding to the
// full one: the same message without its text, hasText whether that text
// is not empty.
func checkMessageTextless(t *testing.T, s string) {
	t.Helper()
	if !json.Valid([]byte(s)) {
		return
	}
	var jm jsonMessage
	decodeMessageJSON(s, &jm)
	want, wok := messageFromAs(&jm, false)
	got, hasText, gok := messageFromText(&jm, false, true, nil)
	if gok != wok || hasText != (want.Text != "") {
		t.Fatalf("%q: ok %v hasText %v, want ok %v text %q", s, gok, hasText, wok, want.Text)
	}
	want.Text = ""
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q textless: %+v, want %+v", s, got, want)
	}
}

func TestMessageTextless(t *testing.T) {
	for _, s := range messageDecodeCases {
		checkMessageTextless(t, s)
	}
}

func FuzzMessageTextless(f *testing.F) {
	fuzzStrings(f, messageDecodeCases, checkMessageTextless)
}

// FuzzMCPIsError holds mcpIsError, given the text it would decode, to
// mcpResultIsError.
func FuzzMCPIsError(f *testing.F) {
	seeds := []string{`"{\"isError\":true}"`, `{"isError":true}`, `"\"{\\\"is_error\\\":true}\""`, `" {\"isError\": false} "`, `"x"`, `"`, ` "{\"isError\":true,\"error\":1}" `, `null`}
	fuzzStrings(f, seeds, func(t *testing.T, s string) {
		r := json.RawMessage(s)
		if got, want := mcpIsError(r, rawJSONText(r), true), mcpResultIsError(r); got != want {
			t.Fatalf("mcpIsError(%q) = %v, want %v", s, got, want)
		}
	})
}

// checkMessageKwargs holds decodeMessageKwargs to what it stands for: on
// valid JSON, decodeMessageJSON's message, and in kw what decoding that
// message's kwargs value into a new jsonMessage gives.
func checkMessageKwargs(t *testing.T, s string) {
	t.Helper()
	if !json.Valid([]byte(s)) {
		return
	}
	v := strings.TrimSpace(s)
	var want, wantKw, got, gotKw jsonMessage
	decodeMessageJSON(v, &want)
	if len(want.Kwargs) > 0 {
		decodeMessageJSON(string(want.Kwargs), &wantKw)
	}
	gotKw.Role = "left from before" // cleared first
	decodeMessageKwargs(v, &got, &gotKw)
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("%q:\ndecodeMessageJSON   %#v\ndecodeMessageKwargs %#v", s, want, got)
	}
	if !reflect.DeepEqual(wantKw, gotKw) {
		t.Fatalf("%q kwargs:\ndecodeMessageJSON   %#v\ndecodeMessageKwargs %#v", s, wantKw, gotKw)
	}
}

var kwargsDecodeCases = []string{
	`{"lc":1,"kwargs":{"content":"a","parts":[{"type":"text"}]},"KWARGS":{"role":"b"}}`, `{"kwargs":null}`, `{"kwargs":"x"}`,
	`{"kwargs":{"kwargs":{"role":"inner"},"tool_calls":[{"id":"c"}]}}`, `{"kwargs":[1,{"role":"a"}]}`, `{"role":"r"}`,
}

func TestMessageKwargsDecode(t *testing.T) {
	for _, s := range append(append([]string(nil), messageDecodeCases...), kwargsDecodeCases...) {
		checkMessageKwargs(t, s)
	}
}

func FuzzMessageKwargsDecode(f *testing.F) {
	fuzzStrings(f, append(append([]string(nil), messageDecodeCases...), kwargsDecodeCases...), checkMessageKwargs)
}

// decodeGenerationsRef is decodeGenerations of a generations object as it
// was: decodeGenerationsJSON, then each generation's message decoded from
// its raw text.
func decodeGenerationsRef(text string, callsOnly bool) []message {
	var g jsonGenerations
	decodeGenerationsJSON(text, &g)
	var out []message
	for _, batch := range g.Generations {
		for _, gen := range batch {
			if m, ok := decodeValidMessage(gen.Message, callsOnly); ok && len(gen.Message) > 0 {
				if m.Role == "" {
					m.Role = "assistant"
				}
				out = append(out, m)
			} else if gen.Text != "" {
				m := message{Role: "assistant"}
				if !callsOnly {
					m.Text = gen.Text
				}
				out = append(out, m)
			}
		}
	}
	return out
}

// checkGenerations holds decodeGenerations, which decodes the messages
// where they are, to decodeGenerationsRef on valid text, s itself and s
// as a generation's message, text and list.
func checkGenerations(t *testing.T, s string) {
	t.Helper()
	for _, v := range []string{s, `{"generations":[[{"text":"t","message":` + s + `}]]}`, `{"generations":[[{"message":` + s + `,"text":` + s + `},` + s + `],` + s + `]}`,
		`{"generations":` + s + `}`, `{"generations":[` + s + `],"GENERATIONS":[[{"text":"u"}]]}`} {
		if !json.Valid([]byte(v)) || !strings.Contains(v, "generations") {
			continue
		}
		text := strings.TrimSpace(v)
		for _, callsOnly := range []bool{false, true} {
			if want, got := decodeGenerationsRef(text, callsOnly), decodeGenerations(v, callsOnly); !reflect.DeepEqual(want, got) {
				t.Fatalf("%q (calls only %v):\nwas %#v\nnow %#v", v, callsOnly, want, got)
			}
		}
	}
}

var generationsDecodeCases = []string{
	`{"generations":[[{"text":"a","message":null},{"text":"b","message":{"lc":1,"id":["AIMessage"],"kwargs":{"content":"c","tool_calls":[{"id":"x","name":"f","args":{}}]}}}]]}`,
	`{"generations":[[{"message":{"role":"ai"},"message":{"content":"d"}},{"text":"e","text":3},null,"s",[1]],null,{"text":"f"}]}`,
	`{"generations":null}`, `{"generations":"x","generations":[[{"text":"g"}]]}`, `{"Generations":[[{"TEXT":"h","Message":{"content":"i"}}]]}`,
}

func TestGenerationsDecode(t *testing.T) {
	for _, s := range append(append([]string(nil), messageDecodeCases...), generationsDecodeCases...) {
		checkGenerations(t, s)
	}
}

func FuzzGenerationsDecode(f *testing.F) {
	fuzzStrings(f, append(append([]string(nil), messageDecodeCases...), generationsDecodeCases...), checkGenerations)
}
