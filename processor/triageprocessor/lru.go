package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"errors"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// traceLRU is a fixed-size LRU of values by trace ID, with the method set
// of golang-lru's simplelru that the buffer and the decision cache use (the
// same order, the same eviction callback on every removal). simplelru
// allocates a list element for every key added, which is one allocation
// and 80 bytes per trace held and again per trace decided; here the
// elements live in one slice, linked by index, and a removed element's slot
// is reused by the next key added: at a steady state adding a key
// allocates nothing. The slice grows by doubling up to the size and never
// shrinks. Not safe for concurrent use.
type traceLRU[V any] struct {
	index   map[pcommon.TraceID]int32
	entries []lruEntry[V]
	// newest and oldest are the ends of the list (noEntry when empty);
	// free heads the list of unused slots, linked by next.
	newest, oldest, free int32
	size                 int
	onEvict              func(pcommon.TraceID, V)
}

type lruEntry[V any] struct {
	id pcommon.TraceID
	// prev is the next newer entry, next the next older one.
	prev, next int32
	value      V
}

// noEntry ends a list.
const noEntry = -1

// newTraceLRU makes an LRU that holds at most size values; onEvict (may be
// nil) is called with each value removed, whether by Add going over the
// size, Remove or RemoveOldest.
func newTraceLRU[V any](size int, onEvict func(pcommon.TraceID, V)) (*traceLRU[V], error) {
	if size <= 0 {
		return nil, errors.New("must provide a positive size")
	}
	if size > math.MaxInt32 {
		return nil, errors.New("size must be below 2^31")
	}
	return &traceLRU[V]{
		index:  make(map[pcommon.TraceID]int32),
		newest: noEntry, oldest: noEntry, free: noEntry,
		size:    size,
		onEvict: onEvict,
	}, nil
}

// Len is the number of values held.
func (c *traceLRU[V]) Len() int { return len(c.index) }

// Get returns the value of id and makes it the newest.
func (c *traceLRU[V]) Get(id pcommon.TraceID) (v V, ok bool) {
	i, ok := c.index[id]
	if !ok {
		return v, false
	}
	c.unlink(i)
	c.pushNewest(i)
	return c.entries[i].value, true
}

// Peek returns the value of id without changing the order.
func (c *traceLRU[V]) Peek(id pcommon.TraceID) (v V, ok bool) {
	i, ok := c.index[id]
	if !ok {
		return v, false
	}
	return c.entries[i].value, true
}

// Add sets the value of id and makes it the newest; a new id beyond the
// size evicts the oldest. It reports whether it evicted.
func (c *traceLRU[V]) Add(id pcommon.TraceID, v V) (evicted bool) {
	if i, ok := c.index[id]; ok {
		c.entries[i].value = v
		c.unlink(i)
		c.pushNewest(i)
		return false
	}
	i := c.slot()
	c.entries[i] = lruEntry[V]{id: id, value: v}
	c.index[id] = i
	c.pushNewest(i)
	if len(c.index) > c.size {
		c.RemoveOldest()
		return true
	}
	return false
}

// Remove removes id, reporting whether it was there.
func (c *traceLRU[V]) Remove(id pcommon.TraceID) bool {
	i, ok := c.index[id]
	if ok {
		c.remove(i)
	}
	return ok
}

// RemoveOldest removes the oldest value and returns it.
func (c *traceLRU[V]) RemoveOldest() (id pcommon.TraceID, v V, ok bool) {
	i := c.oldest
	if i == noEntry {
		return id, v, false
	}
	id, v = c.entries[i].id, c.entries[i].value
	c.remove(i)
	return id, v, true
}

// GetOldest returns the oldest value without changing the order.
func (c *traceLRU[V]) GetOldest() (id pcommon.TraceID, v V, ok bool) {
	i := c.oldest
	if i == noEntry {
		return id, v, false
	}
	return c.entries[i].id, c.entries[i].value, true
}

// slot returns an unused entry: a freed one, else a new one at the end.
func (c *traceLRU[V]) slot() int32 {
	if i := c.free; i != noEntry {
		c.free = c.entries[i].next
		return i
	}
	if len(c.entries) == cap(c.entries) {
		// Grow by doubling, never beyond the size (and the one entry
		// Add holds beyond it until it evicts).
		grown := make([]lruEntry[V], len(c.entries), min(max(2*cap(c.entries), 16), c.size+1))
		copy(grown, c.entries)
		c.entries = grown
	}
	c.entries = c.entries[:len(c.entries)+1]
	return int32(len(c.entries) - 1)
}

func (c *traceLRU[V]) remove(i int32) {
	e := &c.entries[i]
	id, v := e.id, e.value
	delete(c.index, id)
	c.unlink(i)
	// The slot keeps nothing reachable.
	*e = lruEntry[V]{next: c.free}
	c.free = i
	if c.onEvict != nil {
		c.onEvict(id, v)
	}
}

func (c *traceLRU[V]) unlink(i int32) {
	e := &c.entries[i]
	if e.prev != noEntry {
		c.entries[e.prev].next = e.next
	} else {
		c.newest = e.next
	}
	if e.next != noEntry {
		c.entries[e.next].prev = e.prev
	} else {
		c.oldest = e.prev
	}
}

func (c *traceLRU[V]) pushNewest(i int32) {
	e := &c.entries[i]
	e.prev, e.next = noEntry, c.newest
	if c.newest != noEntry {
		c.entries[c.newest].prev = i
	} else {
		c.oldest = i
	}
	c.newest = i
}
