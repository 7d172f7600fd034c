package classifier

import (
	"fmt"
	"unsafe"
)

// The text rules' prefilters ask, for every text, whether it holds one of
// a rule's keys and the literals its alternatives need (textrules.go):
// hundreds of substring searches, most of them failing, each a pass over
// the text. A keyScanner answers all of them in one pass: an Aho-Corasick
// automaton over every string the prefilters look for, each string a
// member of one or more groups (a rule's keys, one literal set an
// alternative needs), which reports the groups of which some member occurs
// in the text. It reads the text with its ASCII letters lowered (the
// prefilters read the lower-cased text), so it needs no lower-cased copy.

// maxKeyGroups bounds the groups of the package's one scanner (a fixed
// size so that the hits of a text live on the stack).
const maxKeyGroups = 1024

// keyHits is a set of group numbers.
type keyHits [maxKeyGroups / 64]uint64

func (h *keyHits) has(g int32) bool { return h[g>>6]&(1<<(uint(g)&63)) != 0 }

func (h *keyHits) add(g int32) { h[g>>6] |= 1 << (uint(g) & 63) }

// allOf reports whether every group of gs is in h.
func (h *keyHits) allOf(gs []int32) bool {
	for _, g := range gs {
		if !h.has(g) {
			return false
		}
	}
	return true
}

// keyScanner is the built automaton. Not modified after build: safe for
// concurrent use.
type keyScanner struct {
	class [256]uint8 // byte → input class; 0 for a byte no member holds
	width int        // number of input classes
	// next[state*stride+class] is the next state, as the offset of its
	// row (state*stride: scan's step needs no multiplication); hasOut
	// marks a state that reports groups. A row's last entry,
	// next[state*stride+width], past every class, is where the state's
	// groups are in outs: their number, then the groups.
	next   []uint32
	stride int
	outs   []int32
	always []int32 // groups with the empty string as a member
	// groups are the members of each group, as looked for (for tests).
	groups [][]string
}

const hasOut = 1 << 31

// maxMemberLen bounds the members the automaton holds (a longer member is
// looked for by its prefix).
const maxMemberLen = 8

// keyScannerBuilder collects the groups.
type keyScannerBuilder struct {
	members map[string][]int32 // lowered member → its groups
	order   []string           // members in first-seen order (deterministic build)
	groups  [][]string         // each group's members, lowered and bounded
	byKey   map[string]int32   // a group's members, joined → group (equal sets share one)
}

func newKeyScannerBuilder() *keyScannerBuilder {
	return &keyScannerBuilder{members: map[string][]int32{}, byKey: map[string]int32{}}
}

// group registers a group with the given members and returns its number.
// A member's upper-case ASCII letters are lowered: the scanner reads the
// text lowered, so a group is reported whenever a member occurs in the
// text as it is or lowered (a superset of the texts holding a member as
// written, which is what a necessary condition may report).
func (b *keyScannerBuilder) group(members []string) int32 {
	lowered := make([]string, len(members))
	key := ""
	for i, m := range members {
		// A member's prefix occurs wherever it does: bounding members
		// bounds the automaton and keeps nearly all their selectivity.
		lowered[i] = asciiLower(truncate(m, maxMemberLen))
		key += lowered[i] + "\x00"
	}
	if g, ok := b.byKey[key]; ok {
		return g
	}
	g := int32(len(b.groups))
	if g >= maxKeyGroups {
		panic(fmt.Sprintf("classifier: more than %d prefilter groups", maxKeyGroups))
	}
	b.groups = append(b.groups, lowered)
	b.byKey[key] = g
	for _, m := range lowered {
		if _, seen := b.members[m]; !seen {
			b.order = append(b.order, m)
		}
		b.members[m] = append(b.members[m], g)
	}
	return g
}

func (b *keyScannerBuilder) build() *keyScanner { return b.buildOf(nil) }

// buildOf builds the automaton of the groups keep selects (all when nil):
// it reports a selected group exactly when the full automaton does, and no
// other. A smaller automaton answers a question about a few rules in a
// table that stays in the processor's cache: the full one is about half a
// megabyte, read at a random row for every byte of a text.
func (b *keyScannerBuilder) buildOf(keep func(g int32) bool) *keyScanner {
	k := &keyScanner{groups: b.groups}
	groupsOf := func(m string) []int32 {
		if keep == nil {
			return b.members[m]
		}
		var gs []int32
		for _, g := range b.members[m] {
			if keep(g) {
				gs = append(gs, g)
			}
		}
		return gs
	}
	var order []string
	for _, m := range b.order {
		if len(groupsOf(m)) > 0 {
			order = append(order, m)
		}
	}
	// Input classes: one per byte the members hold; an upper-case ASCII
	// letter reads as its lower-case one.
	classOf := map[byte]uint8{}
	for _, m := range order {
		for i := 0; i < len(m); i++ {
			if _, ok := classOf[m[i]]; !ok {
				classOf[m[i]] = uint8(len(classOf) + 1)
			}
		}
	}
	if len(classOf) > 255 {
		panic("classifier: prefilter members hold too many distinct bytes")
	}
	k.width = len(classOf) + 1
	for c, cl := range classOf {
		k.class[c] = cl
		if 'a' <= c && c <= 'z' {
			k.class[c-'a'+'A'] = cl
		}
	}
	// The trie, as a dense table (-1: no edge yet).
	var next []int32
	var out [][]int32
	newState := func() int32 {
		for range k.width {
			next = append(next, -1)
		}
		out = append(out, nil)
		return int32(len(out) - 1)
	}
	newState() // the root
	for _, m := range order {
		if m == "" {
			k.always = append(k.always, groupsOf(m)...)
			continue
		}
		s := int32(0)
		for i := 0; i < len(m); i++ {
			e := int(s)*k.width + int(k.class[m[i]])
			if next[e] < 0 {
				t := newState()
				next[e] = t
			}
			s = next[e]
		}
		out[s] = append(out[s], groupsOf(m)...)
	}
	// Failure links in breadth-first order; each missing edge becomes the
	// edge of the state's failure, and each state reports its failure's
	// groups too (the members that end where it ends).
	fail := make([]int32, len(out))
	queue := make([]int32, 0, len(out))
	for c := 0; c < k.width; c++ {
		if t := next[c]; t < 0 {
			next[c] = 0
		} else {
			fail[t] = 0
			queue = append(queue, t)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for c := 0; c < k.width; c++ {
			e := int(s)*k.width + c
			f := next[int(fail[s])*k.width+c]
			if t := next[e]; t < 0 {
				next[e] = f
			} else {
				fail[t] = f
				out[t] = append(out[t], out[f]...)
				queue = append(queue, t)
			}
		}
	}
	if len(out)*(k.width+1) >= hasOut {
		panic("classifier: prefilter automaton too large")
	}
	k.stride = k.width + 1
	k.next = make([]uint32, len(out)*k.stride)
	for e, t := range next {
		s, c := e/k.width, e%k.width
		r := uint32(int(t) * k.stride)
		if len(out[t]) > 0 {
			r |= hasOut
		}
		k.next[s*k.stride+c] = r
	}
	for s, gs := range out {
		gs = dedupFirst(gs)
		k.next[s*k.stride+k.width] = uint32(len(k.outs))
		k.outs = append(append(k.outs, int32(len(gs))), gs...)
	}
	return k
}

// scan adds to h every group of which a member occurs in s with its ASCII
// letters lowered.
func (k *keyScanner) scan(s string, h *keyHits) {
	for _, g := range k.always {
		h.add(g)
	}
	if len(k.next) == 0 {
		return
	}
	// The table is read without bounds checks: a row offset plus a class
	// (below width) is in the table by construction, and so is a row's
	// last entry. This is the loop every text the rules read goes through
	// byte by byte.
	next := unsafe.Pointer(unsafe.SliceData(k.next))
	class, w := &k.class, uintptr(k.width)
	row := uintptr(0) // the current state's row in next
	for i := 0; i < len(s); i++ {
		t := *(*uint32)(unsafe.Add(next, (row+uintptr(class[s[i]]))*4))
		row = uintptr(t)
		if t&hasOut != 0 {
			row = uintptr(t &^ hasOut)
			k.report(*(*uint32)(unsafe.Add(next, (row+w)*4)), h)
		}
	}
}

// report adds to h the groups at outs[at:] (their number, then them).
func (k *keyScanner) report(at uint32, h *keyHits) {
	n := int(k.outs[at])
	for _, g := range k.outs[at+1 : int(at)+1+n] {
		h.add(g)
	}
}
