package classifier

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// decodeArgs is jsonschema.UnmarshalJSON(strings.NewReader(s)): the JSON
// value s holds, with numbers as json.Number, or an error. A call's
// arguments are small and plain, and the json.Decoder that UnmarshalJSON
// builds for each of them (a 512-byte read buffer, the decoder itself, the
// scanner's state per byte) cost more than the value: arguments that
// decodePlain reads are decoded without it, into the same value, with
// their strings sliced from s. FuzzDecodeArgs holds it to UnmarshalJSON.
func decodeArgs(s string) (any, error) {
	d := plainDecoder{s: s}
	if v, ok := d.value(0); ok {
		d.space()
		if d.i == len(s) {
			return v, nil
		}
	}
	return jsonschema.UnmarshalJSON(strings.NewReader(s))
}

// maxPlainDepth bounds the nesting decodePlain reads (encoding/json's own
// bound is 10000; deeper values go to it).
const maxPlainDepth = 64

// plainDecoder reads JSON without escapes in its strings, without control
// characters and with valid UTF-8: everything else (which may be valid
// JSON, read as encoding/json reads it, or may not be) makes it give up,
// and decodeArgs hands the text to encoding/json.
type plainDecoder struct {
	s string
	i int
}

func (d *plainDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// value reads one value after optional white space.
func (d *plainDecoder) value(depth int) (any, bool) {
	d.space()
	if d.i == len(d.s) {
		return nil, false
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		return s, true
	case c == '-' || isDigit(c):
		n, ok := d.number()
		if !ok {
			return nil, false
		}
		return n, true
	case strings.HasPrefix(d.s[d.i:], "true"):
		d.i += len("true")
		return true, true
	case strings.HasPrefix(d.s[d.i:], "false"):
		d.i += len("false")
		return false, true
	case strings.HasPrefix(d.s[d.i:], "null"):
		d.i += len("null")
		return nil, true
	}
	return nil, false
}

func (d *plainDecoder) object(depth int) (any, bool) {
	if depth > maxPlainDepth {
		return nil, false
	}
	d.i++ // '{'
	m := map[string]any{}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		d.space()
		if d.i == len(d.s) || d.s[d.i] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i == len(d.s) || d.s[d.i] != ':' {
			return nil, false
		}
		d.i++
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		m[k] = v
		d.space()
		if d.i == len(d.s) {
			return nil, false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *plainDecoder) array(depth int) (any, bool) {
	if depth > maxPlainDepth {
		return nil, false
	}
	d.i++ // '['
	a := []any{}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		d.space()
		if d.i == len(d.s) {
			return nil, false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return a, true
		default:
			return nil, false
		}
	}
}

// str reads a string without escapes or control characters whose bytes
// are valid UTF-8 (encoding/json would replace invalid ones).
func (d *plainDecoder) str() (string, bool) {
	start := d.i + 1
	ascii := true
	for j := start; j < len(d.s); j++ {
		switch c := d.s[j]; {
		case c == '"':
			s := d.s[start:j]
			if !ascii && !utf8.ValidString(s) {
				return "", false
			}
			d.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// number reads a number as JSON writes it: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *plainDecoder) number() (json.Number, bool) {
	s, j := d.s, d.i
	if s[j] == '-' {
		j++
	}
	digits := func() bool {
		k := j
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		return j > k
	}
	switch {
	case j < len(s) && s[j] == '0':
		j++
	case j < len(s) && '1' <= s[j] && s[j] <= '9':
		digits()
	default:
		return "", false
	}
	if j < len(s) && s[j] == '.' {
		j++
		if !digits() {
			return "", false
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		j++
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if !digits() {
			return "", false
		}
	}
	n := json.Number(s[d.i:j])
	d.i = j
	return n, true
}
