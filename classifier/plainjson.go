package classifier

import "unicode/utf8"

// plainJSON is the position of a reader of "plain" JSON: strings without
// escapes or control characters, with valid UTF-8. Anything else makes its
// readers give up and leave the text to encoding/json. It holds the lexical
// pieces both such readers share: canonWriter (the loop rule's canonical
// form) and plainDecoder (a call's arguments as values).
type plainJSON struct {
	src string
	pos int
}

func (p *plainJSON) space() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// str reads the string whose opening quote is at pos and returns its text
// without quotes and whether that text is ASCII: ok is false at an escape,
// a control character, invalid UTF-8 or no closing quote.
func (p *plainJSON) str() (s string, ascii, ok bool) {
	start := p.pos + 1
	ascii = true
	for i := start; i < len(p.src); i++ {
		switch c := p.src[i]; {
		case c == '"':
			s = p.src[start:i]
			if !ascii && !utf8.ValidString(s) {
				return "", false, false
			}
			p.pos = i + 1
			return s, ascii, true
		case c == '\\' || c < 0x20:
			return "", false, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false, false
}

// number reads a number that follows JSON's grammar,
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, and returns its text.
func (p *plainJSON) number() (string, bool) {
	s, i := p.src, p.pos
	// digits moves i past a run of digits and reports whether there was one.
	digits := func() bool {
		j := runEnd(s, i, isDigit)
		ok := j > i
		i = j
		return ok
	}
	if byteIs(s, i, '-') {
		i++
	}
	switch {
	case byteIs(s, i, '0'):
		i++
	case !digits():
		return "", false
	}
	if byteIs(s, i, '.') {
		i++
		if !digits() {
			return "", false
		}
	}
	if byteIs(s, i, 'e') || byteIs(s, i, 'E') {
		i++
		if byteIs(s, i, '+') || byteIs(s, i, '-') {
			i++
		}
		if !digits() {
			return "", false
		}
	}
	n := s[p.pos:i]
	p.pos = i
	return n, true
}
