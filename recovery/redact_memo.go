package recovery

import (
	"strings"
	"sync"
)

// The names redacted for every run (service, agent, tool, session, policy
// hints) repeat from run to run, and redacting one means running every
// credential pattern over it. Text remembers its answers for short inputs:
// redaction depends only on the input and the redactor's configuration.

const (
	// maxMemoTextLen is the longest input Text remembers.
	maxMemoTextLen = 256
	// maxMemoTexts bounds the remembered inputs; when full, the memo
	// starts over.
	maxMemoTexts = 4096
)

type textMemo struct {
	mu sync.RWMutex
	m  map[string]string
}

func (t *textMemo) get(s string) (string, bool) {
	t.mu.RLock()
	v, ok := t.m[s]
	t.mu.RUnlock()
	return v, ok
}

func (t *textMemo) put(s, v string) {
	t.mu.Lock()
	if t.m == nil || len(t.m) >= maxMemoTexts {
		t.m = make(map[string]string)
	}
	// Key and answer are cloned: s may be a view of a whole request's text
	// (a name decoded from a message history), and the answer is often s
	// itself or a cut of it. The memo outlives the request, so what it
	// keeps must not pin that text.
	k := strings.Clone(s)
	if v == s {
		v = k
	} else {
		v = strings.Clone(v)
	}
	t.m[k] = v
	t.mu.Unlock()
}
