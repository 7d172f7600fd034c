package recovery

import (
	"strings"
)

// Card candidates are runs of 13 to 19 digits, optionally grouped by single
// spaces or dashes, that do not continue a longer number. Which of them are
// card numbers is decided by cardNumber (prefix and Luhn check), so order
// ids, timestamps and phone numbers stay. nextCardCandidate finds what
// the regular expression (^|[^0-9])([0-9](?:[ -]?[0-9]){12,18}) finds with
// FindAllStringSubmatchIndex (its second group), in one pass without
// backtracking; the tests hold it to that expression.

// redactCardNumbers replaces payment card numbers (personal data, PCI).
func redactCardNumbers(s string) string {
	var b strings.Builder
	last := 0
	for from := 0; ; {
		start, end, ok := nextCardCandidate(s, from)
		if !ok {
			break
		}
		from = end
		// The run must not go on with another digit (a longer number).
		if end < len(s) && isDigit(s[end]) {
			continue
		}
		if !cardNumber(s[start:end]) {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(Redacted)
		last = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// nextCardCandidate returns the first candidate run [start, end) at or
// after from (the end of the previous one, a digit, or 0): a run starts at
// a digit that does not follow one and is extended greedily, a digit at a
// time or a separator and a digit, up to 19 digits; it counts with 13 or
// more.
func nextCardCandidate(s string, from int) (start, end int, ok bool) {
	for j := from; j < len(s); j++ {
		if !isDigit(s[j]) || j > 0 && isDigit(s[j-1]) {
			continue
		}
		e, digits := j+1, 1
		for digits < 19 {
			if e < len(s) && isDigit(s[e]) {
				e, digits = e+1, digits+1
			} else if e+1 < len(s) && (s[e] == ' ' || s[e] == '-') && isDigit(s[e+1]) {
				e, digits = e+2, digits+1
			} else {
				break
			}
		}
		if digits >= 13 {
			return j, e, true
		}
	}
	return 0, 0, false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// cardNumber reports whether a digit run (with separators) has the length
// and issuer prefix of a payment card and passes the Luhn check.
func cardNumber(run string) bool {
	digits := make([]byte, 0, 19)
	for i := 0; i < len(run); i++ {
		if c := run[i]; c >= '0' && c <= '9' {
			digits = append(digits, c)
		}
	}
	n := len(digits)
	if n < 13 || n > 19 || !cardIssuer(digits) {
		return false
	}
	sum := 0
	for i := range n {
		d := int(digits[n-1-i] - '0')
		if i%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// cardIssuer reports whether the digits start like a card of a major
// network: Visa 4, Mastercard 51–55 and 2221–2720, American Express 34/37,
// Diners/JCB 30, 36, 38, 35, Discover/UnionPay/Maestro 6.
func cardIssuer(d []byte) bool {
	switch d[0] {
	case '4', '6':
		return true
	case '5':
		return d[1] >= '1' && d[1] <= '5'
	case '2':
		p := int(d[1]-'0')*100 + int(d[2]-'0')*10 + int(d[3]-'0')
		return p >= 221 && p <= 720
	case '3':
		return d[1] == '4' || d[1] == '7' || d[1] == '0' || d[1] == '5' || d[1] == '6' || d[1] == '8'
	}
	return false
}
