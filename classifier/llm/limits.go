package llm

import (
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/triage-otel/triage/trajectory"
)

// Call caps: per session (a session that fails again and again costs at
// most max_calls_per_session calls) and per minute (a burst of new error
// shapes costs at most max_calls_per_minute). Cache hits are free.

// sessionCalls counts model calls per session, bounded: an evicted
// session starts its budget again.
type sessionCalls struct {
	mu    sync.Mutex
	max   int
	calls *lru.Cache[string, int]
}

func (s *sessionCalls) take(session string) bool {
	if s.max <= 0 || session == "" {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := s.calls.Get(session)
	if n >= s.max {
		return false
	}
	s.calls.Add(session, n+1)
	return true
}

// giveBack returns a call taken for a session that was not made.
func (s *sessionCalls) giveBack(session string) {
	if s.max <= 0 || session == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.calls.Get(session); ok && n > 0 {
		s.calls.Add(session, n-1)
	}
}

// minuteWindow allows at most max calls in any 60 s: a ring of the last
// max call times.
type minuteWindow struct {
	mu    sync.Mutex
	times []time.Time
	next  int
}

func newMinuteWindow(max int) *minuteWindow {
	if max <= 0 {
		return nil
	}
	return &minuteWindow{times: make([]time.Time, max)}
}

func (w *minuteWindow) take(now time.Time) bool {
	if w == nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	oldest := w.times[w.next]
	if !oldest.IsZero() && now.Sub(oldest) < time.Minute {
		return false
	}
	w.times[w.next] = now
	w.next = (w.next + 1) % len(w.times)
	return true
}

// callSession is the key MaxCallsPerSession counts a run's calls under: its
// session, or for a run without one its trace (a NUL-prefixed key no session
// attribute value collides with in practice), so a trace of many failing
// session-less runs cannot spend the minute's whole budget. A run with
// neither is capped by MaxCallsPerMinute only.
func callSession(run *trajectory.Run) string {
	switch {
	case run.Session != "":
		return run.Session
	case !run.TraceID.IsEmpty():
		return "\x00trace " + run.TraceID.String()
	}
	return ""
}
