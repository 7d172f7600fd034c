package trajectory

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// MaxParsedJSONBytes is the largest attribute value (message lists, tool
// definitions, tool-call lists) that Build decodes as JSON. Larger values are
// not parsed (their raw string is still kept where the Step has a raw field,
// e.g. Arguments and Result), so one pathological attribute cannot make Build
// allocate without bound.
const MaxParsedJSONBytes = 4 << 20

// attrMap is an attribute map with a signature of the keys it holds: Get
// answers a key the signature does not have without scanning the map. A
// span's readers look up dozens of keys by name, most of them absent (the
// other conventions'), and each miss compared every key of the span.
// The signature is four words (not an array) so that an attrMap is passed
// in registers.
type attrMap struct {
	pcommon.Map
	k0, k1, k2, k3 uint64 // bit keyBit(k) set for every key k (all bits: any key may be there)
}

// spanAttrs is m with the signature of its keys.
func spanAttrs(m pcommon.Map) attrMap {
	a := attrMap{Map: m}
	m.Range(func(k string, _ pcommon.Value) bool {
		a.mark(keyBit(k))
		return true
	})
	return a
}

// mark sets bit b of the signature.
func (a *attrMap) mark(b uint) {
	switch w := uint64(1) << (b & 63); b >> 6 {
	case 0:
		a.k0 |= w
	case 1:
		a.k1 |= w
	case 2:
		a.k2 |= w
	default:
		a.k3 |= w
	}
}

// anyAttrs is m without a signature (every Get scans it).
func anyAttrs(m pcommon.Map) attrMap {
	return attrMap{Map: m, k0: ^uint64(0), k1: ^uint64(0), k2: ^uint64(0), k3: ^uint64(0)}
}

// keyBit hashes a key to one of the signature's 256 bits from its length
// and three of its bytes.
func keyBit(k string) uint {
	n := len(k)
	if n == 0 {
		return 0
	}
	h := uint32(n)*0x9E3779B1 ^ uint32(k[n-1])*0x85EBCA77 ^ uint32(k[n/2])*0xC2B2AE3D ^ uint32(k[n>>2])*0x27D4EB2F
	return uint(h >> 24)
}

// Get is pcommon.Map.Get.
func (a attrMap) Get(key string) (pcommon.Value, bool) {
	if !a.hasBit(keyBit(key)) {
		return pcommon.Value{}, false
	}
	return a.Map.Get(key)
}

// hasBit reports whether the signature has bit b (keyBit).
func (a *attrMap) hasBit(b uint) bool {
	var w uint64
	switch b >> 6 {
	case 0:
		w = a.k0
	case 1:
		w = a.k1
	case 2:
		w = a.k2
	default:
		w = a.k3
	}
	return w&(1<<(b&63)) != 0
}

// keySig is the signature of the keys (the attrMap of no map whose
// signature has their bits): sig.hasBit(keyBit(k)) is false for a key k
// not among them.
func keySig(keys ...string) attrMap {
	var a attrMap
	for _, k := range keys {
		a.mark(keyBit(k))
	}
	return a
}

// mayHoldAny reports whether a can hold one of the keys sig was made of:
// false when no key of a has a bit of sig.
func (a *attrMap) mayHoldAny(sig *attrMap) bool {
	return a.k0&sig.k0|a.k1&sig.k1|a.k2&sig.k2|a.k3&sig.k3 != 0
}

// attrStr returns the attribute as a string; non-string values are rendered
// (numbers, bools, and arrays/maps as JSON). Missing → "".
func attrStr(m attrMap, key string) string {
	v, ok := m.Get(key)
	if !ok {
		return ""
	}
	return valueStr(v)
}

// valueStr is a value as attrStr renders it.
func valueStr(v pcommon.Value) string {
	if v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return v.AsString()
}

// firstStr returns the first non-empty attribute among keys.
func firstStr(m attrMap, keys ...string) string {
	for _, k := range keys {
		if s := attrStr(m, k); s != "" {
			return s
		}
	}
	return ""
}

// attrInt reads an integer attribute that instrumentations record as int,
// double or numeric string.
func attrInt(m attrMap, key string) (int64, bool) {
	v, ok := m.Get(key)
	if !ok {
		return 0, false
	}
	return valueInt(v)
}

func valueInt(v pcommon.Value) (int64, bool) {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return v.Int(), true
	case pcommon.ValueTypeDouble:
		f := v.Double()
		if f != f || f > 1e18 || f < -1e18 { // NaN or out of int64 range
			return 0, false
		}
		return int64(f), true
	case pcommon.ValueTypeStr:
		n, err := strconv.ParseInt(strings.TrimSpace(v.Str()), 10, 64)
		if err != nil {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// attrCost reads a non-negative, finite amount (a cost) recorded as a
// double, an int or a numeric string; 0 when absent or unusable.
func attrCost(m attrMap, key string) float64 {
	v, ok := m.Get(key)
	if !ok {
		return 0
	}
	var f float64
	switch v.Type() {
	case pcommon.ValueTypeDouble:
		f = v.Double()
	case pcommon.ValueTypeInt:
		f = float64(v.Int())
	case pcommon.ValueTypeStr:
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(v.Str()), 64); err != nil {
			return 0
		}
	default:
		return 0
	}
	if f != f || f < 0 || f > 1e15 { // NaN, negative or absurd
		return 0
	}
	return f
}

func firstInt(m attrMap, keys ...string) (int64, bool) {
	for _, k := range keys {
		if n, ok := attrInt(m, k); ok {
			return n, true
		}
	}
	return 0, false
}

// attrStrings reads a string-array attribute. Instrumentations record lists
// as a real array, as a JSON array string, or as a single string.
func attrStrings(m attrMap, key string) []string {
	v, ok := m.Get(key)
	if !ok {
		return nil
	}
	switch v.Type() {
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		out := make([]string, 0, s.Len())
		for i := 0; i < s.Len(); i++ {
			e := s.At(i)
			if e.Type() == pcommon.ValueTypeStr {
				out = append(out, e.Str())
			} else {
				out = append(out, e.AsString())
			}
		}
		return out
	case pcommon.ValueTypeStr:
		str := strings.TrimSpace(v.Str())
		if str == "" {
			return nil
		}
		if strings.HasPrefix(str, "[") && len(str) <= MaxParsedJSONBytes {
			var out []string
			if json.Unmarshal([]byte(str), &out) == nil {
				return out
			}
		}
		return []string{v.Str()}
	}
	return []string{v.AsString()}
}

// bytesOf returns the bytes of s without copying them, for the decoders
// here, which only read their input and copy whatever they keep of it
// (encoding/json too): a chat span's message history is not copied to be
// decoded. The bytes must never be written.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// stringOf is the converse view, for JSON bytes the decoders only read
// (never written after: attribute text seen through bytesOf, or raw values
// the decoders copied out).
func stringOf(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// lenientUnmarshal decodes data into v. Type mismatches in individual fields
// are tolerated (encoding/json fills what it can and reports the first
// mismatch); only syntax errors and oversized input fail.
func lenientUnmarshal(data []byte, v any) bool { return lenientDecode(data, v, false) }

// lenientUnmarshalValid is lenientUnmarshal of data known to be valid JSON:
// a raw value the decoders kept from text they had validated (every
// json.RawMessage field of the message shapes), so its bytes are not
// scanned a second time.
func lenientUnmarshalValid(data []byte, v any) bool { return lenientDecode(data, v, true) }

// lenientText is the text lenientUnmarshal (valid false) or
// lenientUnmarshalValid (valid true) decodes the message shapes from, and
// whether it decodes them: the decoders of those shapes are called on it
// directly where the destination would otherwise go on the heap through
// lenientDecode's interface.
func lenientText(data []byte, valid bool) (string, bool) {
	if len(data) == 0 || len(data) > MaxParsedJSONBytes {
		return "", false
	}
	text := strings.TrimSpace(stringOf(data))
	return text, valid || validJSON(text)
}

func lenientDecode(data []byte, v any, valid bool) bool {
	if len(data) == 0 || len(data) > MaxParsedJSONBytes {
		return false
	}
	// Message shapes, most of what Build decodes, have decoders of their
	// own (msgdecode.go) with the same rules.
	switch dst := v.(type) {
	case *jsonMessage, *[]jsonMessage, *jsonPart, *[]jsonPart, *[]json.RawMessage, *[]string, *metadataIDs, *jsonGenerations:
		text, ok := lenientText(data, valid)
		if !ok {
			return false
		}
		switch dst := dst.(type) {
		case *jsonMessage:
			decodeMessageJSON(text, dst)
		case *[]jsonMessage:
			setSlice(dst, text, decodeMessageJSON)
		case *jsonPart:
			decodePartJSON(text, dst)
		case *[]jsonPart:
			setSlice(dst, text, decodePartJSON)
		case *[]json.RawMessage:
			setSlice(dst, text, func(v string, r *json.RawMessage) { setRaw(r, v) })
		case *[]string:
			setSlice(dst, text, func(v string, e *string) { setString(e, v) })
		case *metadataIDs:
			decodeMetadataJSON(text, dst)
		case *jsonGenerations:
			decodeGenerationsJSON(text, dst)
		}
		return true
	}
	err := json.Unmarshal(data, v)
	if err == nil {
		return true
	}
	var te *json.UnmarshalTypeError
	return errors.As(err, &te)
}

// rawJSONText renders a JSON value as the text a step keeps: a JSON string is
// unquoted (tool arguments are often double-encoded), anything else is kept
// as the raw JSON text. The raw values are views of attribute text, never
// written (setRaw), so the text is returned as a view too, not copied.
//
// r is a raw value of validated text (every raw field the decoders fill,
// and encoding/json's): a string literal is decoded without checking its
// syntax again (that second scan of every literal was 4 % of Build). What
// it decodes to is text, not JSON: the levels unwrapped from it are
// checked (decodeJSONString).
func rawJSONText(r json.RawMessage) string {
	r = trimJSON(r)
	if len(r) == 0 || string(r) == "null" {
		return ""
	}
	if r[0] == '"' {
		if len(r) < 2 || r[len(r)-1] != '"' {
			return stringOf(r) // not a literal: no raw value of valid text
		}
		s := jsonStringText(stringOf(r))
		// Some instrumentations encode a JSON string twice
		// ("\"{\\\"city\\\": ...}\""): unwrap a bounded number of levels.
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

func trimJSON(r json.RawMessage) json.RawMessage {
	i, j := 0, len(r)
	for i < j && isSpace(r[i]) {
		i++
	}
	for j > i && isSpace(r[j-1]) {
		j--
	}
	return r[i:j]
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// looksJSON reports whether s may hold a JSON object or array.
func looksJSON(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) >= 2 && (s[0] == '{' || s[0] == '[') && len(s) <= MaxParsedJSONBytes
}

// splitIndex splits "12.rest" into 12 and "rest".
func splitIndex(s string) (int, string, bool) {
	i := strings.IndexByte(s, '.')
	if i <= 0 || i > 9 { // more than 9 digits is not a real index
		return 0, "", false
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil || n < 0 {
		return 0, "", false
	}
	return n, s[i+1:], true
}

// keyedRule is a quoted key, a colon and a value, as the regular
// expression ["']key["']\s*:\s*VALUE would find it (keyedrule.go): tried
// only before each occurrence of a key, it finds the same leftmost match in
// one pass of strings.Index per key; an unanchored expression gave Go's
// matcher at most the quote to skip to, so over a long text (a stack
// trace, a provider response body) it was tried at every quote,
// backtracking.
type keyedRule struct {
	keys []string
	// open are the quotes a key may follow, close those that may follow
	// it ("": each key ends in its own closing quote).
	open, close string
	value       valueRule
}

// find returns the leftmost match of the rule in s that starts at from or
// later: its end and its first group ("" without one).
func (q keyedRule) find(s string, from int) (end int, group string, ok bool) {
	if suf := commonSuffix(q.keys); len(q.keys) > 1 && len(suf) >= 4 {
		return q.findBySuffix(s, from, suf)
	}
	// next[i]: where keys[i] next occurs past a match start, -1 when it
	// does not.
	var buf [4]int
	next := buf[:0]
	for _, k := range q.keys {
		next = append(next, indexFrom(s, k, from+1))
	}
	for {
		best := -1
		for i, at := range next {
			if at >= 0 && (best < 0 || at < next[best]) {
				best = i
			}
		}
		if best < 0 {
			return 0, "", false
		}
		at := next[best]
		if end, group, ok := q.matchAt(s, at, q.keys[best]); ok {
			return end, group, true
		}
		next[best] = indexFrom(s, q.keys[best], at+1)
	}
}

// indexFrom is the index of the first sub in s at i or later, or -1.
func indexFrom(s, sub string, i int) int {
	if i > len(s) {
		return -1
	}
	if k := strings.Index(s[i:], sub); k >= 0 {
		return i + k
	}
	return -1
}

// findBySuffix is find for keys that end alike (suffix): one search for
// the suffix instead of one per key. Every key occurrence ends in one of
// the suffix's, so the same occurrences are tried; the match is the one
// whose key starts first, which a later suffix occurrence can still give
// (its key may be longer) until it lies past the longest key's reach.
func (q keyedRule) findBySuffix(s string, from int, suffix string) (end int, group string, ok bool) {
	longest := 0
	for _, k := range q.keys {
		longest = max(longest, len(k))
	}
	back := longest - len(suffix) // how far before its suffix a key can start
	best := -1                    // start of the key of the leftmost match so far
	var bestEnd int
	for p := indexFrom(s, suffix, from+1); p >= 0; p = indexFrom(s, suffix, p+1) {
		if best >= 0 && p-back >= best {
			break
		}
		for _, k := range q.keys {
			at := p + len(suffix) - len(k)
			if at < from+1 || best >= 0 && at >= best || s[at:p] != k[:len(k)-len(suffix)] {
				continue
			}
			if end, g, ok := q.matchAt(s, at, k); ok {
				best, bestEnd, group = at, end, g
			}
		}
	}
	if best < 0 {
		return 0, "", false
	}
	return bestEnd, group, true
}

// commonSuffix is the longest suffix all keys have.
func commonSuffix(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	suf := keys[0]
	for _, k := range keys[1:] {
		n := 0
		for n < len(suf) && n < len(k) && suf[len(suf)-1-n] == k[len(k)-1-n] {
			n++
		}
		suf = suf[len(suf)-n:]
	}
	return suf
}
