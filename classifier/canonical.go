package classifier

import (
	"slices"
	"strings"
	"unsafe"
)

// canonicalFast writes the canonical form canonicalDecoded would give,
// without decoding the arguments into Go values and encoding them again:
// the loop rule canonicalises every call's arguments, in the guards as
// spans arrive and once more at the root, and the reflection round trip
// was most of that cost. It covers the JSON arguments nearly always are
// (objects, arrays, numbers, literals, strings without escapes); anything
// else — an escape, invalid UTF-8, U+2028/2029 (which encoding/json
// escapes), a repeated key (decoding keeps the last), a top-level string
// (maybe arguments encoded twice), trailing text — answers ok=false and
// is left to canonicalDecoded. FuzzCanonicalArgs holds the two to the same
// output.
func canonicalFast(raw string) (string, bool) {
	if raw == "" || raw[0] == '"' {
		return "", false
	}
	w := canonWriter{plainJSON: plainJSON{src: raw}, out: make([]byte, 0, len(raw))}
	if !w.value() {
		return "", false
	}
	if w.space(); w.pos != len(w.src) {
		return "", false
	}
	if len(w.out) == 0 {
		return "", true
	}
	// w.out is not written again: the string can be its bytes.
	return unsafe.String(&w.out[0], len(w.out)), true
}

// maxCanonicalDepth bounds the recursion; deeper arguments take the
// decoding path (whose own limit is far higher).
const maxCanonicalDepth = 64

type canonWriter struct {
	plainJSON
	out     []byte
	depth   int
	members []canonMember // a stack: each object's members above its base
	scratch []byte
}

// canonMember is one written "key":value of an object being canonicalised:
// its key and where it was written, relative to the object's first member.
type canonMember struct {
	key      string
	from, to int
}

func (w *canonWriter) value() bool {
	if w.space(); w.pos >= len(w.src) {
		return false
	}
	switch c := w.src[w.pos]; c {
	case '{':
		return w.object()
	case '[':
		return w.array()
	case '"':
		s, ok := w.str()
		if ok {
			w.out = append(append(append(w.out, '"'), s...), '"')
		}
		return ok
	case 't':
		return w.literal("true")
	case 'f':
		return w.literal("false")
	case 'n':
		return w.literal("null")
	default:
		return w.number()
	}
}

func (w *canonWriter) literal(lit string) bool {
	if !strings.HasPrefix(w.src[w.pos:], lit) {
		return false
	}
	w.pos += len(lit)
	w.out = append(w.out, lit...)
	return true
}

// str reads a string whose text needs no escaping either way and returns
// it without its quotes: besides what plainJSON.str refuses, U+2028 and
// U+2029, which encoding/json escapes.
func (w *canonWriter) str() (string, bool) {
	s, ascii, ok := w.plainJSON.str()
	if !ok || !ascii && (strings.Contains(s, "\u2028") || strings.Contains(s, "\u2029")) {
		return "", false
	}
	return s, true
}

// number copies a number that follows JSON's grammar, as the decoder keeps
// it (json.Number) and the encoder writes it back.
func (w *canonWriter) number() bool {
	n, ok := w.plainJSON.number()
	w.out = append(w.out, n...)
	return ok
}

// open enters the container whose opening byte is next, within the depth
// bound.
func (w *canonWriter) open() bool {
	if w.depth++; w.depth > maxCanonicalDepth {
		return false
	}
	w.out = append(w.out, w.src[w.pos])
	w.pos++
	return true
}

// closeWith leaves the container when its closing byte is next.
func (w *canonWriter) closeWith(c byte) bool {
	if w.space(); w.pos < len(w.src) && w.src[w.pos] == c {
		w.pos++
		w.out = append(w.out, c)
		w.depth--
		return true
	}
	return false
}

func (w *canonWriter) array() bool {
	if !w.open() {
		return false
	}
	if w.closeWith(']') {
		return true
	}
	for {
		if !w.value() {
			return false
		}
		if w.closeWith(']') {
			return true
		}
		if w.pos >= len(w.src) || w.src[w.pos] != ',' {
			return false
		}
		w.pos++
		w.out = append(w.out, ',')
	}
}

// object writes the members as they come, then rewrites them in key
// order (encoding/json sorts a map's keys bytewise).
func (w *canonWriter) object() bool {
	if !w.open() {
		return false
	}
	first, base := len(w.out), len(w.members)
	if w.closeWith('}') {
		return true
	}
	for {
		if w.space(); w.pos >= len(w.src) || w.src[w.pos] != '"' {
			return false
		}
		key, ok := w.str()
		if !ok {
			return false
		}
		if w.space(); w.pos >= len(w.src) || w.src[w.pos] != ':' {
			return false
		}
		w.pos++
		from := len(w.out) - first
		w.out = append(append(append(append(w.out, '"'), key...), '"'), ':')
		if !w.value() {
			return false
		}
		w.members = append(w.members, canonMember{key: key, from: from, to: len(w.out) - first})
		if w.space(); w.pos >= len(w.src) {
			return false
		}
		if w.src[w.pos] == ',' {
			w.pos++
			continue
		}
		if w.src[w.pos] != '}' {
			return false
		}
		w.pos++
		break
	}
	members := w.members[base:]
	slices.SortFunc(members, func(a, b canonMember) int { return strings.Compare(a.key, b.key) })
	for i := 1; i < len(members); i++ {
		if members[i].key == members[i-1].key {
			return false
		}
	}
	w.scratch = append(w.scratch[:0], w.out[first:]...)
	w.out = w.out[:first]
	for i, m := range members {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		w.out = append(w.out, w.scratch[m.from:m.to]...)
	}
	w.out = append(w.out, '}')
	w.members = w.members[:base]
	w.depth--
	return true
}
