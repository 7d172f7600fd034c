package recovery

import (
	"errors"
	"fmt"
	"time"

	"github.com/triage-otel/triage/recovery/internal/store"
)

// Policy paths of the session caps, as the decision's policy names them.
const (
	capMaxTotalAttempts    = "max_total_attempts"
	capMaxRecoveryDuration = "max_recovery_duration"
)

// sessionCap escalates a failure of a session past one of its caps across
// failure types: more failures than max_total_attempts, or recovering for
// longer than max_recovery_duration since the session's first failure.
func (e *Engine) sessionCap(counts store.Attempts, now time.Time) (Result, bool) {
	if m := e.maxTotalAttempts; m > 0 && counts.Total > m {
		return Result{
			Action: Action{Kind: ActionEscalate,
				Reason: fmt.Sprintf("session failed %d times (all types), more than max_total_attempts %d", counts.Total, m)},
			Path: capMaxTotalAttempts, Leaf: string(ActionEscalate), Attempt: counts.Type, MaxAttempts: m,
		}, true
	}
	if m := e.maxRecoveryDuration; m > 0 && !counts.First.IsZero() {
		if d := now.Sub(counts.First); d > m {
			return Result{
				Action: Action{Kind: ActionEscalate,
					Reason: fmt.Sprintf("session has been recovering for %s since its first failure, longer than max_recovery_duration %s", d.Round(time.Second), m)},
				Path: capMaxRecoveryDuration, Leaf: string(ActionEscalate), Attempt: counts.Type, MaxAttempts: Unlimited,
			}, true
		}
	}
	return Result{}, false
}

func (c *Options) validateCaps() error {
	var errs []error
	if c.MaxTotalAttempts < 0 {
		errs = append(errs, fmt.Errorf("max_total_attempts: must not be negative, got %d", c.MaxTotalAttempts))
	}
	if c.MaxRecoveryDuration < 0 {
		errs = append(errs, fmt.Errorf("max_recovery_duration: must not be negative, got %v", c.MaxRecoveryDuration))
	}
	if _, err := compileToolPatterns(c.NonIdempotentTools); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
