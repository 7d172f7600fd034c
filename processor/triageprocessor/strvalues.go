package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// String values written from one block per trace.
//
// pdata allocates a 16-byte wrapper for every string value it is given
// (Value.SetStr, Map.PutStr): a value is an interface holding a pointer to
// a struct of one string. A decided trace gets about two dozen annotation
// and evaluation strings, so strValues carves the wrappers from one block
// per trace instead: each cell is laid out as pdata's wrapper (strCell)
// and the value's interface is pointed at it. A cell is written once,
// before its value is handed over, and never again (the block is dropped
// with the trace's annotations, never reused); the spans holding the
// trace's values keep the block alive, and whatever pdata does with a
// value afterwards (SetStr replaces the pointer, CopyTo copies the string)
// is what it does with its own wrappers.
//
// This rests on pdata's layout: pcommon.Value starts with a pointer to its
// internal AnyValue, whose only field is the interface, and a string
// value's dynamic type is a pointer to a struct of one string. init checks
// it on probe values; when it does not hold, every value is written with
// SetStr (and TestStrCellsLayout fails, so a pdata upgrade that changes it
// is noticed).

// strCell has the layout of pdata's internal AnyValue_StringValue.
type strCell struct{ s string }

// eface is the layout of an interface value.
type eface struct{ typ, data unsafe.Pointer }

// strCellType is the dynamic type word of a pdata string value; nil when
// the layout check failed.
var strCellType = probeStrCellType()

// valueIface is the interface inside v (pdata's AnyValue.Value).
func valueIface(v pcommon.Value) *any {
	return *(**any)(unsafe.Pointer(&v))
}

func probeStrCellType() unsafe.Pointer {
	if unsafe.Sizeof(pcommon.Value{}) != 2*unsafe.Sizeof(uintptr(0)) {
		return nil
	}
	probe := pcommon.NewValueStr("probe")
	e := (*eface)(unsafe.Pointer(valueIface(probe)))
	if e.typ == nil || e.data == nil || (*strCell)(e.data).s != "probe" {
		return nil
	}
	typ := e.typ
	// The type word must be that of string values only.
	for _, other := range []pcommon.Value{pcommon.NewValueEmpty(), pcommon.NewValueInt(1), pcommon.NewValueBytes(), pcommon.NewValueMap()} {
		if (*eface)(unsafe.Pointer(valueIface(other))).typ == typ {
			return nil
		}
	}
	w := pcommon.NewValueInt(7)
	setCell(w, typ, &strCell{s: "cell"})
	if w.Type() != pcommon.ValueTypeStr || w.Str() != "cell" || w.AsString() != "cell" {
		return nil
	}
	c := pcommon.NewValueEmpty()
	w.CopyTo(c)
	if c.Type() != pcommon.ValueTypeStr || c.Str() != "cell" {
		return nil
	}
	return typ
}

// setCell makes v the string value held by c.
func setCell(v pcommon.Value, typ unsafe.Pointer, c *strCell) {
	var x any
	e := (*eface)(unsafe.Pointer(&x))
	e.typ, e.data = typ, unsafe.Pointer(c)
	*valueIface(v) = x
}

// strValues hands out the string cells of one trace. The zero value
// allocates blocks as it goes; reserve sizes the next block. A nil
// *strValues writes with pdata's own wrappers.
type strValues struct {
	cells []strCell
}

// minStrBlock is the smallest block carved when the reserved room is
// used up.
const minStrBlock = 8

// reserve makes room for n more strings in one block.
func (s *strValues) reserve(n int) {
	if s == nil || strCellType == nil || cap(s.cells)-len(s.cells) >= n {
		return
	}
	s.cells = make([]strCell, 0, n)
}

// drop forgets the block: the values handed out keep it, and the next
// trace's strings never share it.
func (s *strValues) drop() {
	if s != nil {
		s.cells = nil
	}
}

// set is v.SetStr(str).
func (s *strValues) set(v pcommon.Value, str string) {
	if s == nil || strCellType == nil {
		v.SetStr(str)
		return
	}
	if len(s.cells) == cap(s.cells) {
		s.cells = make([]strCell, 0, minStrBlock)
	}
	s.cells = append(s.cells, strCell{s: str})
	setCell(v, strCellType, &s.cells[len(s.cells)-1])
}

// put is m.PutStr(k, str).
func (s *strValues) put(m pcommon.Map, k, str string) {
	if s == nil || strCellType == nil {
		m.PutStr(k, str)
		return
	}
	s.set(m.PutEmpty(k), str)
}

// stringCount is the number of string values writing anns takes: one a
// string attribute, three an evaluation event.
func stringCount(anns []annotation) int {
	n := 0
	for i := range anns {
		if anns[i].eval != nil {
			n += 3
			continue
		}
		switch anns[i].kind {
		case pcommon.ValueTypeDouble, pcommon.ValueTypeInt, pcommon.ValueTypeBool:
		default:
			n++
		}
	}
	return n
}
