package guard

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/internal/smallmap"
	"github.com/triage-otel/triage/recovery"
	"github.com/triage-otel/triage/trajectory"
)

// Guards holds the configuration shared by every run. It is safe for
// concurrent use; each Run is not.
type Guards struct {
	cfg         Config
	classifier  *classifier.Classifier
	sessionKeys []string
	prices      priceTable
	runBytes    int
	// batches lends each AddRead (and CheckSession) its scratch room.
	batches sync.Pool
	// rooms lends Read the room of a batch's reads (readRoom).
	rooms sync.Pool
	// lastOffered is the list of tool definitions held last by a run's
	// first model step (shareLists).
	lastOffered atomic.Pointer[offeredList]
}

// New returns the guards for cfg. cls is the classifier whose loop rule
// and call reading the guards apply (the one that makes the final
// decision); sessionKeys are the attributes that carry a session id, in
// order of preference (before the conventions trajectory recognises).
func New(cfg Config, cls *classifier.Classifier, sessionKeys []string) (*Guards, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cls == nil {
		return nil, fmt.Errorf("guard: nil classifier")
	}
	return &Guards{cfg: cfg, classifier: cls, sessionKeys: slices.Clone(sessionKeys), prices: newPriceTable(cfg.Cost.Prices),
		runBytes: int(unsafe.Sizeof(Run{})) + int(unsafe.Sizeof(runRare{})) + cls.NewLoopDetector().Bytes(),
		batches:  sync.Pool{New: func() any { return new(batchState) }},
		rooms:    sync.Pool{New: func() any { return new(readRoom) }}}, nil
}

// Config returns the configuration.
func (g *Guards) Config() Config { return g.cfg }

// Span is one span fed to a run with its resource and scope.
type Span struct {
	Span     ptrace.Span
	Resource pcommon.Resource
	Scope    string
}

// maxAncestorHops bounds the walk from a span up to the step it belongs to
// (parent chains of one call are short; a longer or looping chain is cut).
const maxAncestorHops = 64

// maxHintedTools bounds the tool hints a run keeps.
const maxHintedTools = 256

// Read is one span as the guards need it, read once by the convention
// readers. It keeps no reference to the span, so a caller can read a
// batch's spans before it hands them on and fold the reads into a run
// later (AddRead).
type Read struct {
	id, parent pcommon.SpanID
	start, end pcommon.Timestamp
	status     ptrace.StatusCode
	read       trajectory.SpanRead
	// service, and the session named by the configured attributes on the
	// resource (on the span: read.KeyedSession).
	service, resSession string
}

// readRoomLen is how many reads the room Read lends holds.
const readRoomLen = 64

// readRoom is the room of the reads of a batch of up to readRoomLen spans,
// lent by Read and given back by Release: a batch's reads are garbage once
// AddRead took them in (it keeps none of them, nor a pointer into them),
// and a list of their own, some 560 B a span, was the largest allocation
// of the processor's intake. A room in the pool is all zero.
type readRoom struct{ reads [readRoomLen]Read }

// Read reads a batch of spans (any order: AddRead takes them in end-time
// order). Safe for concurrent use. A caller done with the reads (AddRead
// took them in, or they are dropped) may give their room back (Release).
func (g *Guards) Read(batch []Span) []Read {
	reader := trajectory.SpanReader{SessionKeys: g.sessionKeys}
	var out []Read
	if len(batch) <= readRoomLen {
		// (Every field of each read is written below.)
		out = g.rooms.Get().(*readRoom).reads[:len(batch)]
	} else {
		out = make([]Read, len(batch))
	}
	var res pcommon.Resource // the resource service and resSession were read from
	var service, resSession string
	for i := range batch {
		s := &batch[i]
		sp := s.Span
		rd := &out[i]
		rd.id, rd.parent, rd.start, rd.end, rd.status = sp.SpanID(), sp.ParentSpanID(), sp.StartTimestamp(), sp.EndTimestamp(), sp.Status().Code()
		reader.ReadTo(&rd.read, sp, s.Resource, s.Scope)
		// The spans of a batch share a few resources (one per process
		// that sent them): each is read once, for the run of spans that
		// name it.
		if i == 0 || s.Resource != res {
			res, service, resSession = s.Resource, "", ""
			if v, ok := res.Attributes().Get("service.name"); ok {
				service = v.AsString()
			}
			if len(g.sessionKeys) > 0 {
				resSession = recovery.SessionKey(g.sessionKeys, res.Attributes())
			}
		}
		rd.service, rd.resSession = service, resSession
	}
	return out
}

// Release gives back the room of reads, a result of Read that nothing
// uses afterwards.
func (g *Guards) Release(reads []Read) {
	if cap(reads) != readRoomLen {
		return // its own list (a batch of more than readRoomLen spans)
	}
	clear(reads) // the pool must not keep the spans' texts
	g.rooms.Put((*readRoom)(unsafe.Pointer(unsafe.SliceData(reads))))
}

// Run is the in-flight state of one trace: the guards' view of the run in
// progress. Not safe for concurrent use. A held trace keeps its run until
// its root arrives: what few runs use is in rare, made on first use, and
// what only a batch needs is lent for the batch (batch).
type Run struct {
	g *Guards

	// The indexes are small maps: a held trace keeps its run until its
	// root arrives, and a Go map of a few entries costs several times the
	// entries themselves.
	nodes   smallmap.Map[pcommon.SpanID, spanNode]
	waiting smallmap.Map[pcommon.SpanID, ints] // steps whose parent chain stops at this unseen span
	steps   list[*stepRec]                     // pointers: a held run's steps are not copied as the list grows

	calls   list[callRec]
	byID    smallmap.Map[string, int32]
	pending ints // calls requested by the last model step, not executed yet
	early   ints // calls of tool steps since the last model step, not requested yet
	results smallmap.Map[resultKey, struct{}]
	// lastOfTool is each tool's last call; a call links to the one before
	// it (callRec.prevOfTool).
	lastOfTool smallmap.Map[string, int32]

	loop      *classifier.LoopDetector
	firstLoop *loopCall // the first call, until the second makes loop
	lastAdd   int32     // call added last, -1 none
	// nextNoResult is the first call without a result.
	nextNoResult int32

	usage         recovery.Usage
	lastUsageSpan pcommon.SpanID
	lastSpan      pcommon.SpanID

	// ident is the run's service and agent (a shared record, identOf);
	// session is the session id as the spans so far say it, from the
	// source sessFrom names (sessionFrom): the first span's of the most
	// preferred source any span had.
	ident   *runIdent
	session string

	rare  *runRare
	batch *batchState // while a batch is added (AddRead, CheckSession)
	// turnCalls is the first call made since the last model step started
	// a turn: the calls from it on are not all in the loop detector yet
	// (a new turn adds them, addToLoop skipping those it has). (Here, with
	// the two bytes after it in one word.)
	turnCalls int32
	// tripped has the bit of each guard that tripped (tripBit).
	tripped  uint8
	sessFrom sessionFrom
}

// sessionFrom is where a run's session id came from, in order of
// preference.
type sessionFrom uint8

const (
	sessionNone       sessionFrom = iota
	sessionConvention             // the conventions trajectory recognises
	sessionResource               // the configured attributes, on a resource
	sessionSpan                   // the configured attributes, on a span
)

// noteSession takes id, from src, as the run's session unless the run
// has one from src or a preferred source.
func (r *Run) noteSession(id string, src sessionFrom) {
	if id != "" && r.sessFrom < src {
		r.session, r.sessFrom = id, src
	}
}

// runRare is the part of a run's state that few runs use: the tool
// definitions of an agent span, MCP hints, the session usage reported
// (session budgets), the span times (the wall-clock guard).
type runRare struct {
	agentDefs        []trajectory.ToolDef
	hints            map[string]trajectory.ToolHints
	reported         recovery.Usage
	minStart, maxEnd pcommon.Timestamp
	maxEndSpan       pcommon.SpanID
}

// rareState is the run's rare part, made on first use.
func (r *Run) rareState() *runRare {
	if r.rare == nil {
		r.rare = &runRare{}
	}
	return r.rare
}

// noRare is the rare part of a run that has none (read only).
var noRare runRare

// rareOrZero is the run's rare part for reading.
func (r *Run) rareOrZero() *runRare {
	if r.rare == nil {
		return &noRare
	}
	return r.rare
}

// batchState is the scratch room of one batch: the trips it found, the
// steps merges changed (to fold), the spans' order, a step to classify.
type batchState struct {
	out   []Trip
	dirty []int32
	order []int
	// tool is the tool step classify hands ClassifyCall.
	tool trajectory.Step
}

// beginBatch lends the run a batch's scratch room.
func (r *Run) beginBatch() {
	r.batch = r.g.batches.Get().(*batchState)
}

// endBatch returns the batch's trips (nil when none) and gives its room
// back.
func (r *Run) endBatch() []Trip {
	b := r.batch
	r.batch = nil
	var out []Trip
	if len(b.out) > 0 {
		out = slices.Clone(b.out)
	}
	clear(b.out) // the pool must not keep the trips' texts
	b.out, b.dirty, b.order = b.out[:0], b.dirty[:0], b.order[:0]
	b.tool = trajectory.Step{}
	r.g.batches.Put(b)
	return out
}

// nodeSlice is how many spans the span index keeps in its slice before
// it moves them to a Go map: an entry is 20 bytes and compared in one
// step, and a Go map of a few dozen entries takes over a kilobyte.
const nodeSlice = 32

// list is a list kept as its first element's address and two 32-bit
// counts (16 bytes, a slice header is 24).
type list[T any] struct {
	p    *T
	n, c uint32
}

// all is the list as a slice (nil when empty and never grown).
func (l *list[T]) all() []T {
	if l.p == nil {
		return nil
	}
	return unsafe.Slice(l.p, l.c)[:l.n]
}

func (l *list[T]) len() int { return int(l.n) }

// reserve makes room in an empty list for n elements.
func (l *list[T]) reserve(n int) {
	if l.n == 0 && int(l.c) < n && n > 1 {
		s := make([]T, 0, n)
		l.p, l.c = unsafe.SliceData(s), uint32(n)
	}
}
func (l *list[T]) at(i int32) T { return unsafe.Slice(l.p, l.n)[i] }

// ref is the address of element i.
func (l *list[T]) ref(i int32) *T { return &unsafe.Slice(l.p, l.n)[i] }

// add appends v.
func (l *list[T]) add(v T) { l.set(append(l.all(), v)) }

// set makes s the list.
func (l *list[T]) set(s []T) {
	l.p, l.n, l.c = unsafe.SliceData(s), uint32(len(s)), uint32(cap(s))
}

// runIdent is a run's service and agent. The records are shared (read
// only) between runs: the runs of one agent name the same two.
type runIdent struct{ service, agent string }

var (
	noIdent runIdent
	// sharedIdents are the shared runIdent records.
	sharedIdents sharedRecords[runIdent, runIdent]
)

// identity is the run's service and agent (empty when none yet).
func (r *Run) identity() *runIdent {
	if r.ident == nil {
		return &noIdent
	}
	return r.ident
}

// identOf is the shared record of a service and agent (a run names them
// at most twice: its service, then its agent). A shared record holds
// copies of the texts, so that it keeps no span's memory.
func identOf(service, agent string) *runIdent {
	k := runIdent{service, agent}
	if id := sharedIdents.get(k, newSharedIdent); id != nil {
		return id
	}
	return &k
}

// newSharedIdent is the shared record of k, with copies of its texts.
func newSharedIdent(k runIdent) (runIdent, *runIdent) {
	k = runIdent{strings.Clone(k.service), strings.Clone(k.agent)}
	return k, &k
}

// ints is a list of call or step indexes: a slice kept as its first
// element's address and two 32-bit counts (16 bytes, a slice header is
// 24; a held run keeps several, most of them empty or short).
type ints struct {
	p    *int32
	n, c uint32
}

// all is the list as a slice (nil when empty and never grown).
func (l ints) all() []int32 {
	if l.p == nil {
		return nil
	}
	return unsafe.Slice(l.p, l.c)[:l.n]
}

// set makes s the list.
func (l *ints) set(s []int32) {
	l.p, l.n, l.c = unsafe.SliceData(s), uint32(len(s)), uint32(cap(s))
}

// add appends v.
func (l *ints) add(v int32) { l.set(append(l.all(), v)) }

type spanNode struct {
	parent pcommon.SpanID
	step   int32 // the step the span belongs to, -1 when it is not a step span
}

// stepRec is one call (LLM or tool) as its spans read so far. A held
// trace keeps one per step span until its root arrives: what only some
// calls have is behind extra. The outermost span of the call, whose parent
// chain links it upwards, is eff's span (merging keeps the outer span's
// ID). 64 B (the 64 B class; was 80).
type stepRec struct {
	// eff is the readings of the call's spans merged as Build merges
	// them; its rec is the record's flags (recStarted, ...), its link
	// the step's call or the step it was merged into (callIndex,
	// mergedInto).
	// The usage the run counted for the step is not kept here: it is
	// what eff's model-call group costs (usage), kept in extra only
	// while eff changed since it was counted (recUsageKept).
	eff   heldStep
	extra *stepExtra
}

// A step record's flags (stepRec.eff.rec).
const (
	recStarted   uint8 = 1 << iota // LLM steps: the turn boundary was handled
	recReqDone                     // the requested calls were taken
	recResDone                     // the results fed back were taken
	recOwnDone                     // the results of its own calls were taken
	recUsage                       // the run counts the step's usage (counted)
	recUsageKept                   // what it counts is extra.usage, not eff's
	// recOuterOK: the status code of the call's outermost span is Ok,
	// the one code MergeNested tells from the others (an outer span
	// that ended with an explicit OK keeps its nested spans' errors out).
	recOuterOK
)

func (s *stepRec) has(f uint8) bool { return s.eff.rec&f != 0 }
func (s *stepRec) mark(f uint8)     { s.eff.rec |= f }

// outerStatus is the status code of the call's outermost span as
// MergeNested tells codes apart: Ok, or not (Unset for Error as well).
func (s *stepRec) outerStatus() ptrace.StatusCode {
	if s.has(recOuterOK) {
		return ptrace.StatusCodeOk
	}
	return ptrace.StatusCodeUnset
}

// A step record's link (eff.link): its call (tool steps), noLink, or,
// once merged into step k, mergedLink(k) (which is its own inverse).
func mergedLink(k int32) int32 { return -2 - k }

// callIndex is the step's call, -1 none yet (tool steps).
func (s *stepRec) callIndex() int32 { return max(s.eff.link, -1) }

// setCall makes j the step's call.
func (s *stepRec) setCall(j int32) { s.eff.link = j }

// mergedInto is the step this one was merged into, -1 none.
func (s *stepRec) mergedInto() int32 {
	if s.eff.link < noLink {
		return mergedLink(s.eff.link)
	}
	return -1
}

// setEff sets the step's merged reading, keeping the record's own fields.
func (s *stepRec) setEff(h heldStep) {
	h.rec, h.link = s.eff.rec, s.eff.link
	s.eff = h
}

// stepExtra is what a call has once it has a second span, or (LLM steps)
// tool calls of the turn before it.
type stepExtra struct {
	// parts and ids are the readings and IDs of the spans of the call,
	// outermost first, kept only once there are two (most calls have one
	// span: then eff is its reading and its ID, and keeping the
	// reading twice would double what a held step costs). (Lists: a
	// stepExtra is 64 B, not 80.)
	parts list[heldStep]
	ids   list[pcommon.SpanID]
	early ints // LLM steps: tool calls of the turn before it, not requested yet
	// usage is what the run counts for the step once eff changed after
	// it was counted (recUsageKept).
	usage recovery.Usage
}

// counted is the usage the run counts for step s: none before its first
// fold as a model step, else what eff cost then (fold).
func (r *Run) counted(s *stepRec) recovery.Usage {
	switch {
	case !s.has(recUsage):
		return recovery.Usage{}
	case s.has(recUsageKept):
		return s.extra.usage
	}
	l := s.eff.model()
	in, out, cost := l.usage()
	return r.g.prices.usage(l.Model(), in, out, cost)
}

// callStatus is what is known of a call's outcome.
type callStatus uint8

const (
	callPending callStatus = iota
	callOK
	callFailed
)

// callRec is one tool call: requested by a model step, executed by a tool
// step, answered by a result fed back to the model — any may be missing.
type callRec struct {
	name       string
	req        *trajectory.ToolCall
	result     *trajectory.ToolResult
	inc        *classifier.Incident // set while the call is failed
	reqStep    int32                // requesting LLM step, -1
	tool       int32                // tool step, -1
	resultStep int32                // LLM step the result was fed to, -1
	prevOfTool int32                // the call before it of the tool it was made with, -1
	status     callStatus
	inLoop     bool
	// hasID says the call came with an ID; the ID itself is held once, as
	// its key in the run's byID.
	hasID bool
}

// NewRun returns the state of a new in-flight run.
func (g *Guards) NewRun() *Run {
	// The other maps and the loop detector are made when first needed:
	// many runs never fill them, and a held trace keeps its run.
	return &Run{g: g, lastAdd: -1}
}

// set writes m[k] = v, making the map on its first entry.
func set[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = make(map[K]V)
	}
	(*m)[k] = v
}

// Add feeds a batch of new spans of the run (in any order: they are taken
// in end-time order) and returns the guards they tripped. A span ID seen
// before is ignored. Cost is linear in the batch.
func (r *Run) Add(batch []Span) []Trip { return r.AddRead(r.g.Read(batch)) }

// AddRead is Add for spans read earlier (Guards.Read).
func (r *Run) AddRead(reads []Read) []Trip {
	r.beginBatch()
	// A run's first batch sizes its span index and step list: most
	// traces come in one or two batches, and slices grown by appending
	// keep a quarter of their room unused on average.
	r.nodes.Reserve(len(reads), nodeSlice)
	if r.steps.len() == 0 {
		n := 0
		for i := range reads {
			switch reads[i].read.Role {
			case trajectory.SpanLLM, trajectory.SpanTool, trajectory.SpanPart:
				n++
			}
		}
		r.steps.reserve(n)
	}
	order := r.batch.order[:0]
	for i := range reads {
		order = append(order, i)
	}
	r.batch.order = order
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(reads[a].end, reads[b].end); c != 0 {
			return c
		}
		return cmp.Compare(reads[a].start, reads[b].start)
	})
	for _, i := range order {
		r.addSpan(&reads[i])
	}
	r.checkRunBudgets()
	r.checkWallClock()
	return r.endBatch()
}

// Tripped reports whether guard n already tripped on this run.
func (r *Run) Tripped(n Name) bool { return r.tripped&tripBit(n) != 0 }

// tripBit is guard n's bit in Run.tripped.
func tripBit(n Name) uint8 {
	switch n {
	case Loop:
		return 1 << 0
	case RepeatedFailure:
		return 1 << 1
	case Tokens:
		return 1 << 2
	case Cost:
		return 1 << 3
	case WallClock:
		return 1 << 4
	}
	panic("guard: unknown guard " + string(n))
}

// trip records a trip of the batch being added unless the guard already
// tripped on this run.
func (r *Run) trip(t Trip) {
	if r.Tripped(t.Guard) {
		return
	}
	r.tripped |= tripBit(t.Guard)
	r.batch.out = append(r.batch.out, t)
}

// Service, Agent and Session identify the run as far as its spans so far
// say: service.name, the agent name, and the session id (the configured
// attributes on the spans, then on their resources, then the conventions
// trajectory recognises).
func (r *Run) Service() string { return r.identity().service }
func (r *Run) Agent() string   { return r.identity().agent }
func (r *Run) Session() string { return r.session }

// LastSpan is the span fed last.
func (r *Run) LastSpan() pcommon.SpanID { return r.lastSpan }

// NonIdempotent says whether the tool definitions seen so far mark tool as
// not idempotent (MCP annotations), and why.
func (r *Run) NonIdempotent(tool string) (string, bool) {
	h, ok := r.rareOrZero().hints[tool]
	if !ok {
		return "", false
	}
	return h.NonIdempotent()
}

func (r *Run) addSpan(s *Read) {
	id := s.id
	if _, dup := r.nodes.Get(id); dup || id.IsEmpty() {
		return
	}
	r.lastSpan = id
	r.identify(s)
	if r.g.cfg.WallClock.MaxPerRun > 0 {
		rare := r.rareState()
		if s.start != 0 && (rare.minStart == 0 || s.start < rare.minStart) {
			rare.minStart = s.start
		}
		if s.end > rare.maxEnd {
			rare.maxEnd, rare.maxEndSpan = s.end, id
		}
	}
	rd := &s.read
	if id := r.identity(); id.agent == "" && rd.Agent != "" {
		r.ident = identOf(id.service, rd.Agent)
	}
	r.noteSession(rd.Session, sessionConvention)
	node := spanNode{parent: s.parent, step: -1}
	// A streamed part of a model call (a chunk span) folds into the call
	// that encloses it, as a nested span of that call does.
	isStep := rd.Role == trajectory.SpanLLM || rd.Role == trajectory.SpanTool || rd.Role == trajectory.SpanPart
	if !isStep {
		r.nodes.PutUpTo(id, node, nodeSlice)
		r.noteTools(rd.Tools, rd.Role == trajectory.SpanAgent)
		r.resolveWaiting(id)
		r.foldDirty()
		return
	}
	// A step span: part of the call of a step above it, or a call of its own.
	k := int32(-1)
	if anc, ok := r.stepAbove(node.parent); ok && r.sameCall(anc, &rd.Step) {
		k = anc
		r.steps.at(k).addParts([]heldStep{holdStep(&rd.Step, s.parent)}, []pcommon.SpanID{id})
	} else {
		k = int32(r.steps.len())
		rec := &stepRec{eff: holdStep(&rd.Step, s.parent)}
		if s.status == ptrace.StatusCodeOk {
			rec.mark(recOuterOK)
		}
		if l := rec.eff.llm(); l != nil {
			r.shareLists(l)
		}
		r.steps.add(rec)
		if !ok {
			r.waitOn(node.parent, k)
		}
	}
	node.step = k
	r.nodes.PutUpTo(id, node, nodeSlice)
	r.recompute(k)
	r.resolveWaiting(id)
	r.fold(r.root(k))
	r.foldDirty()
}

// foldDirty folds the steps that merges changed.
func (r *Run) foldDirty() {
	b := r.batch
	for len(b.dirty) > 0 {
		d := b.dirty[len(b.dirty)-1]
		b.dirty = b.dirty[:len(b.dirty)-1]
		r.fold(r.root(d))
	}
}

// identify reads the run's service and session from a span.
func (r *Run) identify(s *Read) {
	if id := r.identity(); id.service == "" && s.service != "" {
		r.ident = identOf(s.service, id.agent)
	}
	r.noteSession(s.read.KeyedSession, sessionSpan)
	r.noteSession(s.resSession, sessionResource)
}

// root follows merges to the step that holds k now.
func (r *Run) root(k int32) int32 {
	for m := r.steps.at(k).mergedInto(); m >= 0; m = r.steps.at(k).mergedInto() {
		k = m
	}
	return k
}

// stepAbove walks up from id through seen spans that are not steps to the
// nearest step; ok false when the chain stops at a span not seen yet (or
// has no parent).
func (r *Run) stepAbove(id pcommon.SpanID) (int32, bool) {
	for range maxAncestorHops {
		if id.IsEmpty() {
			return -1, false
		}
		n, seen := r.nodes.Get(id)
		if !seen {
			return -1, false
		}
		if n.step >= 0 {
			return r.root(n.step), true
		}
		id = n.parent
	}
	return -1, false
}

// waitOn records that step k's parent chain stops at the unseen span id:
// when id arrives, k may turn out to be a nested span of its call.
func (r *Run) waitOn(id pcommon.SpanID, k int32) {
	// Walk up to where the chain really stops.
	for range maxAncestorHops {
		if id.IsEmpty() {
			return
		}
		n, seen := r.nodes.Get(id)
		if !seen {
			ws, _ := r.waiting.Get(id)
			ws.add(k)
			r.waiting.Put(id, ws)
			return
		}
		if n.step >= 0 {
			return
		}
		id = n.parent
	}
}

// resolveWaiting handles the steps whose parent chain stopped at id, which
// just arrived: nested in id's call, they merge into it.
func (r *Run) resolveWaiting(id pcommon.SpanID) {
	ws, ok := r.waiting.Get(id)
	if !ok {
		return
	}
	r.waiting.Del(id)
	for _, w := range ws.all() {
		w = r.root(w)
		anc, ok := r.stepAbove(id)
		if !ok {
			r.waitOn(id, w)
			continue
		}
		var inner trajectory.Step
		r.steps.at(w).eff.step(&inner)
		if anc == w || !r.sameCall(anc, &inner) {
			continue
		}
		r.mergeInto(anc, w)
	}
}

// mergeInto merges step w (nested) into step k (its outer span's call).
func (r *Run) mergeInto(k, w int32) {
	sk, sw := r.steps.at(k), r.steps.at(w)
	ids := sw.spanIDs()
	sk.addParts(sw.allParts(), ids)
	if sw.extra != nil {
		sw.extra.parts = list[heldStep]{}
	}
	for _, id := range ids {
		if n, ok := r.nodes.Get(id); ok {
			n.step = k
			r.nodes.PutUpTo(id, n, nodeSlice)
		}
	}
	r.usage = sub(r.usage, r.counted(sw))
	sw.eff.rec &^= recUsage | recUsageKept
	if wc := sw.callIndex(); sk.callIndex() < 0 && wc >= 0 {
		sk.setCall(wc)
		r.calls.ref(wc).tool = k
	}
	// (Its call, read above, is no longer the merged step's: the link
	// now names the step it merged into.)
	sw.eff.link = mergedLink(k)
	sk.mark(sw.eff.rec & (recStarted | recReqDone | recResDone))
	r.recompute(k)
	r.batch.dirty = append(r.batch.dirty, k)
	// Requested calls and results the nested span brought stay with
	// their calls; re-point them.
	calls := r.calls.all()
	for i := range calls {
		c := &calls[i]
		if c.reqStep == w {
			c.reqStep = k
		}
		if c.resultStep == w {
			c.resultStep = k
		}
	}
}

func sub(a, b recovery.Usage) recovery.Usage {
	return recovery.Usage{Tokens: a.Tokens - b.Tokens, Cost: a.Cost - b.Cost}
}

// sameCall reports whether inner, a step span below step k's spans, is a
// span of k's call (trajectory.SameCall).
func (r *Run) sameCall(k int32, inner *trajectory.Step) bool {
	var outer trajectory.Step
	r.steps.at(k).eff.step(&outer)
	return trajectory.SameCall(&outer, inner)
}

// allParts are the readings of the step's spans.
func (s *stepRec) allParts() []heldStep {
	if s.extra == nil || s.extra.parts.p == nil {
		return []heldStep{s.eff}
	}
	return s.extra.parts.all()
}

// spanIDs are the IDs of the step's spans, in the order of allParts.
func (s *stepRec) spanIDs() []pcommon.SpanID {
	if s.extra == nil || s.extra.ids.p == nil {
		return []pcommon.SpanID{s.eff.spanID}
	}
	return s.extra.ids.all()
}

// addParts adds the readings of nested spans of the call (and their IDs).
func (s *stepRec) addParts(parts []heldStep, ids []pcommon.SpanID) {
	all, allIDs := s.allParts(), s.spanIDs()
	if s.extra == nil {
		s.extra = &stepExtra{}
	}
	s.extra.parts.set(append(all, parts...))
	s.extra.ids.set(append(allIDs, ids...))
}

// takeEarly sets (or, with nil, clears) the LLM step's calls of the turn
// before it and returns those it had.
func (s *stepRec) takeEarly(early []int32) []int32 {
	if s.extra == nil {
		if early == nil {
			return nil
		}
		s.extra = &stepExtra{}
	}
	had := s.extra.early.all()
	s.extra.early.set(early)
	return had
}

// recompute merges step k's parts as Build merges them.
func (r *Run) recompute(k int32) {
	s := r.steps.at(k)
	parts := s.allParts()
	if len(parts) < 2 {
		return // one span: eff is its reading
	}
	var eff, part trajectory.Step
	parts[0].step(&eff)
	for i := 1; i < len(parts); i++ {
		parts[i].step(&part)
		trajectory.MergeNested(&eff, s.outerStatus(), &part)
	}
	if s.has(recUsage) && !s.has(recUsageKept) {
		// What the run counts is what eff cost when counted, not what
		// the new one costs (fold counts the change).
		s.extra.usage = r.counted(s)
		s.mark(recUsageKept)
	}
	// eff's ParentID is what parts[0] gave (zero unless odd).
	s.setEff(holdStep(&eff, pcommon.SpanID{}))
}

// fold folds what step k now says into the run: usage, tool definitions,
// calls (and the guards they trip).
func (r *Run) fold(k int32) {
	s := r.steps.at(k)
	if s.eff.stepKind() == trajectory.StepLLM {
		l := s.eff.model()
		in, out, cost := l.usage()
		u, was := r.g.prices.usage(l.Model(), in, out, cost), r.counted(s)
		r.usage = r.usage.Add(sub(u, was))
		if u != was && !u.IsZero() {
			r.lastUsageSpan = s.eff.spanID
		}
		// Counted: eff's usage from now on.
		s.mark(recUsage)
		s.eff.rec &^= recUsageKept
		r.noteTools(l.Offered(), false)
		r.llmStep(k)
		return
	}
	r.toolStep(k)
}

// noteTools keeps the hints of tool definitions (and the definitions an
// agent span records, which LLM steps that record none were offered).
func (r *Run) noteTools(defs []trajectory.ToolDef, agent bool) {
	if agent && len(defs) > 0 && len(r.rareOrZero().agentDefs) == 0 {
		r.rareState().agentDefs = defs
	}
	for i := range defs {
		d := &defs[i]
		if d.Hints == (trajectory.ToolHints{}) {
			continue
		}
		rare := r.rareState()
		if _, ok := rare.hints[d.Name]; ok || len(rare.hints) < maxHintedTools {
			set(&rare.hints, d.Name, d.Hints)
		}
	}
}

// ReadStep writes into st the reading of step span id as the run took it
// in (trajectory.SpanReader's, untouched: the guards keep each span's
// reading once) and reports whether it has one: false when the span was
// not a model or tool call span of the run. It implements
// trajectory.ReadSteps, so that Build at the root reads only the spans the
// run did not see; the caller hands the run to Build once, when the run is
// done (Build takes the steps over).
func (r *Run) ReadStep(id pcommon.SpanID, st *trajectory.Step) bool {
	n, ok := r.nodes.Get(id)
	if !ok || n.step < 0 {
		return false
	}
	s := r.steps.at(n.step)
	if s.extra == nil || s.extra.parts.p == nil {
		if s.eff.spanID == id && (s.extra == nil || s.extra.ids.p == nil) {
			s.eff.stepAt(st, n.parent)
			return true
		}
		return false
	}
	parts := s.extra.parts.all()
	for i, x := range s.extra.ids.all() {
		if x == id && i < len(parts) {
			parts[i].stepAt(st, n.parent)
			return true
		}
	}
	return false
}
