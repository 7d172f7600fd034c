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
	// The key is cloned: s may share memory with a whole request.
	t.m[strings.Clone(s)] = v
	t.mu.Unlock()
}
