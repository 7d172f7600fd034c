package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"context"
	"crypto/rand"
	"sync"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/guard"
	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadata"
	"github.com/triage-otel/triage/recovery"
	"github.com/triage-otel/triage/trajectory"
	"github.com/triage-otel/triage/wire"
)

// In-flight guards. While a trace is held and its root has not arrived,
// the spans each batch adds to it are fed to the trace's guard.Run (read
// once, O(new spans)). A guard that trips gets an in-flight decision from
// the recovery engine at once, and the decision leaves the processor
// before the root arrives as one small span of its own: the decision span,
// a child of the span that tripped the guard, in this processor's scope,
// carrying the decision's triage.* attributes (triage.phase = in_flight,
// triage.guard). The connector turns it into a decision log record like
// any other. The held spans themselves are not touched or forwarded early:
// every input span is still forwarded exactly once, with its trace and
// its final annotations; the decision spans are added spans, one per
// in-flight decision, never copies of input spans.

// Names of the in-flight decision span (with the decision attributes of
// recovery.go).
const (
	attrGuard        = wire.AttrGuard
	decisionSpanName = wire.SpanInFlightDecision
)

// inFlight is the in-flight state of one held trace.
type inFlight struct {
	mu  sync.Mutex
	run *guard.Run
	// decisions are the in-flight decisions taken, nil before the first
	// (a held trace keeps its handle, 32 B with the list behind a
	// pointer, 48 B with it here; few traces trip a guard).
	decisions *[]recovery.Decision
	// closed: the trace is being decided; no in-flight decision may be
	// taken after the final one read the list.
	closed bool
}

// inFlightFeed is what one batch added to one held trace.
type inFlightFeed struct {
	h     *heldTrace
	reads []guard.Read
	// res is the batch's (first) resource of the trace, for the decision
	// spans: the resource itself, now among the held trace's spans, not a
	// copy. Nothing writes a held trace's resources, and runInFlight reads
	// it only under the trace's in-flight lock before the watch is closed,
	// which the decision does (closeInFlight) before it annotates or
	// forwards the spans: a copy is made only for a decision span, when a
	// guard trips, instead of for every batch read.
	res pcommon.Resource
}

// groupReads are the reads of one batch's spans of one trace.
type groupReads struct {
	reads []guard.Read
	res   pcommon.Resource // (see inFlightFeed.res)
}

// readInFlight reads, for the guards, the spans of each group of the batch
// whose trace root is not among them (a group with its root is decided
// now). It runs outside the processor's lock, while the groups are still
// the caller's alone.
func (p *triageProcessor) readInFlight(groups []*traceGroup) []groupReads {
	if p.guards == nil {
		return nil
	}
	var out []groupReads // (made for the first group read: a batch with its root reads none)
	// The spans to read are listed in room on the stack when they fit
	// (guards.Read keeps none of the list).
	var room [16]guard.Span
	for i, g := range groups {
		if g.root || g.td.ResourceSpans().Len() == 0 {
			continue
		}
		if out == nil {
			out = make([]groupReads, len(groups))
		}
		batch := room[:0]
		if g.spans > len(room) {
			batch = make([]guard.Span, 0, g.spans)
		}
		rss := g.td.ResourceSpans()
		for ri := 0; ri < rss.Len(); ri++ {
			rs := rss.At(ri)
			for si := 0; si < rs.ScopeSpans().Len(); si++ {
				ss := rs.ScopeSpans().At(si)
				for k := 0; k < ss.Spans().Len(); k++ {
					batch = append(batch, guard.Span{Span: ss.Spans().At(k), Resource: rs.Resource(), Scope: ss.Scope().Name()})
				}
			}
		}
		reads := p.guards.Read(batch)
		g.guardSizes = make([]int, len(reads))
		for k := range reads {
			g.guardSizes[k] = reads[k].Bytes()
		}
		out[i] = groupReads{reads: reads, res: rss.At(0).Resource()}
	}
	return out
}

// guardStateBytes is what the in-flight state of a trace holds before its
// first span: the guards' run and its handle here.
func (p *triageProcessor) guardStateBytes(h *heldTrace) int {
	if h.inflight != nil {
		return 0
	}
	return p.guards.RunBytes() + int(unsafe.Sizeof(inFlight{}))
}

// noteInFlight records what group gi of the batch added to held trace h,
// for its guards. Called with p.mu held.
func (p *triageProcessor) noteInFlight(feeds []inFlightFeed, h *heldTrace, reads []groupReads, gi int) []inFlightFeed {
	if gi >= len(reads) || len(reads[gi].reads) == 0 || h.queued {
		return feeds
	}
	return append(feeds, inFlightFeed{h: h, reads: reads[gi].reads, res: reads[gi].res})
}

// liveFeeds drops the feeds of traces whose root arrived in the batch or
// that left the buffer (their final decision comes now) and gives the
// others their guard state, created on a trace's first live feed (a trace
// sent whole never gets one). Called with p.mu held.
func (p *triageProcessor) liveFeeds(feeds []inFlightFeed) []inFlightFeed {
	out := feeds[:0]
	for _, f := range feeds {
		if f.h.queued || f.h.trigger != triggerNone {
			continue
		}
		if f.h.inflight == nil {
			f.h.inflight = &inFlight{run: p.guards.NewRun()}
		}
		out = append(out, f)
	}
	return out
}

// runInFlight feeds each trace's new spans to its guards and returns the
// decision spans of the guards that tripped (nil when none did).
func (p *triageProcessor) runInFlight(ctx context.Context, feeds []inFlightFeed) ptrace.Traces {
	var out ptrace.Traces
	for _, f := range feeds {
		st := f.h.inflight
		st.mu.Lock()
		if st.closed {
			st.mu.Unlock()
			p.guards.Release(f.reads)
			continue
		}
		trips := st.run.AddRead(f.reads)
		// The run keeps nothing of the reads: their room goes back.
		p.guards.Release(f.reads)
		trips = append(trips, p.sessionBudgets(ctx, st.run)...)
		for i := range trips {
			tr := &trips[i]
			p.tb.ProcessorTriageGuardTrips.Add(ctx, 1, adds1("guard", string(tr.Guard))...)
			d, anns, ok := p.inFlightDecision(ctx, f.h.id, st.run, tr)
			if !ok {
				continue
			}
			if st.decisions == nil {
				st.decisions = new([]recovery.Decision)
			}
			*st.decisions = append(*st.decisions, d)
			if out == (ptrace.Traces{}) {
				out = ptrace.NewTraces()
			}
			p.appendDecisionSpan(out, f, tr, anns)
		}
		st.mu.Unlock()
	}
	return out
}

// sessionBudgets adds what the run spent since the last report to its
// session's usage (shared in Redis when the history is) and checks the
// per-session budgets.
func (p *triageProcessor) sessionBudgets(ctx context.Context, run *guard.Run) []guard.Trip {
	cfg := p.guards.Config()
	if !cfg.SessionBudgets() || run.Session() == "" {
		return nil
	}
	u := run.Unreported()
	if u.IsZero() {
		return nil
	}
	total, err := p.recovery.addUsage(ctx, run.Session(), u)
	if err != nil {
		return nil
	}
	run.MarkReported(u)
	return run.CheckSession(total)
}

// inFlightDecision asks the engine for the decision of one trip.
func (p *triageProcessor) inFlightDecision(ctx context.Context, traceID pcommon.TraceID, run *guard.Run, tr *guard.Trip) (recovery.Decision, []annotation, bool) {
	if tr.SpanID.IsEmpty() {
		tr.SpanID = run.LastSpan()
	}
	in := tr.Input(traceID)
	in.SessionID = run.Session()
	in.Service, in.Agent = run.Service(), run.Agent() // the engine redacts them for the document
	if why, ok := run.NonIdempotent(tr.Tool); ok {
		in.NonIdempotent = why
	}
	d, anns, ok := p.recovery.decideInput(ctx, in)
	if !ok {
		return d, nil, false
	}
	p.tb.ProcessorTriageInFlightDecisions.Add(ctx, 1, adds2("guard", string(tr.Guard), "action", string(d.Action.Kind))...)
	anns = append(anns,
		strAnn(attrGuard, string(tr.Guard)),
		strAnn(attrFailureType, d.FailureType),
	)
	if d.Service != "" {
		anns = append(anns, strAnn(attrService, d.Service))
	}
	if d.Agent != "" {
		anns = append(anns, strAnn(attrAgent, d.Agent))
	}
	if d.Tool != "" {
		anns = append(anns, strAnn(attrTool, d.Tool))
	}
	p.logger.Debug("in-flight decision", zap.Stringer("trace_id", in.TraceID), zap.String("guard", string(tr.Guard)),
		zap.String("action", string(d.Action.Kind)), zap.String("reason", p.out.text(tr.Reason)))
	return d, anns, true
}

// appendDecisionSpan adds the decision span of one trip to out: in the
// resource of the batch's spans of the trace, a child of the span that
// tripped the guard.
func (p *triageProcessor) appendDecisionSpan(out ptrace.Traces, f inFlightFeed, tr *guard.Trip, anns []annotation) {
	rs := out.ResourceSpans().AppendEmpty()
	f.res.CopyTo(rs.Resource())
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(metadata.ScopeName)
	sp := ss.Spans().AppendEmpty()
	sp.SetTraceID(f.h.id)
	sp.SetSpanID(newSpanID())
	sp.SetParentSpanID(tr.SpanID)
	sp.SetName(decisionSpanName)
	sp.SetKind(ptrace.SpanKindInternal)
	now := pcommon.NewTimestampFromTime(p.now())
	sp.SetStartTimestamp(now)
	sp.SetEndTimestamp(now)
	attrs := sp.Attributes()
	for _, a := range anns {
		a.apply(attrs)
	}
}

func newSpanID() pcommon.SpanID {
	var id pcommon.SpanID
	for id.IsEmpty() {
		_, _ = rand.Read(id[:])
	}
	return id
}

// closedInFlight is what the in-flight watch of a trace leaves to its
// final decision.
type closedInFlight struct {
	// run is the trace's guard state (nil when the guards never saw the
	// trace): Build takes the steps it read (WithReadSteps).
	run       *guard.Run
	decisions []recovery.Decision
	reported  recovery.Usage
}

// closeInFlight ends the in-flight watch of a trace being decided: no
// in-flight decision is taken for it from now on, and its guard state is
// the final decision's alone.
func closeInFlight(h *heldTrace) closedInFlight {
	st := h.inflight
	if st == nil {
		return closedInFlight{}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
	c := closedInFlight{run: st.run, reported: st.run.Reported()}
	if st.decisions != nil {
		c.decisions = *st.decisions
	}
	return c
}

// buildOptions hands Build the steps the guards read as the trace's spans
// arrived.
func (c *closedInFlight) buildOptions() []trajectory.Option {
	if c.run == nil {
		return nil
	}
	return []trajectory.Option{trajectory.WithReadSteps(c.run)}
}

// reportUsage adds, with per-session budgets, what the trace's runs spent
// beyond what was reported in flight to their session's usage.
func (p *triageProcessor) reportUsage(ctx context.Context, c *closedInFlight, runs []trajectory.Run) {
	if p.guards == nil || p.recovery == nil || !p.guards.Config().SessionBudgets() {
		return
	}
	reported := c.reported
	for i := range runs {
		u := p.guards.UsageOf(runs[i : i+1])
		// What was reported in flight belongs to the trace's runs; it is
		// taken off the first runs it covers.
		take := recovery.Usage{Tokens: min(u.Tokens, reported.Tokens), Cost: min(u.Cost, reported.Cost)}
		reported = recovery.Usage{Tokens: reported.Tokens - take.Tokens, Cost: reported.Cost - take.Cost}
		u = recovery.Usage{Tokens: u.Tokens - take.Tokens, Cost: u.Cost - take.Cost}
		if u.IsZero() {
			continue
		}
		session := p.recovery.session(&runs[i])
		if session == "" {
			continue
		}
		_, _ = p.recovery.addUsage(ctx, session, u)
	}
}

// inFlightOfRun picks, among a trace's in-flight decisions, the one a
// run's final decision refers to: on one of the run's spans, of the final
// failure type if there is one, else the first.
func inFlightOfRun(run *trajectory.Run, failureType classifier.FailureType, decisions []recovery.Decision) *recovery.Decision {
	if len(decisions) == 0 {
		return nil
	}
	ids := make(map[string]bool, len(run.SpanIDs))
	for _, id := range run.SpanIDs {
		ids[id.String()] = true
	}
	var first *recovery.Decision
	for i := range decisions {
		d := &decisions[i]
		if !ids[d.SpanID] {
			continue
		}
		if d.FailureType == string(failureType) {
			return d
		}
		if first == nil {
			first = d
		}
	}
	return first
}

// addUsage adds usage to a session, bounded like every engine call.
func (r *recoverer) addUsage(ctx context.Context, session string, u recovery.Usage) (recovery.Usage, error) {
	cctx, cancel := r.callContext(ctx)
	defer cancel()
	total, err := r.engine.AddUsage(cctx, session, u)
	if err != nil {
		r.tb.ProcessorTriageRecoveryErrors.Add(ctx, 1, adds1("operation", "add_usage")...)
		r.logger.Debug("adding session usage", r.out.err(err))
	}
	return total, err
}
