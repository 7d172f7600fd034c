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
	m  map[attrPair][]metric.AddOption
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
	o.mu.RLock()
	add, ok := o.m[p]
	o.mu.RUnlock()
	if ok {
		return add
	}
	kvs := []attribute.KeyValue{attribute.String(p.k1, p.v1)}
	if p.k2 != "" {
		kvs = append(kvs, attribute.String(p.k2, p.v2))
	}
	add = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
	o.mu.Lock()
	if o.m == nil {
		o.m = make(map[attrPair][]metric.AddOption)
	}
	if len(o.m) < maxMeasurementOptions {
		o.m[p] = add
	}
	o.mu.Unlock()
	return add
}
