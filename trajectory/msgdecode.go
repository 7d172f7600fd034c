package trajectory

import (
	"encoding/json"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Message lists are most of what Build decodes. encoding/json reads them by
// reflection after checking the whole text a second time; these decoders
// fill the same structs (jsonMessage, jsonPart, jsonToolCall) from text the
// scanner already validated, in one pass and without reflection, with
// encoding/json's rules: keys matched exactly, else case-insensitively; a
// value of the wrong type leaves its field as it was; a repeated key decodes
// again over the first; null leaves strings and structs alone and clears
// slices and pointers; a raw field keeps the value's text.
// TestMessageDecodeMatchesEncodingJSON and FuzzMessageDecode compare them
// with encoding/json.

// jsonKind is the first byte of a JSON value.
func jsonKind(v string) byte {
	if v == "" {
		return 0
	}
	return v[0]
}

// eachMember calls fn with every key (decoded) and value text of the valid
// JSON object at the start of v, and returns the object's length (on
// invalid text it stops somewhere, or gives values that are not JSON; it
// never reads past v).
func eachMember(v string, fn func(key, val string)) int {
	return eachMemberAt(v, func(key, rest string) int {
		n := validLen(rest)
		if n > 0 {
			fn(key, rest[:n])
		}
		return n
	})
}

// eachMemberAt is eachMember for decoders that read a member's value where
// it is, in the one pass that finds its end: fn gets the text from the
// value to the end of v and returns the value's length (0 on text that is
// not valid JSON). A member decoded by a nested decoder was skipped first
// to find its end and then read again, once per level of nesting.
func eachMemberAt(v string, fn func(key, rest string) int) int {
	sc := jsonScanner{s: v, i: 1}
	for {
		sc.space()
		if !sc.at('"') {
			if sc.at('}') {
				return sc.i + 1
			}
			return sc.i // not valid JSON
		}
		k0 := sc.i
		// Most keys are found and decoded in one pass (plainStringEnd).
		e := plainStringEnd(v, k0)
		plain := e > 0
		if !plain {
			e = skipValidString(v, k0)
		}
		if sc.i = e; sc.i >= len(v) {
			return sc.i // not valid JSON
		}
		key := v[k0+1 : e-1]
		if !plain {
			key = jsonStringText(v[k0:e])
		}
		sc.space()
		sc.i++ // ':'
		sc.space()
		v0 := sc.i
		if v0 >= len(v) {
			return len(v) // not valid JSON
		}
		n := fn(key, v[v0:])
		if n <= 0 {
			return v0 // not valid JSON: callers validate first
		}
		sc.i = v0 + n
		sc.space()
		if sc.at(',') {
			sc.i++
		}
	}
}

// plainStringEnd is the index past the closing quote of the string
// literal opening at s[i] when no backslash or non-ASCII byte comes before
// that quote (the literal is its own text, s[i+1:end-1]: what
// skipValidString and jsonStringText find, in one pass instead of two),
// else 0.
func plainStringEnd(s string, i int) int {
	j := i + 1
	for ; j+8 <= len(s); j += 8 {
		w := word8(s, j)
		// The lowest flagged byte is exact (specialMask); a byte with
		// its high bit set is not ASCII.
		if m := (byteFlags(w, '"') | byteFlags(w, '\\') | w) & swarHighs; m != 0 {
			j += bits.TrailingZeros64(m) >> 3
			goto stop
		}
	}
	for j < len(s) && s[j] != '"' && s[j] != '\\' && s[j] < utf8.RuneSelf {
		j++
	}
stop:
	if j < len(s) && s[j] == '"' {
		return j + 1
	}
	return 0
}

// validLen is the length of the value at the start of the valid JSON text
// v (skipValid; 0 when v does not start with a value).
func validLen(v string) int {
	sc := jsonScanner{s: v}
	sc.skipValid()
	return sc.i
}

// eachElement calls fn with every element text of the valid JSON array v.
func eachElement(v string, fn func(i int, val string)) {
	eachElementAt(v, func(i int, rest string) int {
		n := validLen(rest)
		if n > 0 {
			fn(i, rest[:n])
		}
		return n
	})
}

// eachElementAt is eachMemberAt for the elements of the array at the start
// of v: fn gets the text from each element to the end of v and returns the
// element's length. It returns the array's length.
func eachElementAt(v string, fn func(i int, rest string) int) int {
	sc := jsonScanner{s: v, i: 1}
	for n := 0; ; n++ {
		sc.space()
		if sc.i >= len(v) {
			return len(v) // not valid JSON
		}
		if sc.at(']') {
			return sc.i + 1
		}
		v0 := sc.i
		k := fn(n, v[v0:])
		if k <= 0 {
			return v0 // not valid JSON: callers validate first
		}
		sc.i = v0 + k
		sc.space()
		if sc.at(',') {
			sc.i++
		}
	}
}

// jsonStringText decodes a valid JSON string literal. A literal without
// escapes and in valid UTF-8 (most keys and values) decodes to its own
// bytes: the text is the attribute's, immutable, and is returned as a
// substring of it, not copied (the strings a Step keeps from messages share
// the span's attribute text, as the strings it takes from attributes do).
func jsonStringText(lit string) string {
	in := lit[1 : len(lit)-1]
	// One word-at-a-time pass finds the first backslash or non-ASCII byte
	// (most texts, and object keys, have neither); the search for a
	// backslash and the UTF-8 check are left for what follows it.
	j := asciiRunEnd(in, 0)
	if j == len(in) {
		return in
	}
	if rest := in[j:]; strings.IndexByte(rest, '\\') < 0 && utf8.ValidString(rest) {
		// Valid JSON holds no control character in a string.
		return in
	}
	return unquoteJSONFrom(lit, j)
}

// decodeJSONString decodes s when it is exactly one JSON string literal
// (json.Unmarshal into a string, without the reflection).
func decodeJSONString(s string) (string, bool) {
	sc := jsonScanner{s: s}
	if !sc.at('"') || !sc.str() || sc.i != len(s) {
		return "", false
	}
	return jsonStringText(s), true
}

// unquoteJSON decodes a valid JSON string literal as encoding/json does:
// escapes resolved, a \u escape of half a surrogate pair and bytes that
// are not UTF-8 replaced by U+FFFD.
func unquoteJSON(lit string) string {
	return unquoteJSONFrom(lit, asciiRunEnd(lit[1:len(lit)-1], 0))
}

// unquoteJSONFrom is unquoteJSON when the literal's text holds neither a
// backslash nor a non-ASCII byte before i (asciiRunEnd(text, 0) <= i).
func unquoteJSONFrom(lit string, i int) string {
	in := lit[1 : len(lit)-1]
	// The run before the first escape or non-ASCII byte is copied as it is.
	i = asciiRunEnd(in, i)
	b := make([]byte, i, len(in)+utf8.UTFMax)
	copy(b, in[:i])
	for i < len(in) {
		c := in[i]
		switch {
		case c == '\\':
			i++
			if i == len(in) {
				// Only on text that is not a literal (rawJSONText's
				// callers give literals of validated text): kept as is.
				b = append(b, c)
				continue
			}
			switch in[i] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hex4(in[i+1:])
				i += 5
				if utf16.IsSurrogate(r) {
					if i+6 <= len(in) && in[i] == '\\' && in[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, hex4(in[i+2:])); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
				continue
			default: // '"', '\\', '/'
				b = append(b, in[i])
			}
			i++
		case c < utf8.RuneSelf:
			// A run of ASCII up to the next escape is copied at once.
			j := asciiRunEnd(in, i+1)
			b = append(b, in[i:j]...)
			i = j
		default:
			r, size := utf8.DecodeRuneInString(in[i:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, in[i:i+size]...)
			}
			i += size
		}
	}
	// b is not written again: the string is a view of it, not a copy.
	return stringOf(b)
}

// asciiRunEnd is the index of the first backslash or non-ASCII byte of s
// from i on (len(s): none), searched a word at a time.
func asciiRunEnd(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		w := word8(s, i)
		// The lowest flagged byte is exact (specialMask); a byte with
		// its high bit set is not ASCII.
		if m := (byteFlags(w, '\\') | w) & swarHighs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(s) && s[i] != '\\' && s[i] < utf8.RuneSelf {
		i++
	}
	return i
}

// hex4 is the value of the four hex digits at the start of s (-1 when they
// are not).
func hex4(s string) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// eachField calls set with the index in names of the field each member of
// the valid JSON value v decodes into (encoding/json's matching, fieldIndex)
// and the member's value text. A value that is not an object sets nothing,
// as encoding/json leaves a struct alone (a type error lenientUnmarshal
// tolerates).
func eachField(v string, names []string, set func(i int, val string)) {
	if jsonKind(v) != '{' {
		return
	}
	eachMember(v, func(key, val string) {
		if i := fieldIndex(key, names); i >= 0 {
			set(i, val)
		}
	})
}

// validText is s without the JSON white space around it, and whether
// encoding/json would decode it (lenientUnmarshal's encoding/json path):
// valid JSON of at most MaxParsedJSONBytes. The shapes with a decodeValid method are decoded
// from it as lenientUnmarshal would decode them, without encoding/json's
// second scan and reflection (and without the interface conversion that
// puts the destination on the heap).
func validText(s string) (string, bool) {
	if len(s) == 0 || len(s) > MaxParsedJSONBytes {
		return "", false
	}
	t := stringOf(trimJSON(bytesOf(s)))
	return t, validJSON(t)
}

// rawMemberJSON is lenientUnmarshal of data into a struct of one raw field
// named name (a wrapper such as {"messages": [...]} or {"output": ...}):
// ok false for text that is not valid JSON; the value of the last key
// matching name, nil when none does.
func rawMemberJSON(data []byte, name string) (json.RawMessage, bool) {
	if len(data) == 0 || len(data) > MaxParsedJSONBytes {
		return nil, false
	}
	text := strings.TrimSpace(stringOf(data))
	if !validJSON(text) {
		return nil, false
	}
	var raw json.RawMessage
	if jsonKind(text) == '{' {
		names := []string{name}
		eachMember(text, func(key, val string) {
			if fieldIndex(key, names) == 0 {
				setRaw(&raw, val)
			}
		})
	}
	return raw, true
}

var metadataFields = []string{"lc_agent_name", "session_id", "conversation_id", "thread_id"}

// decodeMetadataJSON decodes the valid JSON value v into md.
func decodeMetadataJSON(v string, md *metadataIDs) {
	if jsonKind(v) != '{' {
		return
	}
	fields := [...]*string{&md.AgentName, &md.SessionID, &md.ConversationID, &md.ThreadID}
	eachMember(v, func(key, val string) {
		if i := fieldIndex(key, metadataFields); i >= 0 {
			setString(fields[i], val)
		}
	})
}

// fieldIndex returns the index of the field name matching key as
// encoding/json matches it, or -1.
//
// The names are ASCII (Go field names and JSON tags): an ASCII key folds
// onto a name only of its own length (strings.EqualFold folds non-ASCII
// runes such as U+212A onto ASCII letters, never ASCII onto ASCII of
// another length), so names of other lengths are not compared; a key that
// is not ASCII is compared with every name (fieldIndexRef).
func fieldIndex(key string, names []string) int {
	for i, n := range names {
		if n == key {
			return i
		}
	}
	ascii := true
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	for i, n := range names {
		if (!ascii || len(n) == len(key)) && strings.EqualFold(n, key) {
			return i
		}
	}
	return -1
}

// fieldSet is a list of field names indexed by length, for the decoders
// that match most keys (messages, parts, tool calls): an ASCII key is
// compared, exactly and then folded, only with the names of its length
// (fieldIndex's rule), in list order.
type fieldSet struct {
	names []string
	byLen [32]uint32 // bit i set in byLen[n]: len(names[i]) == n
	// words are the names' keyWords: a key is compared with a name of
	// its length as two words, not through a string compare (most keys
	// are at most 16 bytes long, which two words tell apart exactly).
	words [32][2]uint64
}

// keyWords are two words of key's bytes from which a key of at most 16
// bytes can be told from every other key of its length: its first and
// last eight bytes when it has eight or more (they overlap below 16),
// else its first and last four, else its bytes.
func keyWords(key string) (a, b uint64) {
	switch n := len(key); {
	case n >= 8:
		return word8(key, 0), word8(key, n-8)
	case n >= 4:
		return uint64(word4(key, 0)), uint64(word4(key, n-4))
	default:
		for i := 0; i < n; i++ {
			a |= uint64(key[i]) << (8 * i)
		}
		return a, 0
	}
}

// word4 is the little-endian 32-bit word of s[i:i+4] (i+4 <= len(s)).
func word4(s string, i int) uint32 {
	return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
}

var (
	messageFieldSet  = newFieldSet(messageFields)
	partFieldSet     = newFieldSet(partFields)
	toolCallFieldSet = newFieldSet(toolCallFields)
)

// newFieldSet indexes names: at most 32 ASCII names shorter than 32 bytes.
func newFieldSet(names []string) *fieldSet {
	f := &fieldSet{names: names}
	if len(names) > 32 {
		panic("fieldSet: more than 32 names")
	}
	for i, n := range names {
		if n == "" || len(n) >= len(f.byLen) || hasNonASCII(n) {
			panic("fieldSet: name " + n + " is empty, long or not ASCII")
		}
		f.byLen[len(n)] |= 1 << i
		f.words[i][0], f.words[i][1] = keyWords(n)
	}
	return f
}

// index is fieldIndex(key, f.names).
func (f *fieldSet) index(key string) int {
	if len(key) >= len(f.byLen) {
		return fieldIndex(key, f.names)
	}
	// An exact match has the key's length (the names are not empty) and
	// its words, which are the whole of it up to 16 bytes.
	m := f.byLen[len(key)]
	if m != 0 {
		a, b := keyWords(key)
		for w := m; w != 0; w &= w - 1 {
			if i := bits.TrailingZeros32(w); f.words[i][0] == a && f.words[i][1] == b && (len(key) <= 16 || f.names[i] == key) {
				return i
			}
		}
	}
	if asciiRunEnd(key, 0) != len(key) {
		// Not ASCII (or holding a backslash): every name is folded.
		return fieldIndex(key, f.names)
	}
	for w := m; w != 0; w &= w - 1 {
		if i := bits.TrailingZeros32(w); strings.EqualFold(f.names[i], key) {
			return i
		}
	}
	return -1
}

// hasNonASCII reports whether s holds a byte that is not ASCII.
func hasNonASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

func setString(dst *string, v string) {
	if jsonKind(v) == '"' {
		*dst = jsonStringText(v)
	}
}

// setRaw keeps a raw value as a view of the text, not a copy: the raw
// values are only read (a struct these decoders fill is never decoded into
// again by encoding/json, whose RawMessage.UnmarshalJSON would write over
// the view).
func setRaw(dst *json.RawMessage, v string) { *dst = bytesOf(v) }

// setBoolPtr decodes into a *bool as encoding/json does: a value of another
// type still allocates the pointer (to false) before it is found to be
// the wrong type.
func setBoolPtr(dst **bool, v string) {
	switch v {
	case "true", "false":
		b := v == "true"
		*dst = &b
	case "null":
		*dst = nil
	default:
		if *dst == nil {
			*dst = new(bool)
		}
	}
}

// setSlice decodes a JSON array into *dst as encoding/json does: elements
// decode over those already in the slice's backing array, the length is
// the array's, an empty array makes an empty (not nil) slice, null clears.
func setSlice[T any](dst *[]T, v string, decode func(string, *T)) {
	setSliceAt(dst, v, func(rest string, e *T) int {
		n := validLen(rest)
		if n > 0 {
			decode(rest[:n], e)
		}
		return n
	})
}

// setSliceAt is setSlice of the value at the start of v, each element
// decoded where it is (decodeAt returns its length, as eachElementAt's fn
// does); it returns the value's length.
func setSliceAt[T any](dst *[]T, v string, decodeAt func(string, *T) int) int {
	switch jsonKind(v) {
	case 'n':
		*dst = nil
	case '[':
		prev := len(*dst)
		s := (*dst)[:0]
		n := eachElementAt(v, func(i int, rest string) int {
			if i < cap(s) {
				s = s[:i+1]
			} else {
				var zero T
				s = append(s, zero)
			}
			return decodeAt(rest, &s[i])
		})
		if len(s) < prev {
			// A shorter list decoded over a longer one (a repeated
			// key): the room past it is zeroed again, so that a slice's
			// room past its length is always zero and a reused one
			// (messageScratch) is cleared up to its length only.
			clear(s[len(s):prev])
		}
		if len(s) == 0 {
			s = []T{}
		}
		*dst = s
		return n
	}
	return validLen(v)
}

var messageFields = []string{"role", "parts", "content", "tool_calls", "tool_call_id", "name", "finish_reason", "status", "type",
	"call_id", "arguments", "output", "lc", "id", "kwargs", "additional_kwargs", "response_metadata"}

// decodeMessageJSON decodes the valid JSON value v into jm.
func decodeMessageJSON(v string, jm *jsonMessage) { decodeMessageAt(v, jm) }

var toolCallsField, finishReasonField = []string{"tool_calls"}, []string{"finish_reason"}

// decodeMessageKwargs is decodeMessageJSON(v, jm) that also decodes the
// value of its kwargs member (a LangChain serialized message's fields) into
// kw, where it is: kw ends as decodeMessageJSON(jm.Kwargs, kw) leaves a new
// jsonMessage (zero without a kwargs member). messageFromText decoded
// jm.Kwargs on its own after this pass had skipped it: most of such a
// message's bytes were read twice.
func decodeMessageKwargs(v string, jm, kw *jsonMessage) {
	*kw = jsonMessage{}
	decodeMessageKwAt(v, jm, kw)
}

// decodeMessageAt decodes the value at the start of the valid JSON text v
// into jm and returns its length: its lists and objects are decoded where
// they are (eachMemberAt), the rest as decodeMessageJSON did.
func decodeMessageAt(v string, jm *jsonMessage) int { return decodeMessageKwAt(v, jm, nil) }

// decodeMessageKwAt is decodeMessageAt, decoding the kwargs member's value
// into kw too (decodeMessageKwargs; nil: not).
func decodeMessageKwAt(v string, jm, kw *jsonMessage) int {
	if jsonKind(v) != '{' {
		return validLen(v)
	}
	return eachMemberAt(v, func(key, rest string) int {
		i := messageFieldSet.index(key)
		switch i {
		case 14:
			if kw != nil {
				// A repeated key's value replaces the first
				// (json.RawMessage): decoded into a new one.
				*kw = jsonMessage{}
				n := decodeMessageAt(rest, kw)
				if n > 0 {
					setRaw(&jm.Kwargs, rest[:n])
				}
				return n
			}
		case 1:
			return setSliceAt(&jm.Parts, rest, decodePartAt)
		case 3:
			return setSliceAt(&jm.ToolCalls, rest, decodeToolCallAt)
		case 15:
			if jsonKind(rest) != '{' {
				return validLen(rest)
			}
			return eachMemberAt(rest, func(k, fr string) int {
				if fieldIndex(k, toolCallsField) == 0 {
					return setSliceAt(&jm.AdditionalKwargs.ToolCalls, fr, decodeToolCallAt)
				}
				return validLen(fr)
			})
		case 16:
			if jsonKind(rest) != '{' {
				return validLen(rest)
			}
			return eachMemberAt(rest, func(k, fv string) int {
				if fieldIndex(k, finishReasonField) == 0 {
					return setStringAt(&jm.ResponseMetadata.FinishReason, fv)
				}
				return validLen(fv)
			})
		}
		if dst := messageStringField(jm, i); dst != nil {
			return setStringAt(dst, rest)
		}
		n := validLen(rest)
		if n > 0 && i >= 0 {
			decodeMessageField(jm, i, rest[:n])
		}
		return n
	})
}

// decodeFieldsAt decodes the members of the object at the start of the
// valid JSON text v into x, keys matched by fs, and returns its length: a
// string field (strField) by setStringAt, any other value by decodeField.
func decodeFieldsAt[T any](v string, x *T, fs *fieldSet, strField func(*T, int) *string, decodeField func(*T, int, string)) int {
	return eachMemberAt(v, func(key, rest string) int {
		i := fs.index(key)
		if dst := strField(x, i); dst != nil {
			return setStringAt(dst, rest)
		}
		n := validLen(rest)
		if n > 0 {
			decodeField(x, i, rest[:n])
		}
		return n
	})
}

// messageStringField is the string field i of messageFields decodes into
// (setStringAt), nil for the others.
func messageStringField(jm *jsonMessage, i int) *string {
	switch i {
	case 0:
		return &jm.Role
	case 4:
		return &jm.ToolCallID
	case 5:
		return &jm.Name
	case 6:
		return &jm.FinishReason
	case 7:
		return &jm.Status
	case 8:
		return &jm.Type
	case 9:
		return &jm.CallID
	}
	return nil
}

// setStringAt is setString of the value at the start of the valid JSON
// text rest, returning its length: a string literal that is its own text
// is found and decoded in one pass (plainStringEnd), not skipped by
// validLen and then decoded again.
func setStringAt(dst *string, rest string) int {
	if jsonKind(rest) == '"' {
		if e := plainStringEnd(rest, 0); e > 0 {
			*dst = rest[1 : e-1]
			return e
		}
	}
	n := validLen(rest)
	if n > 0 {
		setString(dst, rest[:n])
	}
	return n
}

// decodeMessageField decodes the value val of field i (messageFields, a
// field whose value decodeMessageAt does not read itself and that
// messageStringField does not name) into jm.
func decodeMessageField(jm *jsonMessage, i int, val string) {
	switch i {
	case 2:
		setRaw(&jm.Content, val)
	case 10:
		setRaw(&jm.Arguments, val)
	case 11:
		setRaw(&jm.Output, val)
	case 12:
		setRaw(&jm.LC, val)
	case 13:
		setRaw(&jm.ID, val)
	case 14:
		setRaw(&jm.Kwargs, val)
	}
}

var partFields = []string{"type", "text", "content", "id", "name", "arguments", "response", "result", "toolCallId", "toolName",
	"input", "args", "output", "error", "isError", "is_error", "tool_use_id", "call_id"}

func decodePartJSON(v string, p *jsonPart) { decodePartAt(v, p) }

// decodePartAt decodes the part at the start of the valid JSON text v and
// returns its length.
func decodePartAt(v string, p *jsonPart) int {
	if jsonKind(v) != '{' {
		return validLen(v)
	}
	return decodeFieldsAt(v, p, partFieldSet, partStringField, decodePartField)
}

// decodePartField decodes the value val of field i into p (a field
// partStringField does not name).
func decodePartField(p *jsonPart, i int, val string) {
	switch i {
	case 1:
		setRaw(&p.Text, val)
	case 2:
		setRaw(&p.Content, val)
	case 5:
		setRaw(&p.Arguments, val)
	case 6:
		setRaw(&p.Response, val)
	case 7:
		setRaw(&p.Result, val)
	case 10:
		setRaw(&p.Input, val)
	case 11:
		setRaw(&p.Args, val)
	case 12:
		setRaw(&p.Output, val)
	case 13:
		setRaw(&p.Error, val)
	case 14:
		setBoolPtr(&p.IsError, val)
	case 15:
		setBoolPtr(&p.IsErrorSn, val)
	}
}

// partStringField is the string field i decodes into (setStringAt), nil
// for the others.
func partStringField(p *jsonPart, i int) *string {
	switch i {
	case 0:
		return &p.Type
	case 3:
		return &p.ID
	case 4:
		return &p.Name
	case 8:
		return &p.ToolCallID
	case 9:
		return &p.ToolName
	case 16:
		return &p.ToolUseID
	case 17:
		return &p.CallID
	}
	return nil
}

var toolCallFields = []string{"id", "name", "arguments", "args", "input", "function", "toolCallId", "toolName"}

// decodeToolCallAt decodes the call at the start of the valid JSON text v
// and returns its length.
func decodeToolCallAt(v string, c *jsonToolCall) int {
	if jsonKind(v) != '{' {
		return validLen(v)
	}
	return decodeFieldsAt(v, c, toolCallFieldSet, toolCallStringField, decodeToolCallField)
}

// decodeToolCallField decodes the value val of field i into c (a field
// toolCallStringField does not name).
func decodeToolCallField(c *jsonToolCall, i int, val string) {
	switch i {
	case 2:
		setRaw(&c.Arguments, val)
	case 3:
		setRaw(&c.Args, val)
	case 4:
		setRaw(&c.Input, val)
	case 5:
		if jsonKind(val) == '{' {
			eachMember(val, func(k, fv string) {
				switch fieldIndex(k, []string{"name", "arguments"}) {
				case 0:
					setString(&c.Function.Name, fv)
				case 1:
					setRaw(&c.Function.Arguments, fv)
				}
			})
		}
	}
}

// toolCallStringField is the string field i decodes into (setStringAt),
// nil for the others.
func toolCallStringField(c *jsonToolCall, i int) *string {
	switch i {
	case 0:
		return &c.ID
	case 1:
		return &c.Name
	case 6:
		return &c.ToolCallID
	case 7:
		return &c.ToolName
	}
	return nil
}

// jsonGeneration is one element of LangChain's LLM output
// {"generations": [[{"text", "message": {...}}]]}.
type jsonGeneration struct {
	Text    string          `json:"text"`
	Message json.RawMessage `json:"message"`
}

type jsonGenerations struct {
	Generations [][]jsonGeneration `json:"generations"`
}

var generationsFields, generationFields = []string{"generations"}, []string{"text", "message"}

// decodeGenerationsJSON decodes the valid JSON value v into g: the lists
// and generations are decoded where they are (eachMemberAt, setSliceAt),
// not skipped first to find their end and then read again.
func decodeGenerationsJSON(v string, g *jsonGenerations) {
	if jsonKind(v) != '{' {
		return
	}
	eachMemberAt(v, func(key, rest string) int {
		if fieldIndex(key, generationsFields) == 0 {
			return setSliceAt(&g.Generations, rest, func(br string, batch *[]jsonGeneration) int {
				return setSliceAt(batch, br, decodeGenerationAt)
			})
		}
		return validLen(rest)
	})
}

// decodeGenerationAt decodes the generation at the start of the valid
// JSON text v and returns its length.
func decodeGenerationAt(v string, gen *jsonGeneration) int {
	if jsonKind(v) != '{' {
		return validLen(v)
	}
	// The text is read where it is (setStringAt), not skipped and then
	// decoded.
	return eachMemberAt(v, func(key, rest string) int {
		switch fieldIndex(key, generationFields) {
		case 0:
			return setStringAt(&gen.Text, rest)
		case 1:
			n := validLen(rest)
			if n > 0 {
				setRaw(&gen.Message, rest[:n])
			}
			return n
		}
		return validLen(rest)
	})
}
