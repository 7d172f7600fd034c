package recovery

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/recovery/internal/breaker"
	"github.com/triage-otel/triage/recovery/internal/store"
	"github.com/triage-otel/triage/recovery/internal/strategy"
)

// Engine decides recovery actions: policy × attempt history × breakers.
// It is safe for concurrent use.
type Engine struct {
	policy         *policy
	store          store.Store
	memory         *store.Memory
	failover       *store.Failover
	clock          Clock
	resetOnSuccess bool
	rand           func() float64
	// newUUID makes decision ids (UUIDv7); newID is its text.
	newUUID  func() (uuid.UUID, error)
	redactor *Redactor
	// traceSessions redacts the session ids of traces that name none
	// (traceSession), sorted out for their alphabet once.
	traceSessions *alphabetRedactor

	nonIdempotentTools  []toolPattern
	maxTotalAttempts    int
	maxRecoveryDuration time.Duration
	// readsSuccessTools is ReadsSuccessTools' answer: the policy is fixed
	// once New returns.
	readsSuccessTools bool
}

// Option adjusts an Engine.
type Option func(*engineOptions)

type engineOptions struct {
	clock      Clock
	onDegraded func(op string, err error)
	rand       func() float64
	strategies map[string]Strategy
	redactor   *Redactor
}

// WithClock sets the clock (tests).
func WithClock(c Clock) Option { return func(o *engineOptions) { o.clock = c } }

// WithOnDegraded is called for every store call served from memory because
// Redis failed or timed out; a processor turns it into telemetry.
func WithOnDegraded(f func(op string, err error)) Option {
	return func(o *engineOptions) { o.onDegraded = f }
}

// WithRand sets the source of jitter, a function returning [0, 1).
func WithRand(f func() float64) Option { return func(o *engineOptions) { o.rand = f } }

// WithStrategy makes s answer the failures of a policy entry (a failure
// type, DefaultEntry or NonIdempotentEntry) in place of the strategy the
// config declares: the extension point for strategies written in Go.
func WithStrategy(entry string, s Strategy) Option {
	return func(o *engineOptions) {
		if o.strategies == nil {
			o.strategies = map[string]Strategy{}
		}
		o.strategies[entry] = s
	}
}

// WithRedactor replaces the redactor applied to the free text (reasons)
// that the decision copies from its input.
func WithRedactor(r *Redactor) Option { return func(o *engineOptions) { o.redactor = r } }

// New validates cfg and returns an engine. With cfg.History.Redis.Endpoint
// set, history and breakers live in Redis and degrade to memory when it
// fails.
func New(cfg Options, opts ...Option) (*Engine, error) {
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
	pol, err := cfg.buildPolicy()
	if err != nil {
		return nil, err
	}
	for entry, s := range o.strategies {
		if s != nil {
			pol.set(entry, s)
		}
	}
	if o.clock == nil {
		o.clock = store.SystemClock{}
	}
	if o.rand == nil {
		o.rand = rand.Float64
	}
	if o.redactor == nil {
		o.redactor = NewRedactor(RedactorOptions{})
	}
	e := &Engine{
		policy:         pol,
		clock:          o.clock,
		resetOnSuccess: cfg.History.ResetOnSuccess,
		rand:           o.rand,
		redactor:       o.redactor,
		traceSessions:  o.redactor.over(traceSessionAlphabet),

		nonIdempotentTools:  patterns,
		maxTotalAttempts:    cfg.MaxTotalAttempts,
		maxRecoveryDuration: cfg.MaxRecoveryDuration,
		newUUID:             newV7(newRandBuffer()),
		readsSuccessTools:   pol.hasToolScopedBreaker(),
	}
	h := cfg.History
	e.memory = store.NewMemory(store.MemoryOptions{
		SessionTTL: h.TTL, MaxSessions: h.MaxSessions,
		BreakerTTL: h.BreakerTTL, MaxBreakers: h.MaxBreakers, Clock: o.clock,
	})
	e.store = e.memory
	if h.Redis.Endpoint != "" {
		e.failover = &store.Failover{
			Primary: store.NewRedis(store.RedisOptions{
				Endpoint: h.Redis.Endpoint, Username: h.Redis.Username, Password: h.Redis.Password,
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
	return e, nil
}

// Stats are the engine's counters, for telemetry.
type Stats struct {
	Sessions        int   // sessions held in memory now
	SessionsEvicted int64 // dropped by history.max_sessions (LRU)
	SessionsExpired int64 // dropped by history.ttl
	UsageEvicted    int64 // session usage dropped by history.max_sessions
	Breakers        int   // breaker states held in memory now
	BreakersEvicted int64 // dropped by history.max_breakers

	// Degraded counts store calls served from memory because Redis failed
	// or timed out (0 without Redis); RedisFailures the calls on which Redis
	// failed or timed out; RedisDown is set while Redis is being left alone.
	Degraded      int64
	RedisFailures int64
	RedisDown     bool
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	m := e.memory.Stats()
	s := Stats{
		Sessions: m.Sessions, SessionsEvicted: m.SessionsEvicted, SessionsExpired: m.SessionsExpired,
		UsageEvicted: m.UsageEvicted, Breakers: m.Breakers, BreakersEvicted: m.BreakersEvicted,
	}
	if e.failover != nil {
		f := e.failover.Stats()
		s.Degraded, s.RedisFailures, s.RedisDown = f.Degraded, f.PrimaryFailure, f.PrimaryDown
	}
	return s
}

// Close releases the store (the Redis connections).
func (e *Engine) Close() error { return e.store.Close() }

// Decide records the failure in the session's history and returns the
// decision for it. A final decision whose run already had an in-flight
// decision of the same failure type (in.InFlight) takes that decision's
// attempt and answer instead of deciding again.
func (e *Engine) Decide(ctx context.Context, in Input) (Decision, error) {
	ofTrace := in.SessionID == "" // the trace is the session (normalize)
	in, err := e.normalize(in)
	if err != nil {
		return Decision{}, err
	}
	if d, ok := e.reuseInFlight(in, ofTrace); ok {
		return d, nil
	}
	path, strat, isGuard := e.policy.lookupGuard(in.Guard)
	if !isGuard {
		path, strat = e.policy.lookup(string(in.FailureType))
	}
	now := e.clock.Now()
	counts, err := e.store.Attempt(ctx, in.SessionID, string(in.FailureType), now)
	// The store keys on the full session id (hashed when long); the
	// document carries a redacted, bounded copy (a conversation id can
	// carry a key or an e-mail address).
	in.SessionID = e.sessionText(in.SessionID, ofTrace)
	if err != nil {
		return Decision{}, fmt.Errorf("recovery history: %w", err)
	}
	attempt := counts.Type
	res, budget, err := e.answer(ctx, in, path, strat, counts, now)
	if err != nil {
		return Decision{}, err
	}
	id, err := e.newUUID()
	if err != nil {
		return Decision{}, fmt.Errorf("decision id: %w", err)
	}
	return e.document(in, res, id, attempt, budget, now), nil
}

// newID is a new decision id's text.
func (e *Engine) newID() (string, error) {
	id, err := e.newUUID()
	if err != nil {
		return "", err
	}
	return id.String(), nil
}

// answer asks the strategy (or the session caps, or the exhausted
// escalation, or the non_idempotent entry instead of a retry) for the
// attempt-th failure and returns the answer, its text redacted, with the
// attempt budget it counts against.
func (e *Engine) answer(ctx context.Context, in Input, path string, strat Strategy, counts store.Attempts, now time.Time) (res Result, budget int, err error) {
	attempt := counts.Type
	// (The env is reused: handed to the strategies through their
	// interface, a fresh one would be an allocation per decision.)
	room := envPool.Get().(*strategy.Env)
	defer func() {
		*room = strategy.Env{}
		envPool.Put(room)
	}()
	env := strategy.SetRuntime(room, envOf(in, now), e.store, e.rand)
	budget = strat.MaxAttempts()
	if capped, ok := e.sessionCap(counts, now); ok {
		res = capped
	} else if attempt > budget {
		res = strategy.Exhausted(path, attempt, budget, in.FailureType)
	} else if res, err = strat.Decide(ctx, env, path, attempt); err != nil {
		return Result{}, 0, err
	}
	if res.Action.Kind == ActionRetry {
		if why, ok := e.nonIdempotent(in); ok {
			if res, err = e.noRetry(ctx, env, attempt, why); err != nil {
				return Result{}, 0, err
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
	// Hints and targets come from the policy or name the failed tool: the
	// document holds no free text that did not pass the redactor.
	res.Action.Hint = e.redactor.Text(res.Action.Hint)
	res.Action.Target = e.redactor.Text(res.Action.Target)
	return res, budget, nil
}

// envPool holds the strategies' env between decisions (Engine.answer).
var envPool = sync.Pool{New: func() any { return new(strategy.Env) }}

// document is the decision document of an answer.
func (e *Engine) document(in Input, res Result, id uuid.UUID, attempt, budget int, now time.Time) Decision {
	maxAttempts := budget
	if maxAttempts >= Unlimited {
		maxAttempts = 0
	}
	own := newDocumentStrings(id, in.TraceID, in.SpanID, res.Path, res.Leaf, now)
	d := Decision{
		Version:     DecisionVersion,
		Phase:       in.Phase,
		Guard:       in.Guard,
		DecisionID:  own.id,
		TraceID:     own.trace,
		SpanID:      own.span,
		SessionID:   in.SessionID,
		Service:     in.Service,
		Agent:       in.Agent,
		Tool:        in.Tool,
		FailureType: string(in.FailureType),
		Confidence:  in.Confidence,
		Evidence:    in.Evidence,
		Action:      res.Action,
		Attempt:     attempt,
		MaxAttempts: maxAttempts,
		Policy:      own.policy,
		Breaker:     res.Breaker,
		Time:        own.time,
	}
	if in.InFlight != nil {
		d.InFlightDecisionID = in.InFlight.DecisionID
	}
	return d
}

// documentStrings are the strings a decision document writes of its own
// (not copied from its input), cut from one string: the id's text
// (uuid.UUID.String), the trace and span ids in hex (their String), the
// policy "<path>:<leaf>" and the time (RFC 3339 with nanoseconds, UTC).
type documentStrings struct {
	id, trace, span, policy, time string
}

func newDocumentStrings(id uuid.UUID, trace pcommon.TraceID, span pcommon.SpanID, path, leaf string, now time.Time) documentStrings {
	var tb [40]byte
	ts := appendRFC3339NanoUTC(tb[:0], now)
	// (An empty id's String is "".)
	tn, sn := 2*len(trace), 2*len(span)
	if trace.IsEmpty() {
		tn = 0
	}
	if span.IsEmpty() {
		sn = 0
	}
	var b strings.Builder
	b.Grow(36 + tn + sn + len(path) + 1 + len(leaf) + len(ts))
	var h [36]byte
	hex.Encode(h[:8], id[:4])
	h[8] = '-'
	hex.Encode(h[9:13], id[4:6])
	h[13] = '-'
	hex.Encode(h[14:18], id[6:8])
	h[18] = '-'
	hex.Encode(h[19:23], id[8:10])
	h[23] = '-'
	hex.Encode(h[24:], id[10:])
	b.Write(h[:])
	hex.Encode(h[:2*len(trace)], trace[:])
	b.Write(h[:tn])
	hex.Encode(h[:2*len(span)], span[:])
	b.Write(h[:sn])
	b.WriteString(path)
	b.WriteByte(':')
	b.WriteString(leaf)
	b.Write(ts)
	all := b.String()
	var d documentStrings
	d.id, all = all[:36], all[36:]
	d.trace, all = all[:tn], all[tn:]
	d.span, all = all[:sn], all[sn:]
	n := len(path) + 1 + len(leaf)
	d.policy, d.time = all[:n], all[n:]
	return d
}

// appendRFC3339NanoUTC is t.UTC().AppendFormat(b, time.RFC3339Nano),
// written field by field for the years it writes in four digits (the
// layout's interpretation, chunk by chunk, was most of a decision's
// strings). The text of the second (to "05") is kept for the decisions
// taken in the same second (lastSecond): working out the date and the
// clock from the time was most of what was left.
func appendRFC3339NanoUTC(b []byte, t time.Time) []byte {
	t = t.UTC()
	unix := t.Unix()
	s := lastSecond.Load()
	if s == nil || s.unix != unix {
		year, month, day := t.Date()
		if year < 0 || year > 9999 {
			return t.AppendFormat(b, time.RFC3339Nano)
		}
		hour, minute, sec := t.Clock()
		s = &secondText{unix: unix, text: [19]byte{
			byte('0' + year/1000), byte('0' + year/100%10), byte('0' + year/10%10), byte('0' + year%10), '-',
			byte('0' + int(month)/10), byte('0' + int(month)%10), '-', byte('0' + day/10), byte('0' + day%10), 'T',
			byte('0' + hour/10), byte('0' + hour%10), ':', byte('0' + minute/10), byte('0' + minute%10), ':',
			byte('0' + sec/10), byte('0' + sec%10)}}
		lastSecond.Store(s)
	}
	b = append(b, s.text[:]...)
	if ns := t.Nanosecond(); ns != 0 {
		// .999999999: nine digits, trailing zeros dropped.
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i >= 1; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, 'Z')
}

// secondText is the RFC 3339 text of a UTC second (Unix time unix) of a
// year of four digits, "2006-01-02T15:04:05"; never written once stored.
type secondText struct {
	unix int64
	text [19]byte
}

// lastSecond is the second of the latest decision time written (shared by
// the engines: the text depends on the time alone).
var lastSecond atomic.Pointer[secondText]

// normalize checks the input and makes its free text safe to publish: the
// engine owns the guarantee that a decision document carries no secret
// (every text field passes its redactor once, here or in Decide).
func (e *Engine) normalize(in Input) (Input, error) {
	if in.TraceID.IsEmpty() {
		return in, errors.New("recovery input: no trace id")
	}
	if in.SpanID.IsEmpty() {
		return in, errors.New("recovery input: no span id")
	}
	if !slices.Contains(classifier.FailureTypes, in.FailureType) {
		if in.Reason == "" && in.FailureType != "" {
			in.Reason = "unrecognised failure type " + string(in.FailureType)
		}
		in.FailureType = classifier.Unknown
	}
	if math.IsNaN(in.Confidence) || in.Confidence < 0 {
		in.Confidence = 0
	} else if in.Confidence > 1 {
		in.Confidence = 1
	}
	if in.SessionID == "" {
		in.SessionID = traceSession(in.TraceID)
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
	reason := in.Reason
	in.Reason = e.redactor.Text(reason)
	// The evidence is redacted into a copy made when the redactor changes
	// some of it: evidence it leaves as it is (nearly always) is shared
	// with the caller's, which is never written. (No evidence is an
	// empty list: the document says [], not null.)
	ev := slices.Clip(in.Evidence)
	if ev == nil {
		ev = []Evidence{}
	}
	copied := false
	for i, x := range in.Evidence {
		x.Signal = e.redactor.Truncate(x.Signal)
		x.Rule = e.redactor.Truncate(x.Rule)
		if x.Reason == reason {
			// The verdict's own evidence repeats its reason: redacted
			// once (Text depends on its input alone).
			x.Reason = in.Reason
		} else {
			x.Reason = e.redactor.Text(x.Reason)
		}
		if x == in.Evidence[i] {
			continue
		}
		if !copied {
			ev, copied = slices.Clone(ev), true
		}
		ev[i] = x
	}
	in.Evidence = ev
	return in, nil
}

// traceSessionAlphabet holds every byte a traceSession id can.
const traceSessionAlphabet = "trace:" + hexDigits

// traceSession is the session id of a trace that names none: "trace:"
// and the trace id in hex.
func traceSession(id pcommon.TraceID) string {
	var b strings.Builder
	b.Grow(len("trace:") + 2*len(id))
	b.WriteString("trace:")
	var h [2 * len(id)]byte
	hex.Encode(h[:], id[:])
	b.Write(h[:])
	return b.String()
}

// sessionText is the session id as the document carries it (redacted
// and bounded). A trace's own session id (ofTrace) is new with every
// trace: the redactor's memo, which serves the names that repeat from run
// to run, is not asked for it.
func (e *Engine) sessionText(session string, ofTrace bool) string {
	if ofTrace {
		return e.traceSessions.textOnce(session)
	}
	return e.redactor.Text(session)
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
		if breaker.NormScope(b.Scope) == breaker.ScopeTool {
			for _, t := range s.Tools {
				keys = append(keys, breaker.Key(b.Name, b.Scope, t))
			}
		} else {
			keys = []string{breaker.Key(b.Name, b.Scope, breaker.ScopeValue(b.Scope, s.Service, s.Agent, ""))}
		}
		for _, k := range keys {
			if err := e.store.UpdateBreaker(ctx, k, (*breaker.State).OnSuccess); err != nil {
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

// ReadsSuccessTools reports whether RecordSuccess reads SuccessInput.Tools:
// only a tool-scoped circuit breaker does, so without one a caller need
// not list a successful run's tools.
func (e *Engine) ReadsSuccessTools() bool { return e.readsSuccessTools }

// hasToolScopedBreaker reports whether one of the policy's breakers is
// scoped to a tool.
func (p *policy) hasToolScopedBreaker() bool {
	for _, b := range p.breakers {
		if breaker.NormScope(b.Scope) == breaker.ScopeTool {
			return true
		}
	}
	return false
}

// AddUsage adds a run's usage to its session's and returns the session's
// total, from the shared history when there is one. Usage is kept apart
// from the attempt history (a successful run resets attempts, never usage)
// and expires with the session's TTL after its last update.
func (e *Engine) AddUsage(ctx context.Context, session string, u Usage) (Usage, error) {
	if session == "" {
		return u, nil
	}
	return e.store.AddUsage(ctx, session, u)
}

// envOf is what the strategies may read of a (normalised) input.
func envOf(in Input, now time.Time) Env {
	return Env{
		FailureType:  in.FailureType,
		Reason:       in.Reason,
		SessionID:    in.SessionID,
		Service:      in.Service,
		Agent:        in.Agent,
		Tool:         in.Tool,
		Subgoal:      in.Subgoal,
		CheckpointID: in.CheckpointID,
		Now:          now,
	}
}
