package triageprocessor

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestStrCellsLayout holds strValues to pdata's layout: the check at init
// passes with the pdata this module builds with (else every string is
// written with SetStr, correct but without the saving), and a value
// written from a cell is, to pdata, a string value like SetStr's: read,
// copied, replaced, marshalled alike.
func TestStrCellsLayout(t *testing.T) {
	if strCellType == nil || numTypes == nil {
		t.Fatal("pdata's value layout is not the one strvalues.go writes: values are written with pdata's Set*")
	}
	var vals strValues
	vals.reserve(3, 2)
	mk := func(set func(m pcommon.Map)) ptrace.Traces {
		td := ptrace.NewTraces()
		span := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		span.SetName("s")
		m := span.Attributes()
		m.PutInt("n", 1)
		m.PutStr("replaced", "old")
		set(m)
		return td
	}
	got := mk(func(m pcommon.Map) {
		vals.put(m, "a", "alpha")
		vals.put(m, "replaced", "new")
		vals.set(m.PutEmpty("b"), "")
		vals.put(m, "c", "past the reserved block")
		vals.putDouble(m, "d", 0.75)
		vals.putInt(m, "n", -3) // replaces
		vals.putBool(m, "t", true)
		vals.putBool(m, "f", false)
		for i := range minStrBlock + 2 { // past the reserved block
			vals.putDouble(m, "d", float64(i))
			vals.putInt(m, "i", int64(i))
		}
		vals.setDouble(m.PutEmpty("e"), -1e300)
		vals.setInt(m.PutEmpty("j"), 1<<62)
		vals.setBool(m.PutEmpty("b2"), true)
	})
	want := mk(func(m pcommon.Map) {
		m.PutStr("a", "alpha")
		m.PutStr("replaced", "new")
		m.PutEmpty("b").SetStr("")
		m.PutStr("c", "past the reserved block")
		m.PutDouble("d", 0.75)
		m.PutInt("n", -3)
		m.PutBool("t", true)
		m.PutBool("f", false)
		for i := range minStrBlock + 2 {
			m.PutDouble("d", float64(i))
			m.PutInt("i", int64(i))
		}
		m.PutEmpty("e").SetDouble(-1e300)
		m.PutEmpty("j").SetInt(1 << 62)
		m.PutEmpty("b2").SetBool(true)
	})
	var pm ptrace.ProtoMarshaler
	gb, err := pm.MarshalTraces(got)
	if err != nil {
		t.Fatal(err)
	}
	wb, _ := pm.MarshalTraces(want)
	if string(gb) != string(wb) {
		t.Fatalf("marshalled differently:\n got %x\nwant %x", gb, wb)
	}
	attrs := got.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
	a, _ := attrs.Get("a")
	if a.Type() != pcommon.ValueTypeStr || a.Str() != "alpha" || a.AsString() != "alpha" {
		t.Fatalf("a = %v %q", a.Type(), a.Str())
	}
	c := pcommon.NewValueEmpty()
	a.CopyTo(c)
	a.SetStr("changed") // pdata's own wrapper replaces the cell
	if c.Str() != "alpha" || a.Str() != "changed" {
		t.Fatalf("copy %q, original %q", c.Str(), a.Str())
	}
	cp := ptrace.NewTraces()
	got.CopyTo(cp)
	if v, _ := cp.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().Get("replaced"); v.Str() != "new" {
		t.Fatalf("copied trace: replaced = %q", v.Str())
	}
	for k, want := range map[string]any{"d": float64(minStrBlock + 1), "n": int64(-3), "t": true, "f": false, "e": -1e300, "j": int64(1 << 62)} {
		v, _ := attrs.Get(k)
		if got := v.AsRaw(); got != want {
			t.Errorf("%s = %v (%T), want %v", k, got, got, want)
		}
	}
	// nil writes with pdata's wrappers.
	var none *strValues
	m := pcommon.NewMap()
	none.put(m, "k", "v")
	none.reserve(4, 4)
	none.drop()
	if v, _ := m.Get("k"); v.Str() != "v" {
		t.Fatalf("nil strValues: %q", v.Str())
	}
}
