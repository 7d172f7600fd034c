package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"context"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"

	"github.com/triage-otel/triage/trajectory"
)

// GenAI log events in a logs pipeline.
//
// Instrumentations that follow the current GenAI conventions record message
// content in log records linked to the LLM span by trace and span ID (see
// trajectory/logs.go). The logs instance of the processor forwards every
// log record unchanged and copies the GenAI events among them into the
// shared state: with their trace when it is held, or, when no span of the
// trace arrived yet, into a pending buffer the trace takes when its first
// span comes (dropped, counted, if none comes within decision_wait).
// trajectory.Build joins them to the steps when the trace is decided.
//
// Which traces wait for logs. A trace whose root arrives is decided at once
// unless it expects log events that have not all arrived. It expects them
// when one of its LLM spans comes from an instrumentation this processor has
// already seen emit GenAI events: the pair (service.name, instrumentation
// scope name) of every GenAI log record is remembered (the log record and
// its span share the instrumentation's scope). That covers a trace whose own
// events arrived first and, once one event of a service's instrumentation
// has been seen, every later trace of it, whatever the order of the two
// pipelines. Such an LLM span's events are complete when an output event
// (gen_ai.choice, or the per-call details event) arrived for it, or, for a
// span that ended in error (no output then), any event. The trace waits
// until they are complete or for at most logs_wait after its root arrived
// (trigger logs_wait), so a trace of an instrumentation that sends content
// on logs but not the events of this call (content capture switched off
// mid-way, a lost batch) costs logs_wait at most, and traces of
// instrumentations never seen emitting events do not wait at all.
//
// Events that arrive once their trace is decided are forwarded and counted
// (reason late); they do not change the decision.

// maxEmitters bounds the (service, scope) pairs remembered as emitting
// GenAI events: far more than a deployment's instrumentations, small
// enough (a few hundred kilobytes) not to need a setting.
const maxEmitters = 4096

// Reasons a GenAI log record was not joined (it is still forwarded), the
// reason attribute of processor_triage_log_records_dropped.
const (
	dropLate        = "late"    // its trace was already decided
	dropNoSpan      = "no_span" // no trace or span ID to join by
	dropPerTrace    = "max_log_records_per_trace"
	dropBytes       = "max_log_bytes"
	dropEvicted     = "evicted"   // pending logs pushed out by num_traces
	dropExpired     = "expired"   // no span of its trace within decision_wait
	dropUnsupported = "no_traces" // the component is in no traces pipeline
)

// emitter is an instrumentation seen emitting GenAI log events.
type emitter struct{ service, scope string }

// traceLogs are the GenAI log records held for one trace (copies).
type traceLogs struct {
	ld        plog.Logs
	cur       logCursor
	records   int
	bytes     int
	lastSeen  time.Time
	withEvent map[pcommon.SpanID]bool // span → it has an output event
}

// logState is the logs side of the shared state; guarded by p.mu.
type logState struct {
	pending  *simplelru.LRU[pcommon.TraceID, *traceLogs]
	emitters *simplelru.LRU[emitter, struct{}]
	records  int // log records held, pending or with their trace
	bytes    int
	// due lists, in due order, traces whose root arrived and that wait
	// for their log events until logsDue.
	due      []*heldTrace
	batchSeq uint64
	sizer    plog.ProtoMarshaler
}

func newLogState(cfg *Config) (logState, error) {
	pending, err := simplelru.NewLRU[pcommon.TraceID, *traceLogs](cfg.NumTraces+1, nil)
	if err != nil {
		return logState{}, err
	}
	emitters, err := simplelru.NewLRU[emitter, struct{}](maxEmitters, nil)
	if err != nil {
		return logState{}, err
	}
	return logState{pending: pending, emitters: emitters}, nil
}

// logsProcessor is a logs instance of the component.
type logsProcessor struct {
	p       *triageProcessor
	next    consumer.Logs
	release func() bool
}

var _ processor.Logs = (*logsProcessor)(nil)

func (lp *logsProcessor) Capabilities() consumer.Capabilities {
	// What is held is copied; the records themselves go on untouched.
	return consumer.Capabilities{MutatesData: false}
}

func (lp *logsProcessor) Start(ctx context.Context, host component.Host) error {
	return lp.p.Start(ctx, host)
}

// Shutdown releases this instance; the last instance of the state releases
// its resources.
func (lp *logsProcessor) Shutdown(ctx context.Context) error {
	if lp.release() {
		return lp.p.closeState(ctx)
	}
	return nil
}

// ConsumeLogs copies the GenAI events of ld into the shared state, decides
// the traces whose events are now complete, and forwards ld unchanged.
func (lp *logsProcessor) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	toDecide := lp.p.ingestLogs(ctx, ld)
	// A refusal of the traces' own consumer is counted and logged there,
	// never the logs sender's error.
	lp.p.finish(ctx, toDecide, ptrace.Traces{})
	return lp.next.ConsumeLogs(ctx, ld)
}

// ingestLogs holds the GenAI events of ld and returns the traces that
// waited for them and are now complete (already moved to deciding).
func (p *triageProcessor) ingestLogs(ctx context.Context, ld plog.Logs) []*heldTrace {
	li := logIntake{now: p.now(), dropped: map[string]int64{}}

	p.mu.Lock()
	ls := &p.logs
	ls.batchSeq++
	li.batch = ls.batchSeq
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		service := ""
		if v, ok := rl.Resource().Attributes().Get("service.name"); ok {
			service = v.AsString()
		}
		sls := rl.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			sl := sls.At(j)
			lrs := sl.LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				name := trajectory.EventName(lr)
				if !trajectory.IsGenAIEvent(name) {
					continue
				}
				ls.emitters.Add(emitter{service, sl.Scope().Name()}, struct{}{})
				p.holdLogRecord(&li, logRecordAt{i, j, rl, sl, lr}, name)
			}
		}
	}
	p.mu.Unlock()

	p.recordHeld(ctx, li.dTraces, li.dSpans)
	if li.held != 0 {
		p.tb.ProcessorTriageLogRecordsHeld.Add(ctx, li.held)
	}
	for reason, n := range li.dropped {
		if n > 0 {
			p.tb.ProcessorTriageLogRecordsDropped.Add(ctx, n, adds1("reason", reason)...)
		}
	}
	return li.toDecide
}

// logIntake is what one ingestLogs call does: the records held and dropped
// (by reason), the traces it completes, and the change of the spans and
// traces held.
type logIntake struct {
	now      time.Time
	batch    uint64
	dropped  map[string]int64
	held     int64
	toDecide []*heldTrace
	dTraces  int
	dSpans   int
}

// logRecordAt is a log record and where it sits in its batch.
type logRecordAt struct {
	i, j int // resource and scope index
	rl   plog.ResourceLogs
	sl   plog.ScopeLogs
	lr   plog.LogRecord
}

// holdLogRecord holds one GenAI event with its trace (held, or pending
// until its spans come), within the limits, and sends a trace that waited
// for its events to be decided once they are all here. Called with p.mu
// held.
func (p *triageProcessor) holdLogRecord(li *logIntake, at logRecordAt, name string) {
	ls := &p.logs
	tid, sid := at.lr.TraceID(), at.lr.SpanID()
	switch {
	case tid.IsEmpty() || sid.IsEmpty():
		li.dropped[dropNoSpan]++
		return
	case p.next == nil || p.closed:
		li.dropped[dropUnsupported]++
		return
	}
	if _, ok := p.decided.get(tid); ok {
		li.dropped[dropLate]++
		return
	}
	if _, ok := p.deciding[tid]; ok {
		li.dropped[dropLate]++
		return
	}
	h, isHeld := p.held.Peek(tid)
	var tl *traceLogs
	if isHeld {
		rare := h.rareState()
		if rare.logs == nil {
			rare.logs = &traceLogs{}
		}
		tl = rare.logs
	} else if tl, _ = ls.pending.Get(tid); tl == nil {
		for ls.pending.Len() >= p.cfg.NumTraces {
			_, old, _ := ls.pending.RemoveOldest()
			li.dropped[dropEvicted] += int64(old.records)
			li.held -= int64(old.records)
			ls.drop(old)
		}
		tl = &traceLogs{}
		ls.pending.Add(tid, tl)
	}
	if tl.records >= p.cfg.MaxLogRecordsPerTrace {
		li.dropped[dropPerTrace]++
		return
	}
	size := ls.sizer.LogRecordSize(at.lr)
	// The global cap pushes out pending logs first (their trace may never
	// come), never what decided traces will need.
	for ls.bytes+size > p.cfg.MaxLogBytes && ls.pending.Len() > 0 {
		oldID, old, _ := ls.pending.GetOldest()
		if old == tl {
			break
		}
		ls.pending.Remove(oldID)
		li.dropped[dropBytes] += int64(old.records)
		li.held -= int64(old.records)
		ls.drop(old)
	}
	if ls.bytes+size > p.cfg.MaxLogBytes {
		li.dropped[dropBytes]++
		return
	}
	tl.add(li.batch, at.i, at.j, at.rl, at.sl, at.lr, name, li.now)
	tl.bytes += size
	ls.records++
	ls.bytes += size
	li.held++
	if isHeld && !h.rareOrZero().logsDue.IsZero() && h.trigger == triggerNone && !p.awaitsLogs(h) {
		// It waited for these: decide it now.
		p.held.Remove(h.id)
		li.dTraces, li.dSpans = li.dTraces-1, li.dSpans-h.spans
		li.toDecide = append(li.toDecide, p.startDeciding(h, triggerRoot))
	}
}

// drop forgets the accounting of logs no longer held.
func (ls *logState) drop(tl *traceLogs) {
	ls.records -= tl.records
	ls.bytes -= tl.bytes
}

func (tl *traceLogs) add(batch uint64, rs, ss int, rl plog.ResourceLogs, sl plog.ScopeLogs, lr plog.LogRecord, name string, now time.Time) {
	if tl.ld == (plog.Logs{}) {
		tl.ld = plog.NewLogs()
	}
	appendLogRecord(tl.ld, &tl.cur, srcLoc{batch: batch, rs: rs, ss: ss}, rl, sl, lr)
	tl.records++
	tl.lastSeen = now
	if tl.withEvent == nil {
		tl.withEvent = make(map[pcommon.SpanID]bool)
	}
	sid := lr.SpanID()
	tl.withEvent[sid] = tl.withEvent[sid] || trajectory.IsOutputEvent(name)
}

// attachPendingLogs gives a trace that just got its first span the log
// events that arrived before it. Called with p.mu held.
func (p *triageProcessor) attachPendingLogs(h *heldTrace) {
	if tl, ok := p.logs.pending.Peek(h.id); ok {
		p.logs.pending.Remove(h.id)
		h.rareState().logs = tl
	}
}

// releaseLogs forgets the accounting of a trace's logs as it leaves the
// buffer for its decision (the records go with it). Called with p.mu held.
func (p *triageProcessor) releaseLogs(h *heldTrace) {
	if tl := h.rareOrZero().logs; tl != nil {
		p.logs.drop(tl)
	}
}

// buildOptions are the trajectory options of a trace being decided.
func (h *heldTrace) buildOptions() []trajectory.Option {
	tl := h.rareOrZero().logs
	if tl == nil || tl.records == 0 {
		return nil
	}
	return []trajectory.Option{trajectory.WithLogs(tl.ld)}
}

// waitForLogs reports whether a trace whose root arrived at rootAt must
// wait for log events, and if so schedules it until rootAt+logs_wait.
// Called with p.mu held.
func (p *triageProcessor) waitForLogs(h *heldTrace, rootAt, now time.Time) bool {
	if p.cfg.LogsWait <= 0 || p.closed || p.logs.emitters.Len() == 0 {
		return false
	}
	due := rootAt.Add(p.cfg.LogsWait)
	if !now.Before(due) || !p.awaitsLogs(h) {
		return false
	}
	h.rareState().logsDue = due
	p.logs.due = append(p.logs.due, h)
	return true
}

// awaitsLogs reports whether some LLM span of the trace comes from an
// instrumentation that emits GenAI events and its events are not complete
// yet (see the top of this file). Called with p.mu held.
func (p *triageProcessor) awaitsLogs(h *heldTrace) bool {
	awaits := false
	rss := h.td.ResourceSpans()
	for i := 0; i < rss.Len() && !awaits; i++ {
		rs := rss.At(i)
		service := ""
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
			service = v.AsString()
		}
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len() && !awaits; j++ {
			ss := sss.At(j)
			if !p.logs.emitters.Contains(emitter{service, ss.Scope().Name()}) {
				continue
			}
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				if !trajectory.IsLLMSpan(sp, rs.Resource(), ss.Scope().Name()) {
					continue
				}
				output, anyEvent := false, false
				if tl := h.rareOrZero().logs; tl != nil {
					output, anyEvent = tl.withEvent[sp.SpanID()]
				}
				if !output && !(anyEvent && sp.Status().Code() == ptrace.StatusCodeError) {
					awaits = true
					break
				}
			}
		}
	}
	return awaits
}

// decideLogsDue moves the traces whose logs_wait ended to deciding. Called
// with p.mu held; returns the traces and the held deltas.
func (p *triageProcessor) decideLogsDue(now time.Time, toDecide []*heldTrace) ([]*heldTrace, int, int) {
	dTraces, dSpans := 0, 0
	ls := &p.logs
	for len(ls.due) > 0 && !now.Before(ls.due[0].rareOrZero().logsDue) {
		h := ls.due[0]
		ls.due[0] = nil
		ls.due = ls.due[1:]
		if h.trigger != triggerNone {
			continue // decided meanwhile: events complete, evicted, cut
		}
		p.held.Remove(h.id)
		dTraces, dSpans = dTraces-1, dSpans-h.spans
		toDecide = append(toDecide, p.startDeciding(h, triggerLogsWait))
	}
	return toDecide, dTraces, dSpans
}

// expirePendingLogs drops pending log events of traces that got no span
// within decision_wait. Called with p.mu held; returns the records dropped.
func (p *triageProcessor) expirePendingLogs(now time.Time) int64 {
	var n int64
	for {
		_, tl, ok := p.logs.pending.GetOldest()
		if !ok || now.Sub(tl.lastSeen) < p.cfg.DecisionWait {
			return n
		}
		p.logs.pending.RemoveOldest()
		p.logs.drop(tl)
		n += int64(tl.records)
	}
}

// srcLoc identifies the resource and scope a record came from in one batch.
type srcLoc struct {
	batch  uint64
	rs, ss int
}

// logCursor is cursor for log records.
type logCursor struct {
	loc   srcLoc
	recs  plog.LogRecordSlice
	valid bool
}

// appendLogRecord copies lr (with its resource and scope) into dst.
func appendLogRecord(dst plog.Logs, c *logCursor, loc srcLoc, rl plog.ResourceLogs, sl plog.ScopeLogs, lr plog.LogRecord) {
	if !c.valid || c.loc != loc {
		drl := dst.ResourceLogs().AppendEmpty()
		rl.Resource().CopyTo(drl.Resource())
		drl.SetSchemaUrl(rl.SchemaUrl())
		dsl := drl.ScopeLogs().AppendEmpty()
		sl.Scope().CopyTo(dsl.Scope())
		dsl.SetSchemaUrl(sl.SchemaUrl())
		*c = logCursor{loc: loc, recs: dsl.LogRecords(), valid: true}
	}
	lr.CopyTo(c.recs.AppendEmpty())
}

// recordJoinedLogs counts the log records of a trace being decided as
// joined and no longer held.
func (p *triageProcessor) recordJoinedLogs(ctx context.Context, h *heldTrace) {
	tl := h.rareOrZero().logs
	if tl == nil || tl.records == 0 {
		return
	}
	n := int64(tl.records)
	p.tb.ProcessorTriageLogRecordsHeld.Add(ctx, -n)
	p.tb.ProcessorTriageLogRecordsJoined.Add(ctx, n)
}

// keepForLogs reports whether the decision_wait expiry must leave a held
// trace alone because its root arrived and it waits for its log events
// (logs_wait decides it: decision_wait is for traces whose root has not
// arrived); it is moved to the recent end of the buffer so the expiry
// looks at the next one. waiting counts the traces kept in this pass, so
// the caller stops once it has seen them all. Called with p.mu held.
func (p *triageProcessor) keepForLogs(h *heldTrace, now time.Time, waiting *int) bool {
	if h.rareOrZero().logsDue.IsZero() || !now.Before(h.rareOrZero().logsDue) {
		return false
	}
	*waiting++
	p.held.Get(h.id)
	return true
}
