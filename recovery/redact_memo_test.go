package recovery

import (
	"fmt"
	"strings"
	"testing"

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
