package trajectory

import (
	"bytes"
	"cmp"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// spanRole is what a span is to the trajectory.
type spanRole uint8

const (
	roleNone  spanRole = iota // wrapper, chain, HTTP span, ...
	roleLLM                   // a model call: an LLM step
	roleTool                  // a tool call: a tool step
	roleAgent                 // an agent invocation: a run boundary
	rolePart                  // a streamed part of the model call that encloses it (chunk spans)
)

// spanCtx is one span with the context its readers need.
type spanCtx struct {
	sp    ptrace.Span
	attrs attrMap // the span's
	res   pcommon.Resource
	scope string
	logs  *logIndex // GenAI log events joined by span ID (logs.go); nil without logs
	// inputs are the message lists the reader scanned so far
	// (inputprefix.go).
	inputs *inputLists
	// memo remembers the messages decoded so far (msgmemo.go); nil: none.
	memo *messageMemo
}

// reader is one instrumentation convention.
type reader struct {
	conv Convention
	// What the span is under the convention: detectAs.
	// fill completes a step from the span; it only sets fields that are
	// still empty, so readers applied in precedence order merge.
	fill func(c *spanCtx, st *Step)
	// part adds a rolePart span to the step it belongs to (nil when the
	// convention has no part spans).
	part func(c *spanCtx, st *Step)
	// exclusive readers own the spans they recognise: later readers do not
	// see them (their attributes reuse other conventions' names with
	// another meaning).
	exclusive bool
}

// readers in precedence order: the first reader that makes a span a step
// names the step's convention, and more specific readers fill first.
var readers = []reader{
	{conv: ConventionMastra, fill: mastraFill, part: mastraPart, exclusive: true},
	{conv: ConventionMCP, fill: mcpFill},
	{conv: ConventionVercel, fill: vercelFill},
	{conv: ConventionGenAI, fill: genaiFill},
	{conv: ConventionOpenInference, fill: oiFill},
	{conv: ConventionTraceloop, fill: tlFill},
}

// rootKind says why a node has no parent in the tree.
type rootKind uint8

const (
	notRoot    rootKind = iota
	trueRoot            // no parent span ID
	orphanRoot          // parent span ID not in the input
	cycleRoot           // the parent chain loops; the loop was cut here
)

type node struct {
	c       spanCtx
	parent  int32 // effective parent node, -1 for roots
	root    rootKind
	role    spanRole
	conv    Convention
	matched uint8 // bit i: readers[i] recognised the span
	// top: the span has no parent, or its parent is not in the input (a
	// run's top spans, Run.TopSpanIDs).
	top bool
	// sharedID: other spans of the trace have this span's ID (they were
	// dropped as duplicates).
	sharedID bool
	// filled during the tree walk
	topAgent int32 // top-level agent span above (or at) this node, -1 none
	stepAnc  int32 // nearest ancestor that is a step, -1 none
	unit     int32 // index of the unit (tree group) the node belongs to
}

// Build groups the spans of td by trace and agent run and returns one Run
// per agent invocation, with its steps in end-time order.
//
// Tree: spans are linked by parent span ID within a trace. A span whose
// parent is not in the input is an orphan; a duplicate span ID keeps the
// first span and counts the others (Run.Duplicates); a parent chain that
// loops is cut where the walk re-enters it and that span is treated as an
// orphan. Runs: see the package documentation. Options add inputs, such
// as the GenAI log events of the spans (WithLogs).
func Build(td ptrace.Traces, opts ...Option) []Run {
	sc := buildScratchPool.Get().(*buildScratch)
	defer buildScratchPool.Put(sc)
	defer sc.reset()
	return sc.build(td, opts)
}

// build is Build with sc's memory (scratch.go).
func (sc *buildScratch) build(td ptrace.Traces, opts []Option) []Run {
	o := &sc.opts
	for _, opt := range opts {
		opt(o)
	}
	logs := newLogIndex(o.logs)
	inputs := &sc.inputs
	total := td.SpanCount()
	if o.index != nil {
		o.index.entries = slices.Grow(o.index.entries, total)
	}
	// One node per span, in input order, with the ordinal of its trace
	// (traces numbered in order of first appearance).
	nodes := slices.Grow(sc.nodes[:0], total)
	traceOf := slices.Grow(sc.traceOf[:0], total)
	tids := sc.tids[:0]
	cur := -1
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		res := rs.Resource()
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			scope := ss.Scope().Name()
			mcpScope := isMCPScope(scope)
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				if tid := sp.TraceID(); cur < 0 || tids[cur] != tid {
					cur, tids = sc.traceOrdinal(tids, tid)
				}
				roles := roleAttrs{mcpScope: mcpScope}
				nodes = append(nodes, node{c: spanCtx{sp: sp, attrs: spanAttrsRoles(sp.Attributes(), &roles), res: res, scope: scope, logs: logs, inputs: inputs, memo: &sc.memo},
					parent: -1, topAgent: -1, stepAnc: -1, unit: -1})
				// The role is the span's own: told here, from the values
				// picked in the same pass, for the duplicates linkNodes
				// drops too.
				detectRole(&nodes[len(nodes)-1], &roles)
				traceOf = append(traceOf, int32(cur))
				if o.index != nil {
					o.index.add(rs, ss, sp)
				}
			}
		}
	}
	sc.nodes, sc.traceOf, sc.tids = nodes, traceOf, tids
	var runs []Run
	if len(tids) == 1 {
		return buildTrace(runs, tids[0], nodes, o, sc)
	}
	// Several traces: their nodes side by side, each trace's in input
	// order (a stable counting sort).
	at := make([]int, len(tids)+1)
	for _, t := range traceOf {
		at[t+1]++
	}
	for t := 1; t < len(at); t++ {
		at[t] += at[t-1]
	}
	byTrace := slices.Grow(sc.byTrace[:0], len(nodes))[:len(nodes)]
	sc.byTrace = byTrace
	fill := append([]int(nil), at[:len(tids)]...)
	for i := range nodes {
		t := traceOf[i]
		byTrace[fill[t]] = nodes[i]
		fill[t]++
	}
	for t, tid := range tids {
		runs = buildTrace(runs, tid, byTrace[at[t]:at[t+1]], o, sc)
	}
	return runs
}

func buildTrace(runs []Run, tid pcommon.TraceID, spans []node, o *buildOptions, sc *buildScratch) []Run {
	sc.arena = sc.arena[:0]
	nodes, duplicates := linkNodes(spans, sc)
	breakCycles(nodes, sc)
	t := treeOf(nodes, sc)
	units := unitsOf(t.trueRoots, t.looseRoots)
	order, unitStart := walkUnits(nodes, &t, units, sc)

	b := runBuilder{nodes: nodes, tid: tid, mark: sc.int32s(len(nodes)), stepOf: sc.int32s(len(nodes)), sessionKeys: o.sessionKeys, readSteps: o.readSteps}
	// The first run built takes the trace's duplicate count.
	add := func(r Run) {
		r.Duplicates = duplicates
		duplicates = 0
		runs = append(runs, r)
	}
	for u, un := range units {
		members := order[unitStart[u]:unitStart[u+1]]
		var agents []int32
		recognised := false
		for _, i := range members {
			if nodes[i].topAgent == i {
				agents = append(agents, i)
			}
			recognised = recognised || nodes[i].matched != 0
		}
		if !recognised {
			// No span any convention reader knows (HTTP, database or
			// framework spans only): not an agent run. Such trees come
			// from other services, or from an agent's own work done outside
			// its trace context (a tool's HTTP call started where the
			// framework did not propagate the span), whose failure the
			// agent's trace records where it matters.
			continue
		}
		if len(agents) <= 1 {
			add(b.build(members, un.roots, un.rootFound, agents))
			continue
		}
		b.buildAgentRuns(members, un, agents, add)
	}
	return runs
}

// linkNodes keeps the first node of each span ID (the others are counted
// and dropped, in place: nodes are the trace's spans in input order) and
// links each to its parent.
func linkNodes(nodes []node, sc *buildScratch) (_ []node, duplicates int) {
	var byID spanIDs
	if len(nodes) > linearSpanIDs {
		byID.m = sc.spanIndex()
	}
	w := 0
	for r := range nodes {
		id := nodes[r].c.sp.SpanID()
		if !id.IsEmpty() {
			if first, dup := byID.find(id); dup {
				duplicates++
				nodes[first].sharedID = true
				continue
			}
		}
		byID.add(id, int32(w))
		if w != r {
			nodes[w] = nodes[r]
		}
		w++
	}
	nodes = nodes[:w]
	for i := range nodes {
		n := &nodes[i]
		pid := n.c.sp.ParentSpanID()
		if pid.IsEmpty() {
			n.root, n.top = trueRoot, true
			continue
		}
		p, ok := byID.find(pid)
		if !ok || int(p) == i {
			n.root, n.top = orphanRoot, !ok
			continue
		}
		n.parent = p
	}
	return nodes, duplicates
}

// linearSpanIDs is the number of spans up to which a trace's span IDs are
// found by a scan of its kept IDs, not through a map: most traces are a
// few spans, for which hashing (and clearing the map each trace) cost
// several times the scan.
const linearSpanIDs = 16

// spanIDs finds the node of a span ID among the nodes kept so far: by a
// scan of kept[:n] (every kept node's ID, in order, an empty one included
// so that positions are node indexes: the IDs looked up are never empty)
// for at most linearSpanIDs nodes, else through m.
type spanIDs struct {
	kept [linearSpanIDs]pcommon.SpanID
	n    int
	m    map[pcommon.SpanID]int32
}

func (x *spanIDs) find(id pcommon.SpanID) (int32, bool) {
	if x.m != nil {
		p, ok := x.m[id]
		return p, ok
	}
	for i, k := range x.kept[:x.n] {
		if k == id {
			return int32(i), true
		}
	}
	return 0, false
}

// add records id as the ID of kept node w (the next one).
func (x *spanIDs) add(id pcommon.SpanID, w int32) {
	if x.m == nil {
		x.kept[x.n] = id
		x.n++
	} else if !id.IsEmpty() {
		x.m[id] = w
	}
}

// tree is the nodes' children in CSR form (the children of node i are
// children[start[i]:start[i+1]]) and their roots: spans without a parent
// (trueRoots) and orphans or cycle roots (looseRoots).
type tree struct {
	start, children       []int32
	trueRoots, looseRoots []int32
}

// treeOf builds the tree in linear time (two passes).
func treeOf(nodes []node, sc *buildScratch) tree {
	start := sc.int32s(len(nodes) + 1)
	for i := range nodes {
		if p := nodes[i].parent; p >= 0 {
			start[p+1]++
		}
	}
	for i := 1; i <= len(nodes); i++ {
		start[i] += start[i-1]
	}
	t := tree{start: start, children: sc.int32s(int(start[len(nodes)]))}
	fill := sc.int32s(len(nodes))
	copy(fill, start)
	for i := range nodes {
		if p := nodes[i].parent; p >= 0 {
			t.children[fill[p]] = int32(i)
			fill[p]++
		} else if nodes[i].root == trueRoot {
			t.trueRoots = append(t.trueRoots, int32(i))
		} else {
			t.looseRoots = append(t.looseRoots, int32(i))
		}
	}
	return t
}

// unit is a tree group that becomes a run (or is split into agent runs).
type unit struct {
	roots     []int32
	rootFound bool
}

// unitsOf groups the roots into units. One real root takes the orphans of
// its trace (their parents are spans of that run that were not exported).
// Without exactly one real root the orphans form a unit of their own whose
// root was not found.
func unitsOf(trueRoots, looseRoots []int32) []unit {
	var units []unit
	if len(trueRoots) == 1 {
		return append(units, unit{roots: append([]int32{trueRoots[0]}, looseRoots...), rootFound: true})
	}
	for _, r := range trueRoots {
		units = append(units, unit{roots: []int32{r}, rootFound: true})
	}
	if len(looseRoots) > 0 {
		units = append(units, unit{roots: looseRoots})
	}
	return units
}

// walkUnits walks each unit in preorder (iterative: no recursion depth
// limit), filling each node's unit, top-level agent and step ancestor.
// Unit u's nodes are order[unitStart[u]:unitStart[u+1]].
func walkUnits(nodes []node, t *tree, units []unit, sc *buildScratch) (order []int32, unitStart []int) {
	order = sc.int32s(len(nodes))[:0]
	unitStart = make([]int, len(units)+1)
	stack := sc.int32s(len(nodes))[:0] // each node is pushed once
	for u, un := range units {
		unitStart[u] = len(order)
		for ri := len(un.roots) - 1; ri >= 0; ri-- {
			stack = append(stack, un.roots[ri])
		}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			n := &nodes[i]
			n.unit = int32(u)
			if p := n.parent; p >= 0 {
				pn := &nodes[p]
				n.topAgent = pn.topAgent
				if pn.role == roleLLM || pn.role == roleTool {
					n.stepAnc = p
				} else {
					n.stepAnc = pn.stepAnc
				}
			}
			if n.topAgent < 0 && n.role == roleAgent {
				n.topAgent = i
			}
			order = append(order, i)
			for k := t.start[i+1] - 1; k >= t.start[i]; k-- {
				stack = append(stack, t.children[k])
			}
		}
	}
	unitStart[len(units)] = len(order)
	return order, unitStart
}

// buildAgentRuns builds the runs of a unit holding several agent
// invocations side by side: one run per top-level agent subtree. Nested
// agents stay in their outer agent's run. Spans outside every agent
// subtree form a run of their own when they hold steps; otherwise
// (workflow wrappers) they go with the agent run that ended last, whose
// outcome they usually report.
func (b *runBuilder) buildAgentRuns(members []int32, un unit, agents []int32, add func(Run)) {
	nodes := b.nodes
	groups := make(map[int32][]int32, len(agents))
	var rest []int32
	restHasStep := false
	for _, i := range members {
		if a := nodes[i].topAgent; a >= 0 {
			groups[a] = append(groups[a], i)
		} else {
			rest = append(rest, i)
			if r := nodes[i].role; r == roleLLM || r == roleTool {
				restHasStep = true
			}
		}
	}
	last := agents[0]
	for _, a := range agents[1:] {
		if nodes[a].c.sp.EndTimestamp() > nodes[last].c.sp.EndTimestamp() {
			last = a
		}
	}
	if restHasStep {
		add(b.build(rest, un.roots, un.rootFound, nil))
		rest = nil
	}
	for _, a := range agents {
		m := groups[a]
		if a == last && len(rest) > 0 {
			m = append(m, rest...)
		}
		add(b.build(m, []int32{a}, true, []int32{a}))
	}
}

// breakCycles cuts parent loops in linear time: each node is walked up once;
// a walk that re-enters a node still on the current path has found a loop,
// and the node where it closes becomes a cycle root.
func breakCycles(nodes []node, sc *buildScratch) {
	const (
		unseen = iota
		onPath
		done
	)
	state := sc.int32s(len(nodes))
	path := sc.int32s(len(nodes))[:0] // a path holds each node at most once
	for i := range nodes {
		if state[i] != unseen {
			continue
		}
		path = path[:0]
		cur := int32(i)
		for {
			if state[cur] == done {
				break
			}
			if state[cur] == onPath {
				// cur's ancestors lead back to cur: cut the edge above it.
				nodes[cur].parent = -1
				nodes[cur].root = cycleRoot
				break
			}
			state[cur] = onPath
			path = append(path, cur)
			p := nodes[cur].parent
			if p < 0 {
				break
			}
			cur = p
		}
		for _, j := range path {
			state[j] = done
		}
	}
}

// detectRole asks the convention readers what the span is (agent, LLM call,
// tool call, streamed part) and which convention names it; p are the
// span's values of the keys they ask for (spanAttrsRoles).
func detectRole(n *node, p *roleAttrs) {
	for ri := range readers {
		role, ok := detectAs(readers[ri].conv, &n.c, p)
		if !ok {
			continue
		}
		n.matched |= 1 << ri
		switch role {
		case roleLLM, roleTool:
			// The first (most specific) reader that sees a call names it; a
			// step role wins over an agent role.
			if n.role != roleLLM && n.role != roleTool {
				n.role, n.conv = role, readers[ri].conv
			}
		case roleAgent, rolePart:
			if n.role == roleNone {
				n.role, n.conv = role, readers[ri].conv
			}
		}
		if readers[ri].exclusive {
			return
		}
	}
}

// detectAs says what the span is under convention conv (roleNone when the
// convention does not make it a step or an agent) and whether the span
// carries the convention's attributes at all. The calls are direct (not
// through the readers table) so that the span's picked values stay on the
// caller's stack.
func detectAs(conv Convention, c *spanCtx, p *roleAttrs) (spanRole, bool) {
	switch conv {
	case ConventionMastra:
		return mastraDetect(c, p)
	case ConventionMCP:
		return mcpDetect(c, p)
	case ConventionVercel:
		return vercelDetect(c, p)
	case ConventionGenAI:
		return genaiDetect(c, p)
	case ConventionOpenInference:
		return oiDetect(c, p)
	case ConventionTraceloop:
		return tlDetect(c, p)
	}
	return roleNone, false
}

type runBuilder struct {
	nodes []node
	tid   pcommon.TraceID
	// sessionKeys are the attributes that name a run's session
	// (WithSessionKeys).
	sessionKeys []string
	readSteps   ReadSteps // WithReadSteps
	// Per-node scratch shared by the runs of one trace: mark[i] == gen when
	// node i is a member of the run being built, stepOf[i] its step index.
	mark   []int32
	stepOf []int32
	gen    int32
	// partSteps maps the missing parent of orphaned part spans to the step
	// assembled from them (per run).
	partSteps map[pcommon.SpanID]int
	// meta is the last "metadata" attribute read (describe.go).
	meta metadataMemo
}

// addPart folds a part span (a streamed chunk of a model call) into the
// LLM step enclosing it. Parts whose step is not in the run (the step span
// was never ended) are assembled into one LLM step per parent span. A
// part's own error status counts for its step (readPart).
func (b *runBuilder) addPart(r *Run, n *node, anc int32, ev *errorEvidence) {
	var st *Step
	if anc >= 0 && b.nodes[anc].role == roleLLM {
		st = &r.Steps[b.stepOf[anc]]
	} else {
		sp := n.c.sp
		key := sp.ParentSpanID()
		if key.IsEmpty() {
			key = sp.SpanID()
		}
		k, ok := b.partSteps[key]
		if !ok {
			if b.partSteps == nil {
				b.partSteps = make(map[pcommon.SpanID]int)
			}
			k = len(r.Steps)
			b.partSteps[key] = k
			r.Steps = append(r.Steps, Step{Kind: StepLLM, Convention: n.conv, SpanID: sp.SpanID(), ParentID: sp.ParentSpanID(),
				Name: sp.Name(), Start: sp.StartTimestamp(), End: sp.EndTimestamp()})
		}
		st = &r.Steps[k]
		if s := sp.StartTimestamp(); s != 0 && s < st.Start {
			st.Start = s
		}
		if e := sp.EndTimestamp(); e > st.End {
			st.End = e
		}
	}
	readPart(n, ev, st)
}

// readPart adds one part span to st: every reader's part function, then
// the part's own error evidence (the chunk is the call's result, so an OK
// status on the step does not mean it was retried away).
func readPart(n *node, ev *errorEvidence, st *Step) {
	for ri := range readers {
		if n.matched&(1<<ri) != 0 && readers[ri].part != nil {
			readers[ri].part(&n.c, st)
		}
	}
	if ev.failed() {
		if !st.Failed() {
			st.StatusError, st.StatusMessage = ev.StatusError, ev.StatusMessage
		}
		mergeEvidence(st, ev, ptrace.StatusCodeError)
	}
}

// firstStarted returns the node of roots whose span started first (ties:
// the lowest span ID), independent of the input order.
func firstStarted(nodes []node, roots []int32) int32 {
	best := roots[0]
	for _, x := range roots[1:] {
		a, b := nodes[x].c.sp, nodes[best].c.sp
		aid, bid := a.SpanID(), b.SpanID()
		if a.StartTimestamp() < b.StartTimestamp() ||
			(a.StartTimestamp() == b.StartTimestamp() && bytes.Compare(aid[:], bid[:]) < 0) {
			best = x
		}
	}
	return best
}

// build assembles one run from its member nodes (in preorder).
func (b *runBuilder) build(members []int32, roots []int32, rootFound bool, agents []int32) Run {
	nodes := b.nodes
	r := Run{TraceID: b.tid, RootFound: rootFound}
	head := roots[0]
	b.nameRun(&r, roots, rootFound)
	b.gen++
	// Size the run's slices once: at most one step per step span (an LLM
	// span inside an LLM step of the run is merged into it) or per part
	// span outside a model step, and the top spans.
	steps, tops := 0, 0
	for _, i := range members {
		b.mark[i] = b.gen
		b.stepOf[i] = -1
		n := &nodes[i]
		if n.top {
			tops++
		}
		switch n.role {
		case roleLLM, roleTool, rolePart:
			a := n.stepAnc
			inLLM := a >= 0 && b.mark[a] == b.gen && nodes[a].role == roleLLM
			if n.role == roleTool || !inLLM {
				steps++
			}
		}
	}
	b.partSteps = nil
	r.SpanIDs = make([]pcommon.SpanID, 0, len(members))
	if tops > 0 {
		r.TopSpanIDs = make([]pcommon.SpanID, 0, tops)
	}
	if steps > 0 {
		r.Steps = make([]Step, 0, steps)
	}
	var wrappers []int32 // the wrapper spans, whose ToolMessages may name steps (langchain.go)
	spanContent := false
	for _, i := range members {
		spanContent = spanContent || spanHasContent(&nodes[i].c)
		b.readMember(&r, i, rootFound && i == head, &wrappers)
	}
	sortSteps(r.Steps)
	b.offerAgentDefs(&r, agents, head)
	if len(wrappers) > 0 {
		if failed, fed := chainsCanName(r.Steps); failed || fed {
			ws := wrapperChains{b: b, wrappers: wrappers}
			if failed {
				nameFailedTools(r.Steps, &ws)
			}
			if fed {
				nameFedResults(r.Steps, ws.all())
			}
		}
	}
	linkToolCalls(r.Steps)
	r.Content = runContent(&r, spanContent)
	sortStable(r.SpanErrors, func(a, c *SpanError) int { return cmp.Compare(a.End, c.End) })
	b.sessionKey(&r, members, head, rootFound)
	b.describe(&r, members, roots, agents)
	return r
}

// sortSteps orders steps by end time, then start time, keeping the order
// of equal steps.
func sortSteps(steps []Step) {
	sortStable(steps, func(a, c *Step) int {
		if a.End != c.End {
			return cmp.Compare(a.End, c.End)
		}
		return cmp.Compare(a.Start, c.Start)
	})
}

// sortStable is sort.SliceStable of s by order, which allocated its
// swapper (reflection, a temporary element) and moved the large elements
// at each swap: the elements' indexes are sorted (stably) and each element
// is then moved once, along the permutation's cycles. A slice in order
// already (steps read in preorder mostly are) is only checked.
func sortStable[T any](s []T, order func(a, c *T) int) {
	k := 1
	for k < len(s) && order(&s[k], &s[k-1]) >= 0 {
		k++
	}
	if k >= len(s) {
		return
	}
	var buf [64]int32
	idx := buf[:0]
	if len(s) > len(buf) {
		idx = make([]int32, 0, len(s))
	}
	for i := range s {
		idx = append(idx, int32(i))
	}
	slices.SortStableFunc(idx, func(a, c int32) int { return order(&s[a], &s[c]) })
	// s[k] becomes s[idx[k]]; idx[k] = k marks a place filled.
	for k := range idx {
		if int(idx[k]) == k {
			continue
		}
		tmp := s[k]
		j := k
		for {
			n := int(idx[j])
			idx[j] = int32(j)
			if n == k {
				s[j] = tmp
				break
			}
			s[j] = s[n]
			j = n
		}
	}
}

// nameRun sets the run's root span ID and name.
func (b *runBuilder) nameRun(r *Run, roots []int32, rootFound bool) {
	nodes := b.nodes
	head := roots[0]
	if rootFound {
		r.RootSpanID = nodes[head].c.sp.SpanID()
		r.RootName = nodes[head].c.sp.Name()
	} else {
		// The root never arrived: name the run after the missing parent of
		// its orphan that started first (the one the orphans share, when
		// they do), so that the root ID never names a span the run holds
		// and does not depend on the order the spans arrived in (through
		// two collector tiers they come in any order).
		first := nodes[firstStarted(nodes, roots)].c.sp
		r.RootSpanID = first.ParentSpanID()
		if r.RootSpanID.IsEmpty() {
			// A cycle root: its parent link was cut.
			r.RootSpanID = first.SpanID()
		}
	}
}

// readMember adds span i of the run being built to r: its ID, its time, its
// step (or its part of a step, or its error evidence for the step it sits
// in), else its own error, the ToolMessages of a wrapper span and the tool
// definitions it lists. isRoot: the span is the run's root.
func (b *runBuilder) readMember(r *Run, i int32, isRoot bool, wrappers *[]int32) {
	nodes := b.nodes
	n := &nodes[i]
	sp := n.c.sp
	r.SpanIDs = append(r.SpanIDs, sp.SpanID())
	if n.top {
		r.TopSpanIDs = append(r.TopSpanIDs, sp.SpanID())
	}
	if n.root == orphanRoot || n.root == cycleRoot {
		r.Orphans++
	}
	if s := sp.StartTimestamp(); s != 0 && (r.Start == 0 || s < r.Start) {
		r.Start = s
	}
	if e := sp.EndTimestamp(); e > r.End {
		r.End = e
	}
	anc := int32(-1)
	if a := n.stepAnc; a >= 0 && b.mark[a] == b.gen {
		anc = a
	}
	if n.role == roleLLM || n.role == roleTool {
		// The step is read where it is kept (r.Steps is sized for the
		// run's step spans, see build); a nested span of the same call is
		// merged into its outer step and its slot given back.
		k := len(r.Steps)
		r.Steps = append(r.Steps, Step{})
		st := &r.Steps[k]
		b.readStepOf(n, st)
		if anc >= 0 && nodes[anc].role == n.role && sameTool(&r.Steps[b.stepOf[anc]], st) {
			mergeStep(&r.Steps[b.stepOf[anc]], st, nodes[anc].c.sp.Status().Code())
			r.Steps[k] = Step{}
			r.Steps = r.Steps[:k]
			b.stepOf[i] = b.stepOf[anc]
			return
		}
		b.stepOf[i] = int32(k)
		if anc >= 0 && nodes[anc].role == roleLLM && n.role == roleTool {
			// A model step whose span stays open while the tools it
			// asked for run (Mastra) got its answer when the first of
			// them started: it ends there, so that steps keep the order
			// in which they happened.
			if llm := &r.Steps[b.stepOf[anc]]; st.Start != 0 && st.Start < llm.End && st.Start >= llm.Start {
				llm.End = st.Start
			}
		}
		return
	}
	ev := readErrors(sp, n.c.attrs)
	if n.role == rolePart {
		b.addPart(r, n, anc, &ev)
		return
	}
	if anc >= 0 {
		// A span inside a step (HTTP client span, retry attempt): its
		// error evidence belongs to that step.
		if ev.failed() {
			mergeEvidence(&r.Steps[b.stepOf[anc]], &ev, nodes[anc].c.sp.Status().Code())
		}
		return
	}
	if ev.failed() {
		r.SpanErrors = append(r.SpanErrors, ev.spanError(sp, isRoot))
	}
	if n.role == roleNone {
		*wrappers = append(*wrappers, i)
	}
	if defs := listedToolDefs(&n.c); len(defs) > 0 {
		r.ListedTools = append(r.ListedTools, defs...)
	}
}

// offerAgentDefs gives the LLM steps that record no tool definitions of
// their own the definitions recorded once on the agent (or root) span, e.g.
// gen_ai.tool.definitions on invoke_agent: what the model was offered.
func (b *runBuilder) offerAgentDefs(r *Run, agents []int32, head int32) {
	nodes := b.nodes
	var agentDefs []ToolDef
	for _, i := range append(agents[:len(agents):len(agents)], head) {
		if b.mark[i] == b.gen {
			if s := attrStr(nodes[i].c.attrs, "gen_ai.tool.definitions"); s != "" {
				agentDefs = nodes[i].c.toolDefs(s)
				break
			}
		}
	}
	if len(agentDefs) > 0 {
		for k := range r.Steps {
			if r.Steps[k].Kind == StepLLM && len(r.Steps[k].Offered) == 0 {
				r.Steps[k].Offered = agentDefs
			}
		}
	}
}

// readStep reads the step of one step span (n.role is roleLLM or
// roleTool) into st, a zero Step where the step is kept (a local Step would
// escape through the readers' fill functions and be allocated once more):
// its error evidence ev, then every convention reader that recognised the
// span, in precedence order.
func readStep(n *node, ev *errorEvidence, st *Step) {
	sp := n.c.sp
	st.Kind = stepKindOf(n.role)
	st.Convention = n.conv
	st.SpanID = sp.SpanID()
	st.ParentID = sp.ParentSpanID()
	st.Name = sp.Name()
	st.Start = sp.StartTimestamp()
	st.End = sp.EndTimestamp()
	ev.applyTo(st)
	for ri := range readers {
		if n.matched&(1<<ri) != 0 {
			readers[ri].fill(&n.c, st)
		}
	}
	if n.c.logs != nil {
		n.c.logs.fill(&n.c, st)
	}
	dropRedacted(st)
}

// sameTool reports whether a tool span nested in another tool step is the
// same call seen by a second instrumentation (MCP client span under a
// framework tool span) rather than a tool calling another tool. Nested LLM
// spans are always the same call (framework span around the SDK span).
func sameTool(outer, inner *Step) bool {
	if outer.Kind != StepTool {
		return true
	}
	if outer.ToolCallID != "" && inner.ToolCallID != "" {
		return outer.ToolCallID == inner.ToolCallID
	}
	return outer.ToolName == "" || inner.ToolName == "" || outer.ToolName == inner.ToolName
}

// mergeStep folds a nested span of the same call into the outer step: empty
// fields are completed, and the inner span's errors count when the outer
// span failed or did not set an explicit OK status (an outer OK means the
// inner failure was retried away).
func mergeStep(outer, inner *Step, outerStatus ptrace.StatusCode) {
	// The call's ID, tool and arguments are completed as a linked call
	// completes them.
	takeCall(outer, ToolCall{ID: inner.ToolCallID, Name: inner.ToolName, Arguments: inner.Arguments})
	if outer.Result == "" {
		outer.Result = inner.Result
	}
	outer.ResultIsError = outer.ResultIsError || inner.ResultIsError
	if outer.Model == "" {
		outer.Model = inner.Model
	}
	if len(outer.FinishReasons) == 0 {
		outer.FinishReasons = inner.FinishReasons
	}
	if len(outer.Requested) == 0 {
		outer.Requested = inner.Requested
	}
	if len(outer.Offered) == 0 {
		outer.Offered = inner.Offered
	}
	if len(outer.InputResults) == 0 {
		outer.InputResults = inner.InputResults
	}
	if outer.OutputText == "" {
		outer.OutputText = inner.OutputText
	}
	if outer.InputTokens == 0 {
		outer.InputTokens = inner.InputTokens
	}
	if outer.OutputTokens == 0 {
		outer.OutputTokens = inner.OutputTokens
	}
	if outer.Cost == 0 {
		outer.Cost = inner.Cost
	}
	ev := errorEvidence{
		StatusError: inner.StatusError, StatusMessage: inner.StatusMessage, Errors: inner.Errors,
		HTTPStatus: inner.HTTPStatus, JSONRPCCode: inner.JSONRPCCode, HasJSONRPC: inner.HasJSONRPC,
	}
	if ev.failed() {
		mergeEvidence(outer, &ev, outerStatus)
	}
}

func mergeEvidence(st *Step, ev *errorEvidence, outerStatus ptrace.StatusCode) {
	if !st.Failed() && outerStatus == ptrace.StatusCodeOk {
		return
	}
	if !st.Failed() {
		st.StatusError = ev.StatusError
		st.StatusMessage = ev.StatusMessage
	}
	if st.HTTPStatus == 0 {
		st.HTTPStatus = ev.HTTPStatus
	}
	if !st.HasJSONRPC && ev.HasJSONRPC {
		st.JSONRPCCode, st.HasJSONRPC = ev.JSONRPCCode, true
	}
	for _, e := range ev.Errors {
		if len(st.Errors) >= 2*MaxExceptionsPerSpan {
			break // bounded like readErrors: a step merges few spans
		}
		dup := false
		for _, x := range st.Errors {
			if x == e {
				dup = true
				break
			}
		}
		if !dup {
			st.Errors = append(st.Errors, e)
		}
	}
}

// linkToolCalls completes tool steps from the tool calls the model requested
// earlier in the run: a tool step without a call ID takes the ID of the
// oldest unclaimed requested call of the same tool, and a tool step without
// arguments takes the requested arguments. Steps must be in end-time order.
// Linear in the number of steps and calls (a run of at most
// linearLinkSteps steps is linked by scans instead, linkToolCallsScan).
func linkToolCalls(steps []Step) {
	if len(steps) <= linearLinkSteps {
		linkToolCallsScan(steps)
		return
	}
	linkToolCallsIndexed(steps)
}

// linearLinkSteps is the number of steps up to which linkToolCalls scans a
// run's calls: most runs are a few steps, and the two maps made for each
// cost several times the scans.
const linearLinkSteps = 16

// pendingCall is a requested call and whether a tool step claimed it.
type pendingCall struct {
	call    ToolCall
	claimed bool
}

// linkToolCallsScan is linkToolCallsIndexed finding the calls by a scan of
// those requested so far: the first with the step's call ID, else the
// oldest unclaimed one of its tool (what the maps' first index and queue
// give).
func linkToolCallsScan(steps []Step) {
	var buf [2 * linearLinkSteps]pendingCall
	calls := buf[:0]
	for k := range steps {
		st := &steps[k]
		if st.Kind == StepLLM {
			for _, c := range st.Requested {
				calls = append(calls, pendingCall{call: c})
			}
			continue
		}
		idx := -1
		for i := range calls {
			if st.ToolCallID != "" && calls[i].call.ID == st.ToolCallID ||
				st.ToolCallID == "" && !calls[i].claimed && calls[i].call.Name == st.ToolName {
				idx = i
				break
			}
		}
		if idx < 0 {
			continue
		}
		calls[idx].claimed = true
		takeCall(st, calls[idx].call)
	}
}

// takeCall completes a tool step from the requested call it was linked
// to: the call ID, tool name and arguments it did not record.
func takeCall(st *Step, c ToolCall) {
	if st.ToolCallID == "" {
		st.ToolCallID = c.ID
	}
	if st.ToolName == "" {
		st.ToolName = c.Name
	}
	if st.Arguments == "" {
		st.Arguments = c.Arguments
	}
}

// linkToolCallsIndexed is linkToolCalls through maps of the calls by ID and
// by tool.
func linkToolCallsIndexed(steps []Step) {
	type pending = pendingCall
	var calls []pending
	byID := map[string]int{}
	byName := map[string][]int{} // unclaimed call indexes per tool name, oldest first
	claim := func(i int) {
		calls[i].claimed = true
	}
	for k := range steps {
		st := &steps[k]
		if st.Kind == StepLLM {
			for _, c := range st.Requested {
				i := len(calls)
				calls = append(calls, pending{call: c})
				if c.ID != "" {
					if _, dup := byID[c.ID]; !dup {
						byID[c.ID] = i
					}
				}
				byName[c.Name] = append(byName[c.Name], i)
			}
			continue
		}
		idx := -1
		if st.ToolCallID != "" {
			if i, ok := byID[st.ToolCallID]; ok {
				idx = i
			}
		} else {
			q := byName[st.ToolName]
			for len(q) > 0 && calls[q[0]].claimed {
				q = q[1:]
			}
			if len(q) > 0 {
				idx = q[0]
				q = q[1:]
			}
			byName[st.ToolName] = q
		}
		if idx < 0 {
			continue
		}
		claim(idx)
		takeCall(st, calls[idx].call)
	}
}
