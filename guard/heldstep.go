package guard

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/trajectory"
)

// A held trace keeps the reading of each of its step spans until its root
// arrives, when Build takes them over (trajectory.WithReadSteps). A
// trajectory.Step has room for every field any step can have (400 B); a
// heldStep keeps the fields every step has and, behind pointers, the
// groups of fields the step sets: a tool call's, a model call's, error
// evidence. It holds the same values (holdStep then step gives the Step
// back, TestHeldStepRoundTrip), so the guards read and merge steps as
// Build does.
type heldStep struct {
	spanID     pcommon.SpanID
	start, end pcommon.Timestamp
	name       string
	// grp is the groups of fields the step sets, as flags say
	// (flagTool, flagLLM, flagErrs): the tool-call group (*heldTool),
	// the model-call group (*heldLLM), the error evidence (*heldErrs,
	// with Kind, Convention and ParentID when they are not values the
	// codes and the span's node say: see odd), or a record of several
	// of them in that order (heldBoth, heldToolErrs, heldLLMErrs,
	// heldAll: one pointer and one allocation for them, where a pointer
	// of its own for the error evidence made a held step 64 B, not 56).
	grp        unsafe.Pointer
	kind, conv uint8
	flags      uint8
	// rec and link are the step record's (stepRec), kept in room the
	// fields above leave (a stepRec is 64 B, not 80): its flags, and the
	// step's call or the step it was merged into (stepRec.callIndex,
	// mergedInto). holdStep leaves rec zero and link noLink; a step record
	// keeps them when its reading changes (setEff).
	rec  uint8
	link int32
}

// noLink is a step record's link when it has no call and was not merged.
const noLink = -1

// The parent span's ID is not kept in a held step: it is the span's, which
// the run's span index keeps (spanNode.parent), and no reader of the
// guards' steps looks at it (SameCall, MergeNested, ClassifyCall); a
// held step gives it back where Build takes it over (ReadStep, stepAt).
// A reading whose ParentID is not its span's parent keeps it in odd.

// The records of several groups (heldStep.grp): the model-call group
// first, then the tool-call group, then the error evidence, each where
// llm, tool and errs find it (each group's size is a multiple of 8, so
// the fields lie end to end, TestHeldGroupOffsets).
type (
	heldBoth struct {
		llm  heldLLM
		tool heldTool
	}
	heldLLMErrs struct {
		llm  heldLLM
		errs heldErrs
	}
	heldToolErrs struct {
		tool heldTool
		errs heldErrs
	}
	heldAll struct {
		llm  heldLLM
		tool heldTool
		errs heldErrs
	}
)

type heldTool struct {
	ToolName, ToolCallID, Arguments, Result string
}

// heldLLM is the model-call group. Its lists are kept as heldLists: a
// held reading is only read, so a list needs no capacity, and four
// lengths of 4 bytes take the room of two. The results fed back and the
// results of its own calls share one address (a step records one or the
// other; when it records both, they are copied into one array, results).
// The model, provider and finish reasons, which most model steps of every
// run repeat, are one shared record (namesOf). The output text, which most
// model steps do not record (they request tools; 124 of 626 in the
// captures), is behind a pointer (nil when empty), and which result lists
// are not nil is kept in the lengths' top bits. The token counts are two
// 32-bit halves of one word, and a step whose usage they cannot hold (a
// recorded cost, a count past 2³²-1) keeps it beside the output text
// (heldUsage): 64 B (the 64 B class), was 80 with the counts and the cost
// in three words of their own.
type heldLLM struct {
	names *heldNames
	// output is the output text, a *string, or, when the requested
	// list's length has usageHeld set, a *heldUsage (the text first).
	output    unsafe.Pointer
	requested *trajectory.ToolCall
	offered   *trajectory.ToolDef
	results   *trajectory.ToolResult
	// lens are the lengths of the lists, in the order below; the result
	// lists' have hasList set when the list is not nil (with both, the
	// input results come first at results).
	lens [4]uint32
	// tokens are the input tokens (low half) and the output tokens (high
	// half), when the usage is not in output's heldUsage.
	tokens uint64
}

// heldUsage is a model step's output text and its usage as recorded, for
// a step whose usage heldLLM.tokens cannot hold.
type heldUsage struct {
	output                    string // first: output points at it either way
	inputTokens, outputTokens int64
	cost                      float64
}

// usageHeld is the bit of the requested list's length that says the
// usage is in a heldUsage (heldLLM.output).
const usageHeld = 1 << 31

// hasList is the bit of a result list's length that says the list is not
// nil (heldLLM.lens): a held list is a span's, far shorter than 2³¹.
const hasList = 1 << 31

// The lists of a heldLLM, in the order of its lens.
const (
	listRequested = iota
	listOffered
	listInputResults
	listToolResults
)

// heldNames is a model step's model, provider and finish reasons. The
// records are shared (read only), between the steps of a run and
// between runs: most model steps name the same model and provider and
// end with one of a few finish reasons.
type heldNames struct {
	namesKey
	finishReasons []string
}

// namesKey is a shared heldNames record's key: reasons says whether the
// finish reasons are nil (0), an empty list (1) or the one reason (2).
type namesKey struct {
	model, provider, reason string
	reasons                 uint8
}

// sharedNames are the shared heldNames records.
var sharedNames sharedRecords[namesKey, heldNames]

// namesOf is the record of a model step's names: a shared one when the
// step has at most one finish reason and the bound allows, else its own.
// A shared record holds copies of the texts, so that it keeps no span's
// memory.
func namesOf(model, provider string, reasons []string) *heldNames {
	if len(reasons) > 1 {
		return &heldNames{namesKey{model: model, provider: provider}, reasons}
	}
	k := namesKey{model: model, provider: provider}
	switch {
	case len(reasons) == 1:
		k.reason, k.reasons = reasons[0], 2
	case reasons != nil:
		k.reasons = 1
	}
	if h := sharedNames.get(k, newSharedNames); h != nil {
		return h
	}
	return &heldNames{namesKey{model: model, provider: provider}, reasons}
}

// newSharedNames is the shared record of k, with copies of its texts.
func newSharedNames(k namesKey) (namesKey, *heldNames) {
	k.model, k.provider, k.reason = strings.Clone(k.model), strings.Clone(k.provider), strings.Clone(k.reason)
	h := &heldNames{namesKey: k}
	switch k.reasons {
	case 1:
		h.finishReasons = []string{}
	case 2:
		h.finishReasons = []string{k.reason}
	}
	return k, h
}

// noNames is the names of a model-call group that sets none (read only).
var noNames heldNames

// holdList keeps list s as its first element's address (nil for a nil
// slice, non-nil for an empty one, as unsafe.SliceData gives them) and its
// length in *n. Lists longer than 2³²-1 do not occur: a span's attribute
// values are bounded far below that.
func holdList[T any](s []T, n *uint32) *T {
	*n = uint32(len(s))
	return unsafe.SliceData(s)
}

// heldList is the list holdList kept: the same elements (not copied), its
// capacity its length.
func heldList[T any](p *T, n uint32) []T {
	if p == nil {
		return nil
	}
	return unsafe.Slice(p, n)
}

func (l *heldLLM) Model() string           { return l.names.model }
func (l *heldLLM) Provider() string        { return l.names.provider }
func (l *heldLLM) FinishReasons() []string { return l.names.finishReasons }
func (l *heldLLM) Requested() []trajectory.ToolCall {
	return heldList(l.requested, l.lens[listRequested]&^usageHeld)
}
func (l *heldLLM) Offered() []trajectory.ToolDef { return heldList(l.offered, l.lens[listOffered]) }
func (l *heldLLM) InputResults() []trajectory.ToolResult {
	n := l.lens[listInputResults]
	if n&hasList == 0 {
		return nil
	}
	return unsafe.Slice(l.results, n&^hasList)
}
func (l *heldLLM) ToolResults() []trajectory.ToolResult {
	n := l.lens[listToolResults]
	if n&hasList == 0 {
		return nil
	}
	p, n := l.results, n&^hasList
	if in := l.lens[listInputResults]; in&hasList != 0 && n > 0 {
		// After the input results (never a pointer past the array's end:
		// an empty list keeps the array's start).
		p = (*trajectory.ToolResult)(unsafe.Add(unsafe.Pointer(p), uintptr(in&^hasList)*unsafe.Sizeof(*p)))
	}
	return unsafe.Slice(p, n)
}

// outputText is the model's output text ("" when none).
func (l *heldLLM) outputText() string {
	if l.output == nil {
		return ""
	}
	return *(*string)(l.output)
}

// usage is the step's input and output tokens and its cost as recorded.
func (l *heldLLM) usage() (in, out int64, cost float64) {
	if l.lens[listRequested]&usageHeld != 0 {
		u := (*heldUsage)(l.output)
		return u.inputTokens, u.outputTokens, u.cost
	}
	return int64(uint32(l.tokens)), int64(l.tokens >> 32), 0
}

// holdUsage keeps the step's output text and usage.
func (l *heldLLM) holdUsage(output string, in, out int64, cost float64) {
	if math.Float64bits(cost) != 0 || uint64(in) > math.MaxUint32 || uint64(out) > math.MaxUint32 {
		// Its own record: the text's header too, never a pointer into
		// the reading (which would keep the whole of it).
		l.output = unsafe.Pointer(&heldUsage{output: output, inputTokens: in, outputTokens: out, cost: cost})
		l.lens[listRequested] |= usageHeld
		return
	}
	l.tokens = uint64(in) | uint64(out)<<32
	if output != "" {
		// Its own string header: a pointer into the reading would keep
		// the whole of it. (A copy made here: the parameter's own
		// address would move it to the heap on every call, text or not.)
		text := output
		l.output = unsafe.Pointer(&text)
	}
}

// holdResults keeps a model step's two result lists at one address.
func (l *heldLLM) holdResults(in, own []trajectory.ToolResult) {
	l.lens[listInputResults], l.lens[listToolResults] = uint32(len(in)), uint32(len(own))
	if in != nil {
		l.lens[listInputResults] |= hasList
	}
	if own != nil {
		l.lens[listToolResults] |= hasList
	}
	switch {
	case in != nil && own != nil:
		l.results = unsafe.SliceData(append(append(make([]trajectory.ToolResult, 0, len(in)+len(own)), in...), own...))
	case in != nil:
		l.results = unsafe.SliceData(in)
	case own != nil:
		l.results = unsafe.SliceData(own)
	}
}

type heldErrs struct {
	StatusMessage string
	Errors        []trajectory.ErrorInfo
	HTTPStatus    int
	JSONRPCCode   int
	odd           *heldOdd
}

type heldOdd struct {
	kind   trajectory.StepKind
	conv   trajectory.Convention
	parent pcommon.SpanID
}

const (
	flagResultIsError uint8 = 1 << iota
	flagStatusError
	flagHasJSONRPC
	flagOutputEmpty
	flagTool // grp holds the tool-call group
	flagLLM  // grp holds the model-call group
	flagErrs // grp holds the error evidence
)

// oddCode is the kind or convention code of a value kept in odd.
const oddCode = 0xff

var (
	stepKinds   = [...]trajectory.StepKind{"", trajectory.StepLLM, trajectory.StepTool}
	conventions = [...]trajectory.Convention{trajectory.ConventionUnknown, trajectory.ConventionGenAI,
		trajectory.ConventionOpenInference, trajectory.ConventionTraceloop, trajectory.ConventionVercel,
		trajectory.ConventionMCP, trajectory.ConventionMastra}
)

func codeOf[T comparable](v T, known []T) uint8 {
	for i, k := range known {
		if k == v {
			return uint8(i)
		}
	}
	return oddCode
}

// noLLM is the model-call group of a step that sets none of its fields
// (read only).
var noLLM = heldLLM{names: &noNames}

// holdStep is st as a held run keeps it, for a span whose parent is
// parent. The slices and texts are st's (not copied).
func holdStep(st *trajectory.Step, parent pcommon.SpanID) heldStep {
	h := heldStep{spanID: st.SpanID, start: st.Start, end: st.End, name: st.Name,
		kind: codeOf(st.Kind, stepKinds[:]), conv: codeOf(st.Convention, conventions[:]), link: noLink}
	g := groupsOf(st)
	g.odd = g.odd || st.ParentID != parent
	var grp groupsRec
	h.grp, h.flags, grp = g.alloc()
	if tool := grp.tool; tool != nil {
		*tool = heldTool{st.ToolName, st.ToolCallID, st.Arguments, st.Result}
	}
	if e := grp.errs; e != nil {
		*e = heldErrs{StatusMessage: st.StatusMessage, Errors: st.Errors, HTTPStatus: st.HTTPStatus, JSONRPCCode: st.JSONRPCCode}
		if g.odd {
			e.odd = &heldOdd{kind: st.Kind, conv: st.Convention, parent: st.ParentID}
		}
	}
	if l := grp.llm; l != nil {
		*l = heldLLM{names: &noNames}
		if st.Model != "" || st.Provider != "" || st.FinishReasons != nil {
			l.names = namesOf(st.Model, st.Provider, st.FinishReasons)
		}
		l.requested = holdList(st.Requested, &l.lens[listRequested])
		l.offered = holdList(st.Offered, &l.lens[listOffered])
		l.holdResults(st.InputResults, st.ToolResults)
		// (After the requested list's length, whose top bit it may set.)
		l.holdUsage(st.OutputText, st.InputTokens, st.OutputTokens, st.Cost)
	}
	for _, f := range [...]struct {
		set  bool
		flag uint8
	}{{st.ResultIsError, flagResultIsError}, {st.StatusError, flagStatusError}, {st.HasJSONRPC, flagHasJSONRPC}, {st.OutputEmpty, flagOutputEmpty}} {
		if f.set {
			h.flags |= f.flag
		}
	}
	return h
}

// heldGroups says which groups of fields a held step keeps.
type heldGroups struct{ tool, llm, errs, odd bool }

// groupsRec is where the groups of a record made by alloc lie (nil for
// those it does not hold).
type groupsRec struct {
	llm  *heldLLM
	tool *heldTool
	errs *heldErrs
}

// alloc makes the record of the groups g keeps (nil when none) and
// returns it with the flags that say which it holds and where each lies.
func (g heldGroups) alloc() (unsafe.Pointer, uint8, groupsRec) {
	var f uint8
	if g.tool {
		f |= flagTool
	}
	if g.llm {
		f |= flagLLM
	}
	if g.errs || g.odd {
		f |= flagErrs
	}
	var r groupsRec
	var p unsafe.Pointer
	switch f {
	case flagTool:
		r.tool = &heldTool{}
		p = unsafe.Pointer(r.tool)
	case flagLLM:
		r.llm = &heldLLM{}
		p = unsafe.Pointer(r.llm)
	case flagErrs:
		r.errs = &heldErrs{}
		p = unsafe.Pointer(r.errs)
	case flagTool | flagLLM:
		b := &heldBoth{}
		r.llm, r.tool, p = &b.llm, &b.tool, unsafe.Pointer(b)
	case flagLLM | flagErrs:
		b := &heldLLMErrs{}
		r.llm, r.errs, p = &b.llm, &b.errs, unsafe.Pointer(b)
	case flagTool | flagErrs:
		b := &heldToolErrs{}
		r.tool, r.errs, p = &b.tool, &b.errs, unsafe.Pointer(b)
	case flagTool | flagLLM | flagErrs:
		b := &heldAll{}
		r.llm, r.tool, r.errs, p = &b.llm, &b.tool, &b.errs, unsafe.Pointer(b)
	}
	return p, f, r
}

func groupsOf(st *trajectory.Step) heldGroups {
	return heldGroups{
		tool: st.ToolName != "" || st.ToolCallID != "" || st.Arguments != "" || st.Result != "",
		llm: st.Model != "" || st.Provider != "" || st.FinishReasons != nil || st.Requested != nil || st.Offered != nil ||
			st.InputResults != nil || st.ToolResults != nil || st.OutputText != "" || st.InputTokens != 0 || st.OutputTokens != 0 || st.Cost != 0,
		errs: st.StatusMessage != "" || st.Errors != nil || st.HTTPStatus != 0 || st.JSONRPCCode != 0,
		odd:  codeOf(st.Kind, stepKinds[:]) == oddCode || codeOf(st.Convention, conventions[:]) == oddCode,
	}
}

// The groups of grp lie in the order of a record of several (heldAll's):
// the model-call group first, then the tool-call group, then the error
// evidence.

// llm is the model-call group, nil when the step sets none of it.
func (h *heldStep) llm() *heldLLM {
	if h.flags&flagLLM == 0 {
		return nil
	}
	return (*heldLLM)(h.grp)
}

// tool is the tool-call group, nil when the step sets none of it.
func (h *heldStep) tool() *heldTool {
	if h.flags&flagTool == 0 {
		return nil
	}
	return (*heldTool)(h.groupAfter(flagLLM))
}

// errs is the error evidence (and the odd values), nil when the step
// has none.
func (h *heldStep) errs() *heldErrs {
	if h.flags&flagErrs == 0 {
		return nil
	}
	return (*heldErrs)(h.groupAfter(flagLLM | flagTool))
}

// groupAfter is the address in grp past the groups of before (flagLLM,
// flagTool) that the step holds.
func (h *heldStep) groupAfter(before uint8) unsafe.Pointer {
	p, held := h.grp, h.flags&before
	if held&flagLLM != 0 {
		p = unsafe.Add(p, unsafe.Sizeof(heldLLM{}))
	}
	if held&flagTool != 0 {
		p = unsafe.Add(p, unsafe.Sizeof(heldTool{}))
	}
	return p
}

// step writes the Step h holds into st (all of its fields), with a zero
// ParentID unless the reading's was odd (stepAt gives it back).
func (h *heldStep) step(st *trajectory.Step) {
	*st = trajectory.Step{SpanID: h.spanID, Start: h.start, End: h.end, Name: h.name,
		Kind: h.stepKind(), Convention: h.convention(),
		ResultIsError: h.flags&flagResultIsError != 0, StatusError: h.flags&flagStatusError != 0,
		HasJSONRPC: h.flags&flagHasJSONRPC != 0, OutputEmpty: h.flags&flagOutputEmpty != 0}
	if t := h.tool(); t != nil {
		st.ToolName, st.ToolCallID, st.Arguments, st.Result = t.ToolName, t.ToolCallID, t.Arguments, t.Result
	}
	if e := h.errs(); e != nil {
		st.StatusMessage, st.Errors, st.HTTPStatus, st.JSONRPCCode = e.StatusMessage, e.Errors, e.HTTPStatus, e.JSONRPCCode
		if e.odd != nil {
			st.ParentID = e.odd.parent
		}
	}
	if l := h.llm(); l != nil {
		st.Model, st.Provider, st.FinishReasons, st.Requested, st.Offered = l.names.model, l.names.provider, l.names.finishReasons, l.Requested(), l.Offered()
		st.InputResults, st.ToolResults, st.OutputText = l.InputResults(), l.ToolResults(), l.outputText()
		st.InputTokens, st.OutputTokens, st.Cost = l.usage()
	}
}

// stepAt writes into st the Step h holds for a span whose parent is
// parent (the reading holdStep was given, with its ParentID).
func (h *heldStep) stepAt(st *trajectory.Step, parent pcommon.SpanID) {
	h.step(st)
	if e := h.errs(); e == nil || e.odd == nil {
		st.ParentID = parent
	}
}

func (h *heldStep) stepKind() trajectory.StepKind {
	if h.kind == oddCode {
		return h.errs().odd.kind
	}
	return stepKinds[h.kind]
}

func (h *heldStep) convention() trajectory.Convention {
	if h.conv == oddCode {
		return h.errs().odd.conv
	}
	return conventions[h.conv]
}

// model is the model-call group (noLLM when the step sets none of it).
func (h *heldStep) model() *heldLLM {
	if l := h.llm(); l != nil {
		return l
	}
	return &noLLM
}

// toolCall is the tool-call group (zero when the step sets none of it).
func (h *heldStep) toolCall() heldTool {
	if t := h.tool(); t != nil {
		return *t
	}
	return heldTool{}
}

// shareBack bounds how many steps back a new model step looks for the
// last model step, whose lists it may share.
const shareBack = 8

// shareLists makes a new model step's tool definitions the last model
// step's list when they are equal (the finish reasons are shared by
// namesOf): most
// instrumentations record the tools offered on every model call (each
// reading makes its own list of the same, shared, definitions), and a
// held reading is only read (trajectory.Step.Offered is read-only and
// shared between steps). Equal lists are the same values to every reader.
//
// A run's first model step (or one with no model step shortly before it)
// is compared with the definitions the guards held last, of any run:
// the runs of one agent are offered the same tools.
func (r *Run) shareLists(l *heldLLM) {
	for i := r.steps.len() - 1; i >= 0 && i >= r.steps.len()-shareBack; i-- {
		prev := r.steps.at(int32(i)).eff.llm()
		if prev == nil {
			continue
		}
		if l.lens[listOffered] > 0 && l.lens[listOffered] == prev.lens[listOffered] && l.offered != prev.offered &&
			slices.EqualFunc(l.Offered(), prev.Offered(), sameToolDef) {
			l.offered = prev.offered
		}
		return
	}
	if l.lens[listOffered] == 0 {
		return
	}
	if last := r.g.lastOffered.Load(); last != nil && last.n == l.lens[listOffered] &&
		slices.EqualFunc(l.Offered(), heldList(last.p, last.n), sameToolDef) {
		l.offered = last.p
		return
	}
	r.g.lastOffered.Store(&offeredList{p: l.offered, n: l.lens[listOffered]})
}

// offeredList is a held list of tool definitions (holdList's form).
type offeredList struct {
	p *trajectory.ToolDef
	n uint32
}

// sameToolDef reports whether two tool definitions hold the same values
// (a nil schema is not an empty one).
func sameToolDef(a, b trajectory.ToolDef) bool {
	return a.Name == b.Name && (a.Schema == nil) == (b.Schema == nil) && bytes.Equal(a.Schema, b.Schema) &&
		sameHint(a.Hints.ReadOnly, b.Hints.ReadOnly) && sameHint(a.Hints.Destructive, b.Hints.Destructive) &&
		sameHint(a.Hints.Idempotent, b.Hints.Idempotent)
}

func sameHint(a, b *bool) bool { return a == b || (a != nil && b != nil && *a == *b) }
