package triageprocessor

import (
	"strconv"
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
	if n := len(o.m); n > maxMeasurementOptions {
		t.Errorf("%d options kept, bound %d", n, maxMeasurementOptions)
	}
}
