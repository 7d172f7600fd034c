package trajectory

import (
	"bytes"
	"encoding/json"
	"math/bits"
	"strings"
)

// message is the convention-neutral form of one chat message: what every
// reader decodes its message attributes into before applyMessages fills the
// step.
type message struct {
	Role         string
	Text         string
	Calls        []ToolCall
	Results      []ToolResult
	FinishReason string
}

// jsonPart is the union of the message-part shapes the conventions emit:
// OTel GenAI parts (text/tool_call/tool_call_response), Vercel AI SDK parts
// (text/tool-call/tool-result/tool-error), Anthropic-style blocks
// (tool_use/tool_result) and OpenAI content parts.
type jsonPart struct {
	Type       string          `json:"type"`
	Text       json.RawMessage `json:"text"`
	Content    json.RawMessage `json:"content"`
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	Response   json.RawMessage `json:"response"`
	Result     json.RawMessage `json:"result"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Input      json.RawMessage `json:"input"`
	Args       json.RawMessage `json:"args"`
	Output     json.RawMessage `json:"output"`
	Error      json.RawMessage `json:"error"`
	IsError    *bool           `json:"isError"`
	IsErrorSn  *bool           `json:"is_error"`
	ToolUseID  string          `json:"tool_use_id"`
	CallID     string          `json:"call_id"` // OpenAI Responses API items
}

// jsonMessage is the union of message shapes: OTel GenAI ({role, parts,
// finish_reason}), OpenAI chat ({role, content, tool_calls, tool_call_id}),
// Vercel ({role, content:[parts]}) and LangChain's serialized messages
// ({lc, id:[..., "ToolMessage"], kwargs:{...}}).
type jsonMessage struct {
	Role         string          `json:"role"`
	Parts        []jsonPart      `json:"parts"`
	Content      json.RawMessage `json:"content"`
	ToolCalls    []jsonToolCall  `json:"tool_calls"`
	ToolCallID   string          `json:"tool_call_id"`
	Name         string          `json:"name"`
	FinishReason string          `json:"finish_reason"`
	Status       string          `json:"status"`
	Type         string          `json:"type"`
	// OpenAI Responses API items (function_call / function_call_output)
	// appear in message lists without a role.
	CallID    string          `json:"call_id"`
	Arguments json.RawMessage `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	// LangChain serialization.
	LC               json.RawMessage `json:"lc"`
	ID               json.RawMessage `json:"id"`
	Kwargs           json.RawMessage `json:"kwargs"`
	AdditionalKwargs struct {
		ToolCalls []jsonToolCall `json:"tool_calls"`
	} `json:"additional_kwargs"`
	ResponseMetadata struct {
		FinishReason string `json:"finish_reason"`
	} `json:"response_metadata"`
}

// jsonToolCall covers {id, function:{name, arguments}} (OpenAI),
// {id, name, args} (LangChain) and {id, name, arguments} (GenAI).
type jsonToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Args      json.RawMessage `json:"args"`
	Input     json.RawMessage `json:"input"`
	Function  struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
}

func (c jsonToolCall) toToolCall() ToolCall {
	tc := ToolCall{ID: c.ID, Name: c.Name}
	if tc.ID == "" {
		tc.ID = c.ToolCallID
	}
	if tc.Name == "" {
		tc.Name = c.Function.Name
	}
	if tc.Name == "" {
		tc.Name = c.ToolName
	}
	for _, a := range []json.RawMessage{c.Arguments, c.Function.Arguments, c.Input, c.Args} {
		if s := rawJSONText(a); s != "" {
			tc.Arguments = s
			break
		}
	}
	return tc
}

// decodeMessages decodes a JSON list of messages in any supported shape.
// LangChain batches ([[msg, ...]]) and {"messages": [...]} wrappers are
// unwrapped. It returns nil when s is not such a list.
func decodeMessages(s string) []message { return decodeMessagesAs(s, false) }

// decodeMessageCalls is decodeMessages for a reader that needs only the
// messages' roles, calls and results (IDs, names, arguments, error flags):
// the messages' text and the results' content are left empty, not decoded
// (messageCalls).
func decodeMessageCalls(s string) []message { return decodeMessagesAs(s, true) }

func decodeMessagesAs(s string, callsOnly bool) []message {
	return decodeMessagesAsMemo(s, callsOnly, nil)
}

// decodeMessagesAsMemo is decodeMessagesAs decoding the messages of a
// wrapped or batched list through memo (decodeMessagesMemo).
func decodeMessagesAsMemo(s string, callsOnly bool, memo *messageMemo) []message {
	if !looksJSON(s) {
		return nil
	}
	// Fast path: a plain list of message objects is decoded in one pass.
	if t := trimJSON(bytesOf(s)); t[0] == '[' {
		if f := trimJSON(t[1:]); len(f) > 0 && f[0] == '{' {
			// One scan validates the list and finds its elements'
			// ranges (lenientText's check, then eachElement's, went
			// over every element twice before decoding it).
			if len(t) > MaxParsedJSONBytes {
				return nil
			}
			// The text lenientText decodes (trimmed as it trims).
			text := strings.TrimSpace(stringOf(t))
			ms := messageScratchPool.Get().(*messageScratch)
			elems, ok := arrayElements(text, ms.elems[:0])
			ms.elems = elems
			if !ok {
				ms.release()
				return nil
			}
			// Each element is decoded into one reused jsonMessage
			// (messageScratch), as setSlice decodes it into its own, or
			// through memo, which decodes a text the Build decoded
			// before (the LLM spans of a conversation record its
			// history again) only once. The result has room for every
			// element (all but an oversized LangChain message decode to
			// one): growing it one message at a time allocated about
			// twice that, gathering them in the scratch first copied
			// them all once more.
			out := make([]message, 0, len(elems))
			for _, r := range elems {
				var m message
				var ok bool
				if memo != nil {
					m, ok = memo.decode(text[r.start:r.end], callsOnly)
				} else {
					m, ok = messageFromAs(ms.decode(text[r.start:r.end]), callsOnly)
				}
				if ok {
					out = append(out, m)
				}
			}
			ms.release()
			return out
		}
	}
	return decodeMessagesMemo(s, nil, callsOnly, memo)
}

// decodeMessagesWhere is decodeMessages on the messages for which keep (if
// set) is true of their JSON text; the others are not decoded.
func decodeMessagesWhere(s string, keep func(string) bool) []message {
	return decodeMessagesWhereAs(s, keep, false)
}

func decodeMessagesWhereAs(s string, keep func(string) bool, callsOnly bool) []message {
	return decodeMessagesMemo(s, keep, callsOnly, nil)
}

// decodeMessagesMemo is decodeMessagesWhereAs decoding each message
// through memo (nil: none); the messages returned may share their slices
// with the memo's (callers copy what they keep and write none of it).
func decodeMessagesMemo(s string, keep func(string) bool, callsOnly bool, memo *messageMemo) []message {
	if !looksJSON(s) {
		return nil
	}
	raw := memo.unwrapMessageList(bytesOf(s))
	if raw == nil {
		return nil
	}
	out := make([]message, 0, len(raw))
	for _, r := range raw {
		if keep != nil && !keep(stringOf(r)) {
			continue
		}
		// Elements of a list unwrapMessageList validated: decoded
		// without scanning them again.
		if m, ok := memo.decode(stringOf(r), callsOnly); ok {
			out = append(out, m)
		}
	}
	return out
}

// unwrapMessageList returns the elements of the message list r, unwrapped
// from {"messages": ...} wrappers and LangChain batches; nil when r is not
// valid JSON holding such a list.
func unwrapMessageList(r json.RawMessage, depth int) []json.RawMessage {
	r = trimJSON(r)
	if len(r) == 0 || depth > 3 || (r[0] != '{' && r[0] != '[') || len(r) > MaxParsedJSONBytes {
		return nil
	}
	// One pass validates the whole text and finds the list inside its
	// wrappers and batches (validating first, then reading them, went
	// over each wrapper's bytes once more for each level).
	sc := jsonScanner{s: stringOf(r)}
	list, ok := sc.messageList(depth, 0, nil)
	if sc.space(); !ok || sc.i != len(sc.s) {
		return nil
	}
	return list
}

// mayHoldMessagesKey is false when the text t (trimmed, at most
// MaxParsedJSONBytes) is an object none of whose members is named
// "messages" (as encoding/json matches names), read without checking the
// syntax: its values are skipped as in valid JSON. unwrapMessageList finds
// no list in such an object, and none in text that is not JSON, so it
// needs no validating pass: the wrapper spans of a LangGraph run output
// long objects such as {"output": [...]} that hold no list at their top.
// Text that is not JSON may be misread, which only means true (the full
// pass decides) or false (its answer, nil, is unwrapMessageList's too).
func mayHoldMessagesKey(t string) bool {
	if jsonKind(t) != '{' {
		return true
	}
	sc := jsonScanner{s: t, i: 1}
	for {
		sc.space()
		if !sc.at('"') {
			return !sc.at('}')
		}
		k0 := sc.i
		if sc.i = skipValidString(t, sc.i); sc.i >= len(t) {
			return true
		}
		if fieldIndex(jsonStringText(t[k0:sc.i]), messagesField) == 0 {
			return true
		}
		sc.space()
		if !sc.at(':') {
			return true
		}
		sc.i++
		sc.space()
		v0 := sc.i
		if sc.skipValid(); sc.i == v0 {
			return true
		}
		sc.space()
		if !sc.at(',') {
			return !sc.at('}')
		}
		sc.i++
	}
}

var messagesField = []string{"messages"}

// messageList validates the JSON value at sc.i (nest levels deep in the
// text, for maxScanDepth, as value does) and returns the message list it
// holds at unwrapping depth depth: an array's elements (flattened one
// level per batch, [[msg, ...], ...]), the list of an object's last
// "messages" member, nil for anything else or past depth 3; ok false when
// the value is not valid JSON.
//
// rs (nil: none) knows elements validated before, which are not scanned
// again, and gathers the elements found.
func (sc *jsonScanner) messageList(depth, nest int, rs *resumeScan) (list []json.RawMessage, ok bool) {
	if depth > 3 || (!sc.at('{') && !sc.at('[')) {
		return nil, sc.value(nest)
	}
	if nest >= maxScanDepth {
		return nil, false
	}
	if sc.at('{') {
		sc.i++
		sc.space()
		if sc.at('}') {
			sc.i++
			return nil, true
		}
		for {
			sc.space()
			k0 := sc.i
			if !sc.at('"') || !sc.str() {
				return nil, false
			}
			key := jsonStringText(sc.s[k0:sc.i])
			sc.space()
			if !sc.at(':') {
				return nil, false
			}
			sc.i++
			sc.space()
			if fieldIndex(key, messagesField) == 0 {
				if list, ok = sc.messageList(depth+1, nest+1, rs); !ok {
					return nil, false
				}
			} else if !sc.value(nest + 1) {
				return nil, false
			}
			if more, ok := sc.next('}'); !ok || !more {
				return list, ok
			}
		}
	}
	sc.i++
	sc.space()
	if sc.at(']') {
		sc.i++
		return []json.RawMessage{}, true // an empty list, not none
	}
	// LangChain records a batch: [[msg, msg]]. Its lists are flattened.
	batch := sc.at('[')
	for {
		sc.space()
		v0 := sc.i
		if batch {
			inner, ok := sc.messageList(depth+1, nest+1, rs)
			if !ok {
				return nil, false
			}
			list = append(list, inner...)
		} else {
			if end, ok := rs.knownAt(sc.s, v0, nest+1); ok {
				sc.i = end
			} else if !sc.value(nest + 1) {
				return nil, false
			}
			rs.add(v0, sc.i, nest+1)
			// The elements' own bytes, not copies.
			list = append(list, bytesOf(sc.s[v0:sc.i]))
		}
		if more, ok := sc.next(']'); !ok || !more {
			return list, ok
		}
	}
}

// mayBeToolMessage is a necessary condition for a message's JSON text to
// decode to role "tool" (messageFrom): its role or type says "tool" in
// some letter case, its LangChain class is ToolMessage or FunctionMessage,
// or its type is function_call_output. Without an escape those words are
// in the text as ASCII letters (lower-casing maps no other letter to t, o,
// l, f, u, n or c).
func mayBeToolMessage(s string) bool {
	if strings.IndexByte(s, '\\') >= 0 {
		return true
	}
	return containsFoldASCII(s, "tool") || containsFoldASCII(s, "function")
}

// containsFoldASCII reports whether s holds word (lower-case ASCII
// letters) in any ASCII letter case. A byte b is word's letter c in some
// case exactly when b|0x20 == c, so the first letter is searched a word
// of s at a time (the zero bytes of (w|0x20…) ^ c…) and each place found
// compared; the tail is compared byte by byte.
func containsFoldASCII(s, word string) bool {
	n := len(word)
	if n == 0 {
		return true
	}
	i := 0
	for ; i+8 <= len(s); i += 8 {
		// Every byte equal to word[0] once lowered is flagged (a byte
		// above one may be too: each flag is checked).
		for m := byteFlags(word8(s, i)|0x20*swarOnes, word[0]) & swarHighs; m != 0; m &= m - 1 {
			if p := i + bits.TrailingZeros64(m)>>3; foldEqualAt(s, p, word) {
				return true
			}
		}
	}
	for ; i+n <= len(s); i++ {
		if foldEqualAt(s, i, word) {
			return true
		}
	}
	return false
}

// foldEqualAt reports whether s holds word (lower-case ASCII letters) at
// p in some ASCII letter case.
func foldEqualAt(s string, p int, word string) bool {
	if p+len(word) > len(s) {
		return false
	}
	for j := 0; j < len(word); j++ {
		if s[p+j]|0x20 != word[j] {
			return false
		}
	}
	return true
}

var langchainRoles = map[string]string{
	"SystemMessage":     "system",
	"HumanMessage":      "user",
	"AIMessage":         "assistant",
	"AIMessageChunk":    "assistant",
	"ToolMessage":       "tool",
	"FunctionMessage":   "tool",
	"ChatMessage":       "",
	"HumanMessageChunk": "user",
}

func decodeMessage(r json.RawMessage) (message, bool) {
	text, ok := lenientText(r, false)
	if !ok {
		return message{}, false
	}
	var jm jsonMessage
	decodeMessageJSON(text, &jm)
	return messageFrom(&jm)
}

// decodeValidMessage is decodeMessage of text known to be valid JSON.
func decodeValidMessage(r json.RawMessage, callsOnly bool) (message, bool) {
	text, ok := lenientText(r, true)
	if !ok {
		return message{}, false
	}
	var jm, kw jsonMessage
	decodeMessageKwargs(text, &jm, &kw)
	m, _, ok := messageFromKwargs(&jm, &kw, callsOnly, false, nil)
	return m, ok
}

func messageFrom(src *jsonMessage) (message, bool) { return messageFromAs(src, false) }

// lastIDElement is the last element of a LangChain serialized message's id
// list (the class name) as decoding the list into a []string gives it: a
// string's text, "" for an element of another type; ok false when the
// value is no list or an empty one. id is a raw value of validated text.
func lastIDElement(id json.RawMessage) (string, bool) {
	text, ok := lenientText(id, true)
	if !ok || jsonKind(text) != '[' {
		return "", false
	}
	last, n := "", 0
	// Each element is read where it is (setStringAt: a plain string is
	// found and decoded in one pass, not skipped and then decoded).
	eachElementAt(text, func(_ int, rest string) int {
		last = ""
		n++
		return setStringAt(&last, rest)
	})
	return last, n > 0
}

// messageFromAs is messageFrom; with callsOnly the message's Text and its
// results' Content are left empty (not decoded), everything else is the
// same: a result whose existence depends on its text being non-empty is
// kept or dropped by jsonTextEmpty, which says so without decoding it.
func messageFromAs(src *jsonMessage, callsOnly bool) (message, bool) {
	m, _, ok := messageFromText(src, callsOnly, false, nil)
	return m, ok
}

// messageFromText is messageFromAs; with textless the message's Text is
// left empty, not decoded, and hasText says whether it would not be (the
// results' Content is decoded, unless callsOnly).
func messageFromText(src *jsonMessage, callsOnly, textless bool, mm *messageMemo) (m message, hasText, ok bool) {
	return messageFromKwargs(src, nil, callsOnly, textless, mm)
}

// messageFromKwargs is messageFromText of a message whose kwargs value
// decodeMessageKwargs decoded into kw already (nil: decoded here from
// src.Kwargs).
func messageFromKwargs(src, kw *jsonMessage, callsOnly, textless bool, mm *messageMemo) (m message, hasText, ok bool) {
	// The message is read through a pointer, not copied (a jsonMessage
	// is some forty words; so is each of its parts, passed to addPart).
	jm := src
	role := jm.Role
	if len(jm.LC) > 0 && len(jm.Kwargs) > 0 {
		// LangChain serialized message: the class name is the last id element.
		if len(jm.Kwargs) > MaxParsedJSONBytes {
			return message{}, false, false // lenientText's bound
		}
		if kw == nil {
			kw = new(jsonMessage)
			decodeMessageJSON(strings.TrimSpace(stringOf(jm.Kwargs)), kw)
		}
		if class, ok := lastIDElement(jm.ID); ok {
			role = langchainRoles[class]
		}
		if role == "" {
			role = kw.Role
		}
		jm = kw
		jm.Role = role
	} else if role == "" {
		// LangChain's plain dict form {type: "human"|"ai"|"tool", ...}.
		switch jm.Type {
		case "function_call":
			return message{Role: "assistant", Calls: []ToolCall{{
				ID: firstNonEmpty(jm.CallID, string(bytes.Trim(jm.ID, `"`))), Name: jm.Name, Arguments: rawJSONText(jm.Arguments),
			}}}, false, true
		case "function_call_output":
			r := ToolResult{CallID: jm.CallID}
			if !callsOnly {
				r.Content = contentText(jm.Output)
			}
			return message{Role: "tool", Results: []ToolResult{r}}, false, true
		case "human":
			role = "user"
		case "ai":
			role = "assistant"
		case "tool", "system":
			role = jm.Type
		}
	}
	m = message{Role: strings.ToLower(role), FinishReason: jm.FinishReason}
	if m.FinishReason == "" {
		m.FinishReason = jm.ResponseMetadata.FinishReason
	}
	text := partText{callsOnly: callsOnly, textless: textless, memo: mm}
	for i := range jm.Parts {
		addPart(&m, &text, &jm.Parts[i], jm)
	}
	if c := trimJSON(jm.Content); len(c) > 0 {
		switch c[0] {
		case '"':
			if m.Role == "tool" {
				if s, ok := text.get(c); ok {
					m.Results = append(m.Results, ToolResult{CallID: jm.ToolCallID, Name: jm.Name, Content: s, IsError: jm.Status == "error"})
				}
			} else if s, ok := text.text(c); ok {
				text.add(s)
			}
		case '[':
			var parts []jsonPart
			if ct, ok := lenientText(c, true); ok {
				// Each part is decoded where it is (decodePartAt returns
				// its length), not skipped first to find its end.
				setSliceAt(&parts, ct, decodePartAt)
				for i := range parts {
					addPart(&m, &text, &parts[i], jm)
				}
			}
		}
	}
	calls := jm.ToolCalls
	if len(calls) == 0 {
		calls = jm.AdditionalKwargs.ToolCalls
	}
	for _, jc := range calls {
		if tc := jc.toToolCall(); tc.Name != "" || tc.ID != "" {
			m.Calls = appendCall(m.Calls, tc)
		}
	}
	m.Text = text.b.String()
	return m, text.nonEmpty, true
}

// partText gathers a message's text from its parts, unless the reader
// needs none (callsOnly) or only whether there is any (textless).
type partText struct {
	b         strings.Builder
	callsOnly bool
	textless  bool
	nonEmpty  bool         // some text was added
	memo      *messageMemo // the Build's texts decoded so far (nil: none)
}

// get returns the raw value's text (rawJSONText; "" with callsOnly) and
// whether that text is not empty.
func (t *partText) get(r json.RawMessage) (string, bool) {
	if t.callsOnly {
		return "", !jsonTextEmpty(r)
	}
	s := t.memo.rawText(r)
	return s, s != ""
}

// text is get for a value that becomes the message's text (add): with
// textless it is not decoded either.
func (t *partText) text(r json.RawMessage) (string, bool) {
	if t.textless {
		return "", !jsonTextEmpty(r)
	}
	return t.get(r)
}

// of is the raw value's text, "" with callsOnly.
func (t *partText) of(r json.RawMessage) string {
	s, _ := t.get(r)
	return s
}

// add appends s, a text get or text said is not empty, to the message's
// text.
func (t *partText) add(s string) {
	t.nonEmpty = true
	if !t.callsOnly && !t.textless {
		appendText(&t.b, s)
	}
}

// maxEmptyTextLiteral bounds the JSON string literals whose text
// (rawJSONText, which unwraps up to two further levels of encoding) can be
// empty: "" itself, a literal of "" (at most 2 + 2*6 bytes, each quote
// escaped as \u0022) or a literal of that (each of its at most 14 bytes
// written as at most 6).
const maxEmptyTextLiteral = 2 + 14*6

// jsonTextEmpty reports whether rawJSONText(r) is "" without decoding a
// string that cannot be: one longer than maxEmptyTextLiteral, or one
// without a backslash (which cannot hold an encoded literal) that is not "".
func jsonTextEmpty(r json.RawMessage) bool {
	r = trimJSON(r)
	if len(r) > 2 && r[0] == '"' && (len(r) > maxEmptyTextLiteral || bytes.IndexByte(r, '\\') < 0) {
		return false
	}
	return rawJSONText(r) == ""
}

// maxDedupCalls is the number of calls of one message or step output
// checked for duplicate IDs.
const maxDedupCalls = 64

// appendCall adds tc unless a call with the same ID is already there (a
// message can carry the same call as a content part and in tool_calls).
func appendCall(calls []ToolCall, tc ToolCall) []ToolCall {
	// Messages carry a handful of calls; past maxDedupCalls the duplicate
	// check is skipped so a pathological message stays linear.
	if tc.ID != "" && len(calls) <= maxDedupCalls {
		for i := range calls {
			if calls[i].ID == tc.ID {
				if calls[i].Name == "" {
					calls[i].Name = tc.Name
				}
				if calls[i].Arguments == "" {
					calls[i].Arguments = tc.Arguments
				}
				return calls
			}
		}
	}
	return append(calls, tc)
}

func appendText(b *strings.Builder, s string) {
	if s == "" {
		return
	}
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	b.WriteString(s)
}

func addPart(m *message, text *partText, p *jsonPart, parent *jsonMessage) {
	isErr := (p.IsError != nil && *p.IsError) || (p.IsErrorSn != nil && *p.IsErrorSn)
	switch p.Type {
	case "text", "input_text", "output_text", "":
		if s, ok := text.text(p.Text); ok {
			if m.Role == "tool" && p.Type == "" {
				break
			}
			text.add(s)
		} else if p.Type == "text" {
			if m.Role == "tool" {
				if s, ok := text.get(p.Content); ok {
					m.Results = append(m.Results, ToolResult{CallID: parent.ToolCallID, Name: parent.Name, Content: s, IsError: parent.Status == "error"})
				}
			} else if s, ok := text.text(p.Content); ok {
				text.add(s)
			}
		}
	case "tool_call", "tool-call", "tool_use", "function_call":
		tc := ToolCall{ID: strings.TrimSpace(firstNonEmpty(p.CallID, p.ID, p.ToolCallID)), Name: firstNonEmpty(p.Name, p.ToolName)}
		for _, a := range []json.RawMessage{p.Arguments, p.Input, p.Args} {
			if s := rawJSONText(a); s != "" {
				tc.Arguments = s
				break
			}
		}
		m.Calls = appendCall(m.Calls, tc)
	case "tool_call_response", "tool_call_result", "tool-result", "tool_result", "tool-error", "function_call_output":
		res := ToolResult{
			// IDs are compared trimmed: the conventions' own example
			// answers " call_…" to a call "call_…".
			CallID:  strings.TrimSpace(firstNonEmpty(p.CallID, p.ID, p.ToolCallID, p.ToolUseID, parent.ToolCallID)),
			Name:    firstNonEmpty(p.Name, p.ToolName, parent.Name),
			IsError: isErr || p.Type == "tool-error" || parent.Status == "error",
		}
		switch {
		case len(p.Output) > 0:
			var content string
			content, res.IsError = vercelOutput(p.Output, res.IsError)
			if !text.callsOnly {
				res.Content = content
			}
		case len(p.Response) > 0:
			res.Content = text.of(p.Response)
			res.IsError = res.IsError || mcpIsError(p.Response, res.Content, !text.callsOnly)
		case len(p.Result) > 0:
			res.Content = text.of(p.Result)
			res.IsError = res.IsError || mcpIsError(p.Result, res.Content, !text.callsOnly)
		case len(p.Error) > 0:
			res.Content = text.of(p.Error)
		case len(p.Content) > 0 && !text.callsOnly:
			res.Content = contentText(p.Content)
		}
		m.Results = append(m.Results, res)
	}
}

// vercelOutput decodes a Vercel AI SDK v5+ tool-result output
// ({type: "text"|"json"|"error-text"|"error-json"|"execution-denied"|"content", value})
// or falls back to the raw value.
//
// r is a raw value of validated text (a part's or a Mastra chunk's output,
// decoded from text the scanner validated): it is held to validText's
// bound, not validated again.
func vercelOutput(r json.RawMessage, isErr bool) (string, bool) {
	var o vercelToolOutput
	if t := trimJSON(r); len(r) <= MaxParsedJSONBytes && len(t) > 0 && t[0] == '{' {
		o.decodeValid(stringOf(t))
	}
	if o.Type != "" {
		switch o.Type {
		case "error-text", "error-json":
			return rawJSONText(o.Value), true
		case "execution-denied":
			return firstNonEmpty(o.Reason, "execution-denied"), true
		case "content":
			return contentText(o.Value), isErr
		}
		return rawJSONText(o.Value), isErr
	}
	return rawJSONText(r), isErr
}

// contentText renders a content value (string or list of text parts).
func contentText(r json.RawMessage) string {
	r = trimJSON(r)
	if len(r) == 0 {
		return ""
	}
	if r[0] == '[' {
		var parts []jsonPart
		if text, ok := lenientText(r, false); ok {
			setSliceAt(&parts, text, decodePartAt)
			var b strings.Builder
			for _, p := range parts {
				appendText(&b, firstNonEmpty(rawJSONText(p.Text), rawJSONText(p.Content)))
			}
			if b.Len() > 0 {
				return b.String()
			}
		}
	}
	return rawJSONText(r)
}

// mcpResultIsError reports whether a tool result is an MCP CallToolResult
// (or similar object) that says isError/is_error: true.
func mcpResultIsError(r json.RawMessage) bool {
	r = trimJSON(r)
	if len(r) == 0 || r[0] != '{' {
		// A JSON string may itself hold the encoded object.
		if len(r) > 0 && r[0] == '"' {
			s := rawJSONText(r)
			if looksJSON(s) {
				// Only read: the text itself, not a copy.
				return mcpResultIsError(bytesOf(s))
			}
		}
		return false
	}
	if !bytes.Contains(r, []byte("rror")) {
		return false
	}
	t, ok := validText(stringOf(r))
	if !ok {
		return false
	}
	var o resultErrorFlags
	o.decodeValid(t)
	return (o.IsError != nil && *o.IsError) || (o.IsErrorSn != nil && *o.IsErrorSn)
}

// mcpIsError is mcpResultIsError(r) for a reader that decoded r already
// (known: s is rawJSONText(r)): a JSON string is not decoded again.
func mcpIsError(r json.RawMessage, s string, known bool) bool {
	if t := trimJSON(r); known && len(t) > 0 && t[0] == '"' {
		return looksJSON(s) && mcpResultIsError(bytesOf(s))
	}
	return mcpResultIsError(r)
}

// vercelToolOutput is a Vercel AI SDK v5+ tool-result output, decoded
// with lenientUnmarshal's rules (decodeValid, msgdecode.go).
type vercelToolOutput struct {
	Type   string          `json:"type"`
	Value  json.RawMessage `json:"value"`
	Reason string          `json:"reason"`
}

var vercelToolOutputFields = []string{"type", "value", "reason"}

func (o *vercelToolOutput) decodeValid(v string) {
	eachField(v, vercelToolOutputFields, func(i int, val string) {
		switch i {
		case 0:
			setString(&o.Type, val)
		case 1:
			setRaw(&o.Value, val)
		case 2:
			setString(&o.Reason, val)
		}
	})
}

// resultErrorFlags are the error flags of a tool result object
// (mcpResultIsError).
type resultErrorFlags struct {
	IsError   *bool `json:"isError"`
	IsErrorSn *bool `json:"is_error"`
}

var resultErrorFlagsFields = []string{"isError", "is_error"}

func (o *resultErrorFlags) decodeValid(v string) {
	eachField(v, resultErrorFlagsFields, func(i int, val string) {
		if i == 0 {
			setBoolPtr(&o.IsError, val)
		} else {
			setBoolPtr(&o.IsErrorSn, val)
		}
	})
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// jsonToolDef covers the tool-definition shapes: OpenAI
// {type, function:{name, parameters}}, flat {name, parameters} (GenAI,
// Vercel v4), {name, inputSchema} (Vercel v5+, MCP) and {name, input_schema}
// (Anthropic).
type jsonToolDef struct {
	Name        string          `json:"name"`
	Parameters  json.RawMessage `json:"parameters"`
	InputSchema json.RawMessage `json:"inputSchema"`
	InputSnake  json.RawMessage `json:"input_schema"`
	JSONSchema  json.RawMessage `json:"json_schema"`
	Annotations json.RawMessage `json:"annotations"`
	Function    struct {
		Name        string          `json:"name"`
		Parameters  json.RawMessage `json:"parameters"`
		Annotations json.RawMessage `json:"annotations"`
	} `json:"function"`
}

// decodeToolHints reads MCP tool annotations. A hint that is not a JSON
// boolean is not stated.
func decodeToolHints(raw json.RawMessage) ToolHints {
	raw = trimJSON(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return ToolHints{}
	}
	var a map[string]json.RawMessage
	if !lenientUnmarshal(raw, &a) {
		return ToolHints{}
	}
	hint := func(k string) *bool {
		var b bool
		switch string(trimJSON(a[k])) {
		case "true":
			b = true
		case "false":
		default:
			return nil
		}
		return &b
	}
	return ToolHints{ReadOnly: hint("readOnlyHint"), Destructive: hint("destructiveHint"), Idempotent: hint("idempotentHint")}
}

func decodeToolDef(r json.RawMessage) (ToolDef, bool) {
	r = trimJSON(r)
	if len(r) > 0 && r[0] == '"' {
		// A list of JSON-encoded strings (Vercel ai.prompt.tools).
		s := rawJSONText(r)
		if !looksJSON(s) {
			return ToolDef{}, false
		}
		r = json.RawMessage(s)
	}
	var d jsonToolDef
	if !lenientUnmarshal(r, &d) {
		return ToolDef{}, false
	}
	td := ToolDef{Name: firstNonEmpty(d.Function.Name, d.Name)}
	if td.Name == "" {
		return ToolDef{}, false
	}
	for _, s := range []json.RawMessage{d.Function.Parameters, d.Parameters, d.InputSchema, d.InputSnake, d.JSONSchema} {
		s = trimJSON(s)
		if len(s) > 0 && s[0] == '"' { // schema recorded as a JSON string
			s = json.RawMessage(rawJSONText(s))
		}
		if len(s) > 0 && s[0] == '{' {
			td.Schema = append(json.RawMessage(nil), s...)
			break
		}
	}
	if len(d.Annotations) > 0 {
		td.Hints = decodeToolHints(d.Annotations)
	} else if len(d.Function.Annotations) > 0 {
		td.Hints = decodeToolHints(d.Function.Annotations)
	}
	return td, true
}

// decodeToolDefs decodes a JSON list of tool definitions (or a single one).
func decodeToolDefs(s string) []ToolDef {
	if !looksJSON(s) {
		return nil
	}
	t := strings.TrimSpace(s)
	if t[0] == '{' {
		// Some instrumentations wrap the list: {"tools": [...]}.
		var w struct {
			Tools json.RawMessage `json:"tools"`
		}
		if lenientUnmarshal(bytesOf(t), &w) && len(w.Tools) > 0 {
			return decodeToolDefs(string(w.Tools))
		}
		if d, ok := decodeToolDef(json.RawMessage(t)); ok {
			return []ToolDef{d}
		}
		return nil
	}
	var list []json.RawMessage
	if !lenientUnmarshal(bytesOf(t), &list) {
		return nil
	}
	out := make([]ToolDef, 0, len(list))
	for _, r := range list {
		if d, ok := decodeToolDef(r); ok {
			out = append(out, d)
		}
	}
	return out
}

// applyInput fills the step's InputResults from its input messages: the tool
// results that follow the last assistant message, i.e. the results fed back
// to the model for this call (earlier results are history already seen by
// earlier steps). Missing result names and call IDs are completed from the
// assistant message's tool calls (by ID, else by position).
func applyInput(st *Step, in []message) {
	applyInputFrom(st, &lazyMessages{decoded: in})
}

// applyOutput fills Requested, OutputText and FinishReasons from the step's
// output messages, without overwriting what a more specific attribute set.
func applyOutput(st *Step, out []message) {
	var text strings.Builder
	var calls []ToolCall
	var reasons []string
	for _, m := range out {
		appendText(&text, m.Text)
		for _, c := range m.Calls {
			calls = appendCall(calls, c)
		}
		if m.FinishReason != "" {
			reasons = append(reasons, m.FinishReason)
		}
	}
	if len(st.Requested) == 0 {
		st.Requested = calls
	}
	if st.OutputText == "" {
		st.OutputText = text.String()
	}
	if len(st.FinishReasons) == 0 {
		st.FinishReasons = reasons
	}
}
