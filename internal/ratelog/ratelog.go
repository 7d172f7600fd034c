// Package ratelog logs a condition that repeats under load (every batch,
// every request) at most once per interval, with how often it happened.
package ratelog

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// Warning is one such condition; the zero value is not usable, see New.
type Warning struct {
	msg   string
	every time.Duration

	mu      sync.Mutex
	last    time.Time
	pending int64
}

// New returns a warning logged with msg at most once per every.
func New(msg string, every time.Duration) *Warning {
	return &Warning{msg: msg, every: every}
}

// Log records n occurrences and writes the warning if the interval has
// passed since the last line; its count field is how often the condition
// happened since then (this time included).
func (w *Warning) Log(logger *zap.Logger, n int64, fields ...zap.Field) {
	w.mu.Lock()
	w.pending += n
	now := time.Now()
	if !w.last.IsZero() && now.Sub(w.last) < w.every {
		w.mu.Unlock()
		return
	}
	count := w.pending
	w.pending, w.last = 0, now
	w.mu.Unlock()
	logger.Warn(w.msg, append([]zap.Field{zap.Int64("count", count)}, fields...)...)
}
