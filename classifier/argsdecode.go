package classifier

import (
	"encoding/json"
	"strings"

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
	d := plainDecoder{plainJSON{src: s}}
	if v, ok := d.value(0); ok {
		d.space()
		if d.pos == len(s) {
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
	plainJSON
}

// value reads one value after optional white space.
func (d *plainDecoder) value(depth int) (any, bool) {
	d.space()
	if d.pos == len(d.src) {
		return nil, false
	}
	switch c := d.src[d.pos]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		s, _, ok := d.str()
		if !ok {
			return nil, false
		}
		return s, true
	case c == '-' || isDigit(c):
		n, ok := d.number()
		if !ok {
			return nil, false
		}
		return json.Number(n), true
	case strings.HasPrefix(d.src[d.pos:], "true"):
		d.pos += len("true")
		return true, true
	case strings.HasPrefix(d.src[d.pos:], "false"):
		d.pos += len("false")
		return false, true
	case strings.HasPrefix(d.src[d.pos:], "null"):
		d.pos += len("null")
		return nil, true
	}
	return nil, false
}

func (d *plainDecoder) object(depth int) (any, bool) {
	if depth > maxPlainDepth {
		return nil, false
	}
	d.pos++ // '{'
	m := map[string]any{}
	d.space()
	if d.pos < len(d.src) && d.src[d.pos] == '}' {
		d.pos++
		return m, true
	}
	for {
		d.space()
		if d.pos == len(d.src) || d.src[d.pos] != '"' {
			return nil, false
		}
		k, _, ok := d.str()
		if !ok {
			return nil, false
		}
		d.space()
		if d.pos == len(d.src) || d.src[d.pos] != ':' {
			return nil, false
		}
		d.pos++
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		m[k] = v
		d.space()
		if d.pos == len(d.src) {
			return nil, false
		}
		switch d.src[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
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
	d.pos++ // '['
	a := []any{}
	d.space()
	if d.pos < len(d.src) && d.src[d.pos] == ']' {
		d.pos++
		return a, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		d.space()
		if d.pos == len(d.src) {
			return nil, false
		}
		switch d.src[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return a, true
		default:
			return nil, false
		}
	}
}
