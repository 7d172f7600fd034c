package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"time"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/internal/smallmap"
	"github.com/triage-otel/triage/recovery"
	"github.com/triage-otel/triage/trajectory"
	"github.com/triage-otel/triage/wire"
)

// Attribute names written on forwarded spans (defined in package wire).
const (
	attrVerdict        = wire.AttrVerdict
	attrFailureType    = wire.AttrFailureType
	attrSignal         = wire.AttrSignal
	attrRule           = wire.AttrRule
	attrConfidence     = wire.AttrConfidence
	attrEvidenceSpanID = wire.AttrEvidenceSpanID
	attrReason         = wire.AttrReason
	attrRecovered      = wire.AttrRecovered
	attrRuleError      = wire.AttrRuleError
	attrRootMissing    = wire.AttrRootMissing
)

// sharedKeys are written both on run roots and on incident spans.
var sharedKeys = []string{attrFailureType, attrSignal, attrRule, attrReason}

// annotation is one attribute to set on a span. A run root gets a few
// dozen and the decision cache keeps those of roots that had not arrived,
// so the value of a number or flag shares one word (bits).
type annotation struct {
	key  string
	kind pcommon.ValueType
	str  string
	// bits is the value of a double (math.Float64bits), an int, or a bool
	// (1 for true).
	bits uint64
	// eval, when set, is not an attribute but a gen_ai.evaluation.result
	// span event (evaluation.go).
	eval *evaluation
}

func strAnn(k, v string) annotation { return annotation{key: k, kind: pcommon.ValueTypeStr, str: v} }
func numAnn(k string, v float64) annotation {
	return annotation{key: k, kind: pcommon.ValueTypeDouble, bits: math.Float64bits(v)}
}
func intAnn(k string, v int64) annotation {
	return annotation{key: k, kind: pcommon.ValueTypeInt, bits: uint64(v)}
}
func boolAnn(k string, v bool) annotation {
	a := annotation{key: k, kind: pcommon.ValueTypeBool}
	if v {
		a.bits = 1
	}
	return a
}

func (a annotation) apply(m pcommon.Map) {
	if a.eval != nil {
		return // an event, added by addEvaluations
	}
	switch a.kind {
	case pcommon.ValueTypeDouble:
		m.PutDouble(a.key, math.Float64frombits(a.bits))
	case pcommon.ValueTypeInt:
		m.PutInt(a.key, int64(a.bits))
	case pcommon.ValueTypeBool:
		m.PutBool(a.key, a.bits != 0)
	default:
		m.PutStr(a.key, a.str)
	}
}

// traceAnnotations are the annotations of the spans a trace held when it
// was decided. They are written on the trace's spans and then dropped, so
// their memory is reused from trace to trace (getTraceAnnotations): the
// lists are carved from buf and the evaluations from evals, and the maps
// keep their room. What the decision cache keeps is copied out (kept).
type traceAnnotations struct {
	// spans are the incident and root annotations of each span that gets
	// any, in the order first set; root annotations are applied after
	// incident ones so a span that is both shows its run's verdict. A
	// trace has a few such spans: index finds each one's place in spans
	// (a smallmap: a look through a short list, a Go map past
	// smallmap.MaxSlice).
	spans []spanAnnotations
	index smallmap.Map[pcommon.SpanID, int32]
	// annotated has the bit spanBit of every span ID in spans: a trace's
	// spans are walked for the few that get annotations, and one whose
	// bit is clear is passed over without a look.
	annotated uint64
	buf       []annotation
	evals     []evaluation
	// text holds the bytes of the strings made for the annotations (the
	// evaluations' explanations, the evidence span ids): they go out on
	// the spans, so what was carved from it is never written again. Its
	// room left over (past len) serves the next traces: a block of
	// textBlock bytes holds the text of several traces (a trace's is
	// about a hundred bytes), and stays reachable while any of their
	// spans is.
	text []byte
	// w lays out a span's attributes (attrwrite.go).
	w attrWriter
}

// Past these sizes a trace's annotations are not kept for reuse: one huge
// trace must not pin its memory in the pool.
const (
	maxPooledAnnotations = 4096
	maxPooledSpans       = 1024
)

// spanAnnotations are the annotations of one span of a trace.
type spanAnnotations struct {
	incident []annotation
	root     []annotation
}

var traceAnnotationsPool = sync.Pool{New: func() any { return new(traceAnnotations) }}

func getTraceAnnotations() *traceAnnotations {
	return traceAnnotationsPool.Get().(*traceAnnotations)
}

// release clears t (nothing it held stays reachable from the pool) and
// returns it to the pool.
func (t *traceAnnotations) release() {
	if cap(t.buf) > maxPooledAnnotations || cap(t.evals) > maxPooledAnnotations || cap(t.spans) > maxPooledSpans {
		return
	}
	clear(t.buf)
	clear(t.evals)
	clear(t.spans)
	t.buf, t.evals, t.spans = t.buf[:0], t.evals[:0], t.spans[:0]
	if cap(t.text) > textBlock {
		t.text = nil // (one huge trace's block is not kept)
	}
	t.index.Reset()
	t.annotated = 0
	t.w.reset()
	traceAnnotationsPool.Put(t)
}

// reserveText makes the text block room for the text of the trace's
// annotations: its evaluations' explanations and its runs' evidence span
// ids (a run found incomplete needs none of it).
func (t *traceAnnotations) reserveText(verdicts []classifier.Verdict, evals bool) {
	n := 0
	for i := range verdicts {
		v := &verdicts[i]
		if !v.EvidenceSpanID.IsEmpty() {
			n += 2 * len(v.EvidenceSpanID)
		}
		if !evals {
			continue
		}
		n += runExplanationLen(v)
		for j := range v.Incidents {
			if !v.Incidents[j].SpanID.IsEmpty() {
				n += incidentExplanationLen(&v.Incidents[j])
			}
		}
	}
	if cap(t.text)-len(t.text) < n {
		t.text = make([]byte, 0, max(n, textBlock))
	}
}

// textBlock is the size of the blocks the annotations' text is carved
// from (reserveText).
const textBlock = 1024

// newText returns an empty byte slice with room for n bytes, carved from
// t's text block (reserveText); the caller writes at most n bytes and
// takes them as a string with textString.
func (t *traceAnnotations) newText(n int) []byte {
	if cap(t.text)-len(t.text) < n {
		t.text = make([]byte, 0, n)
	}
	l := len(t.text)
	t.text = t.text[:l+n]
	return t.text[l : l : l+n]
}

// textString is the text written in b (from newText), which is never
// written again.
func textString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// list returns an empty list with room for n annotations.
func (t *traceAnnotations) list(n int) []annotation { return carve(&t.buf, n)[:0] }

// evaluated appends the evaluation event e to a span's annotations (when
// the processor writes evaluation events).
func (t *traceAnnotations) evaluated(anns []annotation, e evaluation) []annotation {
	ev := &carve(&t.evals, 1)[0]
	*ev = e
	return append(anns, annotation{eval: ev})
}

// carve returns the next n elements of *buf (capacity n), starting a new
// backing array when *buf is full: what was carved before stays where it
// is.
func carve[T any](buf *[]T, n int) []T {
	b := *buf
	if cap(b)-len(b) < n {
		b = make([]T, 0, max(2*cap(b), n, 32))
	}
	l := len(b)
	*buf = b[:l+n]
	return b[l : l+n : l+n]
}

// kept is a copy of anns, with evaluations and strings of their own, for the
// decision cache: exactly as long as anns. An annotation's text is often a
// view of the trace's attribute text (a tool name decoded from a message
// history is a substring of that history), and the entry outlives the
// trace: kept as views they would pin whole requests, and the entry's
// accounted size (its strings' lengths) would not bound its memory. The
// copies of the texts share one block, and the evaluations one array (an
// entry is a run root's few dozen annotations: one allocation each would
// be most of its allocations).
func kept(anns []annotation) []annotation {
	out := append(make([]annotation, 0, len(anns)), anns...)
	n, evals := 0, 0
	for i := range out {
		n += len(out[i].str)
		if e := out[i].eval; e != nil {
			n += len(e.explanation)
			evals++
		}
	}
	block := make([]byte, 0, n)
	// own is s copied into block, which never grows past n: what was
	// written stays where it is.
	own := func(s string) string {
		if s == "" {
			return ""
		}
		l := len(block)
		block = append(block, s...)
		return textString(block[l:len(block):len(block)])
	}
	var copies []evaluation
	if evals > 0 {
		copies = make([]evaluation, 0, evals)
	}
	for i := range out {
		out[i].str = own(out[i].str)
		if e := out[i].eval; e != nil {
			c := *e
			c.explanation = own(c.explanation) // (a view of the trace's text block)
			copies = append(copies, c)
			out[i].eval = &copies[len(copies)-1]
		}
	}
	return out
}

// find returns the annotations of span id, nil when it has none.
func (t *traceAnnotations) find(id pcommon.SpanID) *spanAnnotations {
	if t.annotated&spanBit(id) == 0 {
		return nil
	}
	if i, ok := t.index.Get(id); ok {
		return &t.spans[i]
	}
	return nil
}

// of returns the annotations of span id, added empty when it has none.
func (t *traceAnnotations) of(id pcommon.SpanID) *spanAnnotations {
	if s := t.find(id); s != nil {
		return s
	}
	t.index.Put(id, int32(len(t.spans)))
	t.spans = append(t.spans, spanAnnotations{})
	t.annotated |= spanBit(id)
	return &t.spans[len(t.spans)-1]
}

// incidentOf returns the incident annotations of span id (ok false when
// it has none yet).
func (t *traceAnnotations) incidentOf(id pcommon.SpanID) ([]annotation, bool) {
	if s := t.find(id); s != nil && s.incident != nil {
		return s.incident, true
	}
	return nil, false
}

// setIncident sets the incident annotations of span id.
func (t *traceAnnotations) setIncident(id pcommon.SpanID, anns []annotation) {
	t.of(id).incident = nonNil(anns)
}

// setRoot sets the run-root annotations of span id.
func (t *traceAnnotations) setRoot(id pcommon.SpanID, anns []annotation) {
	t.of(id).root = nonNil(anns)
}

// nonNil is anns, or an empty list when anns is nil: a span's lists are
// nil only while it has none of that kind.
func nonNil(anns []annotation) []annotation {
	if anns == nil {
		return []annotation{}
	}
	return anns
}

// spanBit is a span ID's bit in traceAnnotations.annotated: from its last
// byte (span IDs are random; a collision only costs the lookups).
func spanBit(id pcommon.SpanID) uint64 { return 1 << (id[len(id)-1] & 63) }

// annotate sets the trace's attributes on span.
func (t *traceAnnotations) annotate(span ptrace.Span) {
	s := t.find(span.SpanID())
	if s == nil {
		return
	}
	t.w.annotate(span.Attributes(), s.incident, s.root)
	addEvaluations(&t.w.b, span, s.incident, s.root)
}

// attributeCount is the number of attributes (not evaluation events)
// among anns.
func attributeCount(anns []annotation) int {
	n := 0
	for i := range anns {
		if anns[i].eval == nil {
			n++
		}
	}
	return n
}

// classifiedTrace is a trace's runs and their verdicts between
// classification and annotation: the model may be asked in between.
type classifiedTrace struct {
	runs        []trajectory.Run
	index       trajectory.SpanIndex // the trace's spans, as Build read them
	verdicts    []classifier.Verdict
	extras      [][]classifier.Incident
	classifiers []*classifier.Classifier
	ruleErr     error
	// inFlight are the in-flight decisions taken for the trace while it
	// was held; its runs' final decisions reference them.
	inFlight []recovery.Decision
	// took is the time spent classifying (and preparing model questions).
	took time.Duration
	// one is the pooled room ct lives in (classifyTrace).
	one *classifiedOne
}

// classifiedOne is a classified trace with room for one run's verdict
// (most traces hold one run): allocated together, and reused from trace to
// trace (classifiedPool) with its span index's room, which Build grows to
// the trace's spans.
type classifiedOne struct {
	ct         classifiedTrace
	verdict    [1]classifier.Verdict
	extras     [1][]classifier.Incident
	classifier [1]*classifier.Classifier
	// withIndex is trajectory.WithIndex(&ct.index), made once per pooled
	// value (an option is a closure: made per trace, an allocation each).
	withIndex trajectory.Option
}

var classifiedPool = sync.Pool{New: func() any { return new(classifiedOne) }}

// maxPooledIndex is the most spans whose index room a pooled classified
// trace keeps: a huge trace must not pin its index in the pool.
const maxPooledIndex = 4096

// release clears one (nothing it held stays reachable from the pool: the
// index's room is kept, its spans dropped) and returns it to the pool. The
// trace's decision must be taken: nothing may use one afterwards.
func (one *classifiedOne) release() {
	index, withIndex := one.ct.index, one.withIndex
	*one = classifiedOne{}
	if cap(index.Spans()) <= maxPooledIndex {
		index.Release()
		one.ct.index, one.withIndex = index, withIndex
		classifiedPool.Put(one)
	}
}

func (ct *classifiedTrace) classifierFor(i int) *classifier.Classifier { return ct.classifiers[i] }

// decide classifies the runs of a trace that left the buffer, annotates its
// spans in place and returns what the decision cache keeps of it. It
// returns nil when the trace is held for a model answer: completeHeld then
// decides and forwards it. A failure inside the library never stops the
// spans from being forwarded: the trace then goes on unannotated.
func (p *triageProcessor) decide(ctx context.Context, h *heldTrace) *decided {
	start := time.Now()
	var ct *classifiedTrace
	if !p.guarded(h, func() { ct = p.classifyTrace(ctx, h) }) {
		return p.recordDecided(ctx, h, keep(decided{cutBy: h.rareOrZero().cutBy}), time.Since(start))
	}
	if p.llm != nil {
		var pending []pendingRun
		if p.guarded(h, func() { pending = p.llm.prepare(h, ct) }) && len(pending) > 0 && p.llm.hold(ctx, len(pending)) {
			ct.took = time.Since(start)
			// (held is what the callback keeps: ct itself stays off the
			// heap on the path without a model.)
			held := ct
			p.llm.ask(held, pending, func() { p.completeHeld(h, held) })
			return nil
		}
	}
	ct.took = time.Since(start)
	d := p.annotateTrace(ctx, h, ct)
	// (A trace held for a model answer above keeps ct: it is not reused.)
	ct.one.release()
	return d
}

// completeHeld decides and forwards a trace that waited for the model.
func (p *triageProcessor) completeHeld(h *heldTrace, ct *classifiedTrace) {
	ctx := context.Background()
	p.publish(ctx, []*heldTrace{h}, []*decided{p.annotateTrace(ctx, h, ct)}, ptrace.Traces{})
}

// guarded runs fn and reports whether it returned without panicking.
func (p *triageProcessor) guarded(h *heldTrace, fn func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			p.logger.Error("triage decision panicked; forwarding the trace unannotated",
				zap.String("trace_id", h.id.String()), p.out.panicValue(r), zap.ByteString("stack", debug.Stack()))
			ok = false
		}
	}()
	fn()
	return true
}

// recordDecided records the telemetry of a decision and returns it.
func (p *triageProcessor) recordDecided(ctx context.Context, h *heldTrace, d *decided, took time.Duration) *decided {
	p.tb.ProcessorTriageDecisionLatency.Record(ctx, float64(took)/float64(time.Millisecond))
	p.tb.ProcessorTriageTraceHoldDuration.Record(ctx, p.now().Sub(h.firstSeen).Seconds())
	p.tb.ProcessorTriageTracesDecided.Add(ctx, 1, adds1("trigger", h.trigger.String())...)
	return d
}

// classifyTrace builds the trace's runs and classifies each.
func (p *triageProcessor) classifyTrace(ctx context.Context, h *heldTrace) *classifiedTrace {
	// One walk of the trace: Build reads every span, indexes it for the
	// rules and the annotations, and finds each run's top spans and
	// session.
	one := classifiedPool.Get().(*classifiedOne)
	ct := &one.ct
	ct.one = one
	// The in-flight watch ends first: Build takes over the steps the
	// guards read.
	inFlight := closeInFlight(h)
	if b := h.rareOrZero().built; b != nil {
		// Built by the check that found its runs over (early.go).
		ct.runs, ct.index = b.runs, b.index
		h.rare.built = nil
	} else {
		if one.withIndex == nil {
			one.withIndex = trajectory.WithIndex(&ct.index)
		}
		var room [4]trajectory.Option
		opts := append(p.appendDecisionBuildOptions(room[:0], h, one.withIndex), inFlight.buildOptions()...)
		ct.runs = trajectory.Build(h.td, opts...)
	}
	p.recordJoinedLogs(ctx, h)
	p.reportUsage(ctx, &inFlight, ct.runs)
	ct.inFlight = inFlight.decisions
	var ruleIncidents map[pcommon.SpanID][]classifier.Incident
	ruleIncidents, ct.ruleErr = p.evalRules(ctx, &ct.index)
	if len(ct.runs) == 1 {
		ct.verdicts, ct.extras, ct.classifiers = one.verdict[:], one.extras[:], one.classifier[:]
	} else {
		ct.verdicts = make([]classifier.Verdict, len(ct.runs))
		ct.extras = make([][]classifier.Incident, len(ct.runs))
		ct.classifiers = make([]*classifier.Classifier, len(ct.runs))
	}
	for i := range ct.runs {
		run := &ct.runs[i]
		ct.extras[i] = incidentsOfRun(run, ruleIncidents)
		ct.classifiers[i] = p.classifiers.forService(run.Service)
		ct.verdicts[i] = ct.classifiers[i].Classify(run, ct.extras[i]...)
	}
	return ct
}

// decisionBuildOptions are the options of a trace's Build for its
// decision, besides the in-flight guards' readings (which only spare Build
// reading spans again: the runs are the same without them).
func (p *triageProcessor) decisionBuildOptions(h *heldTrace, index *trajectory.SpanIndex) []trajectory.Option {
	return p.appendDecisionBuildOptions(nil, h, trajectory.WithIndex(index))
}

// appendDecisionBuildOptions appends decisionBuildOptions to opts, with
// withIndex the index's option: room for four (the logs', the index's,
// the session keys' and the in-flight readings') spares the list an
// allocation.
func (p *triageProcessor) appendDecisionBuildOptions(opts []trajectory.Option, h *heldTrace, withIndex trajectory.Option) []trajectory.Option {
	opts = append(opts, h.buildOptions()...)
	opts = append(opts, withIndex)
	if p.recovery != nil {
		opts = append(opts, p.recovery.sessionKeys)
	}
	return opts
}

// builtTrace is a trace's runs built before its decision, with the index
// of the spans Build read.
type builtTrace struct {
	runs  []trajectory.Run
	index trajectory.SpanIndex
}

// buildForDecision builds h's runs as its decision builds them, without
// the in-flight guards' readings (the guards still watch the trace).
func (p *triageProcessor) buildForDecision(h *heldTrace) *builtTrace {
	b := &builtTrace{}
	b.runs = trajectory.Build(h.td, p.decisionBuildOptions(h, &b.index)...)
	return b
}

// annotateTrace turns the verdicts into annotations (and recovery
// decisions), annotates the trace's spans in place and returns what the
// decision cache keeps.
func (p *triageProcessor) annotateTrace(ctx context.Context, h *heldTrace, ct *classifiedTrace) *decided {
	start := time.Now()
	d := decided{cutBy: h.rareOrZero().cutBy}
	if !p.guarded(h, func() { p.annotateRuns(ctx, h, ct, &d) }) {
		d = decided{cutBy: h.rareOrZero().cutBy}
	}
	return p.recordDecided(ctx, h, keep(d), ct.took+time.Since(start))
}

func (p *triageProcessor) annotateRuns(ctx context.Context, h *heldTrace, ct *classifiedTrace, d *decided) {
	ruleErrText := ""
	if ct.ruleErr != nil {
		ruleErrText = p.out.text(ct.ruleErr.Error()) // OTTL errors can quote span data
	}
	t := getTraceAnnotations()
	evals := p.cfg.EvaluationEvents
	t.reserveText(ct.verdicts, evals)
	var lateRootOutcome string
	for i := range ct.runs {
		run := &ct.runs[i]
		v := &ct.verdicts[i]

		var rootAnns []annotation
		outcome := string(v.Outcome)
		if reason := incompleteReason(h, run, v); reason != "" {
			// Partial evidence that does not settle the run: no verdict,
			// no incidents (whether they were recovered is unknown), no
			// decision.
			outcome = verdictIncomplete
			rootAnns = p.incompleteAnnotations(run, reason)
		} else {
			for _, inc := range v.Incidents {
				if inc.SpanID.IsEmpty() {
					continue
				}
				anns, ok := t.incidentOf(inc.SpanID)
				if !ok {
					anns = t.list(incidentAnnotationsCap)
				}
				anns = appendIncidentAnnotations(anns, &inc)
				if evals {
					anns = t.evaluated(anns, incidentEvaluation(t, &inc))
				}
				t.setIncident(inc.SpanID, anns)
			}
			rootAnns = appendRootAnnotations(t, t.list(rootAnnotationsCap(v.Outcome)), v, ruleErrText)
			if evals {
				rootAnns = t.evaluated(rootAnns, runEvaluation(t, v))
			}
			// Asked once per run here; a root annotated later from the
			// decision cache gets these same annotations, so the decision
			// (and its attempt in the session) is never taken twice.
			rootAnns = p.appendRunAnnotations(ctx, rootAnns, h.id, run, v, ct.inFlight)
		}
		rootAnns = p.appendContentAnnotations(ctx, rootAnns, run)
		failureType := ""
		if outcome == string(classifier.OutcomeFailed) {
			failureType = string(v.FailureType)
		}
		p.tb.ProcessorTriageDecisions.Add(ctx, 1, adds2("verdict", outcome, "failure_type", failureType)...)
		if run.RootFound {
			t.setRoot(run.RootSpanID, rootAnns)
			continue
		}
		// The root never arrived: the run's top spans stand in for it so
		// the verdict is visible, and the root still gets it by span ID
		// if it arrives late. The decision cache keeps these: an exact copy,
		// not the room rootAnns was made with.
		standIn := append(append(t.list(len(rootAnns)+1), rootAnns...), boolAnn(attrRootMissing, true))
		rootAnns = kept(rootAnns)
		if !run.RootSpanID.IsEmpty() {
			d.roots = append(d.roots, missingRoot{id: run.RootSpanID, anns: rootAnns})
		}
		for _, id := range run.TopSpanIDs {
			t.setRoot(id, standIn)
		}
		if lateRootOutcome == "" || worse(outcome, lateRootOutcome) {
			lateRootOutcome = outcome
			d.lateRoot = rootAnns
		}
	}
	for _, e := range ct.index.Spans() {
		t.annotate(e.Span)
	}
	t.release()
}

// worse orders run verdicts failed > incomplete > recovered > ok: the
// verdict a parentless late span gets when several runs lacked their root.
func worse(a, b string) bool {
	rank := func(o string) int {
		switch o {
		case string(classifier.OutcomeFailed):
			return 3
		case verdictIncomplete:
			return 2
		case string(classifier.OutcomeRecovered):
			return 1
		}
		return 0
	}
	return rank(a) > rank(b)
}

// rootAnnotationsCap is room for everything a run's root gets: verdict (up
// to 8), evaluation, identity (2), content; on a failed run, the tool and
// the decision (up to 12) too.
func rootAnnotationsCap(o classifier.Outcome) int {
	if o == classifier.OutcomeFailed {
		return 25
	}
	return 12
}

// appendRootAnnotations appends the verdict annotations of a run root to
// anns; ruleErr is the redacted text of the rule error that stopped OTTL
// rules, if any.
func appendRootAnnotations(t *traceAnnotations, anns []annotation, v *classifier.Verdict, ruleErr string) []annotation {
	anns = append(anns, strAnn(attrVerdict, string(v.Outcome)))
	if v.FailureType != "" {
		anns = append(anns, strAnn(attrFailureType, string(v.FailureType)))
	}
	if v.Signal != classifier.SignalNone {
		anns = append(anns, strAnn(attrSignal, string(v.Signal)))
	}
	if v.Rule != "" {
		anns = append(anns, strAnn(attrRule, v.Rule))
	}
	if v.Outcome != classifier.OutcomeOK || v.Confidence > 0 {
		anns = append(anns, numAnn(attrConfidence, v.Confidence))
	}
	if !v.EvidenceSpanID.IsEmpty() {
		id := v.EvidenceSpanID
		anns = append(anns, strAnn(attrEvidenceSpanID, textString(hex.AppendEncode(t.newText(2*len(id)), id[:]))))
	}
	if v.Reason != "" {
		anns = append(anns, strAnn(attrReason, v.Reason))
	}
	if ruleErr != "" {
		anns = append(anns, strAnn(attrRuleError, ruleErr))
	}
	return anns
}

// incidentAnnotationsCap is room for an incident span's annotations: the
// three always written, rule, reason and the evaluation.
const incidentAnnotationsCap = 6

// appendIncidentAnnotations appends the annotations of an incident span.
func appendIncidentAnnotations(anns []annotation, inc *classifier.Incident) []annotation {
	anns = append(anns,
		strAnn(attrFailureType, string(inc.FailureType)),
		strAnn(attrSignal, string(inc.Signal)),
		boolAnn(attrRecovered, inc.Recovered),
	)
	if inc.Rule != "" {
		anns = append(anns, strAnn(attrRule, inc.Rule))
	}
	if inc.Reason != "" {
		anns = append(anns, strAnn(attrReason, inc.Reason))
	}
	return anns
}

// incidentsOfRun returns the rule incidents on the run's spans, with their
// step index and tool filled in from the run.
func incidentsOfRun(run *trajectory.Run, bySpan map[pcommon.SpanID][]classifier.Incident) []classifier.Incident {
	if len(bySpan) == 0 {
		return nil
	}
	var out []classifier.Incident
	for _, id := range run.SpanIDs {
		incs, ok := bySpan[id]
		if !ok {
			continue
		}
		step := -1
		tool := ""
		for i := range run.Steps {
			if run.Steps[i].SpanID == id {
				step, tool = i, run.Steps[i].ToolName
				break
			}
		}
		for _, inc := range incs {
			inc.StepIndex, inc.Tool = step, tool
			out = append(out, inc)
		}
	}
	return out
}

// classifierSet holds one classifier per service with per-service
// constraints, and one for every other service.
type classifierSet struct {
	global     *classifier.Classifier
	perService map[string]*classifier.Classifier
}

func newClassifierSet(cfg *Config) (classifierSet, error) {
	global, err := classifier.New(cfg.classifierOptions(cfg.Constraints.Global))
	if err != nil {
		return classifierSet{}, fmt.Errorf("classifier: %w", err)
	}
	set := classifierSet{global: global, perService: make(map[string]*classifier.Classifier, len(cfg.Constraints.PerService))}
	for svc, list := range cfg.Constraints.PerService {
		constraints := append(append([]string(nil), cfg.Constraints.Global...), list...)
		c, err := classifier.New(cfg.classifierOptions(constraints))
		if err != nil {
			return classifierSet{}, fmt.Errorf("constraints.per_service[%s]: %w", svc, err)
		}
		set.perService[svc] = c
	}
	return set, nil
}

func (s classifierSet) forService(svc string) *classifier.Classifier {
	if c, ok := s.perService[svc]; ok {
		return c
	}
	return s.global
}
