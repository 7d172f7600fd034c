package guard

import "github.com/triage-otel/triage/internal/smallmap"

// smallMap is smallmap.Map (a slice for the first entries, then a Go map)
// under the names the guards use: a held trace keeps its run until its
// root arrives, and a Go map of a few entries costs several times the
// entries themselves. The zero value is empty and ready to use.
type smallMap[K comparable, V any] struct{ m smallmap.Map[K, V] }

func (m *smallMap[K, V]) get(k K) (V, bool) { return m.m.Get(k) }
func (m *smallMap[K, V]) put(k K, v V)      { m.m.Put(k, v) }
func (m *smallMap[K, V]) del(k K)           { m.m.Del(k) }
func (m *smallMap[K, V]) len() int          { return m.m.Len() }
