package classifier

import (
	"hash/maphash"
	"sync"
)

// The in-flight guards classify a pending call again each time one of its
// parts arrives (ClassifyCall), and a failed call's error texts go through
// the text rules every time; Classify reads them once more at the root.
// sharedTexts keeps the text rules' findings of the texts ClassifyCall
// read, for the later ClassifyCalls of the same call and for Classify,
// which takes them (an entry is handed out to Classify once).
//
// It is a fixed table of sharedTextSlots entries per Classifier, one
// entry per slot (a newer text in the slot replaces an older one): its
// memory does not grow with the runs in flight. As in resultMemo, a text
// is known by its identity (address and length) and a hash of what the
// rules read of it (its first maxTextLen bytes), checked on every hit;
// an entry holds no pointer, so it keeps no text alive.
const sharedTextSlots = 128

type sharedTextEntry struct {
	id   textID
	hash uint64
	f    finding
	ok   bool
	used bool
}

type sharedTexts struct {
	seed  maphash.Seed
	mu    sync.Mutex
	slots *[sharedTextSlots]sharedTextEntry // made on the first keep
}

func newSharedTexts() *sharedTexts { return &sharedTexts{seed: maphash.MakeSeed()} }

// hash is the hash of what the rules read of s.
func (st *sharedTexts) hash(s string) uint64 {
	return maphash.String(st.seed, s[:min(len(s), maxTextLen)])
}

// get is the kept finding of s (hit), emptying its slot when take is set.
func (st *sharedTexts) get(s string, h uint64, take bool) (f finding, ok, hit bool) {
	id := textIDOf(s)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.slots == nil {
		return finding{}, false, false
	}
	e := &st.slots[h%sharedTextSlots]
	if !e.used || e.id != id || e.hash != h {
		return finding{}, false, false
	}
	f, ok = e.f, e.ok
	if take {
		*e = sharedTextEntry{}
	}
	return f, ok, true
}

func (st *sharedTexts) put(s string, h uint64, f finding, ok bool) {
	id := textIDOf(s)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.slots == nil {
		st.slots = new([sharedTextSlots]sharedTextEntry)
	}
	st.slots[h%sharedTextSlots] = sharedTextEntry{id: id, hash: h, f: f, ok: ok, used: true}
}
