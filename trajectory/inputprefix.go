package trajectory

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
}

// elements returns the element ranges of the JSON array s and whether s is
// valid JSON holding an array, as arrayElements does.
func (m *inputLists) elements(s string) ([]elemRange, bool) {
	if m == nil {
		return arrayElements(s, nil)
	}
	var elems []elemRange
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
		// The kept list's ranges stay as they are (appending past their
		// length in their array would change those of another list
		// resumed from the same one).
		elems, ok = sc.elements(p.elems[:len(p.elems):len(p.elems)])
		resumed = true
		m.resumed++
		break
	}
	if !resumed {
		elems, ok = arrayElements(s, nil)
	}
	if ok && len(elems) > 0 {
		m.lists[m.next] = scannedList{s: s, elems: elems}
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
