package guard

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/trajectory"
)

// fillField sets field i of st to a value that is not its zero.
func fillField(t *testing.T, st *trajectory.Step, i int) {
	t.Helper()
	f := reflect.ValueOf(st).Elem().Field(i)
	switch f.Kind() {
	case reflect.String:
		f.SetString("x" + reflect.TypeOf(*st).Field(i).Name)
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Uint64:
		if f.CanInt() {
			f.SetInt(int64(7 + i))
		} else {
			f.SetUint(uint64(7 + i))
		}
	case reflect.Float64:
		f.SetFloat(0.25)
	case reflect.Array:
		f.Index(0).SetUint(uint64(1 + i))
	case reflect.Slice:
		f.Set(reflect.MakeSlice(f.Type(), 1, 1))
	default:
		t.Fatalf("field %s: kind %s not filled (extend the test)", reflect.TypeOf(*st).Field(i).Name, f.Kind())
	}
}

// A held step gives back the Step it was made from: every field alone,
// all of them together, the kinds and conventions SpanReader sets and
// others, and an empty (non-nil) slice apart from a nil one.
func TestHeldStepRoundTrip(t *testing.T) {
	check := func(name string, st trajectory.Step) {
		t.Helper()
		for _, parent := range []pcommon.SpanID{st.ParentID, {9, 9}} {
			h := holdStep(&st, parent) // the span's parent, and another
			var got trajectory.Step
			got.Model = "stale" // step writes every field
			h.stepAt(&got, parent)
			if !reflect.DeepEqual(got, st) {
				t.Errorf("%s (parent %v): held step gives back\n%+v\nnot\n%+v", name, parent, got, st)
			}
		}
	}
	n := reflect.TypeOf(trajectory.Step{}).NumField()
	var all trajectory.Step
	for i := range n {
		var one trajectory.Step
		fillField(t, &one, i)
		check(reflect.TypeOf(one).Field(i).Name, one)
		fillField(t, &all, i)
	}
	check("every field", all)
	for _, k := range append(stepKinds[:], "agent") {
		for _, c := range append(conventions[:], "other") {
			check(string(k)+"/"+string(c), trajectory.Step{Kind: k, Convention: c, Name: "n"})
		}
	}
	check("empty slices", trajectory.Step{Errors: []trajectory.ErrorInfo{}, InputResults: []trajectory.ToolResult{}})
	two := []trajectory.ToolResult{{Name: "a"}, {Name: "b"}}
	check("both result lists empty", trajectory.Step{InputResults: []trajectory.ToolResult{}, ToolResults: []trajectory.ToolResult{}})
	check("input results, empty own", trajectory.Step{InputResults: two, ToolResults: []trajectory.ToolResult{}})
	check("empty input results, own", trajectory.Step{InputResults: []trajectory.ToolResult{}, ToolResults: two})
	check("own results only", trajectory.Step{ToolResults: two})
	check("both result lists", trajectory.Step{InputResults: two[:1], ToolResults: two})
	check("tool and model fields", trajectory.Step{Kind: trajectory.StepTool, ToolName: "t", Model: "m", ParentID: pcommon.SpanID{3}})
	check("one finish reason", trajectory.Step{Kind: trajectory.StepLLM, Model: "m", Provider: "p", FinishReasons: []string{"stop"}})
	check("two finish reasons", trajectory.Step{Kind: trajectory.StepLLM, FinishReasons: []string{"stop", "length"}})
	check("no finish reason", trajectory.Step{Kind: trajectory.StepLLM, FinishReasons: []string{}})
	// The usage in the one word of token counts, and each value it cannot
	// hold (kept beside the output text), with and without output text
	// and requested calls (whose length's top bit says which).
	calls := []trajectory.ToolCall{{Name: "c"}}
	for _, u := range []struct {
		in, out int64
		cost    float64
	}{{0, 0, 0}, {math.MaxUint32, math.MaxUint32, 0}, {math.MaxUint32 + 1, 2, 0}, {3, math.MaxUint32 + 1, 0}, {-1, 5, 0}, {5, -1, 0},
		{math.MaxInt64, math.MinInt64, 0}, {1, 2, 0.5}, {1, 2, math.Copysign(0, -1)}, {0, 0, math.NaN()}} {
		for _, out := range []string{"", "done"} {
			for _, req := range [][]trajectory.ToolCall{nil, calls} {
				st := trajectory.Step{Kind: trajectory.StepLLM, InputTokens: u.in, OutputTokens: u.out, Cost: u.cost, OutputText: out, Requested: req}
				h := holdStep(&st, st.ParentID)
				var got trajectory.Step
				h.stepAt(&got, st.ParentID)
				if got.InputTokens != u.in || got.OutputTokens != u.out || math.Float64bits(got.Cost) != math.Float64bits(u.cost) ||
					got.OutputText != out || len(got.Requested) != len(req) {
					t.Errorf("usage %d/%d/%v, output %q, %d requested: held step gives back %d/%d/%v, %q, %d requested",
						u.in, u.out, u.cost, out, len(req), got.InputTokens, got.OutputTokens, got.Cost, got.OutputText, len(got.Requested))
				}
				if math.IsNaN(u.cost) {
					continue // (DeepEqual: NaN is not NaN)
				}
				check(fmt.Sprintf("usage %d/%d/%v, output %q, %d requested", u.in, u.out, u.cost, out, len(req)), st)
			}
		}
	}
}

// A model step's group and a step record are 64 B each: each byte of
// them is held per model step, and per step, of every held trace.
func TestHeldSizes(t *testing.T) {
	if n := unsafe.Sizeof(heldLLM{}); n != 64 {
		t.Errorf("heldLLM is %d B, want 64", n)
	}
	if n := unsafe.Sizeof(stepRec{}); n != 64 {
		t.Errorf("stepRec is %d B, want 64", n)
	}
}

// The groups of a record of several lie where llm, tool and errs find
// them.
func TestHeldGroupOffsets(t *testing.T) {
	for _, c := range []struct {
		name      string
		flags     uint8
		rec       unsafe.Pointer
		llm, tool unsafe.Pointer
		errs      unsafe.Pointer
	}{
		{"both", flagLLM | flagTool, unsafe.Pointer(&heldBoth{}), nil, nil, nil},
		{"llm+errs", flagLLM | flagErrs, unsafe.Pointer(&heldLLMErrs{}), nil, nil, nil},
		{"tool+errs", flagTool | flagErrs, unsafe.Pointer(&heldToolErrs{}), nil, nil, nil},
		{"all", flagLLM | flagTool | flagErrs, unsafe.Pointer(&heldAll{}), nil, nil, nil},
	} {
		switch v := c.rec; c.name {
		case "both":
			b := (*heldBoth)(v)
			c.llm, c.tool = unsafe.Pointer(&b.llm), unsafe.Pointer(&b.tool)
		case "llm+errs":
			b := (*heldLLMErrs)(v)
			c.llm, c.errs = unsafe.Pointer(&b.llm), unsafe.Pointer(&b.errs)
		case "tool+errs":
			b := (*heldToolErrs)(v)
			c.tool, c.errs = unsafe.Pointer(&b.tool), unsafe.Pointer(&b.errs)
		case "all":
			b := (*heldAll)(v)
			c.llm, c.tool, c.errs = unsafe.Pointer(&b.llm), unsafe.Pointer(&b.tool), unsafe.Pointer(&b.errs)
		}
		h := heldStep{grp: c.rec, flags: c.flags}
		if unsafe.Pointer(h.llm()) != c.llm || unsafe.Pointer(h.tool()) != c.tool || unsafe.Pointer(h.errs()) != c.errs {
			t.Errorf("%s: the accessors find %p %p %p, the record has them at %p %p %p", c.name, h.llm(), h.tool(), h.errs(), c.llm, c.tool, c.errs)
		}
	}
}

// A held tool call's step is smaller than a Step.
func TestHeldStepIsSmaller(t *testing.T) {
	tool := trajectory.Step{Kind: trajectory.StepTool, ToolName: "t", Arguments: "{}"}
	h := holdStep(&tool, tool.ParentID)
	if h.llm() != nil || h.errs() != nil {
		t.Fatalf("a tool step without errors holds %+v", h)
	}
}
