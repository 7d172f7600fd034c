// Package smallmap is a map for the few entries most uses hold: its first
// MaxSlice entries are a slice searched in order, and past that they move
// to a Go map. A Go map of a few entries costs a few hundred bytes (its
// header and a group of eight slots), several times the entries
// themselves: a held run's indexes (guard) and one classification's memos
// and call indexes (classifier) hold a handful each.
package smallmap

import (
	"math"
	"unsafe"
)

// Map is the map. The zero value is empty, ready to use, and allocates
// nothing until an entry is put. It is 16 bytes: one word is the address
// of its slice's first entry, or, once the entries moved to a Go map, the
// address of that map (moved); the other is the slice's length and capacity as two
// 32-bit counts (a held run keeps several Maps, and few of them ever hold
// more than a handful of entries).
type Map[K comparable, V any] struct {
	// p is the *entry[K, V] at the start of the slice, or the map[K]V
	// (a *map[K]V, allocated once when the entries move) when n is moved:
	// a real pointer of either type, never a map value reinterpreted.
	p    unsafe.Pointer
	n, c uint32 // length and capacity of the slice at p
}

type entry[K comparable, V any] struct {
	k K
	v V
}

// moved is a Map's n once its entries are in a Go map.
const moved = math.MaxUint32

// MaxSlice is how many entries a Map keeps in its slice (PutUpTo names
// another bound).
const MaxSlice = 16

// goMap is the Go map the entries moved to (valid only when m.n is moved).
func (m *Map[K, V]) goMap() *map[K]V { return (*map[K]V)(m.p) }

// kv is the slice of entries (nil when none was ever put). Not valid once
// the entries moved.
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

// Reserve makes room in an empty map's slice for n entries (at most max),
// so that a caller that knows how many it will put allocates the slice
// once, at its size. It does nothing once the map holds an entry.
func (m *Map[K, V]) Reserve(n, max int) {
	n = min(n, max)
	if m.n == moved || m.n > 0 || int(m.c) >= n || n <= 1 {
		return
	}
	m.setKV(make([]entry[K, V], 0, n))
}

// Get returns the value of k and whether k is in the map.
func (m *Map[K, V]) Get(k K) (V, bool) {
	if m.n == moved {
		v, ok := (*m.goMap())[k]
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
	if m.n == moved {
		(*m.goMap())[k] = v
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
	m.p, m.n, m.c = unsafe.Pointer(&gm), moved, 0
}

// Del removes k.
func (m *Map[K, V]) Del(k K) {
	if m.n == moved {
		delete(*m.goMap(), k)
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
	if m.n == moved {
		return len(*m.goMap())
	}
	return int(m.n)
}

// Each calls f on every entry, in no particular order.
func (m *Map[K, V]) Each(f func(K, V)) {
	if m.n == moved {
		for k, v := range *m.goMap() {
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
	if m.n == moved {
		m.p, m.n, m.c = nil, 0, 0
		return
	}
	kv := m.kv()
	clear(kv)
	m.setKV(kv[:0])
}
