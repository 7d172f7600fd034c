package classifier

import (
	"hash/maphash"
	"sync"
	"unsafe"
)

// The in-flight guards read each tool call as its parts arrive
// (ClassifyCall), and Classify reads the same calls again when the run's
// root arrives. What a result's text says on its own — error-shaped
// (resultIsError's text tests), or a first line a rule reads as a failure
// (resultHeadFailure), or a JavaScript placeholder value (placeholderValue)
// — is the same computation both times, and with the
// text rules it is most of what reading a call costs. ClassifyCall keeps
// it per text; Classify takes it (an entry is handed out once, so the memo
// holds the results of runs still in flight).
//
// A text is known by its identity (address and length), not by its bytes:
// Classify at the root reads the very strings the guards read (Build takes
// over the guards' readings of the spans, trajectory.WithReadSteps), and
// texts of other traces, however alike, are read again. An entry does not
// keep its text alive (a result's text may be a slice of a whole message
// history): it keeps a hash of the text, checked on every hit, so that an
// address reused for another text of the same length reads that text again
// (unless the seeded 64-bit hashes collide). The memo is per Classifier:
// the rules are.

// maxResultEntries bounds one generation; when the current one is full it
// becomes the previous one and the oldest is dropped.
const maxResultEntries = 32 << 10

// resultText is what a result's text says on its own.
type resultText struct {
	// errorShaped: the text reads as an error report (resultIsError).
	errorShaped bool
	// headFailure: resultHeadFailure of the text (read only when the text
	// is not error-shaped).
	headFailure bool
	// placeholder: placeholderValue of the text (read only when the text
	// is neither error-shaped nor a head failure: the only texts of which
	// callIncidents asks it).
	placeholder bool
}

// textID is a text's identity, for resultMemo and sharedTexts: its
// address as a number, which the garbage collector does not follow (a
// *byte here would keep every text a memo knows alive, a whole message
// history when the text is a slice of one, until the entry is taken or
// dropped), and its length.
type textID struct {
	p uintptr
	n int
}

// textIDOf is the identity of text s.
func textIDOf(s string) textID {
	return textID{p: uintptr(unsafe.Pointer(unsafe.StringData(s))), n: len(s)}
}

type resultEntry struct {
	hash uint64 // of the text
	v    resultText
}

type resultMemo struct {
	seed      maphash.Seed
	mu        sync.Mutex
	cur, prev map[textID]resultEntry
}

func newResultMemo() *resultMemo { return &resultMemo{seed: maphash.MakeSeed()} }

// resultTextMode says what a classification does with the memo.
type resultTextMode uint8

const (
	resultsRead resultTextMode = iota // neither keeps nor takes (tests)
	resultsKeep                       // ClassifyCall: keeps what it reads
	resultsTake                       // Classify: takes what was kept
)

// resultNeed says whether a caller uses a resultText's readings (none for
// a result marked as an error or of a tool that failed: the call failed).
type resultNeed uint8

const (
	resultNeedNone resultNeed = iota
	resultNeedAll
)

// resultNeedFloor is the least callIncidents asks for: tests raise it to
// resultNeedAll to hold the lazy readings to reading everything.
var resultNeedFloor = resultNeedNone

// resultText reads what the text s of a result says, through the
// Classifier's memo as the classification's mode says. When the text is
// not in the memo and this classification does not keep it, only the
// readings need names are made (the others are left false); a kept entry
// holds all of them, since later readers may need more.
func (cl *classification) resultText(s string, need resultNeed) resultText {
	if s == "" || cl.c == nil || cl.resultMode == resultsRead {
		return cl.readResultTextFor(s, need)
	}
	m := cl.c.results
	k := textIDOf(s)
	if cl.resultMode == resultsTake {
		if v, ok := m.take(s, k); ok {
			return v
		}
		return cl.readResultTextFor(s, need)
	}
	h := maphash.String(m.seed, s)
	m.mu.Lock()
	e, ok := m.cur[k]
	if !ok {
		e, ok = m.prev[k]
	}
	ok = ok && e.hash == h
	m.mu.Unlock()
	if ok {
		return e.v
	}
	v := cl.readResultText(s)
	m.mu.Lock()
	m.putLocked(k, resultEntry{hash: h, v: v})
	m.mu.Unlock()
	return v
}

// take hands out the entry of text s (identity k) and drops it. The text
// is hashed only when an entry of its identity is there: Classify at a
// root asks for every result of the run, and most were never kept (the
// run's spans were not read in flight).
func (m *resultMemo) take(s string, k textID) (resultText, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.cur[k]
	inCur := ok
	if !ok {
		e, ok = m.prev[k]
	}
	if !ok || e.hash != maphash.String(m.seed, s) {
		return resultText{}, false
	}
	if inCur {
		delete(m.cur, k)
	} else {
		delete(m.prev, k)
	}
	return e.v, true
}

// readResultTextFor is readResultText with only the readings need names.
func (cl *classification) readResultTextFor(s string, need resultNeed) resultText {
	if need == resultNeedNone {
		return resultText{}
	}
	return cl.readResultText(s)
}

func (cl *classification) readResultText(s string) resultText {
	if cl.resultTextIsError(s) {
		return resultText{errorShaped: true}
	}
	if cl.resultHeadFailure(s) {
		return resultText{headFailure: true}
	}
	return resultText{placeholder: placeholderValue(s)}
}

func (m *resultMemo) putLocked(k textID, e resultEntry) {
	if m.cur == nil || len(m.cur) >= maxResultEntries {
		m.prev, m.cur = m.cur, make(map[textID]resultEntry)
	}
	m.cur[k] = e
}
