package recovery

import (
	"time"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/recovery/internal/strategy"
)

// policy maps failure types (and DefaultEntry, NonIdempotentEntry) and
// in-flight guards to strategies.
type policy struct {
	entries  map[string]Strategy
	guards   map[string]Strategy       // by guard name (Options.GuardPolicy)
	breakers []strategy.CircuitBreaker // every distinct breaker, for RecordSuccess
}

// set replaces an entry (WithStrategy), collecting the breakers it nests.
func (p *policy) set(entry string, s Strategy) {
	p.entries[entry] = s
	seen := map[string]bool{}
	for _, b := range p.breakers {
		seen[b.Name] = true
	}
	collectBreakers(s, seen, &p.breakers)
}

func collectBreakers(s Strategy, seen map[string]bool, out *[]strategy.CircuitBreaker) {
	switch v := s.(type) {
	case strategy.CircuitBreaker:
		if !seen[v.Name] {
			seen[v.Name] = true
			*out = append(*out, v)
		}
		collectBreakers(v.Inner, seen, out)
	case strategy.Sequence:
		for _, st := range v.Steps {
			collectBreakers(st, seen, out)
		}
	case strategy.Chain:
		collectBreakers(v.Primary, seen, out)
		collectBreakers(v.Fallback, seen, out)
	}
}

// lookup returns the strategy for a failure type and the entry it came from.
func (p *policy) lookup(failureType string) (entry string, s Strategy) {
	if s, ok := p.entries[failureType]; ok && s != nil {
		return failureType, s
	}
	if s, ok := p.entries[DefaultEntry]; ok && s != nil {
		return DefaultEntry, s
	}
	return DefaultEntry, strategy.Escalate{}
}

// lookupGuard returns the strategy answering a trip of an in-flight guard
// and its path, ok false when the guard has no entry.
func (p *policy) lookupGuard(guard string) (path string, s Strategy, ok bool) {
	if s, ok := p.guards[guard]; ok && s != nil {
		return guardPolicyPath + "." + guard, s, true
	}
	return "", nil, false
}

// DefaultPolicy is the policy used for entries the config does not set.
func DefaultPolicy() map[string]StrategySpec {
	return map[string]StrategySpec{
		string(classifier.WrongToolCalled): {Kind: "retry_with_tool_manifest", MaxAttempts: 3},
		string(classifier.SchemaMismatch):  {Kind: "retry_with_tool_manifest", MaxAttempts: 2},
		string(classifier.ExternalFault): {Kind: "sequence", Steps: []StrategySpec{
			{Kind: "backoff_and_retry", MaxAttempts: 3, BaseDelay: time.Second, MaxDelay: 30 * time.Second},
			{Kind: "fallback", MaxAttempts: 1, Hint: "The service kept failing; switch to your fallback model, tool or cache."},
		}},
		string(classifier.Timeout):           {Kind: "backoff_and_retry", MaxAttempts: 3, BaseDelay: 2 * time.Second, MaxDelay: 30 * time.Second},
		string(classifier.LoopDetected):      {Kind: "replan", MaxAttempts: 2},
		string(classifier.ContextOverflow):   {Kind: "replan", MaxAttempts: 2},
		string(classifier.ConstraintIgnored): {Kind: "replan", MaxAttempts: 2},
		string(classifier.PlanIncomplete):    {Kind: "resume_from_subgoal", MaxAttempts: 2},
		string(classifier.Unknown):           {Kind: "escalate"},
		DefaultEntry:                         {Kind: "escalate"},
		NonIdempotentEntry:                   {Kind: "escalate"},
	}
}
