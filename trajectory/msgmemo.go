package trajectory

import (
	"encoding/json"
	"sync"
)

// The wrapper spans of a LangGraph run output the conversation so far
// ({"messages": [...]}), and OpenInference's LLM spans record it again in
// input.value: one Build decodes the same serialized message once for
// each span that repeats it. A Build remembers what each message text
// decoded to (decoding is a function of the text alone) and decodes a
// text it has seen once only.

// maxMemoMessages bounds the messages one Build remembers.
const maxMemoMessages = 4096

// messageMemo maps a message's JSON text (the spans' own bytes, not
// copied: the memo lives for one Build) to what it decoded to, fully or
// calls only.
type messageMemo struct {
	full, calls, textless map[string]memoMessage
	// texts are the texts of JSON values (rawJSONText) the textless
	// messages decoded, by raw value: a tool result's content that
	// several messages of the trace repeat (a chain output and the next
	// model call's input) is decoded, and allocated, once.
	texts   map[string]string
	scratch messageScratch
	// wrappers are the wrapper texts unwrapped so far (inputprefix.go).
	wrappers wrapperLists
}

// rawText is rawJSONText(r), decoded once per memo (mm nil: every time).
// The text is shared: callers do not write it (strings).
func (mm *messageMemo) rawText(r json.RawMessage) string {
	if mm == nil {
		return rawJSONText(r)
	}
	if s, ok := mm.texts[stringOf(r)]; ok {
		return s
	}
	s := rawJSONText(r)
	if mm.texts == nil {
		mm.texts = make(map[string]string)
	}
	if len(mm.texts) < maxMemoMessages {
		// r is a view of the Build's input text, as the messages' keys.
		mm.texts[stringOf(r)] = s
	}
	return s
}

type memoMessage struct {
	m  message
	ok bool
}

// decode is decodeMessageJSON then messageFromAs of the valid JSON text r.
// The message returned may share its slices with other calls' results:
// callers copy what they keep (append) and write none of it.
func (mm *messageMemo) decode(r string, callsOnly bool) (message, bool) {
	if mm == nil {
		return decodeValidMessageText(r, callsOnly)
	}
	t := &mm.full
	if callsOnly {
		t = &mm.calls
	}
	if e, ok := (*t)[r]; ok {
		return e.m, e.ok
	}
	var kw jsonMessage
	m, _, ok := messageFromKwargs(mm.scratch.decodeKwargs(r, &kw), &kw, callsOnly, false, nil)
	if *t == nil {
		*t = make(map[string]memoMessage)
	}
	if len(*t) < maxMemoMessages {
		(*t)[r] = memoMessage{m, ok}
	}
	return m, ok
}

// decodeTextless is decode of a message whose text the reader does not
// need (messageFromText textless: Text left empty, Content decoded).
func (mm *messageMemo) decodeTextless(r string) (message, bool) {
	if mm == nil {
		var jm jsonMessage
		decodeMessageJSON(r, &jm)
		m, _, ok := messageFromText(&jm, false, true, nil)
		return m, ok
	}
	if e, ok := mm.textless[r]; ok {
		return e.m, e.ok
	}
	var kw jsonMessage
	m, _, ok := messageFromKwargs(mm.scratch.decodeKwargs(r, &kw), &kw, false, true, mm)
	if mm.textless == nil {
		mm.textless = make(map[string]memoMessage)
	}
	if len(mm.textless) < maxMemoMessages {
		mm.textless[r] = memoMessage{m, ok}
	}
	return m, ok
}

func decodeValidMessageText(r string, callsOnly bool) (message, bool) {
	var jm jsonMessage
	decodeMessageJSON(r, &jm)
	return messageFromAs(&jm, callsOnly)
}

// reset forgets every text (clearing keeps the maps' room for the next
// Build, unless they grew large).
func (mm *messageMemo) reset() {
	if len(mm.full) > maxPooledMapEntries/4 {
		mm.full = nil
	}
	if len(mm.calls) > maxPooledMapEntries/4 {
		mm.calls = nil
	}
	if len(mm.textless) > maxPooledMapEntries/4 {
		mm.textless = nil
	}
	clear(mm.full)
	clear(mm.calls)
	if len(mm.texts) > maxPooledMapEntries/4 {
		mm.texts = nil
	}
	clear(mm.textless)
	clear(mm.texts)
	mm.scratch.clear()
	mm.wrappers.reset()
}

// messageScratch decodes messages one after another into one jsonMessage,
// reusing the arrays of parts and tool calls the previous message left:
// they are only read while its message is made (messageFromAs copies what
// it keeps), and were most of the bytes decoding a message allocated.
// Every element is cleared first, so each message decodes as into a new
// jsonMessage (decodeMessageJSON fills a slice's room from zero values).
type messageScratch struct {
	jm jsonMessage
	// tail is the room of a lazyMessages' tail (scanInputResults), msgs
	// that of a decoded list (decodeMessagesAsMemo), cleared on release.
	tail []lazyMessage
	msgs []message
	// elems are the element ranges of a decoded list.
	elems []elemRange
}

var messageScratchPool = sync.Pool{New: func() any { return new(messageScratch) }}

// decode decodes the valid JSON text v; the result is valid until the
// next decode or release.
func (ms *messageScratch) decode(v string) *jsonMessage {
	ms.clear()
	decodeMessageJSON(v, &ms.jm)
	return &ms.jm
}

// decodeKwargs is decode, the value of a kwargs member decoded into kw
// (decodeMessageKwargs).
func (ms *messageScratch) decodeKwargs(v string, kw *jsonMessage) *jsonMessage {
	ms.clear()
	decodeMessageKwargs(v, &ms.jm, kw)
	return &ms.jm
}

// clear zeroes the message, keeping the room of its arrays. Their room
// past their length is zero (setSliceAt keeps it so): their elements are
// cleared up to their length only.
func (ms *messageScratch) clear() {
	parts, calls := ms.jm.Parts, ms.jm.ToolCalls
	clear(parts)
	clear(calls)
	ms.jm = jsonMessage{Parts: parts[:0], ToolCalls: calls[:0]}
}

// release gives ms back to the pool, holding no reference into the text.
func (ms *messageScratch) release() {
	ms.clear()
	if cap(ms.jm.Parts) > 64 || cap(ms.jm.ToolCalls) > 64 {
		ms.jm = jsonMessage{}
	}
	clear(ms.tail)
	ms.tail = ms.tail[:0]
	if cap(ms.tail) > 64 {
		ms.tail = nil
	}
	clear(ms.msgs)
	ms.msgs = ms.msgs[:0]
	if cap(ms.msgs) > 64 {
		ms.msgs = nil
	}
	ms.elems = ms.elems[:0]
	if cap(ms.elems) > 256 {
		ms.elems = nil
	}
	messageScratchPool.Put(ms)
}
