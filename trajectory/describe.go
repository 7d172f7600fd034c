package trajectory

import (
	"math/bits"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Attribute keys naming the agent, strongest first. An explicit agent name
// anywhere in the run wins over the weak names (function IDs, workflow
// names) that may name the surrounding application instead.
var (
	agentKeys = []string{
		"gen_ai.agent.name",
		"agent.name", // OpenInference
		"ai.telemetry.metadata.agent",
		"ai.telemetry.metadata.agentName",
		"ai.telemetry.metadata.agent_name",
		"traceloop.association.properties.agent",
		"traceloop.association.properties.agent_name",
	}
	weakAgentKeys = []string{
		"ai.telemetry.functionId",
		"gen_ai.agent.id",
		"traceloop.workflow.name",
	}
	sessionKeys = []string{
		"gen_ai.conversation.id",
		"session.id",
		"ai.telemetry.metadata.conversationId",
		"ai.telemetry.metadata.sessionId",
		"ai.telemetry.metadata.conversation_id",
		"ai.telemetry.metadata.session_id",
		"ai.telemetry.metadata.threadId",
		"traceloop.association.properties.session_id",
		"traceloop.association.properties.conversation_id",
		"traceloop.association.properties.thread_id",
		"traceloop.association.properties.sessionId",
		"langfuse.session.id",
		"thread.id",
	}
)

// nameKeys places each key above in its list (agentKeys, weakAgentKeys,
// sessionKeys) with its rank there, so that spanNames reads a span's
// attributes once instead of looking up each key (each lookup a scan of
// the span's attributes).
var nameKeys = func() map[string]nameKey {
	m := map[string]nameKey{}
	for list, keys := range [...][]string{agentKeys, weakAgentKeys, sessionKeys} {
		for rank, k := range keys {
			m[k] = nameKey{list: uint8(list), rank: uint8(rank)}
		}
	}
	return m
}()

type nameKey struct{ list, rank uint8 }

// spanNames are the explicit agent name, the weak agent name and the
// session id one set of attributes states: for each list the value of its
// first key set to a non-empty value, firstStr(m, list...).
type spanNames struct{ agent, weakAgent, session string }

// nameSig is the signature of nameKeys: a span whose signature has none
// of its bits holds no name key, and a key without its bit is none.
var nameSig = keySig(slices.Concat(agentKeys, weakAgentKeys, sessionKeys)...)

func readSpanNames(a attrMap) spanNames {
	if !a.mayHoldAny(&nameSig) {
		return spanNames{}
	}
	var (
		vals [3]string
		best = [3]int{len(agentKeys), len(weakAgentKeys), len(sessionKeys)}
		seen [3]uint64 // keys met: a repeated key counts at its first occurrence, as Map.Get finds it
	)
	a.Range(func(k string, v pcommon.Value) bool {
		if !nameSig.hasBit(keyBit(k)) {
			return true
		}
		nk, ok := nameKeys[k]
		if !ok || seen[nk.list]&(1<<nk.rank) != 0 {
			return true
		}
		seen[nk.list] |= 1 << nk.rank
		if int(nk.rank) < best[nk.list] {
			if s := valueStr(v); s != "" {
				vals[nk.list], best[nk.list] = s, int(nk.rank)
			}
		}
		return true
	})
	return spanNames{agent: vals[0], weakAgent: vals[1], session: vals[2]}
}

// metadataIDs are the identities LangChain/LangGraph put in OpenInference's
// "metadata" JSON attribute.
type metadataIDs struct {
	AgentName      string `json:"lc_agent_name"`
	SessionID      string `json:"session_id"`
	ConversationID string `json:"conversation_id"`
	ThreadID       string `json:"thread_id"`
}

func spanMetadata(c *spanCtx) (metadataIDs, bool) {
	return metadataOf(attrStr(c.attrs, "metadata"))
}

// metadataOf reads a "metadata" attribute's text s.
func metadataOf(s string) (metadataIDs, bool) {
	var md metadataIDs
	if !looksJSON(s) || !strings.Contains(s, "_") {
		return md, false
	}
	// lenientUnmarshal's rule for metadataIDs, without the interface
	// conversion that puts md on the heap.
	text := strings.TrimSpace(s)
	if !validJSON(text) {
		return md, false
	}
	decodeMetadataJSON(text, &md)
	return md, true
}

// describe fills the run's Service, Agent, Session and FinishReason.
func (b *runBuilder) describe(r *Run, members, roots, agents []int32) {
	nodes := b.nodes
	// Look at the agent span first — the one enclosing the run's first
	// model call, then the run's top agent spans —, then the run's root,
	// then the rest in preorder.
	ordered := make([]int32, 0, len(members)+3)
	if a := b.agentOfFirstModelCall(r, members); a >= 0 {
		ordered = append(ordered, a)
	}
	ordered = append(ordered, agents...)
	ordered = append(ordered, roots[0])
	lead := len(ordered)
	ordered = append(ordered, members...)

	for _, i := range ordered {
		if s := attrStr(anyAttrs(nodes[i].c.res.Attributes()), "service.name"); s != "" {
			r.Service = s
			break
		}
	}

	b.nameAgentAndSession(r, ordered, lead, len(agents))
	b.finishReason(r, members, ordered[:len(agents)+1])
}

// nameAgentAndSession reads the run's agent and session from the spans in
// order (the first len(agents)+1 are the agent spans and the root): the
// explicit keys, then the framework metadata, then weaker agent keys; a
// session last from the resource of the agent spans or the root. The
// members (from ordered[lead]) repeat the spans before them, which are
// not read again.
func (b *runBuilder) nameAgentAndSession(r *Run, ordered []int32, lead, nAgents int) {
	nodes := b.nodes
	var weakAgent string
	for k, i := range ordered {
		if k >= lead && slices.Contains(ordered[:lead], i) {
			continue // read already, with the same result
		}
		c := &nodes[i].c
		names := readSpanNames(c.attrs)
		if r.Agent == "" {
			if a := agentNameFrom(c, nodes[i].role == roleAgent, names.agent); a != "" {
				r.Agent = a
			} else if weakAgent == "" {
				weakAgent = names.weakAgent
			}
		}
		if r.Session == "" {
			r.Session = names.session
		}
		if (r.Agent == "" || r.Session == "") && c.attrs.Len() > 0 {
			if md, ok := b.meta.ofNeeded(attrStr(c.attrs, "metadata"), r.Agent == "", r.Session == ""); ok {
				if r.Agent == "" {
					r.Agent = md.AgentName
				}
				if r.Session == "" {
					r.Session = firstNonEmpty(md.SessionID, md.ConversationID, md.ThreadID)
				}
			}
		}
		if r.Agent != "" && r.Session != "" {
			break
		}
	}
	if r.Agent == "" {
		r.Agent = weakAgent
	}
	if r.Session == "" {
		for _, i := range ordered[:nAgents+1] {
			// The resource's signature first: most resources hold
			// none of the fifteen session keys, each a scan of the
			// whole resource without it.
			if s := firstStr(spanAttrs(nodes[i].c.res.Attributes()), sessionKeys...); s != "" {
				r.Session = s
				break
			}
		}
	}

}

// finishReason sets the run's final finish reason: what the run span
// reports (top are the agent spans and the root), else a run span nested
// in the agent span, else the last LLM step's last reason.
func (b *runBuilder) finishReason(r *Run, members, top []int32) {
	nodes := b.nodes
	// Vercel run spans, GenAI invoke_agent.
	for _, i := range top {
		if b.mark[i] != b.gen {
			continue
		}
		if fr := runFinishReason(&nodes[i].c); fr != "" {
			r.FinishReason = fr
			break
		}
	}
	if r.FinishReason == "" {
		// A run span nested in the agent span (Mastra's model generation
		// under its agent run): the one that ended last.
		var end pcommon.Timestamp
		for _, i := range members {
			n := &nodes[i]
			if n.role != roleAgent || n.c.sp.EndTimestamp() < end {
				continue
			}
			if fr := runFinishReason(&n.c); fr != "" {
				r.FinishReason, end = fr, n.c.sp.EndTimestamp()
			}
		}
	}
	if r.FinishReason == "" {
		for k := len(r.Steps) - 1; k >= 0; k-- {
			if st := &r.Steps[k]; st.Kind == StepLLM && len(st.FinishReasons) > 0 {
				r.FinishReason = st.FinishReasons[len(st.FinishReasons)-1]
				break
			}
		}
	}
}

// agentName reads an agent name from one span: the explicit keys, the
// entity name of a Traceloop agent span, the name of an OpenInference AGENT
// span.
// agentOfFirstModelCall returns the agent span nearest above the run's
// first model call, or -1. A run's outermost agent span is not always the
// agent: OpenAI Agents (through OpenInference) makes its trace span, named
// after the workflow ("Agent workflow"), an AGENT span around the agent's
// own ("travel-assistant"), and a root that is lost on failure leaves only
// the inner one — the same agent got two names. The agent that makes the
// model calls is the agent: a supervisor that calls the model before its
// sub-agents keeps its own name.
func (b *runBuilder) agentOfFirstModelCall(r *Run, members []int32) int32 {
	var first pcommon.SpanID
	for i := range r.Steps {
		if r.Steps[i].Kind == StepLLM {
			first = r.Steps[i].SpanID
			break
		}
	}
	if first.IsEmpty() {
		return -1
	}
	for _, i := range members {
		if b.nodes[i].c.sp.SpanID() != first {
			continue
		}
		for p := b.nodes[i].parent; p >= 0 && b.mark[p] == b.gen; p = b.nodes[p].parent {
			if b.nodes[p].role == roleAgent {
				return p
			}
		}
		return -1
	}
	return -1
}

func agentName(c *spanCtx, isAgentSpan bool) string {
	return agentNameFrom(c, isAgentSpan, firstStr(c.attrs, agentKeys...))
}

// agentNameFrom is agentName with the explicit keys' name already read.
func agentNameFrom(c *spanCtx, isAgentSpan bool, explicit string) string {
	if explicit != "" {
		return explicit
	}
	if !isAgentSpan {
		return ""
	}
	if strings.EqualFold(attrStr(c.attrs, "traceloop.span.kind"), "agent") {
		if a := attrStr(c.attrs, "traceloop.entity.name"); a != "" {
			return a
		}
	}
	if strings.EqualFold(attrStr(c.attrs, "openinference.span.kind"), "AGENT") {
		return c.sp.Name()
	}
	return ""
}

func runFinishReason(c *spanCtx) string {
	if fr := attrStr(c.attrs, "ai.response.finishReason"); fr != "" {
		return fr
	}
	if frs := attrStrings(c.attrs, "gen_ai.response.finish_reasons"); len(frs) > 0 {
		return frs[len(frs)-1]
	}
	return ""
}

// metadataMemo is the last "metadata" text a runBuilder read, and what it
// read: LangChain puts the same metadata on every span of a run, and its
// spans are read in turn until the run has an agent and a session. The
// texts are the trace's own (a runBuilder lives for one Build).
type metadataMemo struct {
	text string
	md   metadataIDs
	ok   bool
}

// ofNeeded is of(s) for a reader that takes only the agent name (agent) or
// only the session fields (session) from it: a text that cannot hold a
// key of the fields needed (metadataMayName) is not decoded, and gives
// no fields (what decoding it would give of the fields needed).
func (m *metadataMemo) ofNeeded(s string, agent, session bool) (metadataIDs, bool) {
	if s != "" && s == m.text {
		// The text read last (LangChain repeats it on every span): its
		// fields are known, and a text metadataMayName rules out decodes
		// to none of the fields needed, so they are what it gives. A
		// compare of equal texts costs a fraction of searching one.
		return m.md, m.ok
	}
	if !metadataMayName(s, agent, session) {
		return metadataIDs{}, false
	}
	return m.of(s)
}

// metadataMayName is a necessary condition for the metadata text s to
// decode to a non-empty agent name (agent) or session field (session).
// The agent name is looked for once per run (it is then found): a text
// is ruled out only for a reader that needs the session alone, when it
// cannot hold a session key (metadataFields[1:]). Every session key ends
// in "_id"; fieldIndex matches keys with strings.EqualFold, under which
// '_', 'i' and 'd' fold to ASCII letters only ('I', 'D'), so a matching
// key holds "_id" in some ASCII letter case — in s too, unless the key is
// written with escapes (a backslash).
func metadataMayName(s string, agent, session bool) bool {
	if agent {
		return true
	}
	if !session {
		return false
	}
	return strings.IndexByte(s, '\\') >= 0 || hasFoldID(s)
}

// hasFoldID reports whether s holds "_id" in some ASCII letter case. The
// underscores are found a word at a time (the lowest flagged byte of each
// word is exact, as in specialMask; the word is searched again past it).
func hasFoldID(s string) bool {
	// Metadata keys are snake case: a '_' every few bytes, most not
	// followed by "id". The three bytes are tested eight places at a
	// time (the words at i, i+1 and i+2): a place flagged in all three is
	// looked at (the flags hold every match, and maybe other places).
	i := 0
	for ; i+10 <= len(s); i += 8 {
		m := byteFlags(word8(s, i), '_') & byteFlags(word8(s, i+1)|0x20*swarOnes, 'i') &
			byteFlags(word8(s, i+2)|0x20*swarOnes, 'd') & swarHighs
		for ; m != 0; m &= m - 1 {
			if foldIDAt(s, i+bits.TrailingZeros64(m)>>3) {
				return true
			}
		}
	}
	for ; i+2 < len(s); i++ {
		if foldIDAt(s, i) {
			return true
		}
	}
	return false
}

// foldIDAt reports whether s holds "_id" in some ASCII letter case at p
// (p+2 < len(s)).
func foldIDAt(s string, p int) bool {
	return s[p] == '_' && s[p+1]|0x20 == 'i' && s[p+2]|0x20 == 'd'
}

// of is metadataOf(s), from the memo when s is the text read last.
func (m *metadataMemo) of(s string) (metadataIDs, bool) {
	if s == "" {
		return metadataIDs{}, false
	}
	if s != m.text {
		m.text = s
		m.md, m.ok = metadataOf(s)
	}
	return m.md, m.ok
}
