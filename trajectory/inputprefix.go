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
		elems, ok = arrayElements(s, nil)
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
