// Package smallmap is a map for the few entries most uses hold: its first
// MaxSlice entries are a slice searched in order, and past that they move
// to a Go map. A Go map of a few entries costs a few hundred bytes (its
// header and a group of eight slots), several times the entries
// themselves: a held run's indexes (guard) and one classification's memos
// and call indexes (classifier) hold a handful each.
package smallmap

// Map is the map. The zero value is empty, ready to use, and allocates
// nothing until an entry is put.
type Map[K comparable, V any] struct {
	kv []entry[K, V]
	m  map[K]V
}

type entry[K comparable, V any] struct {
	k K
	v V
}

// MaxSlice is how many entries a Map keeps in its slice.
const MaxSlice = 16

// Get returns the value of k and whether k is in the map.
func (m *Map[K, V]) Get(k K) (V, bool) {
	if m.m != nil {
		v, ok := m.m[k]
		return v, ok
	}
	for i := range m.kv {
		if m.kv[i].k == k {
			return m.kv[i].v, true
		}
	}
	var zero V
	return zero, false
}

// Put sets the value of k.
func (m *Map[K, V]) Put(k K, v V) {
	if m.m != nil {
		m.m[k] = v
		return
	}
	for i := range m.kv {
		if m.kv[i].k == k {
			m.kv[i].v = v
			return
		}
	}
	if len(m.kv) < MaxSlice {
		m.kv = append(m.kv, entry[K, V]{k, v})
		return
	}
	m.m = make(map[K]V, 2*MaxSlice)
	for _, e := range m.kv {
		m.m[e.k] = e.v
	}
	m.m[k] = v
	m.kv = nil
}

// Del removes k.
func (m *Map[K, V]) Del(k K) {
	if m.m != nil {
		delete(m.m, k)
		return
	}
	for i := range m.kv {
		if m.kv[i].k == k {
			m.kv = append(m.kv[:i], m.kv[i+1:]...)
			return
		}
	}
}

// Len is the number of entries.
func (m *Map[K, V]) Len() int {
	if m.m != nil {
		return len(m.m)
	}
	return len(m.kv)
}

// Each calls f on every entry, in no particular order.
func (m *Map[K, V]) Each(f func(K, V)) {
	if m.m != nil {
		for k, v := range m.m {
			f(k, v)
		}
		return
	}
	for _, e := range m.kv {
		f(e.k, e.v)
	}
}

// Reset empties the map and keeps its slice's room (not a Go map it moved
// to), its entries cleared, for a map that is filled again and again.
func (m *Map[K, V]) Reset() {
	clear(m.kv)
	m.kv = m.kv[:0]
	m.m = nil
}
