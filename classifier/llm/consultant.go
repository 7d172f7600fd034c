package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/recovery"
	"github.com/triage-otel/triage/trajectory"
)

// Options configure a Consultant.
type Options struct {
	// Endpoint is the base URL of an OpenAI-compatible API
	// (http://localhost:11434/v1) or its /chat/completions URL.
	Endpoint string
	Model    string
	APIKey   string // sent as a bearer token when set
	// Timeout bounds one consultation: the wait for a free slot, every
	// attempt and the back-off between them (default 10s).
	Timeout time.Duration
	// MaxRetries is how many times a 429, a 5xx or a transport error is
	// retried (default 2; negative: none).
	MaxRetries int
	// Backoff is the first retry's delay, doubled each time (default 250ms).
	Backoff time.Duration
	// MaxTokens bounds the answer (default 512; reasoning models need more).
	MaxTokens int
	// ConfidenceThreshold is the lowest confidence accepted (default 0.8).
	ConfidenceThreshold float64
	// ConfidenceCap bounds the confidence of an accepted answer (default
	// 0.6, below every rule's).
	ConfidenceCap float64
	// MaxCallsPerSession and MaxCallsPerMinute cap model calls (defaults 5
	// and 60; negative: no cap); a run without a session is counted under
	// its trace. MaxSessions bounds the sessions counted (default 10000).
	MaxCallsPerSession int
	MaxCallsPerMinute  int
	MaxSessions        int
	// MaxConcurrency bounds the calls in flight (default 4).
	MaxConcurrency int
	// CacheSize bounds the in-memory answer cache (default 10000).
	CacheSize int
	// Shared, when set, is a cache shared with other collectors.
	Shared SharedCache
	// Corrections with a signature override the answer for that shape.
	Corrections []Correction
	// Redactor redacts and truncates everything sent (default: the
	// recovery redactor with 1024-byte fields).
	Redactor *recovery.Redactor
	// HTTPClient sends the requests (default: a new client).
	HTTPClient *http.Client
	// Observer is told about every consultation (default: none).
	Observer Observer
}

// Defaults.
const (
	DefaultTimeout             = 10 * time.Second
	DefaultMaxRetries          = 2
	DefaultBackoff             = 250 * time.Millisecond
	DefaultMaxTokens           = 512
	DefaultConfidenceThreshold = 0.8
	DefaultConfidenceCap       = 0.6
	DefaultMaxCallsPerSession  = 5
	DefaultMaxCallsPerMinute   = 60
	DefaultMaxSessions         = 10000
	DefaultMaxConcurrency      = 4
	DefaultCacheSize           = 10000
	defaultRedactLen           = 1024
)

// confCorrection is the confidence of a human correction.
const confCorrection = 0.9

// Observer is told what each consultation did; the processor turns it
// into telemetry. Methods must be safe for concurrent use.
type Observer interface {
	// Call: one model consultation, answered, no_answer or error.
	Call(outcome string, latency time.Duration)
	// CacheHit: an answer served from memory, redis or a correction.
	CacheHit(source string)
	// Rejected: an answer a gate refused.
	Rejected(gate string)
	// Accepted: an answer that replaced an unknown.
	Accepted(ft classifier.FailureType)
	// Error: a call or a shared-cache operation that failed, by kind.
	Error(kind string)
	// Skipped: an unknown the model was not asked about, and why.
	Skipped(reason string)
}

// Call outcomes.
const (
	CallAnswered = "answered"
	CallNoAnswer = "no_answer"
	CallError    = "error"
)

// Cache sources.
const (
	SourceModel      = "model"
	SourceMemory     = "memory"
	SourceRedis      = "redis"
	SourceCorrection = "correction"
)

// Skip reasons beyond classifier's (classifier.SkipNotRetryable, …).
const (
	SkipSessionCap = "session_cap"
	SkipMinuteCap  = "minute_cap"
)

// ErrCache is the error kind of a failed shared-cache operation.
const ErrCache = "cache"

// Consultation outcomes.
const (
	OutcomeAccepted  = "accepted"  // the answer passed the gates and replaced the unknown
	OutcomeRejected  = "rejected"  // a gate refused it (Gate, Detail)
	OutcomeDeclined  = "declined"  // the model (or a correction) answered unknown
	OutcomeSkipped   = "skipped"   // not asked (Gate holds the reason)
	OutcomeFailed    = "failed"    // no answer (Gate holds the error kind)
	OutcomeCorrected = "corrected" // a correction gave the type
)

// Consultation records what happened for one run, for --explain.
type Consultation struct {
	Signature     string
	SignatureText string
	// Prompt is what was (or would have been) sent, redacted.
	Prompt *Prompt
	Source string
	Answer *Answer
	// Raw is the model's content, bounded.
	Raw      string
	Outcome  string
	Gate     string
	Detail   string
	Attempts int
	Latency  time.Duration
}

// Consultant asks a model about the runs structure, codes and rules left
// unknown, and keeps only answers that pass the gates. It is safe for
// concurrent use.
type Consultant struct {
	model     string
	threshold float64
	cap       float64
	timeout   time.Duration
	client    *client
	red       *recovery.Redactor
	mem       *memoryCache
	shared    SharedCache
	overrides map[string]Correction
	sessions  *sessionCalls
	minute    *minuteWindow
	slots     chan struct{}
	obs       Observer
	now       func() time.Time
}

// New returns a Consultant, or an error naming the invalid option.
func New(o Options) (*Consultant, error) {
	r, err := o.resolve()
	if err != nil {
		return nil, err
	}
	mem, err := newMemoryCache(r.cacheSize)
	if err != nil {
		return nil, fmt.Errorf("cache size: %w", err)
	}
	sessionLRU, err := lru.New[string, int](r.maxSessions)
	if err != nil {
		return nil, fmt.Errorf("max_sessions: %w", err)
	}
	red := o.Redactor
	if red == nil {
		red = DefaultRedactor()
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	obs := o.Observer
	if obs == nil {
		obs = nopObserver{}
	}
	return &Consultant{
		model:     strings.TrimSpace(o.Model),
		threshold: r.threshold,
		cap:       r.confCap,
		timeout:   r.timeout,
		client: &client{url: chatURL(o.Endpoint), model: strings.TrimSpace(o.Model), apiKey: o.APIKey,
			maxTokens: r.maxTokens, maxRetries: r.retries, backoff: r.backoff, http: hc},
		red:       red,
		mem:       mem,
		shared:    o.Shared,
		overrides: overrides(o.Corrections),
		sessions:  &sessionCalls{max: orCap(o.MaxCallsPerSession, DefaultMaxCallsPerSession), calls: sessionLRU},
		minute:    newMinuteWindow(orCap(o.MaxCallsPerMinute, DefaultMaxCallsPerMinute)),
		slots:     make(chan struct{}, r.concurrency),
		obs:       obs,
		now:       time.Now,
	}, nil
}

// resolved are the options with their defaults applied.
type resolved struct {
	timeout, backoff       time.Duration
	retries, maxTokens     int
	threshold, confCap     float64
	concurrency            int
	cacheSize, maxSessions int
}

// resolve checks the options (every mistake, named) and applies the
// defaults to the unset ones.
func (o *Options) resolve() (resolved, error) {
	var c optionCheck
	u, err := url.Parse(strings.TrimSpace(o.Endpoint))
	if o.Endpoint == "" {
		c.errs = append(c.errs, errors.New("endpoint must be set"))
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.errs = append(c.errs, fmt.Errorf("endpoint %q must be an http(s) URL", o.Endpoint))
	}
	if strings.TrimSpace(o.Model) == "" {
		c.errs = append(c.errs, errors.New("model must be set"))
	}
	r := resolved{timeout: o.Timeout, backoff: o.Backoff, retries: o.MaxRetries}
	if r.timeout == 0 {
		r.timeout = DefaultTimeout
	} else if r.timeout < 0 {
		c.errs = append(c.errs, fmt.Errorf("timeout must be positive, got %v", r.timeout))
	}
	if r.backoff <= 0 {
		r.backoff = DefaultBackoff
	}
	switch {
	case r.retries == 0:
		r.retries = DefaultMaxRetries
	case r.retries < 0:
		r.retries = 0
	}
	r.maxTokens = c.orInt(o.MaxTokens, DefaultMaxTokens, "max_tokens")
	r.threshold = c.orUnit(o.ConfidenceThreshold, DefaultConfidenceThreshold, "confidence_threshold")
	r.confCap = c.orUnit(o.ConfidenceCap, DefaultConfidenceCap, "confidence_cap")
	r.concurrency = c.orInt(o.MaxConcurrency, DefaultMaxConcurrency, "max_concurrency")
	r.cacheSize = c.orInt(o.CacheSize, DefaultCacheSize, "cache size")
	r.maxSessions = c.orInt(o.MaxSessions, DefaultMaxSessions, "max_sessions")
	return r, errors.Join(c.errs...)
}

// optionCheck collects the mistakes of the options.
type optionCheck struct{ errs []error }

// orInt is v, or d when v is unset; a negative v is a mistake.
func (c *optionCheck) orInt(v, d int, name string) int {
	if v == 0 {
		return d
	}
	if v < 0 {
		c.errs = append(c.errs, fmt.Errorf("%s must not be negative, got %d", name, v))
	}
	return v
}

// orUnit is v, or d when v is unset; v outside 0..1 is a mistake.
func (c *optionCheck) orUnit(v, d float64, name string) float64 {
	if v == 0 {
		return d
	}
	if v < 0 || v > 1 || v != v {
		c.errs = append(c.errs, fmt.Errorf("%s must be within 0..1, got %v", name, v))
	}
	return v
}

// orCap is v, or d when v is unset; a negative v means no calls.
func orCap(v, d int) int {
	if v == 0 {
		return d
	}
	return max(v, 0)
}

// DefaultRedactor is the redactor used when Options.Redactor is nil: the
// recovery redactor's built-in credential shapes, 1024-byte fields.
func DefaultRedactor() *recovery.Redactor {
	return recovery.NewRedactor(recovery.RedactorOptions{MaxLen: defaultRedactLen})
}

// Model is the model name, the rule of every accepted answer.
func (c *Consultant) Model() string { return c.model }

// Close releases the shared cache.
func (c *Consultant) Close() error {
	if c.shared != nil {
		return c.shared.Close()
	}
	return nil
}

// Pending is a consultation that needs I/O: the shared cache or the model.
type Pending struct {
	subject classifier.Subject
	prompt  Prompt
	sig     string
	session string
	verdict classifier.Verdict
	cons    *Consultation
}

// Review is Prepare then, when needed, Resolve: the whole consultation,
// bounded by the timeout. The CLI uses it; the processor splits it so
// that no model call runs on the pipeline's goroutine.
func (c *Consultant) Review(ctx context.Context, cl *classifier.Classifier, run *trajectory.Run, v classifier.Verdict, extra ...classifier.Incident) (classifier.Verdict, *Consultation) {
	v, cons, p := c.Prepare(cl, run, v, extra...)
	if p == nil {
		return v, cons
	}
	return c.Resolve(ctx, p)
}

// Prepare decides without I/O. It returns the verdict (changed only by a
// correction or a cached answer that passes the gates), what happened (nil
// when the run is not an unknown failure), and a Pending when the shared
// cache or the model must be asked.
func (c *Consultant) Prepare(cl *classifier.Classifier, run *trajectory.Run, v classifier.Verdict, extra ...classifier.Incident) (classifier.Verdict, *Consultation, *Pending) {
	if v.Outcome != classifier.OutcomeFailed || v.FailureType != classifier.Unknown {
		return v, nil, nil
	}
	s, skip := cl.Subject(run, &v, extra...)
	if skip != "" {
		c.obs.Skipped(skip)
		return v, &Consultation{Outcome: OutcomeSkipped, Gate: skip}, nil
	}
	p := buildPrompt(run, &s, c.red)
	sig, text := Signature(&s)
	cons := &Consultation{Signature: sig, SignatureText: text, Prompt: &p}
	if corr, ok := c.overrides[cons.Signature]; ok {
		c.obs.CacheHit(SourceCorrection)
		cons.Source = SourceCorrection
		cons.Detail = corr.Note
		if corr.Expected == classifier.Unknown {
			cons.Outcome = OutcomeDeclined
			return v, cons, nil
		}
		cons.Outcome = OutcomeCorrected
		return apply(v, &s, corr.Expected, classifier.SignalCorrection, cons.Signature, confCorrection), cons, nil
	}
	if ca, ok := c.mem.get(cons.Signature); ok {
		c.obs.CacheHit(SourceMemory)
		return c.judge(v, &s, &p, ca.Answer, SourceMemory, true, cons), cons, nil
	}
	return v, cons, &Pending{subject: s, prompt: p, sig: cons.Signature, session: callSession(run), verdict: v, cons: cons}
}

// maxRaw bounds the raw content kept for --explain.
const maxRaw = 4096

// Resolve asks the shared cache, then the model, within the timeout. Any
// failure leaves the verdict unknown and is counted; it never errors.
func (c *Consultant) Resolve(ctx context.Context, p *Pending) (classifier.Verdict, *Consultation) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cons, v := p.cons, p.verdict
	if c.shared != nil {
		a, ok, err := c.shared.Get(ctx, c.model, p.sig)
		switch {
		case err != nil:
			c.obs.Error(ErrCache)
		case ok:
			c.obs.CacheHit(SourceRedis)
			c.mem.add(p.sig, cachedAnswer{Answer: a, Model: c.model})
			return c.judge(v, &p.subject, &p.prompt, a, SourceRedis, true, cons), cons
		}
	}
	if !c.sessions.take(p.session) {
		return c.skip(v, cons, SkipSessionCap)
	}
	if !c.minute.take(c.now()) {
		c.sessions.giveBack(p.session)
		return c.skip(v, cons, SkipMinuteCap)
	}
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		c.obs.Error(ErrTimeout)
		cons.Outcome, cons.Gate, cons.Detail = OutcomeFailed, ErrTimeout, "no free slot within the timeout (max_concurrency)"
		return v, cons
	}
	start := c.now()
	comp, err := c.client.complete(ctx, p.prompt.System, p.prompt.User)
	<-c.slots
	cons.Latency, cons.Attempts, cons.Source = c.now().Sub(start), comp.attempts, SourceModel
	if err != nil {
		kind := errorKind(err)
		c.obs.Call(CallError, cons.Latency)
		c.obs.Error(kind)
		cons.Outcome, cons.Gate, cons.Detail = OutcomeFailed, kind, err.Error()
		return v, cons
	}
	cons.Raw = shorten(comp.content, maxRaw)
	a, err := parseAnswer(comp.content)
	if err != nil {
		c.obs.Call(CallNoAnswer, cons.Latency)
		c.obs.Error(ErrNoAnswer)
		cons.Outcome, cons.Gate, cons.Detail = OutcomeFailed, ErrNoAnswer, err.Error()
		if comp.finish == "length" {
			cons.Detail = "the answer was cut at max_tokens (reasoning models need more): " + err.Error()
		}
		return v, cons
	}
	c.obs.Call(CallAnswered, cons.Latency)
	c.mem.add(p.sig, cachedAnswer{Answer: a, Model: c.model})
	if c.shared != nil {
		// Bounded by the Redis client's own timeout, not by what is left
		// of the consultation's.
		if err := c.shared.Set(context.WithoutCancel(ctx), c.model, p.sig, a); err != nil {
			c.obs.Error(ErrCache)
		}
	}
	return c.judge(v, &p.subject, &p.prompt, a, SourceModel, false, cons), cons
}

func (c *Consultant) skip(v classifier.Verdict, cons *Consultation, reason string) (classifier.Verdict, *Consultation) {
	c.obs.Skipped(reason)
	cons.Outcome, cons.Gate = OutcomeSkipped, reason
	return v, cons
}

// judge runs the gates over an answer and applies it when they pass.
func (c *Consultant) judge(v classifier.Verdict, s *classifier.Subject, p *Prompt, a Answer, source string, masked bool, cons *Consultation) classifier.Verdict {
	cons.Answer, cons.Source = &a, source
	if a.FailureType == classifier.Unknown {
		cons.Outcome = OutcomeDeclined
		return v
	}
	if g, why := gate(a, s, p.Evidence, c.threshold, masked); g != "" {
		c.obs.Rejected(g)
		cons.Outcome, cons.Gate, cons.Detail = OutcomeRejected, g, why
		return v
	}
	c.obs.Accepted(a.FailureType)
	cons.Outcome = OutcomeAccepted
	return apply(v, s, a.FailureType, classifier.SignalLLM, c.model, min(a.Confidence, c.cap))
}

// apply gives the subject's incident, and the verdict resting on it, a
// type.
func apply(v classifier.Verdict, s *classifier.Subject, ft classifier.FailureType, sig classifier.Signal, rule string, conf float64) classifier.Verdict {
	v.Incidents = slices.Clone(v.Incidents)
	if s.Incident >= 0 && s.Incident < len(v.Incidents) {
		in := &v.Incidents[s.Incident]
		in.FailureType, in.Signal, in.Rule, in.Confidence, in.Reason = ft, sig, rule, conf, ""
	}
	v.FailureType, v.Signal, v.Rule, v.Confidence, v.Reason = ft, sig, rule, conf, ""
	v.EvidenceSpanID = s.SpanID
	return v
}

type nopObserver struct{}

func (nopObserver) Call(string, time.Duration)      {}
func (nopObserver) CacheHit(string)                 {}
func (nopObserver) Rejected(string)                 {}
func (nopObserver) Accepted(classifier.FailureType) {}
func (nopObserver) Error(string)                    {}
func (nopObserver) Skipped(string)                  {}
