package triageprocessor

import (
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

func addAttrs(opts []metric.AddOption) attribute.Set {
	return metric.NewAddConfig(opts).Attributes()
}

func TestSharedMeasurementOptions(t *testing.T) {
	var o measurementOptions
	want := attribute.NewSet(attribute.String("verdict", "failed"), attribute.String("failure_type", "timeout"))
	first := o.get(attrPair{k1: "verdict", v1: "failed", k2: "failure_type", v2: "timeout"})
	if got := addAttrs(first); !got.Equals(&want) {
		t.Fatalf("attributes %v, want %v", got.ToSlice(), want.ToSlice())
	}
	if got := addAttrs(o.get(attrPair{k1: "verdict", v1: "failed", k2: "failure_type", v2: "timeout"})); !got.Equals(&want) {
		t.Fatalf("second call: attributes %v, want %v", got.ToSlice(), want.ToSlice())
	}
	one := attribute.NewSet(attribute.String("trigger", "root"))
	if got := metric.NewAddConfig(adds1("trigger", "root")).Attributes(); !got.Equals(&one) {
		t.Fatalf("adds1: %v", got.ToSlice())
	}
	if got := metric.NewAddConfig(adds2("verdict", "failed", "failure_type", "timeout")).Attributes(); !got.Equals(&want) {
		t.Fatalf("adds2: %v", got.ToSlice())
	}
	// Past the bound, options are still right, only no longer kept.
	for i := range maxMeasurementOptions + 10 {
		v := strconv.Itoa(i)
		w := attribute.NewSet(attribute.String("rule", v))
		if got := addAttrs(o.get(attrPair{k1: "rule", v1: v})); !got.Equals(&w) {
			t.Fatalf("rule %s: %v", v, got.ToSlice())
		}
	}
	if n := o.len(); n > maxMeasurementOptions {
		t.Errorf("%d options kept, bound %d", n, maxMeasurementOptions)
	}
}

// The recent slots answer what the map answers, whether a call's strings
// are the very strings of an earlier call or equal copies of them.
func TestRecentMeasurementOptions(t *testing.T) {
	var o measurementOptions
	pairs := []attrPair{{k1: "trigger", v1: "root"}, {k1: "verdict", v1: "failed", k2: "failure_type", v2: "timeout"},
		{k1: "verdict", v1: "ok", k2: "failure_type"}, {k1: "action", v1: "retry"}}
	for i := range 300 {
		pairs = append(pairs, attrPair{k1: "rule", v1: strconv.Itoa(i % 70)})
	}
	for round := range 3 {
		for _, p := range pairs {
			q := p
			if round == 1 { // equal strings elsewhere in memory
				q = attrPair{k1: strings.Clone(p.k1), v1: strings.Clone(p.v1), k2: strings.Clone(p.k2), v2: strings.Clone(p.v2)}
			}
			kvs := []attribute.KeyValue{attribute.String(p.k1, p.v1)}
			if p.k2 != "" {
				kvs = append(kvs, attribute.String(p.k2, p.v2))
			}
			want := attribute.NewSet(kvs...)
			if got := addAttrs(o.get(q)); !got.Equals(&want) {
				t.Fatalf("round %d %+v: attributes %v, want %v", round, q, got.ToSlice(), want.ToSlice())
			}
		}
	}
	filled := 0
	for i := range o.recent {
		if o.recent[i].Load() != nil {
			filled++
		}
	}
	if filled == 0 {
		t.Error("no recent slot was filled")
	}
}
