package triageprocessor

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triage-otel/triage/guard"
	"github.com/triage-otel/triage/recovery"
)

// Every guard through the processor, on spans fed two at a time with the
// root last: it trips once (the spans after the trip trip nothing more),
// its decision names it, the final decision of the run references it; the
// same run under a limit it does not reach (or without the pattern) gets
// no in-flight decision, and its final decision references none.
func TestEachGuardTripsOnceAndTheFinalReferencesIt(t *testing.T) {
	distinct := func(i int) string { return fmt.Sprintf(`{"city":"c%d"}`, i) }
	failing := turns(5, "get_weather", distinct, true) // 6 model calls of 110 tokens, 5 tool failures (503)
	onlyBudget := func(set func(*guard.Config)) func(*Config) {
		return func(c *Config) {
			c.Guards.RepeatedFailure.Enabled = false
			set(&c.Guards)
		}
	}
	cases := []struct {
		guard        string
		trip, noTrip func(*Config)
		spans        []timedSpan // tripping with trip
		okSpans      []timedSpan // with noTrip (nil: spans)
		failureType  string
		action       recovery.ActionKind
	}{{
		guard: "loop", spans: looping(6), okSpans: turns(6, "get_weather", distinct, false),
		failureType: "loop_detected", action: recovery.ActionReplan,
	}, {
		guard: "repeated_failure", spans: failing, okSpans: turns(2, "get_weather", distinct, true),
		failureType: "external_fault", action: recovery.ActionRetry,
	}, {
		guard: "tokens", spans: failing, failureType: "unknown", action: recovery.ActionAbort,
		trip:   onlyBudget(func(g *guard.Config) { g.Tokens.MaxPerRun = 300 }),
		noTrip: onlyBudget(func(g *guard.Config) { g.Tokens.MaxPerRun = 10_000 }),
	}, {
		guard: "cost", spans: failing, failureType: "unknown", action: recovery.ActionAbort,
		// 100 input + 10 output tokens per call: 0.2 per call.
		trip: onlyBudget(func(g *guard.Config) {
			g.Cost.MaxPerRun = 0.5
			g.Cost.Prices = map[string]guard.Price{"m": {InputPerMillion: 1000, OutputPerMillion: 10_000}}
		}),
		noTrip: onlyBudget(func(g *guard.Config) {
			g.Cost.MaxPerRun = 50
			g.Cost.Prices = map[string]guard.Price{"m": {InputPerMillion: 1000, OutputPerMillion: 10_000}}
		}),
	}, {
		guard: "wall_clock", spans: failing, failureType: "unknown", action: recovery.ActionAbort,
		trip:   onlyBudget(func(g *guard.Config) { g.WallClock.MaxPerRun = 25 * time.Millisecond }),
		noTrip: onlyBudget(func(g *guard.Config) { g.WallClock.MaxPerRun = time.Hour }),
	}}
	for i, tc := range cases {
		t.Run(tc.guard, func(t *testing.T) {
			h := newHarness(t, tc.trip)
			per := sendEach(h, traceID(uint64(200+i)), tc.spans, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2)
			require.Len(t, h.decisionSpans(), 1, "one in-flight decision for the run, at most one per guard")
			trippedIn := -1
			for b, ds := range per {
				if len(ds) > 0 {
					trippedIn = b
				}
			}
			require.Less(t, trippedIn, len(per)-1, "tripped before the root's batch")
			f := decisionOf(t, h.decisionSpans()[0])
			assert.Equal(t, recovery.PhaseInFlight, f.Phase)
			assert.Equal(t, tc.guard, f.Guard)
			assert.Equal(t, tc.failureType, f.FailureType)
			assert.Equal(t, tc.action, f.Action.Kind)
			final, ok := finalOf(t, h)
			require.True(t, ok, "the run failed: a final decision")
			assert.Equal(t, recovery.PhaseFinal, final.Phase)
			assert.Equal(t, f.DecisionID, final.InFlightDecisionID, "the final decision references the in-flight one")
			if final.FailureType == f.FailureType {
				assert.Equal(t, f.Attempt, final.Attempt, "the same failure counted once in the session")
			}
			assert.Equal(t, len(tc.spans), inputSpans(h), "every input span forwarded once")

			// Not reached: no in-flight decision.
			okSpans := tc.okSpans
			if okSpans == nil {
				okSpans = tc.spans
			}
			quiet := newHarness(t, tc.noTrip)
			sendEach(quiet, traceID(uint64(300+i)), okSpans, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2)
			assert.Empty(t, quiet.decisionSpans(), "no in-flight decision below the limit or without the pattern")
			if final, ok := finalOf(t, quiet); ok {
				assert.Empty(t, final.InFlightDecisionID)
			}
		})
	}
}
