package guard

import (
	"sync"
	"sync/atomic"
)

// maxShared bounds each table of shared records (a few models, finish
// reasons, services and agents make them; past the bound a run keeps its
// own).
const maxShared = 1024

// sharedRecords is a bounded table of read-only records shared between
// the steps of a run and between runs, each found by its key. The records
// found last are looked at before the map: most lookups name one of them,
// and comparing a few short texts costs less than hashing them.
type sharedRecords[K comparable, V any] struct {
	mu     sync.RWMutex
	m      map[K]*sharedRecord[K, V]
	recent [4]atomic.Pointer[sharedRecord[K, V]]
	pos    atomic.Uint32
}

type sharedRecord[K comparable, V any] struct {
	k K
	v *V
}

// get is the shared record of k, made by newRecord (which returns the key
// to keep with it, holding copies of k's texts so that the table keeps no
// span's memory) when k has none yet; nil past the bound.
func (s *sharedRecords[K, V]) get(k K, newRecord func(K) (K, *V)) *V {
	for i := range s.recent {
		if r := s.recent[i].Load(); r != nil && r.k == k {
			return r.v
		}
	}
	s.mu.RLock()
	r := s.m[k]
	s.mu.RUnlock()
	if r == nil {
		if r = s.add(k, newRecord); r == nil {
			return nil
		}
	}
	s.recent[s.pos.Add(1)%uint32(len(s.recent))].Store(r)
	return r.v
}

func (s *sharedRecords[K, V]) add(k K, newRecord func(K) (K, *V)) *sharedRecord[K, V] {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.m[k]; r != nil {
		return r
	}
	if len(s.m) >= maxShared {
		return nil
	}
	kept, v := newRecord(k)
	r := &sharedRecord[K, V]{k: kept, v: v}
	if s.m == nil {
		s.m = make(map[K]*sharedRecord[K, V])
	}
	s.m[kept] = r
	return r
}
