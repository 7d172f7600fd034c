package recovery

import (
	"time"

	"github.com/triage-otel/triage/classifier"
)

// Policy maps failure types to strategies.
type Policy struct {
	entries  map[string]Strategy
	guards   map[string]Strategy // by guard name (Config.GuardPolicy)
	breakers []CircuitBreaker    // every distinct breaker, for RecordSuccess
}

// NewPolicy builds a policy from strategies keyed by failure type (and
// DefaultEntry), for callers that compose strategies in Go rather than in a
// config. A missing default escalates.
func NewPolicy(entries map[string]Strategy) *Policy {
	p := &Policy{entries: map[string]Strategy{}}
	seen := map[string]bool{}
	for k, s := range entries {
		if s == nil {
			continue
		}
		p.entries[k] = s
		collectBreakers(s, seen, &p.breakers)
	}
	if _, ok := p.entries[DefaultEntry]; !ok {
		p.entries[DefaultEntry] = Escalate{}
	}
	return p
}

func collectBreakers(s Strategy, seen map[string]bool, out *[]CircuitBreaker) {
	switch v := s.(type) {
	case CircuitBreaker:
		if !seen[v.Name] {
			seen[v.Name] = true
			*out = append(*out, v)
		}
		collectBreakers(v.Inner, seen, out)
	case Sequence:
		for _, st := range v.Steps {
			collectBreakers(st, seen, out)
		}
	case Chain:
		collectBreakers(v.Primary, seen, out)
		collectBreakers(v.Fallback, seen, out)
	}
}

// Lookup returns the strategy for a failure type and the entry it came from.
func (p *Policy) Lookup(failureType string) (entry string, s Strategy) {
	if s, ok := p.entries[failureType]; ok && s != nil {
		return failureType, s
	}
	if s, ok := p.entries[DefaultEntry]; ok && s != nil {
		return DefaultEntry, s
	}
	return DefaultEntry, Escalate{}
}

// lookupGuard returns the strategy answering a trip of an in-flight guard
// and its path, ok false when the guard has no entry.
func (p *Policy) lookupGuard(guard string) (path string, s Strategy, ok bool) {
	if s, ok := p.guards[guard]; ok && s != nil {
		return guardPolicyPath + "." + guard, s, true
	}
	return "", nil, false
}

// DefaultPolicy is the policy used for entries the config does not set.
func DefaultPolicy() map[string]StrategyConfig {
	return map[string]StrategyConfig{
		string(classifier.WrongToolCalled): {Kind: "retry_with_tool_manifest", MaxAttempts: 3},
		string(classifier.SchemaMismatch):  {Kind: "retry_with_tool_manifest", MaxAttempts: 2},
		string(classifier.ExternalFault): {Kind: "sequence", Steps: []StrategyConfig{
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
