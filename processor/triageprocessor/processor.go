package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/triage-otel/triage/guard"
	"github.com/triage-otel/triage/internal/ratelog"
	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadata"
)

// trigger is why a trace left the buffer for its decision (triggerNone
// while it is held), reported by its name (String) as the trigger
// attribute of processor_triage_traces_decided. A held trace keeps it in
// one byte.
type trigger uint8

// Decision triggers.
const (
	triggerNone trigger = iota
	triggerRoot
	triggerDecisionWait
	triggerEvicted
	triggerLimit
	triggerShutdown
	triggerRunEnded // early.go
	triggerLogsWait // logs.go
)

var triggerNames = [...]string{
	triggerNone:         "",
	triggerRoot:         "root",
	triggerDecisionWait: "decision_wait",
	triggerEvicted:      "evicted",
	triggerLimit:        "limit",
	triggerShutdown:     "shutdown",
	triggerRunEnded:     "run_ended",
	triggerLogsWait:     "logs_wait",
}

// String is the trigger's name.
func (t trigger) String() string { return triggerNames[t] }

const (
	limitMaxSpans = "max_spans_per_trace"
	limitMaxBytes = "max_trace_bytes"

	// warnInterval spaces the warnings of conditions that repeat under
	// load.
	warnInterval = 30 * time.Second
)

// heldTrace is a trace waiting for its decision. Its spans were moved out
// of the batches that brought them (the processor owns its input).
type heldTrace struct {
	id        pcommon.TraceID
	td        ptrace.Traces
	spans     int
	bytes     int
	firstSeen time.Time
	lastSeen  time.Time

	// inflight is the trace's in-flight guard state (nil without guards
	// or before its first span was fed).
	inflight *inFlight
	// rare is what few held traces need, made on first use (rareState):
	// a buffer holds many traces, and a trace with these fields inline
	// took a 288-byte object where this one fits in 128.
	rare *heldRare
	// late is what arrives while the trace is being decided, made on
	// first use. It is not in rare: ConsumeTraces writes it under p.mu
	// while the decision reads rare without the lock (a rare part made
	// for late spans then raced with the decision's reads of h.rare).
	late *heldLate

	// Set once the trace leaves the buffer for a decision.
	trigger trigger
	queued  bool // already scheduled for a root decision
	// endedQueued: the trace is scheduled for the check of a run without
	// a root (early.go).
	endedQueued bool
}

// heldRare is the part of a held trace few traces use.
type heldRare struct {
	rootDue time.Time // with root_wait: when the root decision is due
	cutBy   string    // the per-trace limit that forced the decision, if any

	// logs are the GenAI log events held for the trace (logs.go); logsDue,
	// once its root arrived, is how long it waits for the rest of them.
	logs    *traceLogs
	logsDue time.Time

	// checked is the lastSeen of the trace at the last check of its run
	// without a root that found the run not over (early.go): the check is
	// not repeated with the same spans.
	checked time.Time
	// built holds the runs of a trace the check found over, for its
	// decision (set as it leaves the buffer).
	built *builtTrace
}

// heldLate holds spans that arrived while the trace was being decided
// (including spans cut by a limit); they are annotated from the decision
// and forwarded with the trace. spans and bytes count what arrived while
// deciding, which a trace waiting for a model answer keeps within
// max_spans_per_trace and max_trace_bytes (passLate). Written under p.mu;
// read by publish once the trace left p.deciding.
type heldLate struct {
	td    ptrace.Traces
	spans int
	bytes int
}

// noRare is the rare part of a held trace that has none (read only).
var noRare heldRare

// rareState is the trace's rare part, made on first use.
func (h *heldTrace) rareState() *heldRare {
	if h.rare == nil {
		h.rare = &heldRare{}
	}
	return h.rare
}

// rareOrZero is the trace's rare part for reading.
func (h *heldTrace) rareOrZero() *heldRare {
	if h.rare == nil {
		return &noRare
	}
	return h.rare
}

type triageProcessor struct {
	cfg         *Config
	logger      *zap.Logger
	next        consumer.Traces
	tb          *metadata.TelemetryBuilder
	rules       []compiledRule
	classifiers classifierSet
	now         func() time.Time
	sizer       ptrace.ProtoMarshaler
	// texts lets the spans of a trace share one copy of each long text
	// they repeat (sharedtexts.go).
	texts *sharedTexts
	// out is the one redaction point of everything that leaves the
	// processor.
	out outbound
	// recovery is nil when recovery.enabled is false.
	recovery *recoverer
	// llm is nil when llm.enabled is false.
	llm *modelAsker
	// guards is nil when no guard is enabled or recovery is disabled.
	guards *guard.Guards

	mu sync.Mutex
	// held is ordered by last activity: the oldest entry is the least
	// recently active trace, so decision_wait expiry and eviction both
	// take from the old end.
	held      *traceLRU[*heldTrace]
	deciding  map[pcommon.TraceID]*heldTrace
	decided   *decidedCache
	heldSpans int
	heldBytes int
	closed    bool
	// rootDue lists, in due order, traces whose root arrived and that wait
	// root_wait for spans from other services. Entries whose trace already
	// left the buffer are skipped.
	rootDue []*heldTrace
	// logs holds the GenAI log events of a logs pipeline (logs.go).
	logs logState
	// endedDue lists, in due order, traces without a root to check for
	// runs that are over (early.go).
	endedDue []endedDue
	// releaseTraces releases the traces instance's hold on the state
	// shared with the logs instances (shared.go); true when it was the last.
	releaseTraces func() bool

	lifecycleMu sync.Mutex
	stop        chan struct{}
	tickerDone  sync.WaitGroup

	// Rate-limited warnings for conditions that repeat under load.
	warnEvicted      *ratelog.Warning
	warnForward      *ratelog.Warning
	warnCacheEvicted *ratelog.Warning
	warnInvalid      *ratelog.Warning
}

var _ processor.Traces = (*triageProcessor)(nil)

// newTriageProcessor returns a traces processor with a state of its own.
func newTriageProcessor(set processor.Settings, cfg *Config, next consumer.Traces) (*triageProcessor, error) {
	if next == nil {
		return nil, errors.New("nil next consumer")
	}
	p, err := newCore(set, cfg)
	if err != nil {
		return nil, err
	}
	p.next = next
	p.releaseTraces = onceTrue()
	return p, nil
}

// newCore returns the state of a component: the traces instance is the
// state itself once next is set; logs instances share it (shared.go).
func newCore(set processor.Settings, cfg *Config) (*triageProcessor, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	p, err := newState(set, cfg, tb)
	if err == nil {
		err = p.startServices(set, cfg)
	}
	if err != nil {
		tb.Shutdown()
		return nil, err
	}
	return p, nil
}

// newState makes the processor's rules, classifiers, buffers and caches.
func newState(set processor.Settings, cfg *Config, tb *metadata.TelemetryBuilder) (*triageProcessor, error) {
	rules, err := compileRules(cfg, set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	classifiers, err := newClassifierSet(cfg)
	if err != nil {
		return nil, err
	}
	// Capacity is enforced by hand (evicted traces must be decided, not
	// dropped), so the LRU itself never evicts.
	held, err := newTraceLRU[*heldTrace](cfg.NumTraces+1, nil)
	if err != nil {
		return nil, fmt.Errorf("num_traces: %w", err)
	}
	decided, err := newDecidedCache(cfg.DecisionCacheSize, cfg.DecisionCacheBytes, cfg.DecisionWait)
	if err != nil {
		return nil, err
	}
	redactor, err := cfg.Recovery.redactor()
	if err != nil {
		return nil, fmt.Errorf("recovery.redaction: %w", err)
	}
	logs, err := newLogState(cfg)
	if err != nil {
		return nil, fmt.Errorf("num_traces: %w", err)
	}
	return &triageProcessor{
		warnEvicted: ratelog.New("traces decided before they were complete: the buffer is full (num_traces or max_bytes); "+
			"runs whose evidence is partial are annotated triage.verdict=incomplete and get no decision. Raise num_traces / max_bytes (README, Sizing) if this repeats", warnInterval),
		warnForward: ratelog.New("the next consumer refused decided spans; they are counted in processor_triage_spans_forward_failed "+
			"and not returned to the sender (it would resend spans already delivered)", warnInterval),
		warnCacheEvicted: ratelog.New("decision cache full: traces decided less than decision_wait ago were forgotten, "+
			"so their late spans open new traces; raise decision_cache_size / decision_cache_bytes (README, Sizing)", warnInterval),
		warnInvalid: ratelog.New("spans without a trace ID or span ID dropped as invalid (counted in processor_triage_spans_invalid)", warnInterval),
		out:         outbound{red: redactor},
		texts:       newSharedTexts(),
		cfg:         cfg,
		logger:      set.Logger,
		logs:        logs,
		tb:          tb,
		rules:       rules,
		classifiers: classifiers,
		now:         time.Now,
		held:        held,
		deciding:    make(map[pcommon.TraceID]*heldTrace),
		decided:     decided,
	}, nil
}

// startServices starts the recovery engine, the model asker and the
// in-flight guards the config turns on; on failure it closes what it
// started.
func (p *triageProcessor) startServices(set processor.Settings, cfg *Config) error {
	var err error
	if cfg.Recovery.Enabled {
		if p.recovery, err = newRecoverer(&cfg.Recovery, p.out.red, p.tb, set.Logger); err != nil {
			return err
		}
	}
	if cfg.LLM.Enabled {
		if p.llm, err = newModelAsker(cfg, p.out.red, p.tb, set.Logger); err != nil {
			p.closeRecoverer()
			return err
		}
	}
	if p.recovery != nil && cfg.Guards.Enabled() {
		if p.guards, err = guard.New(cfg.Guards, p.classifiers.global, cfg.Recovery.SessionAttributes); err != nil {
			p.closeRecoverer()
			return fmt.Errorf("guards: %w", err)
		}
	}
	return nil
}

func (p *triageProcessor) closeRecoverer() {
	if p.recovery != nil {
		_ = p.recovery.close()
	}
}

func (p *triageProcessor) Capabilities() consumer.Capabilities {
	// Incoming spans are moved into the buffer and annotated in place, not
	// copied: the pipeline gives the processor a batch of its own (copying
	// it first only when another consumer shares it).
	return consumer.Capabilities{MutatesData: true}
}

// Start starts the single goroutine that decides traces whose root did not
// arrive within decision_wait.
func (p *triageProcessor) Start(context.Context, component.Host) error {
	p.lifecycleMu.Lock()
	defer p.lifecycleMu.Unlock()
	if p.stop != nil {
		return nil
	}
	if p.recovery != nil && p.recovery.redis != "" {
		// Redis is not dialled here: a collector must start (and decide,
		// from memory) while Redis is down.
		p.logger.Info("recovery history shared in Redis", zap.String("endpoint", p.recovery.redis))
	}
	p.stop = make(chan struct{})
	p.tickerDone.Add(1)
	wait := p.cfg.DecisionWait
	if p.cfg.RootWait > 0 {
		wait = min(wait, p.cfg.RootWait)
	}
	if p.cfg.LogsWait > 0 {
		wait = min(wait, p.cfg.LogsWait)
	}
	if p.cfg.SettleWait > 0 {
		wait = min(wait, p.cfg.SettleWait)
	}
	go p.tickLoop(p.stop, tickInterval(wait))
	return nil
}

// tickInterval checks often enough that a trace waits at most about a
// quarter of decision_wait longer than configured, without spinning.
func tickInterval(wait time.Duration) time.Duration {
	return min(max(wait/4, 5*time.Millisecond), time.Second)
}

func (p *triageProcessor) tickLoop(stop <-chan struct{}, every time.Duration) {
	defer p.tickerDone.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.decideExpired(context.Background())
		}
	}
}

// Shutdown (of the traces instance) stops the ticker, then decides and
// forwards every trace still held; the last instance of a shared state
// also releases its resources.
func (p *triageProcessor) Shutdown(ctx context.Context) error {
	err := p.shutdownTraces(ctx)
	if p.releaseTraces() {
		err = errors.Join(err, p.closeState(ctx))
	}
	return err
}

func (p *triageProcessor) stopTicker() {
	p.lifecycleMu.Lock()
	if p.stop != nil {
		close(p.stop)
		p.tickerDone.Wait()
		p.stop = nil
	}
	p.lifecycleMu.Unlock()
}

// shutdownTraces stops the ticker, then decides and forwards every trace
// still held.
func (p *triageProcessor) shutdownTraces(ctx context.Context) error {
	p.stopTicker()

	p.mu.Lock()
	p.closed = true
	p.rootDue = nil
	p.endedDue = nil
	var toDecide []*heldTrace
	dTraces, dSpans := 0, 0
	for p.held.Len() > 0 {
		_, h, _ := p.held.RemoveOldest()
		dTraces, dSpans = dTraces-1, dSpans-h.spans
		toDecide = append(toDecide, p.startDeciding(h, triggerShutdown))
	}
	p.mu.Unlock()
	p.recordHeld(ctx, dTraces, dSpans)

	p.finish(ctx, toDecide, ptrace.Traces{})
	if p.llm != nil {
		// Before the recovery history closes (closeState), and while the
		// traces exporters still run: held traces still take their
		// decisions when the cancelled consultations return.
		return p.llm.stop(ctx)
	}
	return nil
}

// closeState releases the resources of the state once its last instance
// shut down.
func (p *triageProcessor) closeState(context.Context) error {
	p.stopTicker()
	var err error
	if p.recovery != nil {
		// After the last decisions: this closes the Redis connections.
		if cerr := p.recovery.close(); cerr != nil {
			err = fmt.Errorf("closing the recovery history: %w", cerr)
		}
	}
	p.tb.Shutdown()
	return err
}

// decideExpired decides the traces whose root_wait ended and those
// inactive for decision_wait.
func (p *triageProcessor) decideExpired(ctx context.Context) {
	now := p.now()
	p.mu.Lock()
	var room [4]*heldTrace // (on the stack: a tick decides a few traces)
	toDecide := room[:0]
	dTraces, dSpans := 0, 0
	for len(p.rootDue) > 0 && !now.Before(p.rootDue[0].rareOrZero().rootDue) {
		h := p.rootDue[0]
		p.rootDue[0] = nil
		p.rootDue = p.rootDue[1:]
		if h.trigger != triggerNone {
			continue // evicted, cut or shut down meanwhile
		}
		if p.waitForLogs(h, h.rareOrZero().rootDue.Add(-p.cfg.RootWait), now) {
			continue
		}
		p.held.Remove(h.id)
		dTraces, dSpans = dTraces-1, dSpans-h.spans
		toDecide = append(toDecide, p.startDeciding(h, triggerRoot))
	}
	toDecide, lt, ls := p.decideLogsDue(now, toDecide)
	dTraces, dSpans = dTraces+lt, dSpans+ls
	toDecide, lt, ls = p.decideEnded(now, toDecide)
	dTraces, dSpans = dTraces+lt, dSpans+ls
	expiredLogs := p.expirePendingLogs(now)
	for waiting := 0; ; {
		_, h, ok := p.held.GetOldest()
		if !ok || now.Sub(h.lastSeen) < p.cfg.DecisionWait {
			break
		}
		if p.keepForLogs(h, now, &waiting) {
			if waiting >= p.held.Len() {
				break // every trace left waits for its log events
			}
			continue
		}
		p.held.RemoveOldest()
		dTraces, dSpans = dTraces-1, dSpans-h.spans
		toDecide = append(toDecide, p.startDeciding(h, triggerDecisionWait))
	}
	p.mu.Unlock()
	p.recordHeld(ctx, dTraces, dSpans)
	if expiredLogs > 0 {
		p.tb.ProcessorTriageLogRecordsHeld.Add(ctx, -expiredLogs)
		p.tb.ProcessorTriageLogRecordsDropped.Add(ctx, expiredLogs, adds1("reason", dropExpired)...)
	}
	p.finish(ctx, toDecide, ptrace.Traces{})
}

// ConsumeTraces buffers the spans by trace. Traces whose root arrived, or
// that a limit forces out, are decided and forwarded before it returns;
// spans of traces already decided are annotated and forwarded at once.
//
// The batch is taken apart by trace and sized before the lock is taken
// (groupByTrace); under it, each trace of the batch costs a lookup and a
// move of its spans.
func (p *triageProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	now := p.now()
	groups, invalid := groupByTrace(td, &p.sizer)
	// The texts of spans to be held are shared before the guards read
	// them: what the guards keep of a span refers to its texts.
	var in intake
	in.textsShared = p.texts.shareHeld(groups)
	// In-flight guards read the spans of traces still without their root
	// here, outside the lock, before the spans move into the buffer.
	reads := p.readInFlight(groups)
	// The traces whose root arrived, and then those to decide, are listed
	// here, in room on the stack (appended to through in, which the
	// compiler cannot keep on the stack, each would be an allocation).
	var rootedRoom, toDecideRoom [2]*heldTrace
	rooted := rootedRoom[:0]

	p.mu.Lock()
	for gi, g := range groups {
		if p.takeLate(&in, g) {
			continue
		}
		if h, ok, root := p.hold(&in, g, now); ok {
			if root {
				rooted = append(rooted, h)
			}
			in.feeds = p.noteInFlight(in.feeds, h, reads, gi)
			p.noteRootless(h, now)
			p.evictOverMaxBytes(&in, g.id)
		}
	}
	// Those forced out by limits first, then those whose root arrived, as
	// they were listed.
	toDecide := append(toDecideRoom[:0], in.toDecide...)
	toDecide = p.releaseRooted(&in, rooted, toDecide, now)
	if p.closed {
		// After Shutdown nothing may stay held: decide what just arrived.
		for p.held.Len() > 0 {
			_, h, _ := p.held.RemoveOldest()
			in.dTraces, in.dSpans = in.dTraces-1, in.dSpans-h.spans
			toDecide = append(toDecide, p.startDeciding(h, triggerShutdown))
		}
	}
	in.feeds = p.liveFeeds(in.feeds)
	p.mu.Unlock()
	releaseGroups(groups)

	p.recordIntake(ctx, &in)
	p.rejectInvalid(ctx, invalid)
	p.finish(ctx, toDecide, p.lateAndInFlight(ctx, &in))
	return nil
}

// intake is what one ConsumeTraces call does to the buffer: the traces it
// sends to be decided, the groups of traces decided earlier, the in-flight
// feeds, and its counts (applied to telemetry once the lock is released).
type intake struct {
	toDecide []*heldTrace // traces forced out by a limit or eviction
	late     []lateGroup
	passed   []ptrace.Traces // spans of traces being decided, beyond their limits
	feeds    []inFlightFeed
	nPassed  int64
	nLate    int64
	cut      map[string]int64 // spans cut, by limit
	evicted  int64
	dTraces  int // change of the traces held
	dSpans   int // change of the spans held
	// textsShared is the bytes of values that took an earlier copy
	// (sharedtexts.go).
	textsShared int
}

// takeLate takes the group of a trace already decided (or being decided):
// its spans are late, annotated from the decision. Called with p.mu held.
func (p *triageProcessor) takeLate(in *intake, g *traceGroup) bool {
	if d, ok := p.decided.get(g.id); ok {
		in.late = append(in.late, lateGroup{g.td, d})
		in.nLate += int64(g.spans)
		if d.cutBy != "" {
			in.cut = countCutN(in.cut, d.cutBy, g.spans)
		}
		return true
	}
	if h, ok := p.deciding[g.id]; ok {
		if passLate(h, g, p.cfg) {
			in.passed = append(in.passed, g.td)
			in.nPassed += int64(g.spans)
			return true
		}
		h.addLate(g.td)
		in.nLate += int64(g.spans)
		if cutBy := h.rareOrZero().cutBy; cutBy != "" {
			in.cut = countCutN(in.cut, cutBy, g.spans)
		}
		return true
	}
	return false
}

// hold moves the group's spans into its held trace (made room for by
// evicting the oldest when num_traces are held), within the trace's
// limits. ok false when a limit forced the trace out to be decided.
// Called with p.mu held.
func (p *triageProcessor) hold(in *intake, g *traceGroup, now time.Time) (h *heldTrace, ok, rooted bool) {
	h, ok = p.held.Get(g.id)
	if !ok {
		for p.held.Len() >= p.cfg.NumTraces {
			_, old, _ := p.held.RemoveOldest()
			in.dTraces, in.dSpans = in.dTraces-1, in.dSpans-old.spans
			in.evicted++
			in.toDecide = append(in.toDecide, p.startDeciding(old, triggerEvicted))
		}
		// h.td is set below: a new trace that fits takes the group's.
		h = &heldTrace{id: g.id, firstSeen: now}
		p.attachPendingLogs(h)
		p.held.Add(g.id, h)
		in.dTraces++
	}
	if g.guardSizes != nil {
		g.chargeGuardState(p.guardStateBytes(h))
	}
	limit, root := "", g.root
	// A trace always holds at least one span, so even a single
	// oversized span is classified.
	if (h.spans+g.spans <= p.cfg.MaxSpansPerTrace && h.bytes+g.bytes <= p.cfg.MaxTraceBytes) || (h.spans == 0 && g.spans == 1) {
		if h.td == (ptrace.Traces{}) {
			h.td = g.td
		} else {
			g.td.ResourceSpans().MoveAndAppendTo(h.td.ResourceSpans())
		}
		h.spans += g.spans
		h.bytes += g.bytes
		p.heldSpans += g.spans
		p.heldBytes += g.bytes
		in.dSpans += g.spans
	} else {
		if h.td == (ptrace.Traces{}) {
			h.td = ptrace.NewTraces()
		}
		var n, nCut int
		n, nCut, limit, root = p.addUntilLimit(h, g)
		in.dSpans += n
		if nCut > 0 {
			in.cut = countCutN(in.cut, limit, nCut)
		}
	}
	h.lastSeen = now
	if limit != "" {
		p.held.Remove(g.id)
		in.dTraces, in.dSpans = in.dTraces-1, in.dSpans-h.spans
		h.rareState().cutBy = limit
		in.toDecide = append(in.toDecide, p.startDeciding(h, triggerLimit))
		return h, false, false
	}
	if root && !h.queued {
		h.queued = true
		rooted = true
	}
	return h, true, rooted
}

// evictOverMaxBytes applies the global byte cap: it evicts the least
// recently active traces, never the one being filled. Called with p.mu
// held.
func (p *triageProcessor) evictOverMaxBytes(in *intake, filling pcommon.TraceID) {
	for p.cfg.MaxBytes > 0 && p.heldBytes > p.cfg.MaxBytes {
		oldID, old, ok := p.held.GetOldest()
		if !ok || oldID == filling {
			break
		}
		p.held.RemoveOldest()
		in.dTraces, in.dSpans = in.dTraces-1, in.dSpans-old.spans
		in.evicted++
		in.toDecide = append(in.toDecide, p.startDeciding(old, triggerEvicted))
	}
}

// releaseRooted sends the traces whose root arrived to be decided, unless
// they wait root_wait (for late children) or logs_wait (for their log
// events). Called with p.mu held.
func (p *triageProcessor) releaseRooted(in *intake, rooted, toDecide []*heldTrace, now time.Time) []*heldTrace {
	for _, h := range rooted {
		if h.trigger != triggerNone {
			continue // already forced out by a limit or eviction
		}
		if p.cfg.RootWait > 0 && !p.closed {
			h.rareState().rootDue = now.Add(p.cfg.RootWait)
			p.rootDue = append(p.rootDue, h)
			continue
		}
		if p.waitForLogs(h, now, now) {
			continue
		}
		p.held.Remove(h.id)
		in.dTraces, in.dSpans = in.dTraces-1, in.dSpans-h.spans
		toDecide = append(toDecide, p.startDeciding(h, triggerRoot))
	}
	return toDecide
}

// recordIntake applies an intake's counts to the telemetry.
func (p *triageProcessor) recordIntake(ctx context.Context, in *intake) {
	p.recordHeld(ctx, in.dTraces, in.dSpans)
	if in.textsShared > 0 {
		p.tb.ProcessorTriageTextsShared.Add(ctx, int64(in.textsShared))
	}
	if in.nLate > 0 {
		p.tb.ProcessorTriageLateSpans.Add(ctx, in.nLate)
	}
	if in.nPassed > 0 {
		p.tb.ProcessorTriageLateSpansPassed.Add(ctx, in.nPassed)
	}
	for limit, n := range in.cut {
		p.tb.ProcessorTriageSpansCut.Add(ctx, n, adds1("limit", limit)...)
	}
	if in.evicted > 0 {
		p.tb.ProcessorTriageTracesEvicted.Add(ctx, in.evicted)
		p.warnEvicted.Log(p.logger, in.evicted)
	}
}

// lateAndInFlight returns what the batch forwards beside the decided
// traces: the spans of traces decided earlier, annotated outside the lock
// (a published decision is never modified), the spans of traces being
// decided that went beyond their limits (passLate), and the in-flight
// decision spans of the guards that tripped.
func (p *triageProcessor) lateAndInFlight(ctx context.Context, in *intake) ptrace.Traces {
	var extra ptrace.Traces
	for _, l := range in.late {
		l.d.annotateLateAll(l.td)
		if extra == (ptrace.Traces{}) {
			extra = l.td
			continue
		}
		l.td.ResourceSpans().MoveAndAppendTo(extra.ResourceSpans())
	}
	for _, td := range in.passed {
		if extra == (ptrace.Traces{}) {
			extra = td
			continue
		}
		td.ResourceSpans().MoveAndAppendTo(extra.ResourceSpans())
	}
	if decisionSpans := p.runInFlight(ctx, in.feeds); decisionSpans != (ptrace.Traces{}) {
		if extra == (ptrace.Traces{}) {
			extra = decisionSpans
		} else {
			decisionSpans.ResourceSpans().MoveAndAppendTo(extra.ResourceSpans())
		}
	}
	return extra
}

// lateGroup is a batch's spans of a trace already decided.
type lateGroup struct {
	td ptrace.Traces
	d  *decided
}

// passLate reports whether the spans of g, arriving while h is being
// decided, go on at once without the decision's annotations: a trace held
// for a model answer (up to llm.timeout) would otherwise gather late spans
// without bound. Within max_spans_per_trace and max_trace_bytes of late
// spans they wait for the decision and are counted in h.
func passLate(h *heldTrace, g *traceGroup, cfg *Config) bool {
	var spans, bytes int
	if l := h.late; l != nil {
		spans, bytes = l.spans, l.bytes
	}
	if spans+g.spans > cfg.MaxSpansPerTrace || bytes+g.bytes > cfg.MaxTraceBytes {
		return true
	}
	l := h.lateState()
	l.spans += g.spans
	l.bytes += g.bytes
	return false
}

// lateState is the trace's late part, made on first use. Called with p.mu
// held.
func (h *heldTrace) lateState() *heldLate {
	if h.late == nil {
		h.late = &heldLate{}
	}
	return h.late
}

// addLate keeps spans that arrived while the trace is being decided.
// Called with p.mu held.
func (h *heldTrace) addLate(td ptrace.Traces) {
	l := h.lateState()
	if l.td == (ptrace.Traces{}) {
		l.td = td
		return
	}
	td.ResourceSpans().MoveAndAppendTo(l.td.ResourceSpans())
}

// addUntilLimit adds the spans of g to h one by one, as long as the trace
// stays within max_spans_per_trace and max_trace_bytes; the first span that
// would exceed one of them, and every span after it, go to h.late and the
// limit is returned. It returns the spans added and cut, and whether an
// added span is a root. Called with p.mu held, for the rare group that does
// not fit whole.
func (p *triageProcessor) addUntilLimit(h *heldTrace, g *traceGroup) (added, cutN int, limit string, root bool) {
	keep := splitter{dst: h.td}
	var rest splitter
	n := 0
	rss := g.td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				span := spans.At(k)
				size := g.sizes[n]
				n++
				if limit == "" && h.spans > 0 {
					switch {
					case h.spans+1 > p.cfg.MaxSpansPerTrace:
						limit = limitMaxSpans
					case h.bytes+size > p.cfg.MaxTraceBytes:
						limit = limitMaxBytes
					}
				}
				if limit != "" {
					if rest.dst == (ptrace.Traces{}) {
						rest.dst = ptrace.NewTraces()
					}
					rest.move(i, j, rs, ss, span)
					cutN++
					continue
				}
				root = root || span.ParentSpanID().IsEmpty()
				keep.move(i, j, rs, ss, span)
				h.spans++
				h.bytes += size
				p.heldSpans++
				p.heldBytes += size
				added++
			}
		}
	}
	if rest.dst != (ptrace.Traces{}) {
		h.addLate(rest.dst)
	}
	return added, cutN, limit, root
}

func countCutN(cut map[string]int64, limit string, n int) map[string]int64 {
	if cut == nil {
		cut = make(map[string]int64, 1)
	}
	cut[limit] += int64(n)
	return cut
}

func countBy(m map[string]int64, key string) map[string]int64 {
	if m == nil {
		m = make(map[string]int64, 1)
	}
	m[key]++
	return m
}

// startDeciding moves a trace that has left the held buffer to the set
// being decided. Called with p.mu held.
func (p *triageProcessor) startDeciding(h *heldTrace, t trigger) *heldTrace {
	h.trigger = t
	p.heldSpans -= h.spans
	p.heldBytes -= h.bytes
	p.releaseLogs(h)
	p.deciding[h.id] = h
	return h
}

func (p *triageProcessor) recordHeld(ctx context.Context, dTraces, dSpans int) {
	if dTraces != 0 {
		p.tb.ProcessorTriageTracesHeld.Add(ctx, int64(dTraces))
	}
	if dSpans != 0 {
		p.tb.ProcessorTriageSpansHeld.Add(ctx, int64(dSpans))
	}
}

// finish decides the given traces and publishes those decided (a trace
// held for a model answer is published when the answer arrives). A
// refusal of the next consumer is counted and logged, never returned (see
// forward).
func (p *triageProcessor) finish(ctx context.Context, toDecide []*heldTrace, extra ptrace.Traces) {
	if len(toDecide) == 0 && (extra == (ptrace.Traces{}) || extra.SpanCount() == 0) {
		return
	}
	// (Room on the stack for a few: most calls decide one trace.)
	var doneRoom [4]*heldTrace
	var decisionsRoom [4]*decided
	done, decisions := doneRoom[:0], decisionsRoom[:0]
	for _, h := range toDecide {
		// nil: held for a model answer, published when it arrives.
		if d := p.decide(ctx, h); d != nil {
			done = append(done, h)
			decisions = append(decisions, d)
		}
	}
	p.publish(ctx, done, decisions, extra)
}

// publish puts the decisions in the cache and forwards the decided traces,
// with the late spans that arrived meanwhile and extra (already
// annotated), in one call to the next consumer.
func (p *triageProcessor) publish(ctx context.Context, toDecide []*heldTrace, decisions []*decided, extra ptrace.Traces) {
	if len(toDecide) == 0 && (extra == (ptrace.Traces{}) || extra.SpanCount() == 0) {
		return
	}
	p.mu.Lock()
	for i, h := range toDecide {
		p.decided.add(h.id, decisions[i], p.now())
		delete(p.deciding, h.id)
	}
	stats := p.decided.takeStats()
	p.mu.Unlock()
	p.recordDecidedCache(ctx, stats)
	// Late spans can no longer be added to h.late: the trace is now in the
	// decision cache, so its spans take the cache path.
	// The first batch forwarded takes the others (the processor owns them
	// all): one trace decided alone is forwarded as it was held.
	var out ptrace.Traces
	add := func(td ptrace.Traces) {
		if out == (ptrace.Traces{}) {
			out = td
			return
		}
		td.ResourceSpans().MoveAndAppendTo(out.ResourceSpans())
	}
	for i, h := range toDecide {
		add(h.td)
		if l := h.late; l != nil && l.td != (ptrace.Traces{}) {
			decisions[i].annotateLateAll(l.td)
			add(l.td)
		}
	}
	if extra != (ptrace.Traces{}) {
		add(extra)
	}
	if out == (ptrace.Traces{}) || out.ResourceSpans().Len() == 0 {
		return
	}
	p.forward(ctx, out)
}
