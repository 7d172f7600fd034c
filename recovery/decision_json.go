package recovery

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// The decision document is written once per failed run, on the pipeline
// goroutine. encoding/json reaches its fields by reflection and calls
// Evidence.MarshalJSON (a second Marshal, then a compaction of its output)
// for each piece of evidence; AppendJSON writes the same bytes directly.
// It follows encoding/json's rules exactly — fields in declaration order
// under their tag names, strings escaped as Marshal escapes them (HTML
// characters, U+2028/U+2029, invalid UTF-8 as \ufffd), numbers formatted
// as Marshal formats them — and TestDecisionJSONMatchesMarshal (with its
// fuzz target) holds it to that.

// jsonSize is room for d's document when no string needs escaping: the
// names and punctuation (about 330 bytes, 60 per evidence), the numbers,
// and the strings.
func (d *Decision) jsonSize() int {
	n := 400 + len(d.Phase) + len(d.Guard) + len(d.InFlightDecisionID) + len(d.DecisionID) + len(d.TraceID) +
		len(d.SpanID) + len(d.SessionID) + len(d.Service) + len(d.Agent) + len(d.Tool) + len(d.FailureType) +
		len(d.Action.Kind) + len(d.Action.Hint) + len(d.Action.Target) + len(d.Action.CheckpointID) +
		len(d.Action.Subgoal) + len(d.Action.Reason) + len(d.Policy) + len(d.Time)
	for i := range d.Evidence {
		e := &d.Evidence[i]
		n += 80 + len(e.Signal) + len(e.Rule) + len(e.Reason)
	}
	if br := d.Breaker; br != nil {
		n += 60 + len(br.Name) + len(br.Key) + len(br.State)
	}
	return n
}

// AppendJSON appends the decision document to b: the bytes json.Marshal
// writes for d. A confidence that is NaN or infinite (which the engine
// never produces) is an error, as it is for json.Marshal.
func (d *Decision) AppendJSON(b []byte) ([]byte, error) {
	if math.IsNaN(d.Confidence) || math.IsInf(d.Confidence, 0) {
		_, err := json.Marshal(d.Confidence)
		return b, err
	}
	b = append(b, `{"version":`...)
	b = strconv.AppendInt(b, int64(d.Version), 10)
	b = appendField(b, `,"phase":`, d.Phase)
	b = appendField(b, `,"guard":`, d.Guard)
	b = appendField(b, `,"in_flight_decision_id":`, d.InFlightDecisionID)
	b = appendField(b, `,"decision_id":`, d.DecisionID)
	b = appendField(b, `,"trace_id":`, d.TraceID)
	b = appendField(b, `,"span_id":`, d.SpanID)
	b = appendField(b, `,"session_id":`, d.SessionID)
	b = appendField(b, `,"service":`, d.Service)
	b = appendField(b, `,"agent":`, d.Agent)
	b = appendField(b, `,"tool":`, d.Tool)
	b = appendField(b, `,"failure_type":`, d.FailureType)
	b = append(b, `,"confidence":`...)
	b = appendJSONFloat(b, d.Confidence)
	b = append(b, `,"evidence":`...)
	if d.Evidence == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range d.Evidence {
			if i > 0 {
				b = append(b, ',')
			}
			b = d.Evidence[i].appendJSON(b)
		}
		b = append(b, ']')
	}
	a := &d.Action
	b = appendField(b, `,"action":{"kind":`, string(a.Kind))
	b = append(b, `,"delay_ms":`...)
	b = strconv.AppendInt(b, a.DelayMS, 10)
	b = appendField(b, `,"hint":`, a.Hint)
	b = appendField(b, `,"target":`, a.Target)
	b = appendField(b, `,"checkpoint_id":`, a.CheckpointID)
	b = appendField(b, `,"subgoal":`, a.Subgoal)
	b = appendField(b, `,"reason":`, a.Reason)
	b = append(b, `},"attempt":`...)
	b = strconv.AppendInt(b, int64(d.Attempt), 10)
	b = append(b, `,"max_attempts":`...)
	b = strconv.AppendInt(b, int64(d.MaxAttempts), 10)
	b = appendField(b, `,"policy":`, d.Policy)
	if br := d.Breaker; br != nil {
		b = appendField(b, `,"breaker":{"name":`, br.Name)
		b = appendField(b, `,"key":`, br.Key)
		b = appendField(b, `,"state":`, br.State)
		b = append(b, `,"probe":`...)
		b = strconv.AppendBool(b, br.Probe)
		b = append(b, '}')
	}
	b = appendField(b, `,"time":`, d.Time)
	return append(b, '}'), nil
}

// appendJSON writes what MarshalJSON writes.
func (e *Evidence) appendJSON(b []byte) []byte {
	b = append(b, `{"span_id":`...)
	if e.SpanID.IsEmpty() {
		b = append(b, `""`...)
	} else {
		b = append(b, '"')
		b = appendHex(b, e.SpanID[:])
		b = append(b, '"')
	}
	b = appendField(b, `,"signal":`, e.Signal)
	b = appendField(b, `,"rule":`, e.Rule)
	b = appendField(b, `,"reason":`, e.Reason)
	return append(b, '}')
}

func appendField(b []byte, name, v string) []byte {
	return appendJSONString(append(b, name...), v)
}

const hexDigits = "0123456789abcdef"

func appendHex(b []byte, raw []byte) []byte {
	for _, c := range raw {
		b = append(b, hexDigits[c>>4], hexDigits[c&0xF])
	}
	return b
}

// jsonSafe marks the ASCII bytes encoding/json writes as they are (with
// HTML escaping, its default): printable, except '"', '\\', '<', '>', '&'.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

const (
	ones8  = 0x0101010101010101
	highs8 = 0x8080808080808080
)

// unsafe8 tests eight bytes at once for what is not jsonSafe: a byte
// with its high bit set (not ASCII), one below 0x20, '"' or '&' (0x22,
// 0x26: 0x22 but for bit 0x04), '<' or '>' (0x3c, 0x3e: 0x3c but for bit
// 0x02), '\\'. Each test finds whether some byte of a word is zero
// ((v - ones) &^ v has its high bit set exactly then) or below 0x20.
// The result has a high bit set when some byte of x is not jsonSafe, and
// only then (bits above the first such byte may be set too).
func unsafe8(x uint64) uint64 {
	quoteAmp := (x ^ 0x22*ones8) &^ (0x04 * ones8)
	angles := (x ^ 0x3c*ones8) &^ (0x02 * ones8)
	backslash := x ^ 0x5c*ones8
	return x | (x-0x20*ones8)&^x |
		(quoteAmp-ones8)&^quoteAmp | (angles-ones8)&^angles | (backslash-ones8)&^backslash
}

// safeWords is the index of the first 8-byte word of s, from i on, with
// a byte that is not jsonSafe (or the last whole word's end): the words
// skipped are all safe.
func safeWords(s string, i int) int {
	// Two words a round: their tests share one branch and the loop's
	// bookkeeping (a document's strings are mostly safe throughout).
	for ; i+16 <= len(s); i += 16 {
		if (unsafe8(word8(s, i))|unsafe8(word8(s, i+8)))&highs8 != 0 {
			break
		}
	}
	for ; i+8 <= len(s); i += 8 {
		if unsafe8(word8(s, i))&highs8 != 0 {
			break
		}
	}
	return i
}

// word8 is the 8 bytes of s from i as a little-endian word (one load).
func word8(s string, i int) uint64 {
	w := s[i : i+8]
	return uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
}

// safePrefix is the length of the longest prefix of s that is all
// jsonSafe: most strings of a document are that whole, and are copied as
// they are.
func safePrefix(s string) int {
	i := safeWords(s, 0)
	for ; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || !jsonSafe[c] {
			break
		}
	}
	return i
}

// appendJSONString is encoding/json's string encoding (appendString with
// escapeHTML).
func appendJSONString(dst []byte, s string) []byte {
	if s == "" {
		// (A decision's optional fields are mostly empty.)
		return append(dst, '"', '"')
	}
	i := safePrefix(s)
	if i == len(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	dst = append(dst, '"')
	start := 0
	for i < len(s) {
		// Most text is safe ASCII: skip it eight bytes at a time.
		i = safeWords(s, i)
		if i >= len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendJSONFloat is encoding/json's float64 encoding (finite values):
// like %g with ES6's exponent cutoffs, exponents not padded.
func appendJSONFloat(b []byte, f float64) []byte {
	if f >= 0 && f <= 1 && !math.Signbit(f) {
		// A confidence is mostly a number of hundredths (0.9, 0.85):
		// when f is the double nearest k/100, no other decimal of two
		// places or fewer digits is, so its shortest form (what
		// AppendFloat finds) is k's digits, trailing zeros dropped.
		if k := int(f*100 + 0.5); float64(k)/100 == f {
			return appendHundredths(b, k)
		}
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 -> e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendHundredths appends k/100 (0 <= k <= 100) as its shortest
// decimal: "0", "1", "0.5", "0.85", "0.07".
func appendHundredths(b []byte, k int) []byte {
	switch {
	case k == 0:
		return append(b, '0')
	case k == 100:
		return append(b, '1')
	}
	b = append(b, '0', '.', byte('0'+k/10))
	if k%10 != 0 {
		b = append(b, byte('0'+k%10))
	}
	return b
}
