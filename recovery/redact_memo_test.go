package recovery

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// Text answers from its memo exactly what it computes.
func TestRedactorTextMemo(t *testing.T) {
	r := NewRedactor(RedactorOptions{MaxLen: 40})
	inputs := []string{"", "travel-assistant", "key_AKIAABCDEFGHIJKLMNOP", "Bearer abcdefghijklmnop", "mail me: a.b@example.com",
		"4111 1111 1111 1111", strings.Repeat("x", maxMemoTextLen), strings.Repeat("y", maxMemoTextLen+1), "bad \xff utf8"}
	for _, s := range inputs {
		want := r.Truncate(r.Redact(s))
		if len(s) > 40+redactSlack {
			continue
		}
		assert.Equal(t, want, r.Text(s), "first %q", s)
		assert.Equal(t, want, r.Text(s), "remembered %q", s)
	}
	// Bounded: past maxMemoTexts inputs the memo starts over.
	for i := range maxMemoTexts + 10 {
		r.Text(fmt.Sprintf("name-%d", i))
	}
	assert.LessOrEqual(t, len(r.memo.m), maxMemoTexts)
	assert.Equal(t, "[REDACTED]", r.Text("sk-proj-abcdefghijklmnopqrstuvwx"))
}

// The memo keeps neither its keys nor its answers as views of the caller's
// text: a name can be a substring of a whole request (a message history),
// which the memo would otherwise pin after the request is gone.
func TestRedactorTextMemoOwnsItsStrings(t *testing.T) {
	r := NewRedactor(RedactorOptions{MaxLen: 8})
	request := strings.Repeat(`{"name":"search-flights"}`, 1000)
	for _, s := range []string{request[9:23], request[9:12]} { // cut by MaxLen, and unchanged
		got := r.Text(s)
		assert.Equal(t, r.Truncate(r.Redact(s)), got)
		for k, v := range r.memo.m {
			assert.False(t, sharesMemory(k, request), "key %q is a view of the request", k)
			assert.False(t, sharesMemory(v, request), "answer %q is a view of the request", v)
		}
	}
	assert.Len(t, r.memo.m, 2)
}

// sharesMemory reports whether s's bytes lie inside within's.
func sharesMemory(s, within string) bool {
	if s == "" || within == "" {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(within)))
	return p >= lo && p < lo+uintptr(len(within))
}
