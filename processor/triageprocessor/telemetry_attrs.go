package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"sync"

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
	mu sync.RWMutex
	m  map[attrPair]measurement
}

// measurement is one attribute set as a measurement option, and as the
// option list of an Add call: passed on with add..., a call allocates no
// list of its own (a variadic list given to an interface method escapes).
type measurement struct {
	opt metric.MeasurementOption
	add []metric.AddOption
}

var sharedOptions measurementOptions

// attrs1 is metric.WithAttributes(attribute.String(k, v)), built once.
func attrs1(k, v string) metric.MeasurementOption {
	return sharedOptions.get(attrPair{k1: k, v1: v}).opt
}

// attrs2 is metric.WithAttributes of two string attributes, built once.
func attrs2(k1, v1, k2, v2 string) metric.MeasurementOption {
	return sharedOptions.get(attrPair{k1: k1, v1: v1, k2: k2, v2: v2}).opt
}

// adds1 is attrs1 as the option list of an Add call (pass it with ...).
func adds1(k, v string) []metric.AddOption {
	return sharedOptions.get(attrPair{k1: k, v1: v}).add
}

// adds2 is attrs2 as the option list of an Add call (pass it with ...).
func adds2(k1, v1, k2, v2 string) []metric.AddOption {
	return sharedOptions.get(attrPair{k1: k1, v1: v1, k2: k2, v2: v2}).add
}

func (o *measurementOptions) get(p attrPair) measurement {
	o.mu.RLock()
	m, ok := o.m[p]
	o.mu.RUnlock()
	if ok {
		return m
	}
	kvs := []attribute.KeyValue{attribute.String(p.k1, p.v1)}
	if p.k2 != "" {
		kvs = append(kvs, attribute.String(p.k2, p.v2))
	}
	m.opt = metric.WithAttributeSet(attribute.NewSet(kvs...))
	m.add = []metric.AddOption{m.opt}
	o.mu.Lock()
	if o.m == nil {
		o.m = make(map[attrPair]measurement)
	}
	if len(o.m) < maxMeasurementOptions {
		o.m[p] = m
	}
	o.mu.Unlock()
	return m
}
