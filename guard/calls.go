package guard

import (
	"encoding/binary"
	"hash/maphash"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/trajectory"
)

// The calls of a run are linked as Classify links them (classifier's
// collectCalls), one step at a time: a model step's requested calls, the
// tool steps that execute them (by call ID, else by name among the calls
// the last model step asked for), the results fed back to the next model
// step (once each; by call ID, else by name among the calls without a
// result).

// llmStep folds a model step: the results fed back to it, the turn
// boundary, its requested calls, the results of its own calls it recorded.
// Each part is taken once, when the step first has it.
func (r *Run) llmStep(k int32) {
	s := r.steps.at(k)
	l := s.eff.model()
	var fedOnly []int32
	if in := l.InputResults(); !s.has(recResDone) && len(in) > 0 {
		s.mark(recResDone)
		for i := range in {
			if j, created := r.takeResult(k, &in[i]); created {
				fedOnly = append(fedOnly, j)
			}
		}
	}
	if !s.has(recStarted) {
		s.mark(recStarted)
		// A new turn: the calls before it are complete as they are (the
		// results just taken answered them).
		for j := r.turnCalls; j < int32(r.calls.len()); j++ {
			r.addToLoop(j)
		}
		r.turnCalls = int32(r.calls.len())
		r.pending.set(r.pending.all()[:0])
		s.takeEarly(r.early.all())
		r.early = ints{}
	}
	// Calls known only from their result fed back here.
	for _, j := range fedOnly {
		r.addToLoop(j)
	}
	if !s.has(recReqDone) && len(l.Requested()) > 0 {
		s.mark(recReqDone)
		r.requests(k)
	}
	if own := l.ToolResults(); !s.has(recOwnDone) && len(own) > 0 {
		s.mark(recOwnDone)
		for i := range own {
			if j, created := r.takeResult(k, &own[i]); created {
				r.addToLoop(j)
			}
		}
	}
}

// requests links the calls model step k asked for: to tool steps that
// already ran them (by call ID, or by name among the tool steps of the
// turn before, started after the model step did), else as new calls.
func (r *Run) requests(k int32) {
	s := r.steps.at(k)
	early := s.takeEarly(nil)
	requested := s.eff.model().Requested()
requests:
	for i := range requested {
		// The call points into the step's held list (no copy: the run
		// only reads it, as it reads the step's other readings).
		rc := &requested[i]
		if rc.ID != "" {
			if j, ok := r.byID.Get(rc.ID); ok {
				c := r.calls.ref(j)
				if c.reqStep < 0 {
					c.req, c.reqStep = rc, k
					r.classify(j)
				}
				continue
			}
		}
		for ei, j := range early {
			c := r.calls.ref(j)
			if c.reqStep < 0 && c.name == rc.Name && (!c.hasID || rc.ID == "") && r.steps.at(r.root(c.tool)).eff.start >= s.eff.start {
				c.req, c.reqStep = rc, k
				early = append(early[:ei], early[ei+1:]...)
				r.classify(j)
				continue requests
			}
		}
		j := r.newCall(callRec{name: rc.Name, req: rc, reqStep: k, tool: -1, resultStep: -1}, rc.ID)
		r.pending.add(j)
	}
}

// toolStep folds a tool step: links it to its call (once), then reads the
// call again with what the step now says. The call enters the loop
// detector now when its arguments identify it; otherwise its result will,
// at the next turn.
func (r *Run) toolStep(k int32) {
	s := r.steps.at(k)
	fresh := false // the step's call was made now, and read by newCall
	if s.callIndex() < 0 {
		tc := s.eff.toolCall()
		j := int32(-1)
		if id := tc.ToolCallID; id != "" {
			if c, ok := r.byID.Get(id); ok && r.calls.ref(c).tool < 0 {
				j = c
			}
		}
		if j < 0 {
			for pi, c := range r.pending.all() {
				cc := r.calls.ref(c)
				if cc.tool < 0 && cc.name == tc.ToolName && (!cc.hasID || tc.ToolCallID == "") {
					j = c
					pending := r.pending.all()
					r.pending.set(append(pending[:pi], pending[pi+1:]...))
					break
				}
			}
		}
		if j < 0 {
			// newCall reads the new call as it is (this step's alone).
			j = r.newCall(callRec{name: tc.ToolName, reqStep: -1, tool: k, resultStep: -1}, tc.ToolCallID)
			r.early.add(j)
			fresh = true
		}
		s.setCall(j)
		c := r.calls.ref(j)
		c.tool = k
		if c.name == "" {
			c.name = tc.ToolName
		}
	}
	j := s.callIndex()
	if !fresh {
		r.classify(j)
	}
	if r.args(r.calls.ref(j)) != "" {
		r.addToLoop(j)
	}
}

// takeResult links a result recorded at model step k (fed back to it, or
// of its own calls) to its call: by call ID, else the first call without a
// result of that name (of any name when the result has none). A result
// that matches no call is a call of its own (frameworks that feed a tool
// failure back as text often leave no tool span and no request); created
// says so.
func (r *Run) takeResult(k int32, res *trajectory.ToolResult) (j int32, created bool) {
	j = -1
	if res.CallID != "" {
		if c, ok := r.byID.Get(res.CallID); ok {
			if r.calls.ref(c).result != nil {
				// Taken already (conversations are resent whole on every
				// turn), or dropped below whether seen or not: a call keeps
				// its result and an ID its call, so a result of this ID
				// reads the same from now on, with no digest and no entry
				// in the set.
				return -1, false
			}
			j = c
		}
	}
	key := resultKeyOf(res)
	if _, seen := r.results.Get(key); seen {
		return -1, false // conversations are resent whole on every turn
	}
	r.results.Put(key, struct{}{})
	if j < 0 {
		for c := r.nextNoResult; c < int32(r.calls.len()); c++ {
			cc := r.calls.ref(c)
			if cc.result == nil && (res.Name == "" || cc.name == res.Name) {
				j = c
				break
			}
		}
	}
	if j < 0 {
		j = r.newCall(callRec{name: res.Name, reqStep: -1, tool: -1, result: res, resultStep: k}, res.CallID)
		created = true
	} else {
		c := r.calls.ref(j)
		c.result, c.resultStep = res, k
		r.classify(j)
	}
	for r.nextNoResult < int32(r.calls.len()) && r.calls.ref(r.nextNoResult).result != nil {
		r.nextNoResult++
	}
	return j, created
}

// newCall adds call c, made with ID id (empty: none).
func (r *Run) newCall(c callRec, id string) int32 {
	j := int32(r.calls.len())
	c.hasID = id != ""
	c.prevOfTool = -1
	if last, ok := r.lastOfTool.Get(c.name); ok {
		c.prevOfTool = last
	}
	r.calls.add(c)
	if id != "" {
		if _, dup := r.byID.Get(id); !dup {
			r.byID.Put(id, j)
		}
	}
	r.lastOfTool.Put(c.name, j)
	r.classify(j)
	return j
}

// classify reads call j again with what is known of it now (the
// classifier's own reading of a call) and tells the guards what changed.
func (r *Run) classify(j int32) {
	c := r.calls.ref(j)
	r.shareTexts(c)
	call := classifier.Call{Request: c.req, Result: c.result}
	if c.reqStep >= 0 {
		rs := &r.steps.at(r.root(c.reqStep)).eff
		call.RequestSpanID, call.Offered = rs.spanID, rs.model().Offered()
		if len(call.Offered) == 0 {
			call.Offered = r.rareOrZero().agentDefs
		}
	}
	if c.tool >= 0 {
		// In the batch's room: ClassifyCall copies the step (a Step of
		// the call's own would move to the heap on every reading).
		tool := &r.batch.tool
		r.steps.at(r.root(c.tool)).eff.step(tool)
		call.Tool = tool
	}
	if c.resultStep >= 0 {
		call.ResultSpanID = r.steps.at(r.root(c.resultStep)).eff.spanID
	}
	inc, failed, ok := r.g.classifier.ClassifyCall(call)
	status := callPending
	switch {
	case failed:
		status = callFailed
	case ok:
		status = callOK
	}
	if status == c.status && (status != callFailed || inc == *c.inc) {
		return
	}
	c.status, c.inc = status, nil
	if status == callFailed {
		// (A copy made here: the address of inc itself would move it to
		// the heap on every reading, failed or not.)
		c.inc = new(classifier.Incident)
		*c.inc = inc
	}
	if status == callFailed && j == r.lastAdd {
		r.lastFailed()
	}
	r.onCallStatus(j)
}

// shareTexts makes the texts a call's parts repeat one string: the result
// fed back to a model step (read out of the escaped JSON of its input
// history, a copy) is most often the text its tool step returned, and the
// requested arguments those the tool step ran with. The held readings are
// the run's own and an equal string is the same value to every reader
// (Build takes them over at the root), so the copy need not be held.
func (r *Run) shareTexts(c *callRec) {
	if c.tool < 0 || (c.result == nil && c.req == nil) {
		return
	}
	t := r.steps.at(r.root(c.tool)).eff.tool()
	if t == nil {
		return
	}
	if res := c.result; res != nil && len(res.Content) > 0 && res.Content == t.Result {
		res.Content = t.Result
	}
	if req := c.req; req != nil && len(req.Arguments) > 0 && req.Arguments == t.Arguments {
		req.Arguments = t.Arguments
	}
}

// args are the call's arguments as Classify takes them: the tool step's,
// else the requested ones.
func (r *Run) args(c *callRec) string {
	if c.tool >= 0 {
		if a := r.steps.at(r.root(c.tool)).eff.toolCall().Arguments; a != "" {
			return a
		}
	}
	if c.req != nil {
		return c.req.Arguments
	}
	return ""
}

// callSpan is the span that best shows a call: its tool span, else the
// model step that requested it, else the one that received its result.
func (r *Run) callSpan(c *callRec) pcommon.SpanID {
	switch {
	case c.tool >= 0:
		return r.steps.at(r.root(c.tool)).eff.spanID
	case c.reqStep >= 0:
		return r.steps.at(r.root(c.reqStep)).eff.spanID
	case c.resultStep >= 0:
		return r.steps.at(r.root(c.resultStep)).eff.spanID
	}
	return pcommon.SpanID{}
}

// resultKeySize is how many bytes of a result's digest the run's set of
// seen results keeps.
const resultKeySize = 16

// resultKey is a seen result's key: its digest (resultKeyOf).
type resultKey [resultKeySize]byte

// resultSeeds seed the two 64-bit hashes of a result's key, made once per
// process.
var resultSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// resultKeyOf is the key of a result in the run's set: its call ID, else
// its name and content, hashed with each of resultSeeds. 128 bits keep a
// collision out of reach for the results of one run, and the seeds, which
// no one outside the process knows, keep one from being made on purpose;
// a run's set is its own, never shared or kept. (It was the first half of
// the text's sha256 digest: the same set, at a tenth of the cost for the
// kilobytes of text a result fed back without a call ID carries.)
func resultKeyOf(res *trajectory.ToolResult) resultKey {
	var k resultKey
	for i := range resultSeeds {
		var h maphash.Hash
		h.SetSeed(resultSeeds[i])
		if res.CallID != "" {
			h.WriteString("id\x00")
			h.WriteString(res.CallID)
		} else {
			h.WriteString("nc\x00")
			h.WriteString(res.Name)
			h.WriteByte(0)
			h.WriteString(res.Content)
		}
		binary.LittleEndian.PutUint64(k[8*i:], h.Sum64())
	}
	return k
}
