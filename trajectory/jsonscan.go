package trajectory

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"unsafe"
)

// A validating JSON scanner that decodes nothing: it finds the elements of
// an array and checks the syntax of the whole text (exactly what
// encoding/json accepts), without allocating. Chat spans carry the whole
// conversation so far in their input messages and only its end matters
// (applyInputJSON): scanning the history costs about a nanosecond a byte,
// decoding it with encoding/json some thirty.

// maxScanDepth is encoding/json's nesting limit: deeper input is rejected
// by both.
const maxScanDepth = 10000

// elemRange is the byte range [start, end) of one array element.
type elemRange struct{ start, end int }

// arrayElements appends to dst the ranges of the elements of the JSON array
// s (surrounding white space allowed) and reports whether s is valid JSON
// holding an array.
func arrayElements(s string, dst []elemRange) ([]elemRange, bool) {
	sc := jsonScanner{s: s}
	sc.space()
	if !sc.at('[') {
		return dst, false
	}
	sc.i++
	sc.space()
	if sc.at(']') {
		sc.i++
		sc.space()
		return dst, sc.i == len(s)
	}
	return sc.elements(dst)
}

// elements scans the rest of an array from sc.i, at the start of an
// element, to the end of the text (white space allowed after the array),
// appending the elements' ranges to dst.
func (sc *jsonScanner) elements(dst []elemRange) ([]elemRange, bool) {
	for {
		sc.space()
		start := sc.i
		if !sc.value(1) {
			return dst, false
		}
		dst = append(dst, elemRange{start, sc.i})
		if more, ok := sc.next(']'); !ok {
			return dst, false
		} else if !more {
			sc.space()
			return dst, sc.i == len(sc.s)
		}
	}
}

// next moves past what follows a member or an element: a comma (more
// follows) or the closing byte of its object or array (ok false for
// anything else).
func (sc *jsonScanner) next(closing byte) (more, ok bool) {
	sc.space()
	switch {
	case sc.at(','):
		sc.i++
		return true, true
	case sc.at(closing):
		sc.i++
		return false, true
	}
	return false, false
}

// validJSON reports whether s is one valid JSON value (json.Valid).
func validJSON(s string) bool {
	sc := jsonScanner{s: s}
	sc.space()
	if !sc.value(0) {
		return false
	}
	sc.space()
	return sc.i == len(s)
}

type jsonScanner struct {
	s string
	i int
}

func (sc *jsonScanner) at(c byte) bool { return sc.i < len(sc.s) && sc.s[sc.i] == c }

// space moves past white space. Instrumentations write compact JSON: most
// calls find none, the first byte above ' ' (every white space byte is
// below it) told by one comparison.
func (sc *jsonScanner) space() { sc.i = skipSpace(sc.s, sc.i) }

// value skips one value starting at sc.i (no leading space).
func (sc *jsonScanner) value(depth int) bool {
	i, ok := scanValue(sc.s, sc.i, depth)
	if ok {
		sc.i = i
	}
	return ok
}

// skipSpace is the index of the first byte of s from i on that is not
// white space (space's rule).
func skipSpace(s string, i int) int {
	for i < len(s) && s[i] <= ' ' && isSpace(s[i]) {
		i++
	}
	return i
}

// scanValue is value over an index held in a local variable, not the
// scanner's field (the scan is most of validating a message list, and each
// step through the field was a load and a store): the index past the value
// starting at s[i], and whether it is one (the index is meaningless when
// it is not).
func scanValue(s string, i, depth int) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	var ok bool
	switch c := s[i]; c {
	case '"':
		return scanString(s, i)
	case '{':
		if depth >= maxScanDepth {
			return i, false
		}
		i = skipSpace(s, i+1)
		if i < len(s) && s[i] == '}' {
			return i + 1, true
		}
		for {
			i = skipSpace(s, i)
			if i >= len(s) || s[i] != '"' {
				return i, false
			}
			if i, ok = scanString(s, i); !ok {
				return i, false
			}
			i = skipSpace(s, i)
			if i >= len(s) || s[i] != ':' {
				return i, false
			}
			// A string value (most are) is scanned here, not through
			// a call of scanValue that would only dispatch it.
			if i = skipSpace(s, i+1); i < len(s) && s[i] == '"' {
				i, ok = scanString(s, i)
			} else {
				i, ok = scanValue(s, i, depth+1)
			}
			if !ok {
				return i, false
			}
			i = skipSpace(s, i)
			if i < len(s) && s[i] == ',' {
				i++
				continue
			}
			if i >= len(s) || s[i] != '}' {
				return i, false
			}
			return i + 1, true
		}
	case '[':
		if depth >= maxScanDepth {
			return i, false
		}
		i = skipSpace(s, i+1)
		if i < len(s) && s[i] == ']' {
			return i + 1, true
		}
		for {
			if i = skipSpace(s, i); i < len(s) && s[i] == '"' {
				i, ok = scanString(s, i)
			} else {
				i, ok = scanValue(s, i, depth+1)
			}
			if !ok {
				return i, false
			}
			i = skipSpace(s, i)
			if i < len(s) && s[i] == ',' {
				i++
				continue
			}
			if i >= len(s) || s[i] != ']' {
				return i, false
			}
			return i + 1, true
		}
	}
	sc := jsonScanner{s: s, i: i}
	switch s[i] {
	case 't':
		ok = sc.literal("true")
	case 'f':
		ok = sc.literal("false")
	case 'n':
		ok = sc.literal("null")
	default:
		ok = sc.number()
	}
	return sc.i, ok
}

func (sc *jsonScanner) literal(lit string) bool {
	if len(sc.s)-sc.i < len(lit) || sc.s[sc.i:sc.i+len(lit)] != lit {
		return false
	}
	sc.i += len(lit)
	return true
}

// number skips -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (sc *jsonScanner) number() bool {
	s, i := sc.s, sc.i
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	sc.i = i
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// str skips a string starting at its opening quote. Its first bytes are
// checked eight at a time for a quote, backslash or control character (the
// first one found from the word's mask); past them, the closing quote is
// found with strings.IndexByte and only the bytes before it are checked
// for backslashes and control characters, a cheaper mask. Most strings
// are keys and short values; the long ones (message texts, serialized
// arguments) are most of the bytes.
func (sc *jsonScanner) str() bool {
	i, ok := scanString(sc.s, sc.i)
	if ok {
		sc.i = i
	}
	return ok
}

// scanString is str over a local index (scanValue): the index past the
// string opening at s[i], and whether it is one.
func scanString(s string, i int) (int, bool) {
	i++
	for {
		// The shortStringWords (two) words, unrolled: most strings are
		// keys, which end in them, and a loop counter was a fifth of
		// scanning one.
		if i+16 <= len(s) {
			if m := specialMask(word8(s, i)); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto found
			}
			if m := specialMask(word8(s, i+8)); m != 0 {
				i += 8 + bits.TrailingZeros64(m)>>3
				goto found
			}
			i += 16
		} else if i+8 <= len(s) {
			if m := specialMask(word8(s, i)); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto found
			}
			i += 8
		}
		if i+8 > len(s) {
			for i < len(s) && s[i] != '"' && s[i] != '\\' && s[i] >= 0x20 {
				i++
			}
			if i >= len(s) {
				return i, false
			}
		} else if q := strings.IndexByte(s[i:], '"'); q < 0 {
			return i, false
		} else {
			// s[i+q] is a quote: the first backslash or control
			// character before it, if any, comes first.
			i = escapeOrControl(s, i, i+q)
		}
	found:
		switch s[i] {
		case '"':
			return i + 1, true
		case '\\':
			i++
			if i >= len(s) {
				return i, false
			}
			switch s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if len(s)-i < 5 || !isHex(s[i+1]) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) {
					return i, false
				}
				i += 5
			default:
				return i, false
			}
			// After an escape the string is searched a word at a time
			// again: serialized JSON inside a string has one every few
			// bytes.
		default: // a control character
			return i, false
		}
	}
}

// escapeOrControl is the index of the first backslash or byte below 0x20
// in s[i:end] (end when there is none).
func escapeOrControl(s string, i, end int) int {
	for ; i+8 <= end; i += 8 {
		w := word8(s, i)
		if m := (controlFlags(w) | byteFlags(w, '\\')) & swarHighs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < end && s[i] != '\\' && s[i] >= 0x20 {
		i++
	}
	return i
}

// word8 is the little-endian word of s[i:i+8], for callers that checked
// i+8 <= len(s): the word loops' loads carry no bounds checks of their own.
func word8(s string, i int) uint64 {
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), i))[:])
}

const (
	swarOnes  = 0x0101010101010101
	swarHighs = 0x8080808080808080
)

// specialMask has the high bit of a byte of w (little-endian) set at least
// for each quote, backslash or byte below 0x20 (the bytes a string scan must
// stop at) and none below the first of them: borrows only carry upwards,
// so the lowest set bit marks exactly the first such byte (0: none).
func specialMask(w uint64) uint64 {
	return (controlFlags(w) | byteFlags(w, '"') | byteFlags(w, '\\')) & swarHighs
}

// byteFlags has the high bit of a byte of w set at least for each byte
// equal to c, and none below the first of them (the lowest is exact, as in
// specialMask); its other bits are noise, cleared by & swarHighs, which
// callers combining several flags apply once.
func byteFlags(w uint64, c byte) uint64 {
	x := w ^ (uint64(c) * swarOnes)
	return (x - swarOnes) &^ x
}

// controlFlags is byteFlags for the bytes below 0x20.
func controlFlags(w uint64) uint64 { return (w - 0x20*swarOnes) &^ w }

func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// Text the scanner validated is read again by the decoders (eachMember,
// eachElement) to find where each member or element ends: a wrapper, then
// its batch, then each message, then LangChain's kwargs. Checking the syntax
// each time made those passes most of decoding a serialized history;
// skipValid only looks for the end, finding the closing quote of a string
// with strings.IndexByte.

// skipValid moves sc.i past the value starting there, in text known to be
// valid JSON. On other text it stops somewhere in it, never past its end,
// and may not move at all (at a ',', '}', ']' or the end).
func (sc *jsonScanner) skipValid() {
	s, i := sc.s, sc.i
	if i >= len(s) {
		return
	}
	switch s[i] {
	case '"':
		sc.i = skipValidString(s, i)
		return
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				i = skipValidString(s, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					sc.i = i + 1
					return
				}
			}
			i++
		}
		sc.i = len(s)
		return
	}
	for i < len(s) && !isSpace(s[i]) && s[i] != ',' && s[i] != '}' && s[i] != ']' {
		i++
	}
	sc.i = i
}

// skipValidString returns the index just past the string literal opening at
// s[i] (len(s) when it does not close).
func skipValidString(s string, i int) int {
	start := i + 1
	// Most strings are keys and short values: their first bytes are
	// searched for a quote a word at a time; a long string goes on with
	// strings.IndexByte.
	i = start
	for n := 0; ; i++ {
		for ; n < shortStringWords && i+8 <= len(s); n++ {
			if m := quoteMask(word8(s, i)); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto quote
			}
			i += 8
		}
		if i >= len(s) {
			return len(s)
		}
		if j := strings.IndexByte(s[i:], '"'); j < 0 {
			return len(s)
		} else {
			i += j
		}
	quote:
		// The quote closes the string unless an odd run of backslashes
		// escapes it. s[start-1] is the opening quote: the byte before
		// this one is always in s.
		if s[i-1] != '\\' {
			return i + 1
		}
		k := i - 1
		for k > start && s[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i + 1
		}
		// An escaped quote: serialized JSON inside a string has one every
		// few bytes, each a strings.IndexByte call past the first words;
		// the stretch after it is searched a word at a time again.
		n = 0
	}
}

// shortStringWords is how many words skipValidString searches before it
// calls strings.IndexByte.
const shortStringWords = 2

// quoteMask is specialMask for quotes only.
func quoteMask(w uint64) uint64 { return byteFlags(w, '"') & swarHighs }
