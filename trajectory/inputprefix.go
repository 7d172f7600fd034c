package trajectory

import "encoding/json"

// The chat spans of one conversation carry its messages so far: the input
// list of a call is the previous call's list with the new turns appended,
// byte for byte (instrumentations serialize the same messages the same
// way). Scanning each list whole made a run's reading cost grow with the
// square of its length. A reader (one Build, one SpanReader) remembers
// the element ranges of the last lists it scanned; a list that starts with
// one of them up to the end of its last element, and goes on with a comma,
// is scanned from there only. The scan is deterministic, so resuming it
// where an identical prefix ended gives exactly what scanning the whole
// list gives (the same ranges, the same validity); comparing the prefix
// costs a memory compare, some fifty times less than scanning it.

// keptInputLists is how many scanned lists a reader remembers (runs of
// several agents interleave their conversations).
const keptInputLists = 4

// inputLists are the last message lists a reader scanned, with their
// element ranges. The texts are the spans' own (not copied); a reader lives
// for one Build or one batch of spans.
type inputLists struct {
	lists [keptInputLists]scannedList
	next  int
	// resumed counts the lists scanned from a kept list's end.
	resumed int
}

type scannedList struct {
	s     string
	elems []elemRange
	// used is how much of elems' array holds ranges, shared by the lists
	// resumed in place from one another: a list that ends at used is
	// extended in its array (each list's ranges are a prefix of it, and
	// nothing below used is written again), any other is copied first.
	// Copying every resumed list made a conversation's reading allocate
	// with the square of its length.
	used *int
}

// elements returns the element ranges of the JSON array s and whether s is
// valid JSON holding an array, as arrayElements does.
func (m *inputLists) elements(s string) ([]elemRange, bool) {
	if m == nil {
		return arrayElements(s, nil)
	}
	var elems []elemRange
	var used *int
	ok, resumed := false, false
	for _, p := range m.byLength() {
		end := p.elems[len(p.elems)-1].end
		if end >= len(s) || s[end] != ',' && !isSpace(s[end]) || s[:end] != p.s[:end] {
			continue
		}
		sc := jsonScanner{s: s, i: end}
		sc.space()
		if !sc.at(',') {
			continue
		}
		sc.i++
		base := p.elems
		if *p.used != len(base) {
			// Another list was resumed from this one in place: the
			// array past base holds its ranges.
			base = base[:len(base):len(base)]
		}
		elems, ok = sc.elements(base)
		if ok && &elems[0] == &base[0] {
			used = p.used // extended in place (append did not move the array)
		}
		resumed = true
		m.resumed++
		break
	}
	if !resumed {
		// Room for a short conversation's elements at once (grown
		// from nil, a list of five took four allocations).
		elems, ok = arrayElements(s, make([]elemRange, 0, 8))
	}
	if ok && len(elems) > 0 {
		if used == nil {
			used = new(int)
		}
		*used = len(elems)
		m.lists[m.next] = scannedList{s: s, elems: elems, used: used}
		m.next = (m.next + 1) % keptInputLists
	}
	return elems, ok
}

// byLength returns the kept lists, longest first: a conversation's latest
// list is the longest prefix of its next one.
func (m *inputLists) byLength() []*scannedList {
	var out [keptInputLists]*scannedList
	n := 0
	for i := range m.lists {
		p := &m.lists[i]
		if len(p.elems) == 0 {
			continue
		}
		k := n
		for ; k > 0 && len(out[k-1].s) < len(p.s); k-- {
			out[k] = out[k-1]
		}
		out[k] = p
		n++
	}
	return out[:n]
}

// The wrapper spans of a LangGraph run ({"messages": [...]} in and out) and
// OpenInference's LLM spans ({"messages": [[...]]} in input.value) carry
// the conversation so far inside wrapper objects, not always behind the
// same bytes (a chain's output and the next model call's input wrap the
// same messages differently). A Build remembers the message elements of
// the last wrapper texts it validated; an element of a new text that holds
// the bytes of the kept element of its index (its ordinal in the list),
// at a nesting no deeper, is not scanned again: what scanning a value
// finds depends only on its bytes and, for the depth limit, its nesting,
// and a value that ends in '}', ']' or '"' is over at that byte (a number
// or a literal, whose end depends on the byte after it, is rescanned).

// keptWrapperLists is how many wrapper texts a Build remembers.
const keptWrapperLists = 4

// wrapperLists are the last wrapper texts a Build unwrapped, with their
// message elements.
type wrapperLists struct {
	lists [keptWrapperLists]scannedWrapper
	next  int
	// skipped counts the elements not scanned again.
	skipped int
}

type scannedWrapper struct {
	s     string
	elems []wrapperElem
}

// wrapperElem is a message element a scan validated: its range and the
// nesting it was validated at.
type wrapperElem struct {
	start, end, nest int
}

// resumeScan is what one messageList scan knows and gathers: the kept
// texts it compares its elements with, and the elements it found.
type resumeScan struct {
	kept  [keptWrapperLists]*scannedWrapper
	found []wrapperElem
	// skipped counts the elements found in a kept text.
	skipped int
}

// knownAt returns the end of the element at s[i:], nest levels deep, when
// a kept text validated the same bytes as the element of its index.
func (rs *resumeScan) knownAt(s string, i, nest int) (int, bool) {
	if rs == nil {
		return 0, false
	}
	j := len(rs.found)
	for _, p := range rs.kept {
		if p == nil || j >= len(p.elems) {
			continue
		}
		e := p.elems[j]
		if end := i + e.end - e.start; nest <= e.nest && end <= len(s) && closesValue(p.s[e.end-1]) && s[i:end] == p.s[e.start:e.end] {
			rs.skipped++
			return end, true
		}
	}
	return 0, false
}

func (rs *resumeScan) add(start, end, nest int) {
	if rs != nil {
		rs.found = append(rs.found, wrapperElem{start, end, nest})
	}
}

// unwrapMessageList is unwrapMessageList(r, 0), the elements the kept
// wrapper texts validated not scanned again (mm nil: none kept).
func (mm *messageMemo) unwrapMessageList(r json.RawMessage) []json.RawMessage {
	if mm == nil {
		return unwrapMessageList(r, 0)
	}
	r = trimJSON(r)
	if len(r) == 0 || (r[0] != '{' && r[0] != '[') || len(r) > MaxParsedJSONBytes {
		return nil
	}
	s := stringOf(r)
	if !mayHoldMessagesKey(s) {
		return nil
	}
	w := &mm.wrappers
	// The elements found go to the slot the next text takes: it is not
	// compared with (its elements' array is written).
	dst := w.next
	rs := resumeScan{found: w.lists[dst].elems[:0]}
	for i := range w.lists {
		if i != dst && len(w.lists[i].elems) > 0 {
			rs.kept[i] = &w.lists[i]
		}
	}
	sc := jsonScanner{s: s}
	list, ok := sc.messageList(0, 0, &rs)
	if sc.space(); !ok || sc.i != len(sc.s) {
		list, ok = nil, false
	}
	w.skipped += rs.skipped
	if ok && len(rs.found) > 0 {
		w.lists[dst] = scannedWrapper{s: s, elems: rs.found}
		w.next = (dst + 1) % keptWrapperLists
	} else {
		w.lists[dst].elems = rs.found[:0] // the room, for the next text
	}
	return list
}

// closesValue reports whether c ends an object, an array or a string.
func closesValue(c byte) bool { return c == '}' || c == ']' || c == '"' }

// reset forgets the texts, keeping the elements' room.
func (w *wrapperLists) reset() {
	for i := range w.lists {
		e := w.lists[i].elems[:0]
		if cap(e) > 1024 {
			e = nil
		}
		w.lists[i] = scannedWrapper{elems: e}
	}
	w.next = 0
}
