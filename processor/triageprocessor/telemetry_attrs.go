package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"maps"
	"sync"
	"sync/atomic"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The counters added to for every decided trace and run take attribute
// sets from a handful of values (triggers, verdicts, failure types, action
// kinds, guards). metric.WithAttributes builds and sorts a new set on each
// call; these are built once per distinct value and shared.

// maxMeasurementOptions bounds the memo; past it, options are built per
// call as before (the values are bounded by the taxonomy, so this is only
// a guard).
const maxMeasurementOptions = 512

type attrPair struct{ k1, v1, k2, v2 string }

type measurementOptions struct {
	// m is read without a lock (every counter call reads it) and replaced
	// by a copy with the new entry under mu (once per distinct value).
	m  atomic.Pointer[map[attrPair][]metric.AddOption]
	mu sync.Mutex
	// recent answers calls whose four strings are the very strings (same
	// bytes in memory) of an earlier call, without hashing them: the names
	// are constants at each call site, and the values nearly always are
	// too (triggers, verdicts, failure types, action kinds). A slot holds
	// the first pair that fell on it (set once: a pair of another slot's
	// strings is answered from m, and no call allocates past the first).
	recent [recentOptions]atomic.Pointer[recentOption]
}

// recentOptions is the number of slots of measurementOptions.recent.
const recentOptions = 64

type recentOption struct {
	p   attrPair
	add []metric.AddOption
}

// sameString reports whether a and b are the same bytes in memory (and so
// equal; equal strings elsewhere in memory are not the same).
func sameString(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b))
}

func (p *attrPair) same(q *attrPair) bool {
	return sameString(p.k1, q.k1) && sameString(p.v1, q.v1) && sameString(p.k2, q.k2) && sameString(p.v2, q.v2)
}

// slot is p's slot in recent: from where its strings are and how long.
func (p *attrPair) slot() int {
	addr := func(s string) uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(s))) + uintptr(len(s)) }
	h := addr(p.k1) ^ addr(p.v1)*31 ^ addr(p.k2)*961 ^ addr(p.v2)*29791
	h ^= h >> 17
	h ^= h >> 7
	return int(h % recentOptions)
}

var sharedOptions measurementOptions

// adds1 is the option list of an Add call with one string attribute, built
// once (pass it with ...: a variadic list given to an interface method
// escapes, so a list built per call is an allocation per call).
func adds1(k, v string) []metric.AddOption {
	return sharedOptions.get(attrPair{k1: k, v1: v})
}

// adds2 is adds1 with two string attributes.
func adds2(k1, v1, k2, v2 string) []metric.AddOption {
	return sharedOptions.get(attrPair{k1: k1, v1: v1, k2: k2, v2: v2})
}

func (o *measurementOptions) get(p attrPair) []metric.AddOption {
	slot := &o.recent[p.slot()]
	if r := slot.Load(); r != nil && r.p.same(&p) {
		return r.add
	}
	add := o.lookup(p)
	if slot.Load() == nil {
		slot.CompareAndSwap(nil, &recentOption{p: p, add: add})
	}
	return add
}

// lookup is get without the recent slots.
func (o *measurementOptions) lookup(p attrPair) []metric.AddOption {
	if m := o.m.Load(); m != nil {
		if add, ok := (*m)[p]; ok {
			return add
		}
	}
	kvs := []attribute.KeyValue{attribute.String(p.k1, p.v1)}
	if p.k2 != "" {
		kvs = append(kvs, attribute.String(p.k2, p.v2))
	}
	add := []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
	o.mu.Lock()
	defer o.mu.Unlock()
	old := o.m.Load()
	n := 0
	if old != nil {
		if kept, ok := (*old)[p]; ok {
			return kept // added meanwhile
		}
		n = len(*old)
	}
	if n >= maxMeasurementOptions {
		return add
	}
	m := make(map[attrPair][]metric.AddOption, n+1)
	if old != nil {
		maps.Copy(m, *old)
	}
	m[p] = add
	o.m.Store(&m)
	return add
}

// len is the number of option lists kept.
func (o *measurementOptions) len() int {
	if m := o.m.Load(); m != nil {
		return len(*m)
	}
	return 0
}
