// Package breaker is the state machine of the recovery circuit breakers:
// the persisted State of one breaker, its transitions on failures and
// successes, and the keys that split a breaker by scope. The strategy that
// consults it is recovery/internal/strategy's CircuitBreaker; the stores
// persist State.
package breaker

import "time"

// Phase is the state of a circuit breaker.
type Phase string

const (
	Closed   Phase = "closed"
	Open     Phase = "open"
	HalfOpen Phase = "half_open"
)

// State is the persisted state of one circuit breaker. It is small and
// serialisable so that the Redis store can share it between collectors.
type State struct {
	Phase Phase `json:"phase,omitempty"` // "" reads as closed
	// Failures are the times (Unix ms) of the latest failures while closed,
	// oldest first, at most Threshold of them: enough to tell whether
	// Threshold failures fell inside the window.
	Failures []int64 `json:"failures,omitempty"`
	OpenedAt int64   `json:"opened_at,omitempty"`
	// ProbeAt and ProbeSession identify the single probe admitted while
	// half-open (ProbeAt 0: none admitted yet).
	ProbeAt      int64  `json:"probe_at,omitempty"`
	ProbeSession string `json:"probe_session,omitempty"`
}

// Settings are the thresholds of a circuit breaker.
type Settings struct {
	Threshold int           // failures within Window that open the breaker
	Window    time.Duration // sliding window for Threshold
	Cooldown  time.Duration // time open before a probe is admitted; also the probe's time to report
}

// Verdict is what a failure may do while passing through a breaker.
type Verdict int

const (
	Pass  Verdict = iota // closed: the inner strategy answers
	Probe                // half-open: this failure is the one admitted probe
	Deny                 // open (or a probe is already out): open-path answer
)

// Current is the phase, closed when none was recorded.
func (s *State) Current() Phase {
	if s.Phase == "" {
		return Closed
	}
	return s.Phase
}

// OnFailure records a failure at now from session and says how it passes.
//
// CLOSED: the failure joins the window; Threshold failures inside Window open
// the breaker (and this failure is denied). OPEN: denied until Cooldown has
// elapsed; the first failure after that moves to HALF_OPEN and is admitted as
// the probe. HALF_OPEN: exactly one probe is out at a time. A failure of the
// probe's own session means the probe failed: the breaker opens again.
// Failures of other sessions are denied. A probe that reports nothing within
// Cooldown is presumed lost and the next failure becomes the new probe.
func (s *State) OnFailure(cfg Settings, now time.Time, session string) Verdict {
	ms := now.UnixMilli()
	switch s.Current() {
	case Open:
		if ms-s.OpenedAt < cfg.Cooldown.Milliseconds() {
			return Deny
		}
		s.Phase = HalfOpen
		s.ProbeAt, s.ProbeSession = ms, session
		return Probe
	case HalfOpen:
		if s.ProbeAt != 0 && session == s.ProbeSession {
			s.open(ms)
			return Deny
		}
		if s.ProbeAt == 0 || ms-s.ProbeAt >= cfg.Cooldown.Milliseconds() {
			s.ProbeAt, s.ProbeSession = ms, session
			return Probe
		}
		return Deny
	default:
		s.Phase = Closed
		cutoff := ms - cfg.Window.Milliseconds()
		kept := s.Failures[:0]
		for _, t := range s.Failures {
			if t > cutoff {
				kept = append(kept, t)
			}
		}
		kept = append(kept, ms)
		threshold := max(cfg.Threshold, 1)
		if len(kept) > threshold {
			kept = kept[len(kept)-threshold:]
		}
		s.Failures = kept
		if len(kept) >= threshold {
			s.open(ms)
			return Deny
		}
		return Pass
	}
}

// OnSuccess records a successful run; a half-open breaker closes. It
// reports whether the state changed.
func (s *State) OnSuccess() bool {
	if s.Current() != HalfOpen {
		return false
	}
	*s = State{Phase: Closed}
	return true
}

func (s *State) open(ms int64) {
	*s = State{Phase: Open, OpenedAt: ms}
}
