package guard

// smallMap is a map for the few entries most runs hold: its first
// smallMapMax entries are a slice searched in order, and past that they
// move to a Go map. A held trace keeps its run until its root arrives, and
// a Go map of a few entries costs a few hundred bytes (its header and a
// group of eight slots), several times the entries themselves. The zero
// value is empty and ready to use.
type smallMap[K comparable, V any] struct {
	kv []smallEntry[K, V]
	m  map[K]V
}

type smallEntry[K comparable, V any] struct {
	k K
	v V
}

// smallMapMax is how many entries a smallMap keeps in its slice.
const smallMapMax = 16

func (m *smallMap[K, V]) get(k K) (V, bool) {
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

func (m *smallMap[K, V]) put(k K, v V) {
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
	if len(m.kv) < smallMapMax {
		m.kv = append(m.kv, smallEntry[K, V]{k, v})
		return
	}
	m.m = make(map[K]V, 2*smallMapMax)
	for _, e := range m.kv {
		m.m[e.k] = e.v
	}
	m.m[k] = v
	m.kv = nil
}

func (m *smallMap[K, V]) del(k K) {
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

func (m *smallMap[K, V]) len() int {
	if m.m != nil {
		return len(m.m)
	}
	return len(m.kv)
}
