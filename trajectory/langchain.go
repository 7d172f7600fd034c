package trajectory

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
)

// LangChain / LangGraph messages recorded by any instrumentation
// (OpenInference's output.value, OpenLLMetry's traceloop.entity.output).
//
// A tool span's output is the serialized ToolMessage the tool produced:
// {lc, id: [..., "ToolMessage"], kwargs: {name, tool_call_id, status,
// content}}. Its name is the tool's registered name (instrumentations name
// the span after the tool's class, "DynamicStructuredTool"), its status
// says whether the tool failed.
//
// A tool that throws leaves a span with an error status and no output: the
// ToolMessage the graph's tool node made of the error is only in that
// node's chain span output ({"messages": [ToolMessage, ...]}). Such a tool
// step takes its name and call ID from the error ToolMessage of the
// innermost chain span that encloses it in time (LangGraph's OpenLLMetry
// instrumentation records every span flat under the agent span, so time is
// the only link), so that a later successful call of the same tool is seen
// as its retry.
//
// The chat spans of the same instrumentation record the results fed back
// to the model as bare text (no call ID, no name, no status); a fed-back
// result whose text is a node's ToolMessage content takes its call ID, name
// and error status from it.

// toolMessage decodes a serialized LangChain ToolMessage (possibly wrapped
// in {"output": ...}); ok is false for anything else. Only its result is
// read, so it is decoded textless through mm (nil: no memo): the chain
// span that ran the tool outputs the same ToolMessage text in its list
// (chainMessages), which then decodes it once.
func toolMessage(mm *messageMemo, out string) (ToolResult, bool) {
	text, ok := toolMessageText(out)
	if !ok {
		return ToolResult{}, false
	}
	m, ok := mm.decodeTextless(text)
	if !ok || m.Role != "tool" || len(m.Results) == 0 {
		return ToolResult{}, false
	}
	return m.Results[0], true
}

// toolMessageText is the message text of what may be a serialized
// ToolMessage: out, or its "output" member, as a JSON text (lenientText).
func toolMessageText(out string) (string, bool) {
	if !looksJSON(out) || !strings.Contains(out, "ToolMessage") {
		return "", false
	}
	raw := json.RawMessage(bytesOf(out))
	o, ok := rawMemberJSON(raw, "output")
	if !ok {
		// Not JSON (decodeMessage checks what rawMemberJSON checked).
		return "", false
	}
	if len(o) > 0 {
		raw = o
	}
	// The text, and so its member, was validated: not scanned again.
	return lenientText(raw, true)
}

// applyToolMessage completes a tool step from the ToolMessage it output.
func applyToolMessage(st *Step, r ToolResult) {
	if r.Name != "" {
		st.ToolName = r.Name
	}
	if st.ToolCallID == "" {
		st.ToolCallID = r.CallID
	}
	if st.Result == "" {
		st.Result = r.Content
	}
	st.ResultIsError = st.ResultIsError || r.IsError
}

// chainToolMessages are the ToolMessages one chain span output.
type chainToolMessages struct {
	results []ToolResult
}

// nameFailedTools gives the failed, unnamed-by-their-output tool steps of a
// run the name and call ID of the error ToolMessage that reports them
// (see above), from the smallest wrapper span around the step that output
// ToolMessages; call IDs that a step already carries are taken.
func nameFailedTools(steps []Step, ws *wrapperChains) {
	claimed := map[string]bool{}
	var aroundRoom [8]wrapperSpan // most steps sit in a few wrappers
	around := aroundRoom[:0]
	for k := range steps {
		if id := steps[k].ToolCallID; id != "" {
			claimed[id] = true
		}
	}
	for k := range steps {
		st := &steps[k]
		if st.Kind != StepTool || !st.Failed() || st.ToolCallID != "" {
			continue
		}
		s, e := int64(st.Start), int64(st.End)
		// The first of the shortest wrappers around the step that output
		// ToolMessages: the wrappers around it are read shortest first
		// (the outer ones repeat the conversation of the inner ones)
		// until one has some.
		around = around[:0]
		for wi, i := range ws.wrappers {
			sp := ws.b.nodes[i].c.sp
			if start, end := int64(sp.StartTimestamp()), int64(sp.EndTimestamp()); start <= s && end >= e {
				around = append(around, wrapperSpan{wi, end - start})
			}
		}
		slices.SortStableFunc(around, func(a, b wrapperSpan) int { return cmp.Compare(a.length, b.length) })
		var best *chainToolMessages
		for _, w := range around {
			if ch, ok := ws.at(w.index); ok {
				best = ch
				break
			}
		}
		if best == nil {
			continue
		}
		var pick *ToolResult
		for ri := range best.results {
			r := &best.results[ri]
			if !r.IsError || r.CallID == "" || claimed[r.CallID] {
				continue
			}
			if pick != nil {
				// Several failed calls in one node: only the one whose text
				// carries the span's error message.
				if st.StatusMessage == "" || !strings.Contains(r.Content, st.StatusMessage) {
					continue
				}
				if strings.Contains(pick.Content, st.StatusMessage) {
					pick = nil // ambiguous
					break
				}
			}
			pick = r
		}
		if pick == nil {
			continue
		}
		claimed[pick.CallID] = true
		st.ToolCallID = pick.CallID
		if pick.Name != "" {
			st.ToolName = pick.Name
		}
		if st.Result == "" {
			st.Result = pick.Content
		}
	}
}

// chainsCanName reports whether nameFailedTools (failed) or nameFedResults
// (fed) could change a step: a failed tool step without a call ID, a
// result fed back to an LLM step with content but no call ID. The wrapper
// spans' outputs repeat the run's conversation (LangGraph's {"messages":
// [...]}), and decoding them was a fifth of reading a run; a run whose steps
// need none of what they hold does not decode them.
func chainsCanName(steps []Step) (failed, fed bool) {
	for k := range steps {
		st := &steps[k]
		switch st.Kind {
		case StepTool:
			failed = failed || st.Failed() && st.ToolCallID == ""
		case StepLLM:
			for i := range st.InputResults {
				if in := &st.InputResults[i]; in.CallID == "" && in.Content != "" {
					fed = true
					break
				}
			}
		}
		if failed && fed {
			break
		}
	}
	return failed, fed
}

// wrapperSpan is a wrapper (its index in wrapperChains) and its duration.
type wrapperSpan struct {
	index  int
	length int64
}

// wrapperChains are the ToolMessages of a run's wrapper spans, each span's
// read when first asked for (a failed tool step needs only the wrappers
// around it).
type wrapperChains struct {
	b        *runBuilder
	wrappers []int32
	read     []wrapperRead // by wrapper (nil: none read yet)
}

type wrapperRead struct {
	ch         chainToolMessages
	read, some bool // read; it output ToolMessages (ch)
}

// at returns the ToolMessages wrapper wi output (false: none).
func (ws *wrapperChains) at(wi int) (*chainToolMessages, bool) {
	if ws.read == nil {
		ws.read = make([]wrapperRead, len(ws.wrappers))
	}
	w := &ws.read[wi]
	if !w.read {
		w.ch, w.some = chainMessages(&ws.b.nodes[ws.wrappers[wi]].c)
		w.read = true
	}
	return &w.ch, w.some
}

// all returns the ToolMessages of every wrapper that output some, in the
// wrappers' order.
func (ws *wrapperChains) all() []chainToolMessages {
	var out []chainToolMessages
	for wi := range ws.wrappers {
		if ch, ok := ws.at(wi); ok {
			out = append(out, *ch)
		}
	}
	return out
}

// chainMessages returns the ToolMessages a wrapper span output, from the
// attribute each convention records it in.
func chainMessages(c *spanCtx) (chainToolMessages, bool) {
	out := firstStr(c.attrs, "traceloop.entity.output", "output.value")
	if !looksJSON(out) || !strings.Contains(out, "ToolMessage") {
		return chainToolMessages{}, false
	}
	// Only the tool messages' results are read: the messages' text is
	// not decoded (decodeTextless).
	var res []ToolResult
	for _, r := range c.memo.unwrapMessageList(bytesOf(out)) {
		if !mayBeToolMessage(stringOf(r)) {
			continue
		}
		if m, ok := c.memo.decodeTextless(stringOf(r)); ok && m.Role == "tool" {
			res = append(res, m.Results...)
		}
	}
	if len(res) == 0 {
		return chainToolMessages{}, false
	}
	return chainToolMessages{results: res}, true
}

// nameFedResults completes the unnamed results fed back to LLM steps from
// the chain spans' ToolMessages with the same content (each taken once).
func nameFedResults(steps []Step, chains []chainToolMessages) {
	if len(chains) == 0 {
		return
	}
	byContent := map[string][]*ToolResult{}
	for ci := range chains {
		for ri := range chains[ci].results {
			r := &chains[ci].results[ri]
			if r.CallID != "" {
				k := strings.TrimSpace(r.Content)
				byContent[k] = append(byContent[k], r)
			}
		}
	}
	taken := map[string]bool{}
	for k := range steps {
		st := &steps[k]
		if st.Kind != StepLLM {
			continue
		}
		for i := range st.InputResults {
			in := &st.InputResults[i]
			if in.CallID != "" || in.Content == "" {
				continue
			}
			for _, r := range byContent[strings.TrimSpace(in.Content)] {
				if taken[r.CallID] && !sameCall(in, r) {
					continue
				}
				taken[r.CallID] = true
				in.CallID = r.CallID
				if in.Name == "" {
					in.Name = r.Name
				}
				in.IsError = in.IsError || r.IsError
				break
			}
		}
	}
}

// sameCall: a conversation resent whole carries the same result again.
func sameCall(in *ToolResult, r *ToolResult) bool {
	return in.Name == "" || in.Name == r.Name
}
