package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Values written from one block per trace.
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

// Numbers and flags are written the same way from a block of words (no
// pointers in it): pdata's double, int and bool wrappers are structs of one
// float64, int64 or bool. numTypes are their type words, in that order;
// nil when the layout check failed.
var numTypes = probeNumTypes()

type numTypeWords struct{ double, int, bool unsafe.Pointer }

func probeNumTypes() *numTypeWords {
	if strCellType == nil {
		return nil
	}
	typeOf := func(v pcommon.Value) (typ, data unsafe.Pointer) {
		e := (*eface)(unsafe.Pointer(valueIface(v)))
		return e.typ, e.data
	}
	dt, dd := typeOf(pcommon.NewValueDouble(1.5))
	it, id := typeOf(pcommon.NewValueInt(-7))
	bt, bd := typeOf(pcommon.NewValueBool(true))
	if dd == nil || id == nil || bd == nil || *(*float64)(dd) != 1.5 || *(*int64)(id) != -7 || !*(*bool)(bd) {
		return nil
	}
	if dt == nil || it == nil || bt == nil || dt == it || dt == bt || it == bt || dt == strCellType || it == strCellType || bt == strCellType {
		return nil
	}
	w := &numTypeWords{double: dt, int: it, bool: bt}
	cells := make([]uint64, 3)
	v := pcommon.NewValueStr("x")
	*(*float64)(unsafe.Pointer(&cells[0])) = -2.25
	setCell(v, w.double, unsafe.Pointer(&cells[0]))
	if v.Type() != pcommon.ValueTypeDouble || v.Double() != -2.25 {
		return nil
	}
	*(*int64)(unsafe.Pointer(&cells[1])) = 42
	setCell(v, w.int, unsafe.Pointer(&cells[1]))
	if v.Type() != pcommon.ValueTypeInt || v.Int() != 42 {
		return nil
	}
	*(*bool)(unsafe.Pointer(&cells[2])) = true
	setCell(v, w.bool, unsafe.Pointer(&cells[2]))
	if v.Type() != pcommon.ValueTypeBool || !v.Bool() {
		return nil
	}
	return w
}

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
	setCell(w, typ, unsafe.Pointer(&strCell{s: "cell"}))
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

// setCell makes v the value of type word typ held by the cell at c.
func setCell(v pcommon.Value, typ, c unsafe.Pointer) {
	var x any
	e := (*eface)(unsafe.Pointer(&x))
	e.typ, e.data = typ, c
	*valueIface(v) = x
}

// strValues hands out the string cells of one trace. The zero value
// allocates blocks as it goes; reserve sizes the next block. A nil
// *strValues writes with pdata's own wrappers.
type strValues struct {
	cells []strCell
	nums  []uint64
}

// minStrBlock is the smallest block carved when the reserved room is
// used up.
const minStrBlock = 8

// reserve makes room for n more strings and nums more numbers or flags,
// each kind in one block.
func (s *strValues) reserve(n, nums int) {
	if s == nil {
		return
	}
	if strCellType != nil && cap(s.cells)-len(s.cells) < n {
		s.cells = make([]strCell, 0, n)
	}
	if numTypes != nil && cap(s.nums)-len(s.nums) < nums {
		s.nums = make([]uint64, 0, nums)
	}
}

// drop forgets the blocks: the values handed out keep them, and the next
// trace's values never share them.
func (s *strValues) drop() {
	if s != nil {
		s.cells, s.nums = nil, nil
	}
}

// num is the next number cell; nil when numbers are written by pdata.
func (s *strValues) num() unsafe.Pointer {
	if s == nil || numTypes == nil {
		return nil
	}
	if len(s.nums) == cap(s.nums) {
		s.nums = make([]uint64, 0, minStrBlock)
	}
	s.nums = s.nums[:len(s.nums)+1]
	return unsafe.Pointer(&s.nums[len(s.nums)-1])
}

// setDouble is v.SetDouble(f).
func (s *strValues) setDouble(v pcommon.Value, f float64) {
	c := s.num()
	if c == nil {
		v.SetDouble(f)
		return
	}
	*(*float64)(c) = f
	setCell(v, numTypes.double, c)
}

// setInt is v.SetInt(i).
func (s *strValues) setInt(v pcommon.Value, i int64) {
	c := s.num()
	if c == nil {
		v.SetInt(i)
		return
	}
	*(*int64)(c) = i
	setCell(v, numTypes.int, c)
}

// setBool is v.SetBool(b).
func (s *strValues) setBool(v pcommon.Value, b bool) {
	c := s.num()
	if c == nil {
		v.SetBool(b)
		return
	}
	*(*bool)(c) = b
	setCell(v, numTypes.bool, c)
}

// putDouble is m.PutDouble(k, f).
func (s *strValues) putDouble(m pcommon.Map, k string, f float64) {
	if s == nil || numTypes == nil {
		m.PutDouble(k, f)
		return
	}
	s.setDouble(m.PutEmpty(k), f)
}

// putInt is m.PutInt(k, i).
func (s *strValues) putInt(m pcommon.Map, k string, i int64) {
	if s == nil || numTypes == nil {
		m.PutInt(k, i)
		return
	}
	s.setInt(m.PutEmpty(k), i)
}

// putBool is m.PutBool(k, b).
func (s *strValues) putBool(m pcommon.Map, k string, b bool) {
	if s == nil || numTypes == nil {
		m.PutBool(k, b)
		return
	}
	s.setBool(m.PutEmpty(k), b)
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
	setCell(v, strCellType, unsafe.Pointer(&s.cells[len(s.cells)-1]))
}

// put is m.PutStr(k, str).
func (s *strValues) put(m pcommon.Map, k, str string) {
	if s == nil || strCellType == nil {
		m.PutStr(k, str)
		return
	}
	s.set(m.PutEmpty(k), str)
}

// valueCount is the number of string values, and of numbers and flags,
// writing anns takes: one an attribute, an evaluation event three strings
// and its score.
func valueCount(anns []annotation) (strs, nums int) {
	for i := range anns {
		if e := anns[i].eval; e != nil {
			strs += 3
			if e.hasScore {
				nums++
			}
			continue
		}
		switch anns[i].kind {
		case pcommon.ValueTypeDouble, pcommon.ValueTypeInt, pcommon.ValueTypeBool:
			nums++
		default:
			strs++
		}
	}
	return strs, nums
}
