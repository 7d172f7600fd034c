package recovery

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/triage-otel/triage/classifier"
)

// Engine decides recovery actions: policy × attempt history × breakers.
// It is safe for concurrent use.
type Engine struct {
	policy         *Policy
	store          Store
	memory         *MemoryStore
	failover       *FailoverStore
	clock          Clock
	resetOnSuccess bool
	rand           func() float64
	newID          func() (string, error)
	redactor       *Redactor

	nonIdempotentTools  []toolPattern
	maxTotalAttempts    int
	maxRecoveryDuration time.Duration
}

// Option adjusts an Engine.
type Option func(*engineOptions)

type engineOptions struct {
	clock      Clock
	store      Store
	onDegraded func(op string, err error)
	rand       func() float64
	policy     *Policy
	redactor   *Redactor
}

// WithClock sets the clock (tests).
func WithClock(c Clock) Option { return func(o *engineOptions) { o.clock = c } }

// WithStore replaces the store built from the config.
func WithStore(s Store) Option { return func(o *engineOptions) { o.store = s } }

// WithOnDegraded is called for every store call served from memory because
// Redis failed or timed out; a processor turns it into telemetry.
func WithOnDegraded(f func(op string, err error)) Option {
	return func(o *engineOptions) { o.onDegraded = f }
}

// WithRand sets the source of jitter, a function returning [0, 1).
func WithRand(f func() float64) Option { return func(o *engineOptions) { o.rand = f } }

// WithPolicy replaces the policy built from the config (strategies composed in Go).
func WithPolicy(p *Policy) Option { return func(o *engineOptions) { o.policy = p } }

// WithRedactor replaces the redactor applied to the free text (reasons)
// that the decision copies from its input.
func WithRedactor(r *Redactor) Option { return func(o *engineOptions) { o.redactor = r } }

// New validates cfg and returns an engine. With cfg.History.Redis.Endpoint
// set, history and breakers live in Redis and degrade to memory when it
// fails.
func New(cfg Config, opts ...Option) (*Engine, error) {
	var o engineOptions
	for _, f := range opts {
		f(&o)
	}
	if err := cfg.History.validate(); err != nil {
		return nil, err
	}
	if err := cfg.validateCaps(); err != nil {
		return nil, err
	}
	patterns, _ := compileToolPatterns(cfg.NonIdempotentTools)
	policy := o.policy
	if policy == nil {
		var err error
		if policy, err = cfg.buildPolicy(); err != nil {
			return nil, err
		}
	}
	if o.clock == nil {
		o.clock = systemClock{}
	}
	if o.rand == nil {
		o.rand = rand.Float64
	}
	if o.redactor == nil {
		o.redactor = NewRedactor(RedactorOptions{})
	}
	e := &Engine{
		policy:         policy,
		clock:          o.clock,
		resetOnSuccess: cfg.History.ResetOnSuccess,
		rand:           o.rand,
		redactor:       o.redactor,

		nonIdempotentTools:  patterns,
		maxTotalAttempts:    cfg.MaxTotalAttempts,
		maxRecoveryDuration: cfg.MaxRecoveryDuration,
		newID: func() (string, error) {
			id, err := uuid.NewV7()
			return id.String(), err
		},
	}
	h := cfg.History
	switch {
	case o.store != nil:
		e.store = o.store
	default:
		e.memory = NewMemoryStore(MemoryStoreOptions{
			SessionTTL: h.TTL, MaxSessions: h.MaxSessions,
			BreakerTTL: h.BreakerTTL, MaxBreakers: h.MaxBreakers, Clock: o.clock,
		})
		e.store = e.memory
		if h.Redis.Endpoint != "" {
			e.failover = &FailoverStore{
				Primary: NewRedisStore(RedisStoreOptions{
					Endpoint: h.Redis.Endpoint, Username: h.Redis.Username, Password: string(h.Redis.Password),
					DB: h.Redis.DB, KeyPrefix: h.Redis.KeyPrefix, Timeout: h.Redis.Timeout,
					SessionTTL: h.TTL, BreakerTTL: h.BreakerTTL,
				}),
				Fallback:        e.memory,
				Timeout:         h.Redis.Timeout,
				RecheckInterval: h.Redis.RecheckInterval,
				Clock:           o.clock,
				OnDegraded:      o.onDegraded,
			}
			e.store = e.failover
		}
	}
	return e, nil
}

// Stats are the engine's counters, for telemetry.
type Stats struct {
	Memory   MemoryStats
	Failover FailoverStats // zero without Redis
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	var s Stats
	if e.memory != nil {
		s.Memory = e.memory.Stats()
	}
	if e.failover != nil {
		s.Failover = e.failover.Stats()
	}
	return s
}

// Close releases the store (the Redis connections).
func (e *Engine) Close() error { return e.store.Close() }

// Policy returns the engine's policy.
func (e *Engine) Policy() *Policy { return e.policy }

// Decide records the failure in the session's history and returns the
// decision for it. A final decision whose run already had an in-flight
// decision of the same failure type (in.InFlight) takes that decision's
// attempt and answer instead of deciding again.
func (e *Engine) Decide(ctx context.Context, in Input) (Decision, error) {
	in, err := e.normalize(in)
	if err != nil {
		return Decision{}, err
	}
	if d, ok := e.reuseInFlight(in); ok {
		return d, nil
	}
	path, strategy, isGuard := e.policy.lookupGuard(in.Guard)
	if !isGuard {
		path, strategy = e.policy.Lookup(in.FailureType)
	}
	now := e.clock.Now()
	counts, err := e.store.Attempt(ctx, in.SessionID, in.FailureType, now)
	// The store keys on the full session id (hashed when long); the
	// document carries a redacted, bounded copy (a conversation id can
	// carry a key or an e-mail address).
	in.SessionID = e.redactor.Text(in.SessionID)
	if err != nil {
		return Decision{}, fmt.Errorf("recovery history: %w", err)
	}
	attempt := counts.Type
	env := &Env{Ctx: ctx, Input: in, Now: now, store: e.store, rand: e.rand}
	budget := strategy.MaxAttempts()
	var res Result
	if capped, ok := e.sessionCap(counts, now); ok {
		res = capped
	} else if attempt > budget {
		res = exhaustedResult(path, attempt, budget, in.FailureType)
	} else if res, err = strategy.Decide(env, path, attempt); err != nil {
		return Decision{}, err
	}
	if res.Action.Kind == ActionRetry {
		if why, ok := e.nonIdempotent(in); ok {
			if res, err = e.noRetry(env, attempt, why); err != nil {
				return Decision{}, err
			}
			budget = res.MaxAttempts
		}
	}
	if res.Action.Reason == "" && in.Reason != "" && (res.Action.Kind == ActionEscalate || res.Action.Kind == ActionAbort) {
		res.Action.Reason = in.Reason
	}
	if res.Action.Reason != in.Reason { // in.Reason is redacted already
		res.Action.Reason = e.redactor.Text(res.Action.Reason)
	}
	id, err := e.newID()
	if err != nil {
		return Decision{}, fmt.Errorf("decision id: %w", err)
	}
	maxAttempts := budget
	if maxAttempts >= Unlimited {
		maxAttempts = 0
	}
	d := Decision{
		Version:     DecisionVersion,
		Phase:       in.Phase,
		Guard:       in.Guard,
		DecisionID:  id,
		TraceID:     in.TraceID,
		SpanID:      in.SpanID,
		SessionID:   in.SessionID,
		Service:     in.Service,
		Agent:       in.Agent,
		Tool:        in.Tool,
		FailureType: in.FailureType,
		Confidence:  in.Confidence,
		Evidence:    in.Evidence,
		Action:      res.Action,
		Attempt:     attempt,
		MaxAttempts: maxAttempts,
		Policy:      res.Path + ":" + res.Leaf,
		Breaker:     res.Breaker,
		Time:        now.UTC().Format(time.RFC3339Nano),
	}
	if in.InFlight != nil {
		d.InFlightDecisionID = in.InFlight.DecisionID
	}
	return d, nil
}

// normalize checks the ids and makes the free text of the input safe to
// publish.
func (e *Engine) normalize(in Input) (Input, error) {
	in.TraceID = strings.ToLower(in.TraceID)
	in.SpanID = strings.ToLower(in.SpanID)
	if !isHex(in.TraceID, 32) {
		return in, fmt.Errorf("recovery input: trace id %q is not 32 hex digits", truncateBytes(in.TraceID, 64))
	}
	if !isHex(in.SpanID, 16) {
		return in, fmt.Errorf("recovery input: span id %q is not 16 hex digits", truncateBytes(in.SpanID, 64))
	}
	if _, ok := classifier.ParseFailureType(in.FailureType); !ok {
		if in.Reason == "" && in.FailureType != "" {
			in.Reason = "unrecognised failure type " + in.FailureType
		}
		in.FailureType = string(classifier.Unknown)
	}
	if math.IsNaN(in.Confidence) || in.Confidence < 0 {
		in.Confidence = 0
	} else if in.Confidence > 1 {
		in.Confidence = 1
	}
	if in.SessionID == "" {
		in.SessionID = "trace:" + in.TraceID
	}
	switch in.Phase {
	case PhaseInFlight:
		in.InFlight = nil
	default:
		in.Phase, in.Guard = PhaseFinal, ""
	}
	in.Guard = e.redactor.Truncate(in.Guard)
	in.NonIdempotent = e.redactor.Text(in.NonIdempotent)
	// Names come from the instrumented application: redacted like free
	// text (an agent or tool name can carry a key).
	in.Service = e.redactor.Text(in.Service)
	in.Agent = e.redactor.Text(in.Agent)
	in.Tool = e.redactor.Text(in.Tool)
	in.Subgoal = e.redactor.Text(in.Subgoal)
	in.CheckpointID = e.redactor.Text(in.CheckpointID)
	in.Reason = e.redactor.Text(in.Reason)
	ev := make([]Evidence, 0, len(in.Evidence))
	for _, x := range in.Evidence {
		x.SpanID = strings.ToLower(x.SpanID)
		if !isHex(x.SpanID, 16) {
			x.SpanID = ""
		}
		x.Signal = e.redactor.Truncate(x.Signal)
		x.Rule = e.redactor.Truncate(x.Rule)
		x.Reason = e.redactor.Text(x.Reason)
		ev = append(ev, x)
	}
	in.Evidence = ev
	return in, nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// SuccessInput describes a run that ended well.
type SuccessInput struct {
	SessionID string // empty: nothing to reset
	Service   string
	Agent     string
	Tools     []string // tools the run called, for tool-scoped breakers
}

// RecordSuccess tells the engine a run succeeded: half-open breakers in its
// scope close, and with history.reset_on_success the session's attempt
// counters are forgotten.
func (e *Engine) RecordSuccess(ctx context.Context, s SuccessInput) error {
	var errs []error
	for _, b := range e.policy.breakers {
		var keys []string
		if normScope(b.Scope) == ScopeTool {
			for _, t := range s.Tools {
				keys = append(keys, breakerKey(b.Name, b.Scope, t))
			}
		} else {
			keys = []string{breakerKey(b.Name, b.Scope, scopeValue(b.Scope, s.Service, s.Agent, ""))}
		}
		for _, k := range keys {
			if err := e.store.UpdateBreaker(ctx, k, (*BreakerState).onSuccess); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if e.resetOnSuccess && s.SessionID != "" {
		if err := e.store.ResetSession(ctx, s.SessionID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// AddUsage adds a run's usage to its session's and returns the session's
// total, from the shared history when there is one (see Store.AddUsage).
func (e *Engine) AddUsage(ctx context.Context, session string, u Usage) (Usage, error) {
	if session == "" {
		return u, nil
	}
	return e.store.AddUsage(ctx, session, u)
}
