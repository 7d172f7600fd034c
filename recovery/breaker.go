package recovery

import "time"

// BreakerPhase is the state of a circuit breaker.
type BreakerPhase string

const (
	BreakerClosed   BreakerPhase = "closed"
	BreakerOpen     BreakerPhase = "open"
	BreakerHalfOpen BreakerPhase = "half_open"
)

// BreakerState is the persisted state of one circuit breaker. It is small and
// serialisable so that the Redis store can share it between collectors.
type BreakerState struct {
	Phase BreakerPhase `json:"phase,omitempty"` // "" reads as closed
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

// BreakerSettings are the thresholds of a circuit breaker.
type BreakerSettings struct {
	Threshold int           // failures within Window that open the breaker
	Window    time.Duration // sliding window for Threshold
	Cooldown  time.Duration // time open before a probe is admitted; also the probe's time to report
}

// breakerVerdict is what a failure may do while passing through a breaker.
type breakerVerdict int

const (
	breakerPass  breakerVerdict = iota // closed: the inner strategy answers
	breakerProbe                       // half-open: this failure is the one admitted probe
	breakerDeny                        // open (or a probe is already out): open-path answer
)

func (s *BreakerState) phase() BreakerPhase {
	if s.Phase == "" {
		return BreakerClosed
	}
	return s.Phase
}

// onFailure records a failure at now from session and says how it passes.
//
// CLOSED: the failure joins the window; Threshold failures inside Window open
// the breaker (and this failure is denied). OPEN: denied until Cooldown has
// elapsed; the first failure after that moves to HALF_OPEN and is admitted as
// the probe. HALF_OPEN: exactly one probe is out at a time. A failure of the
// probe's own session means the probe failed: the breaker opens again.
// Failures of other sessions are denied. A probe that reports nothing within
// Cooldown is presumed lost and the next failure becomes the new probe.
func (s *BreakerState) onFailure(cfg BreakerSettings, now time.Time, session string) breakerVerdict {
	ms := now.UnixMilli()
	switch s.phase() {
	case BreakerOpen:
		if ms-s.OpenedAt < cfg.Cooldown.Milliseconds() {
			return breakerDeny
		}
		s.Phase = BreakerHalfOpen
		s.ProbeAt, s.ProbeSession = ms, session
		return breakerProbe
	case BreakerHalfOpen:
		if s.ProbeAt != 0 && session == s.ProbeSession {
			s.open(ms)
			return breakerDeny
		}
		if s.ProbeAt == 0 || ms-s.ProbeAt >= cfg.Cooldown.Milliseconds() {
			s.ProbeAt, s.ProbeSession = ms, session
			return breakerProbe
		}
		return breakerDeny
	default:
		s.Phase = BreakerClosed
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
			return breakerDeny
		}
		return breakerPass
	}
}

// onSuccess records a successful run; a half-open breaker closes. It
// reports whether the state changed.
func (s *BreakerState) onSuccess() bool {
	if s.phase() != BreakerHalfOpen {
		return false
	}
	*s = BreakerState{Phase: BreakerClosed}
	return true
}

func (s *BreakerState) open(ms int64) {
	*s = BreakerState{Phase: BreakerOpen, OpenedAt: ms}
}
