// Package smallmap is a map for the few entries most uses hold: its first
// MaxSlice entries are a slice searched in order, and past that they move
// to a Go map. A Go map of a few entries costs a few hundred bytes (its
// header and a group of eight slots), several times the entries
// themselves: a held run's indexes (guard) and one classification's memos
// and call indexes (classifier) hold a handful each.
package smallmap

import "unsafe"

// Map is the map. The zero value is empty, ready to use, and allocates
// nothing until an entry is put. It is 16 bytes: its slice is kept as the
// first entry's address and two 32-bit counts, and once its entries moved
// to a Go map, the address is the map's (a held run keeps several Maps,
// and few of them ever hold more than a handful of entries).
type Map[K comparable, V any] struct {
	// p is the first entry of the slice (*entry[K, V]) or, with c inMap,
	// the Go map (the pointer a map[K]V value is).
	p    unsafe.Pointer
	n, c uint32 // length and capacity of the slice at p
}

// inMap is the capacity of a Map whose entries are in a Go map.
const inMap = ^uint32(0)

// A map value is one pointer (setGoMap keeps it as p): this does not
// compile otherwise.
var _ = [1]struct{}{}[unsafe.Sizeof(map[int]int(nil))-unsafe.Sizeof(unsafe.Pointer(nil))]

type entry[K comparable, V any] struct {
	k K
	v V
}

// MaxSlice is how many entries a Map keeps in its slice (PutUpTo names
// another bound).
const MaxSlice = 16

// kv is the slice of entries (nil when none was ever put). Not with
// the entries in a Go map.
func (m *Map[K, V]) kv() []entry[K, V] {
	if m.p == nil {
		return nil
	}
	return unsafe.Slice((*entry[K, V])(m.p), m.c)[:m.n]
}

// setKV keeps kv as the slice of entries.
func (m *Map[K, V]) setKV(kv []entry[K, V]) {
	m.p, m.n, m.c = unsafe.Pointer(unsafe.SliceData(kv)), uint32(len(kv)), uint32(cap(kv))
}

// goMap is the Go map holding the entries (nil while they are in the
// slice).
func (m *Map[K, V]) goMap() map[K]V {
	if m.c != inMap {
		return nil
	}
	return *(*map[K]V)(unsafe.Pointer(&m.p))
}

// setGoMap moves the entries to gm.
func (m *Map[K, V]) setGoMap(gm map[K]V) {
	m.p, m.n, m.c = *(*unsafe.Pointer)(unsafe.Pointer(&gm)), 0, inMap
}

// Get returns the value of k and whether k is in the map.
func (m *Map[K, V]) Get(k K) (V, bool) {
	if m.c == inMap {
		v, ok := m.goMap()[k]
		return v, ok
	}
	if m.n > 0 {
		kv := unsafe.Slice((*entry[K, V])(m.p), m.n)
		for i := range kv {
			if kv[i].k == k {
				return kv[i].v, true
			}
		}
	}
	var zero V
	return zero, false
}

// Put sets the value of k.
func (m *Map[K, V]) Put(k K, v V) { m.PutUpTo(k, v, MaxSlice) }

// PutUpTo sets the value of k, keeping up to max entries in the slice
// (for a map whose entries are small and cheap to compare, where a
// longer slice still costs less than a Go map). A Map's entries move to
// a Go map once, when they are more than the max of the Put that adds
// one; use one max for a Map.
func (m *Map[K, V]) PutUpTo(k K, v V, max int) {
	if gm := m.goMap(); gm != nil {
		gm[k] = v
		return
	}
	kv := m.kv()
	for i := range kv {
		if kv[i].k == k {
			kv[i].v = v
			return
		}
	}
	if len(kv) < max {
		m.setKV(append(kv, entry[K, V]{k, v}))
		return
	}
	gm := make(map[K]V, 2*len(kv))
	for _, e := range kv {
		gm[e.k] = e.v
	}
	gm[k] = v
	m.setGoMap(gm)
}

// Del removes k.
func (m *Map[K, V]) Del(k K) {
	if gm := m.goMap(); gm != nil {
		delete(gm, k)
		return
	}
	kv := m.kv()
	for i := range kv {
		if kv[i].k == k {
			m.setKV(append(kv[:i], kv[i+1:]...))
			return
		}
	}
}

// Len is the number of entries.
func (m *Map[K, V]) Len() int {
	if gm := m.goMap(); gm != nil {
		return len(gm)
	}
	return int(m.n)
}

// Each calls f on every entry, in no particular order.
func (m *Map[K, V]) Each(f func(K, V)) {
	if gm := m.goMap(); gm != nil {
		for k, v := range gm {
			f(k, v)
		}
		return
	}
	for _, e := range m.kv() {
		f(e.k, e.v)
	}
}

// Reset empties the map and keeps its slice's room (not a Go map it moved
// to), its entries cleared, for a map that is filled again and again.
func (m *Map[K, V]) Reset() {
	if m.c == inMap {
		*m = Map[K, V]{}
		return
	}
	kv := m.kv()
	clear(kv)
	m.setKV(kv[:0])
}
