package trajectory

// Input messages are read from their end. Instrumentations record the
// whole conversation so far on every chat span, so the k-th call of a run
// carries k turns of history; only the last assistant turn and what follows
// it (the tool results fed back for this call) are this step's. Decoding
// all of it made a run's cost grow with the square of its length.

// lazyMessages decodes the elements of a JSON message list one at a time,
// each at most once. Few are read, from the end, so what they decode to is
// kept for the list's tail from the earliest element read: tail[k] is
// element len(elems)-1-k. A list decoded already (decoded not nil) is read
// as it is. at reports false for an element that is not a message
// (dropped, as decodeMessages drops it); the Text of a message at gives
// may be left empty: hasText says whether it is, text gives it (of a
// message at reported). One concrete type, not an interface over the two
// kinds of list: through an interface the list went to the heap on every
// call.
type lazyMessages struct {
	decoded []message
	s       string
	elems   []elemRange
	tail    []lazyMessage
	// scratch decodes the elements (nil: each into a new jsonMessage).
	scratch *messageScratch
	// memo holds the Build's decoded value texts (messageMemo.rawText;
	// nil: none).
	memo *messageMemo
}

type lazyMessage struct {
	m                  message
	seen, isM, hasText bool // decoded; decoded to a message; its text is not empty
}

func (l *lazyMessages) len() int {
	if l.decoded != nil {
		return len(l.decoded)
	}
	return len(l.elems)
}

func (l *lazyMessages) at(i int) (*message, bool) {
	if l.decoded != nil {
		return &l.decoded[i], true
	}
	k := len(l.elems) - 1 - i
	if k >= len(l.tail) {
		l.tail = append(l.tail, make([]lazyMessage, k+1-len(l.tail))...)
	}
	e := &l.tail[k]
	if !e.seen {
		// The messages' text is only needed in a rare case (text): it
		// is not decoded here.
		e.m, e.hasText, e.isM = messageFromText(l.decode(i), false, true, l.memo)
		e.seen = true
	}
	// A pointer into tail stays valid when tail grows: the message it
	// points to is not written again.
	return &e.m, e.isM
}

// decode decodes element i (valid JSON: the scan checked the whole list).
func (l *lazyMessages) decode(i int) *jsonMessage {
	r := l.elems[i]
	if l.scratch != nil {
		return l.scratch.decode(l.s[r.start:r.end])
	}
	jm := new(jsonMessage)
	decodeMessageJSON(l.s[r.start:r.end], jm)
	return jm
}

func (l *lazyMessages) hasText(i int) bool {
	if l.decoded != nil {
		return l.decoded[i].Text != ""
	}
	return l.tail[len(l.elems)-1-i].hasText
}

// text decodes element i again, text and all.
func (l *lazyMessages) text(i int) string {
	if l.decoded != nil {
		return l.decoded[i].Text
	}
	if !l.hasText(i) {
		return ""
	}
	m, _ := messageFrom(l.decode(i))
	return m.Text
}

// applyInputJSON fills the step's InputResults from its input messages
// attribute s, as applyInput(st, decodeMessages(s)) does, decoding only the
// messages it reads: a plain list of message objects is scanned (validated
// without decoding) and decoded from its end; any other shape is decoded
// whole.
// lists (nil: none) are the lists the reader scanned before
// (inputprefix.go).
func applyInputJSON(st *Step, s string, lists *inputLists, mm *messageMemo) {
	if len(st.InputResults) > 0 || !looksJSON(s) {
		return
	}
	if t := trimJSON(bytesOf(s)); t[0] == '[' {
		if f := trimJSON(t[1:]); len(f) > 0 && f[0] == '{' {
			st.InputResults = scanInputResults(s, lists, mm)
			return
		}
	}
	applyInput(st, decodeMessages(s))
}

// scanInputResults scans the message list s and reads its fed-back results
// from its end (applyInputFrom over lazyMessages).
func scanInputResults(s string, lists *inputLists, mm *messageMemo) []ToolResult {
	elems, ok := lists.elements(s)
	if !ok {
		return nil // not JSON: decodeMessages finds nothing either
	}
	var st Step
	ms := messageScratchPool.Get().(*messageScratch)
	// The tail is the scratch's array, reused from list to list: nothing
	// applyInputFrom returns points into it (results are copied).
	l := lazyMessages{s: s, elems: elems, tail: ms.tail[:0], scratch: ms, memo: mm}
	applyInputFrom(&st, &l)
	ms.tail = l.tail
	ms.release()
	return st.InputResults
}

// applyInputFrom is applyInput over a message list, reading the messages
// from the end and no further back than needed: to the last assistant
// message, then, only for a fed-back result that names its call but not
// the tool, back to the latest call with that ID.
func applyInputFrom(st *Step, in *lazyMessages) {
	if len(st.InputResults) > 0 || in.len() == 0 {
		return
	}
	last := -1
	for i := in.len() - 1; i >= 0; i-- {
		m, ok := in.at(i)
		if ok && (m.Role == "assistant" || m.Role == "model" || len(m.Calls) > 0) {
			last = i
			break
		}
	}
	var calls []ToolCall
	var lastMsg *message
	if last >= 0 {
		lastMsg, _ = in.at(last)
		calls = lastMsg.Calls
	}
	var results []ToolResult
	for i := last + 1; i < in.len(); i++ {
		if m, ok := in.at(i); ok {
			results = append(results, m.Results...)
		}
	}
	if len(results) == 0 && lastMsg != nil && !in.hasText(last) && len(calls) == 0 {
		// An assistant turn with neither text nor calls is a tool-call
		// turn whose calls the instrumentation did not record; what
		// follows it is what its tools returned, whatever role the
		// instrumentation gave those messages (LlamaIndex's are "user").
		for i := last + 1; i < in.len(); i++ {
			if m, ok := in.at(i); ok && m.Role != "system" && m.Role != "developer" && in.hasText(i) {
				results = append(results, ToolResult{Content: in.text(i)})
			}
		}
	}
	for i := range results {
		r := &results[i]
		if r.CallID != "" && r.Name == "" {
			r.Name = latestCallName(in, r.CallID)
		}
		if r.CallID == "" && r.Name == "" && len(results) == len(calls) {
			r.CallID, r.Name = calls[i].ID, calls[i].Name
		} else if r.CallID == "" && len(results) == len(calls) && calls[i].Name == r.Name {
			r.CallID = calls[i].ID
		}
	}
	st.InputResults = results
}

// latestCallName is the tool name of the last named call with ID id in the
// input, or "".
func latestCallName(in *lazyMessages, id string) string {
	for i := in.len() - 1; i >= 0; i-- {
		m, ok := in.at(i)
		if !ok {
			continue
		}
		for k := len(m.Calls) - 1; k >= 0; k-- {
			if c := m.Calls[k]; c.ID == id && c.Name != "" {
				return c.Name
			}
		}
	}
	return ""
}
