package recovery

import (
	"regexp"
	"strings"
)

// cardCandidate finds runs of 13 to 19 digits, optionally grouped by single
// spaces or dashes, that do not continue a longer number. Which of them are
// card numbers is decided by cardNumber (prefix and Luhn check), so order
// ids, timestamps and phone numbers stay.
var cardCandidate = regexp.MustCompile(`(^|[^0-9])([0-9](?:[ -]?[0-9]){12,18})`)

// redactCardNumbers replaces payment card numbers (personal data, PCI).
func redactCardNumbers(s string) string {
	if !mayHoldCard(s) {
		return s
	}
	matches := cardCandidate.FindAllStringSubmatchIndex(s, -1)
	if matches == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		start, end := m[4], m[5]
		// The run must not go on with another digit (a longer number).
		if end < len(s) && s[end] >= '0' && s[end] <= '9' {
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

// mayHoldCard reports whether s has what cardCandidate needs: 13 digits in
// a row, each two separated by at most one space or dash. Most text (ids,
// hex, timestamps) has not, and skips the regular expression.
func mayHoldCard(s string) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			if run++; run >= 13 {
				return true
			}
		case (c == ' ' || c == '-') && run > 0 && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			// one separator inside a run
		default:
			run = 0
		}
	}
	return false
}

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
