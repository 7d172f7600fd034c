package classifier

import (
	"cmp"
	"slices"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/internal/smallmap"
	"github.com/triage-otel/triage/trajectory"
)

// finding is one classification with its evidence.
type finding struct {
	Type       FailureType
	Signal     Signal
	Rule       string
	Confidence float64
	Reason     string
}

func (f finding) with(s Signal, rule string, conf float64) finding {
	f.Signal, f.Rule, f.Confidence = s, rule, conf
	return f
}

// definite reports whether a finding names a class: a failure type, or an
// unknown whose reason is clear (auth, content filter, ...).
func (f finding) definite() bool {
	if f.Type == Unknown {
		// Fallbacks that say only that the run did not finish.
		return f.Reason != "" && f.Reason != ReasonNoFinalAnswer && f.Reason != ReasonRootLost && f.Reason != ReasonNoResponse && f.Reason != ReasonCallsUnrecorded
	}
	return f.Type != ""
}

type incidentKind int

const (
	kindCall       incidentKind = iota // a tool call failed (span, fed-back result, structure)
	kindLLM                            // a model call failed
	kindSpan                           // a non-step span failed (chain, workflow, agent)
	kindRoot                           // the run's root failed: the run ended in error
	kindTerminal                       // the run ended badly: finish reason, step limit, no answer
	kindLoop                           // repeated calls
	kindConstraint                     // forbidden string in model output
	kindExtra                          // supplied by the caller
)

type incident struct {
	Incident
	kind   incidentKind
	pos    int // order in the run: index of the step, len(steps) for run-level
	callIx int // for kindCall: index in calls
}

// call is one tool call of the run: requested by a model step, executed by
// a tool step, answered by a result fed back to the model — any of the
// three may be missing.
type call struct {
	name, id, args string
	llmIx          int // requesting LLM step, -1 if unknown
	toolIx         int // executing tool step, -1 if none
	result         *trajectory.ToolResult
	resultLLMIx    int // LLM step whose input carried the result
	failed         bool
	ok             bool // known to have succeeded
	pos            int
	// fedOnly: the call is known only from its result fed back to the
	// model (no request, no tool span).
	fedOnly bool
}

// requestPos is where the call was decided: the model step that asked for
// it, else the tool step.
func (c *call) requestPos() int {
	if c.llmIx >= 0 {
		return c.llmIx
	}
	return c.pos
}

type classification struct {
	c       *Classifier
	run     *trajectory.Run
	steps   []trajectory.Step
	schemas *schemaCache
	calls   []call
	inc     []incident
	memo    memo
	// resultMode: what callIncidents does with the Classifier's memo of
	// result texts (resultmemo.go).
	resultMode resultTextMode
	// loopUndecided: no loop was found, but the calls were not recorded
	// well enough to rule one out (unrecorded.go).
	loopUndecided bool
	// loopCalls and ring are the loop rule's lists (kept with the
	// classification when it is pooled).
	loopCalls []loopCall
	ring      []loopSlot
	// byID and taken are collectCalls' index of calls by id and the
	// results without an id it took (kept with the classification when it
	// is pooled).
	byID  smallmap.Map[string, int]
	taken smallmap.Map[takenResult, bool]
	// okCalls is successes' last request position per tool name.
	okCalls smallmap.Map[string, int]
	// perName is loopCallsOf's count of calls per tool name (kept with the
	// classification when it is pooled).
	perName smallmap.Map[string, int]
	// one is ClassifyCall's run (call.go), kept with the classification
	// when it is pooled.
	one *oneCall
	// lastJSON is the last text jsonError decoded for this classification
	// (classification.jsonError), emptied by release.
	lastJSON jsonRead
}

func (c *Classifier) classify(run *trajectory.Run, extra []Incident) Verdict {
	if run == nil {
		return Verdict{Outcome: OutcomeOK}
	}
	// The classification and its lists are lent by the Classifier's pool:
	// the verdict copies what it returns out of them.
	cl, _ := c.scratch.Get().(*classification)
	if cl == nil {
		cl = &classification{}
	}
	c.findIncidents(cl, run, extra)
	v := cl.verdict()
	cl.release()
	c.scratch.Put(cl)
	return v
}

// incidents finds the incidents of run and whether each was recovered.
func (c *Classifier) incidents(run *trajectory.Run, extra []Incident) *classification {
	cl := &classification{}
	c.findIncidents(cl, run, extra)
	return cl
}

// maxScratchCalls bounds the lists a pooled classification keeps between
// runs (a run of many more calls allocates its own).
const maxScratchCalls = 256

// release drops what the classification points to (the run's texts) and
// keeps its lists' room, emptied, unless they grew past maxScratchCalls.
func (cl *classification) release() {
	keep := func(n int) bool { return n <= maxScratchCalls }
	calls, inc, lc, ring := cl.calls[:0], cl.inc[:0], cl.loopCalls[:0], cl.ring[:0]
	clear(cl.calls)
	clear(cl.inc)
	clear(cl.loopCalls)
	clear(cl.ring[:cap(cl.ring)])
	byID, taken, memo, okCalls, perName, one := cl.byID, cl.taken, cl.memo, cl.okCalls, cl.perName, cl.one
	byID.Reset()
	taken.Reset()
	memo.text.Reset()
	memo.exc.Reset()
	okCalls.Reset()
	perName.Reset()
	*cl = classification{byID: byID, taken: taken, memo: memo, okCalls: okCalls, perName: perName, one: one}
	if keep(cap(calls)) {
		cl.calls = calls
	}
	if keep(cap(inc)) {
		cl.inc = inc
	}
	if keep(cap(lc)) {
		cl.loopCalls = lc
	}
	if keep(cap(ring)) {
		cl.ring = ring
	}
}

// findIncidents fills cl (empty, maybe with room in its lists) with the
// incidents of run and whether each was recovered.
func (c *Classifier) findIncidents(cl *classification, run *trajectory.Run, extra []Incident) {
	cl.c, cl.run, cl.steps, cl.schemas, cl.resultMode = c, run, run.Steps, c.schemas, resultsTake
	cl.memo.shared, cl.memo.mode = c.texts, resultsTake
	cl.collectCalls()
	cl.callIncidents()
	cl.llmIncidents()
	cl.spanIncidents()
	cl.constraintIncidents()
	loop, hasLoop := cl.loop()
	cl.terminalIncidents(loop, hasLoop)
	cl.extraIncidents(extra)
	cl.recovery()
}

// collectCalls links requested calls, tool steps and fed-back results.
func (cl *classification) collectCalls() {
	byID := &cl.byID
	if n := callCount(cl.steps); n > 0 {
		cl.calls = slices.Grow(cl.calls[:0], n)
	}
	var pending []int // requested calls of the last LLM step not yet executed
	var early []int   // tool steps since the last LLM step not linked to a request
	for i := range cl.steps {
		s := &cl.steps[i]
		switch s.Kind {
		case trajectory.StepLLM:
			pending = pending[:0]
		requests:
			for _, rc := range s.Requested {
				// A tool step may end before the model step that asked for
				// it (streaming, clock skew): link it rather than count the
				// call twice.
				if rc.ID != "" {
					if j, ok := byID.Get(rc.ID); ok {
						if cl.calls[j].llmIx < 0 {
							cl.calls[j].llmIx = i
						}
						continue
					}
				}
				for ei, j := range early {
					cj := &cl.calls[j]
					// Only a tool that started after the model step did can
					// be its answer.
					if cj.llmIx < 0 && cj.name == rc.Name && (cj.id == "" || rc.ID == "") && cl.steps[cj.toolIx].Start >= s.Start {
						cj.llmIx = i
						early = append(early[:ei], early[ei+1:]...)
						continue requests
					}
				}
				cl.calls = append(cl.calls, call{name: rc.Name, id: rc.ID, args: rc.Arguments, llmIx: i, toolIx: -1, resultLLMIx: -1, pos: i})
				k := len(cl.calls) - 1
				if rc.ID != "" {
					byID.Put(rc.ID, k)
				}
				pending = append(pending, k)
			}
			early = early[:0]
		case trajectory.StepTool:
			k := -1
			if s.ToolCallID != "" {
				if j, ok := byID.Get(s.ToolCallID); ok && cl.calls[j].toolIx < 0 {
					k = j
				}
			}
			if k < 0 {
				for pi, j := range pending {
					cj := &cl.calls[j]
					if cj.toolIx < 0 && cj.name == s.ToolName && (cj.id == "" || s.ToolCallID == "") {
						k = j
						pending = append(pending[:pi], pending[pi+1:]...)
						break
					}
				}
			}
			if k < 0 {
				cl.calls = append(cl.calls, call{name: s.ToolName, id: s.ToolCallID, args: s.Arguments, llmIx: -1, resultLLMIx: -1})
				k = len(cl.calls) - 1
				if s.ToolCallID != "" {
					byID.Put(s.ToolCallID, k)
				}
				early = append(early, k)
			}
			c := &cl.calls[k]
			c.toolIx = i
			c.pos = i
			if c.name == "" {
				c.name = s.ToolName
			}
			if s.Arguments != "" {
				c.args = s.Arguments
			}
		}
	}
	cl.collectResults(byID)
}

// callCount is the number of calls the run's requests and tool steps make
// at most (results fed back without either add more).
func callCount(steps []trajectory.Step) int {
	n := 0
	for i := range steps {
		switch steps[i].Kind {
		case trajectory.StepLLM:
			n += len(steps[i].Requested)
		case trajectory.StepTool:
			n++
		}
	}
	return n
}

// takenResult identifies a result without a call id taken by
// collectResults: its tool name and content.
type takenResult struct {
	name, content string
}

// collectResults links the tool results the run recorded to its calls:
// results fed back in a model step's input, and results a model step
// recorded for its own calls (streamed tool-result parts). Conversations
// are resent whole on every turn, so each result is taken once. A result
// that matches no call is a call of its own: frameworks that catch a tool
// failure and feed it back as text often leave no tool span and no
// recorded request (unknown tools, invalid arguments), and the result is
// then the only evidence of the call.
func (cl *classification) collectResults(byID *smallmap.Map[string, int]) {
	seen := &cl.taken
	nextUnmatched := 0
	take := func(r *trajectory.ToolResult, i int, own bool) {
		// A result with a call id is taken once its id is in byID: the
		// call it names then has a result (this one or an earlier), so a
		// resent copy stops below. Only id-less results need the set of
		// taken results (their keys, two strings, are hashed for every
		// resent copy).
		k := -1
		if r.CallID != "" {
			if j, ok := byID.Get(r.CallID); ok {
				k = j
			}
		} else {
			key := takenResult{name: r.Name, content: r.Content}
			if _, taken := seen.Get(key); taken {
				return
			}
			seen.Put(key, true)
		}
		if k < 0 {
			// No id: the first earlier call of that name without a
			// result (or of any name when the result has none). A step's
			// own results answer the calls it asked for itself.
			for j := nextUnmatched; j < len(cl.calls); j++ {
				cj := &cl.calls[j]
				if cj.pos > i || (cj.pos == i && !own) {
					break
				}
				if cj.result == nil && (r.Name == "" || cj.name == r.Name) {
					k = j
					break
				}
			}
			if k >= 0 && r.CallID != "" {
				byID.Put(r.CallID, k)
			}
		}
		if k >= 0 && cl.calls[k].result != nil {
			return
		}
		if k < 0 {
			cl.calls = append(cl.calls, call{name: r.Name, id: r.CallID, llmIx: -1, toolIx: -1, resultLLMIx: i, pos: i, fedOnly: true})
			k = len(cl.calls) - 1
			if r.CallID != "" {
				byID.Put(r.CallID, k)
			}
		}
		cl.calls[k].result = r
		cl.calls[k].resultLLMIx = i
		for nextUnmatched < len(cl.calls) && cl.calls[nextUnmatched].result != nil {
			nextUnmatched++
		}
	}
	for i := range cl.steps {
		s := &cl.steps[i]
		if s.Kind != trajectory.StepLLM {
			continue
		}
		for ri := range s.InputResults {
			take(&s.InputResults[ri], i, false)
		}
		for ri := range s.ToolResults {
			take(&s.ToolResults[ri], i, true)
		}
	}
}

func (cl *classification) callIncidents() {
	for k := range cl.calls {
		c := &cl.calls[k]
		var tool *trajectory.Step
		if c.toolIx >= 0 {
			tool = &cl.steps[c.toolIx]
		}
		toolFailed := tool != nil && tool.Failed()
		// The result the model saw, else the tool span's own output:
		// tools that catch their errors return them as results.
		result := c.result
		if result == nil && tool != nil && tool.Result != "" {
			result = &trajectory.ToolResult{CallID: c.id, Name: c.name, Content: tool.Result}
		}
		resErr, placeholder := false, false
		if result != nil {
			// What the text says is read once per text for the guards
			// and this classification (resultmemo.go).
			// A result marked as an error, or of a tool that failed, fails
			// the call whatever its text says: nothing below reads rt then.
			need := resultNeedAll
			if result.IsError || toolFailed {
				need = resultNeedNone
			}
			rt := cl.resultText(result.Content, max(need, resultNeedFloor))
			resErr = result.IsError || rt.errorShaped || !toolFailed && rt.headFailure
			// A tool that ran on a missing or non-numeric argument and
			// says so only by echoing JavaScript's undefined or NaN (read
			// of every text neither error-shaped nor a head failure, so
			// of every text asked here).
			placeholder = !toolFailed && !resErr && rt.placeholder
		}
		c.failed = toolFailed || resErr || placeholder
		c.ok = !c.failed && (tool != nil || c.result != nil)

		var f finding
		found := false
		if c.llmIx >= 0 && !c.ok {
			// Structure first; a call the framework ran successfully
			// contradicts it (the manifest or schema we saw was partial).
			rc := trajectory.ToolCall{ID: c.id, Name: c.name, Arguments: c.args}
			offered := offeredIndex{defs: cl.steps[c.llmIx].Offered}
			if ff, ok := cl.schemas.checkCall(&rc, &offered); ok {
				f, found = ff, true
			}
		}
		if !found && !c.failed {
			continue
		}
		if !found && placeholder {
			f, found = finding{Type: SchemaMismatch, Signal: SignalPlaceholderValue, Confidence: confPlaceholderValue}, true
		}
		if !found {
			ev := evidence{}
			if tool != nil {
				ev = stepEvidence(tool)
			}
			if result != nil && (resErr || toolFailed) && result.Content != "" && result.Content != ev.firstResult() {
				ev.errors = append(ev.errors, cl.textEvidence(result.Content))
			}
			f, found = classifyEvidence(&ev, &cl.memo)
			if !found {
				f = finding{Type: Unknown}
			}
		}
		c.failed = true
		c.ok = false
		spanID, stepIx := cl.callSpan(c)
		cl.inc = append(cl.inc, incident{
			Incident: Incident{SpanID: spanID, StepIndex: stepIx, Tool: c.name, FailureType: f.Type,
				Signal: f.Signal, Rule: f.Rule, Confidence: f.Confidence, Reason: f.Reason},
			kind: kindCall, pos: c.pos, callIx: k,
		})
	}
}

// callSpan is the span that best shows a call: its tool span, else the
// model step that requested it, else the one that received its result.
func (cl *classification) callSpan(c *call) (pcommon.SpanID, int) {
	switch {
	case c.toolIx >= 0:
		return cl.steps[c.toolIx].SpanID, c.toolIx
	case c.llmIx >= 0:
		return cl.steps[c.llmIx].SpanID, c.llmIx
	case c.resultLLMIx >= 0:
		return cl.steps[c.resultLLMIx].SpanID, c.resultLLMIx
	}
	return pcommon.SpanID{}, -1
}

func (cl *classification) llmIncidents() {
	for i := range cl.steps {
		s := &cl.steps[i]
		if s.Kind != trajectory.StepLLM || !s.Failed() {
			continue
		}
		ev := stepEvidence(s)
		f, ok := classifyEvidence(&ev, &cl.memo)
		if !ok {
			f = finding{Type: Unknown}
		}
		cl.inc = append(cl.inc, incident{
			Incident: Incident{SpanID: s.SpanID, StepIndex: i, FailureType: f.Type, Signal: f.Signal,
				Rule: f.Rule, Confidence: f.Confidence, Reason: f.Reason},
			kind: kindLLM, pos: i,
		})
	}
}

func firstText(ev *evidence) string {
	if ts := ev.allTexts(); len(ts) > 0 {
		return ts[0]
	}
	return ""
}

func (cl *classification) spanIncidents() {
	// Wrapper spans (chains, agents) repeat the error of the step they
	// wrap; a non-root span error adds an incident only when its message
	// is new. seen holds each error message recorded so far with the
	// latest end of a span that recorded it.
	seen := make(errorsSeen)
	for i := range cl.steps {
		s := &cl.steps[i]
		seen.add(s.StatusMessage, s.End)
		for _, e := range s.Errors {
			seen.add(e.Message, s.End)
		}
	}
	for i := range cl.run.SpanErrors {
		se := &cl.run.SpanErrors[i]
		ev := spanErrorEvidence(se)
		if ev.empty() && !se.StatusError {
			continue
		}
		msg := firstText(&ev)
		if _, repeated := seen[msg]; !se.IsRoot && msg != "" && repeated {
			continue
		}
		if se.IsRoot && cl.rootRepeatsAnsweredError(se, msg, seen) {
			continue
		}
		f, ok := classifyEvidence(&ev, &cl.memo)
		if !ok {
			f = finding{Type: Unknown}
		}
		kind := kindSpan
		if se.IsRoot {
			kind = kindRoot
		}
		cl.inc = append(cl.inc, incident{
			Incident: Incident{SpanID: se.SpanID, StepIndex: -1, FailureType: f.Type, Signal: f.Signal,
				Rule: f.Rule, Confidence: f.Confidence, Reason: f.Reason},
			kind: kind, pos: cl.posAt(se.End),
		})
		seen.add(msg, se.End)
	}
}

// posAt is the number of steps that ended at or before t.
func (cl *classification) posAt(t pcommon.Timestamp) int {
	return sort.Search(len(cl.steps), func(i int) bool { return cl.steps[i].End > t })
}

func (cl *classification) constraintIncidents() {
	if len(cl.c.constraints.lower) == 0 {
		return
	}
	for i := range cl.steps {
		s := &cl.steps[i]
		if s.Kind != trajectory.StepLLM {
			continue
		}
		if c, ok := cl.c.constraints.violated(s.OutputText); ok {
			cl.inc = append(cl.inc, incident{
				Incident: Incident{SpanID: s.SpanID, StepIndex: i, FailureType: ConstraintIgnored,
					Signal: SignalConstraint, Rule: c, Confidence: confConstraint},
				kind: kindConstraint, pos: i,
			})
		}
	}
}

func (cl *classification) loop() (loopResult, bool) {
	if len(cl.calls) == 0 {
		cl.loopUndecided = cl.toolTurnsUnrecorded()
		return loopResult{}, false
	}
	cl.loopCalls = loopCallsOf(cl.loopCalls[:0], &cl.perName, cl.calls, cl.c.opts.LoopThreshold, false)
	var res loopResult
	var ok bool
	res, ok, cl.loopUndecided, cl.ring = runLoopRule(cl.ring, cl.loopCalls, cl.c.opts.LoopThreshold, cl.c.opts.LoopWindow, cl.c.opts.LoopSimilarity)
	return res, ok
}

// loopCallsOf is the loop detector's view of calls, ordered by position.
// Only the calls of a tool called at least threshold times in the run are
// identified by their arguments (canonicalArgs, the result's masked text):
// a tool called fewer times can complete no loop, counted (every equal
// call has its name) or by similarity (a run of similar calls is a run of
// calls of one tool), and its calls' identities are compared only with one
// another (a retry repeats the call before it: the same tool). Its calls
// keep everything else (position, failed, unrecorded, byResult) and an
// empty identity. all identifies every call (the reference FuzzLoopRule
// holds the shortcut to). The calls are appended to lc; perName is room
// for the counts (emptied first; nil: a map of its own).
func loopCallsOf(lc []loopCall, perName *smallmap.Map[string, int], calls []call, threshold int, all bool) []loopCall {
	if perName == nil {
		perName = new(smallmap.Map[string, int])
	}
	perName.Reset()
	if !all {
		for k := range calls {
			n, _ := perName.Get(calls[k].name)
			perName.Put(calls[k].name, n+1)
		}
	}
	lc = slices.Grow(lc, len(calls))
	first := len(lc)
	sorted := true
	for k := range calls {
		c := &calls[k]
		var l loopCall
		if n, _ := perName.Get(c.name); all || n >= threshold {
			id := c.loopArgs()
			l = newLoopCall(c.name, id, c.failed, c.pos, k)
			l.byResult = strings.HasPrefix(id, resultIdentity)
		} else {
			l = loopCall{name: c.name, failed: c.failed, pos: c.pos, callIx: k}
			// As newLoopCall reads loopIdentity(c.args, c.result).
			if c.args != "" || c.result == nil || c.result.Content == "" {
				l.unrecorded = strings.TrimSpace(c.args) == ""
				l.byResult = strings.HasPrefix(c.args, resultIdentity)
			} else {
				l.byResult = true
			}
		}
		if len(lc) > first && l.pos < lc[len(lc)-1].pos {
			sorted = false
		}
		lc = append(lc, l)
	}
	// Calls are collected in step order except for tool steps linked to
	// an earlier request; order them by position for the window.
	if !sorted {
		slices.SortStableFunc(lc[first:], func(a, b loopCall) int { return cmp.Compare(a.pos, b.pos) })
	}
	return lc
}

// runLoopRule is the loop rule on calls in run order: the loop found, else
// whether calls not recorded well enough could hide one (loopUndecidable).
// ring is room for the detector's ring, returned with what it grew to.
func runLoopRule(ring []loopSlot, lc []loopCall, threshold, window int, similarity float64) (loopResult, bool, bool, []loopSlot) {
	res, ok, ring := detectLoopIn(ring, lc, threshold, window, similarity)
	if ok {
		return res, true, false, ring
	}
	return res, false, loopUndecidable(lc, threshold, window), ring
}

func (cl *classification) lastLLM() (*trajectory.Step, int) {
	for i := len(cl.steps) - 1; i >= 0; i-- {
		if cl.steps[i].Kind == trajectory.StepLLM {
			return &cl.steps[i], i
		}
	}
	return nil, -1
}

// terminalIncidents reads how the run ended: a loop, a final finish
// reason, a step-limit stop (silent, or an exception saying so).
func (cl *classification) terminalIncidents(loop loopResult, hasLoop bool) {
	n := len(cl.steps)
	if hasLoop {
		c := &cl.calls[loop.lastIx]
		spanID, stepIx := cl.callSpan(c)
		cl.inc = append(cl.inc, incident{
			Incident: Incident{SpanID: spanID, StepIndex: stepIx, Tool: loop.tool, FailureType: LoopDetected,
				Signal: SignalLoop, Confidence: confLoop},
			kind: kindLoop, pos: loop.lastPos,
		})
	}
	stepLimitErr := cl.retypeStepLimitErrors(hasLoop)
	last, lastIx := cl.lastLLM()
	if last == nil {
		cl.rootLost()
		return
	}
	if last.Failed() {
		return
	}
	if fr := finalFinishReason(cl.run, last); fr != "" {
		if f, ok := fromFinishReason(fr); ok {
			cl.inc = append(cl.inc, incident{
				Incident: Incident{SpanID: last.SpanID, StepIndex: lastIx, FailureType: f.Type, Signal: f.Signal,
					Rule: f.Rule, Confidence: f.Confidence, Reason: f.Reason},
				kind: kindTerminal, pos: n,
			})
			return
		}
	}
	if cl.noResponse(last, lastIx) {
		return
	}
	if !requestsTools(last) || stepLimitErr {
		return
	}
	cl.stepLimitStop(last, lastIx, hasLoop)
}

// retypeStepLimitErrors gives the exceptions that say a step limit was hit
// the type the trajectory decides (a loop, else unknown when calls were not
// recorded, else plan_incomplete), and reports whether there were any.
func (cl *classification) retypeStepLimitErrors(hasLoop bool) bool {
	stepLimitErr := false
	for i := range cl.inc {
		in := &cl.inc[i]
		if in.FailureType != stepLimitType {
			continue
		}
		stepLimitErr = true
		switch {
		case hasLoop:
			in.FailureType = LoopDetected
		case cl.loopUndecided:
			in.FailureType, in.Reason = Unknown, ReasonCallsUnrecorded
		default:
			in.FailureType = PlanIncomplete
		}
	}
	return stepLimitErr
}

// stepLimitStop adds the terminal incident of a run that stopped while
// its last model step (last, at step lastIx) was still asking for tools.
func (cl *classification) stepLimitStop(last *trajectory.Step, lastIx int, hasLoop bool) {
	n := len(cl.steps)
	// The run stopped while the model was still asking for tools. An
	// error at or after that turn explains the stop and takes precedence.
	for i := range cl.inc {
		switch cl.inc[i].kind {
		case kindRoot:
			return
		case kindCall, kindLLM, kindSpan:
			if cl.inc[i].pos >= lastIx {
				return
			}
		}
	}
	ft, reason, conf := PlanIncomplete, "", confStepLimit
	switch {
	case hasLoop:
		ft = LoopDetected
	case trailingToolTurns(cl.steps) < minStepLimitSteps:
		// One or two tool turns and no answer. When the run says it
		// stopped on tool calls, or its root span was lost (the agent
		// never ended it), the run failed for a reason the spans don't
		// show. Otherwise a tool may legitimately end the run (tools that
		// return directly): no verdict.
		if !isToolFinish(cl.run.FinishReason) && cl.run.RootFound {
			return
		}
		ft, reason, conf = Unknown, ReasonNoFinalAnswer, confNoAnswer
	case cl.loopUndecided:
		ft, reason = Unknown, ReasonCallsUnrecorded
	}
	cl.inc = append(cl.inc, incident{
		Incident: Incident{SpanID: last.SpanID, StepIndex: lastIx, FailureType: ft, Signal: SignalStepLimit,
			Confidence: conf, Reason: reason},
		kind: kindTerminal, pos: n,
	})
}

// rootLost flags a run without any model step whose root span never
// arrived: instrumentations that end spans only on success lose the root
// (and the failed model call) when the agent throws. Nothing says why, so
// the class is unknown.
func (cl *classification) rootLost() {
	if cl.run.RootFound || cl.run.Orphans == 0 || len(cl.inc) > 0 {
		return
	}
	cl.inc = append(cl.inc, incident{
		Incident: Incident{SpanID: cl.run.RootSpanID, StepIndex: -1, FailureType: Unknown,
			Signal: SignalNone, Confidence: confRootLost, Reason: ReasonRootLost},
		kind: kindTerminal, pos: len(cl.steps),
	})
}

func (cl *classification) extraIncidents(extra []Incident) {
	if len(extra) == 0 {
		return
	}
	var bySpan map[pcommon.SpanID]int
	for _, e := range extra {
		pos, kind := len(cl.steps), kindExtra
		if e.StepIndex >= 0 && e.StepIndex < len(cl.steps) {
			pos = e.StepIndex
		} else if !e.SpanID.IsEmpty() {
			if bySpan == nil {
				bySpan = make(map[pcommon.SpanID]int, len(cl.steps))
				for i := range cl.steps {
					bySpan[cl.steps[i].SpanID] = i
				}
			}
			if i, ok := bySpan[e.SpanID]; ok {
				pos = i
				e.StepIndex = i
			} else {
				e.StepIndex = -1
			}
		} else {
			e.StepIndex = -1
		}
		if e.FailureType == "" {
			e.FailureType = Unknown
		}
		cl.inc = append(cl.inc, incident{Incident: e, kind: kind, pos: pos})
	}
}

// recovery marks incidents superseded by a later successful step, when the
// run then ends without error.
func (cl *classification) recovery() {
	endsInError := cl.endsInError()
	ok := cl.successes()
	finalAnswer := cl.endsWithFinalAnswer()
	for i := range cl.inc {
		in := &cl.inc[i]
		if in.Recovered && in.kind == kindExtra {
			continue
		}
		in.Recovered = cl.superseded(in, &ok, finalAnswer) && !endsInError
	}
}

// endsInError: the run's last step failed, or an incident of the run's
// root or terminal kind says the run ended in an error.
func (cl *classification) endsInError() bool {
	if n := len(cl.steps); n > 0 && cl.steps[n-1].Failed() {
		return true
	}
	for i := range cl.inc {
		switch cl.inc[i].kind {
		case kindRoot, kindTerminal:
			return true
		}
	}
	return false
}

// endsWithFinalAnswer: the last step is a successful model step that did
// not ask for more tools.
func (cl *classification) endsWithFinalAnswer() bool {
	n := len(cl.steps)
	if n == 0 {
		return false
	}
	s := &cl.steps[n-1]
	return s.Kind == trajectory.StepLLM && !s.Failed() && !requestsTools(s)
}

// successes are the last positions of the run's successful steps: of a
// model step, of any step, of a call per tool name (its request position),
// of any call, and the two tool names that succeeded last (to answer "did
// another tool succeed after this one" in constant time).
type successes struct {
	lastOKLLM, lastOKAny int
	lastOKCall           *smallmap.Map[string, int] // the classification's okCalls
	lastOKAnyCall        int                        // request position of the last call that succeeded
	top                  [2]namedPos
}

type namedPos struct {
	name string
	pos  int
}

func (cl *classification) successes() successes {
	cl.okCalls.Reset()
	ok := successes{lastOKLLM: -1, lastOKAny: -1, lastOKAnyCall: -1, lastOKCall: &cl.okCalls,
		top: [2]namedPos{{pos: -1}, {pos: -1}}}
	for i := range cl.steps {
		s := &cl.steps[i]
		if s.Kind == trajectory.StepLLM && !s.Failed() {
			ok.lastOKLLM, ok.lastOKAny = i, i
		}
	}
	for k := range cl.calls {
		c := &cl.calls[k]
		if !c.ok {
			continue
		}
		if p, seen := ok.lastOKCall.Get(c.name); !seen || c.requestPos() > p {
			ok.lastOKCall.Put(c.name, c.requestPos())
		}
		ok.lastOKAnyCall = max(ok.lastOKAnyCall, c.requestPos())
		ok.lastOKAny = max(ok.lastOKAny, c.pos)
	}
	top := &ok.top
	ok.lastOKCall.Each(func(name string, p int) {
		switch {
		case p > top[0].pos || (p == top[0].pos && name < top[0].name):
			top[1], top[0] = top[0], namedPos{name, p}
		case p > top[1].pos || (p == top[1].pos && name < top[1].name):
			top[1] = namedPos{name, p}
		}
	})
	return ok
}

// otherOKAfter: a tool other than name succeeded after request position pos.
func (ok *successes) otherOKAfter(name string, pos int) bool {
	for _, t := range ok.top {
		if t.pos > pos && t.name != name {
			return true
		}
	}
	return false
}

// superseded: a later successful step supersedes the incident (the same
// tool succeeds, a valid tool is called for the same intent, ...).
func (cl *classification) superseded(in *incident, ok *successes, finalAnswer bool) bool {
	switch in.kind {
	case kindCall:
		// A call asked for later, not one asked for alongside.
		rp := cl.calls[in.callIx].requestPos()
		p, seen := ok.lastOKCall.Get(in.Tool)
		superseded := seen && p > rp
		if in.Tool == "" {
			// The instrumentation did not name the call (a result fed
			// back as text): a later call that succeeded, whatever its
			// tool, is the best evidence of a recovery there is.
			superseded = ok.lastOKAnyCall > rp
		}
		if !superseded && in.FailureType == WrongToolCalled {
			// A valid tool called instead, for the same intent.
			superseded = ok.otherOKAfter(in.Tool, rp)
		}
		return superseded
	case kindLLM:
		return ok.lastOKLLM > in.pos
	case kindSpan, kindExtra:
		return ok.lastOKAny > in.pos
	case kindConstraint:
		return cl.cleanOutputAfter(in.pos)
	case kindLoop:
		return finalAnswer
	}
	return false
}

// terminal is the index of the incident a failed run's verdict rests on
// (the incidents sorted by position): the first loop, else the last
// unrecovered incident with a definite class, else the last unrecovered
// one; -1 when every incident was recovered.
func (cl *classification) terminal() int {
	loopIx, definiteIx, anyIx := -1, -1, -1
	for i := range cl.inc {
		in := &cl.inc[i]
		if in.Recovered {
			continue
		}
		anyIx = i
		if in.FailureType == LoopDetected && loopIx < 0 {
			loopIx = i
		}
		f := finding{Type: in.FailureType, Reason: in.Reason}
		if f.definite() {
			definiteIx = i
		}
	}
	switch {
	case loopIx >= 0:
		return loopIx
	case definiteIx >= 0:
		return definiteIx
	}
	return anyIx
}

func (cl *classification) cleanOutputAfter(pos int) bool {
	for i := pos + 1; i < len(cl.steps); i++ {
		s := &cl.steps[i]
		if s.Kind == trajectory.StepLLM && s.OutputText != "" {
			if _, bad := cl.c.constraints.violated(s.OutputText); !bad {
				return true
			}
		}
	}
	return false
}

func (cl *classification) verdict() Verdict {
	slices.SortStableFunc(cl.inc, func(a, b incident) int { return cmp.Compare(a.pos, b.pos) })
	v := Verdict{Outcome: OutcomeOK}
	if len(cl.inc) == 0 {
		return v
	}
	v.Incidents = make([]Incident, len(cl.inc))
	for i := range cl.inc {
		v.Incidents[i] = cl.inc[i].Incident
	}
	pick := cl.terminal()
	if pick < 0 {
		v.Outcome = OutcomeRecovered
		return v
	}
	t := &cl.inc[pick]
	v.Outcome = OutcomeFailed
	v.FailureType = t.FailureType
	v.Signal = t.Signal
	v.Rule = t.Rule
	v.Confidence = t.Confidence
	v.Reason = t.Reason
	v.EvidenceSpanID = t.SpanID
	return v
}
