package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"math"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/xpdata"
)

// Writing a span's annotations.
//
// pcommon.Map's Put scans the span's attributes for the key before
// appending it, so a run root with forty attributes that gets two dozen
// annotations costs a thousand key comparisons. A span that carries no
// triage.* attribute yet (nearly every span: only a span annotated by an
// earlier triage tier does) cannot hold any annotation key, so its
// annotations are laid out first (attrWriter: the Put and Remove sequence
// replayed on them alone, in pdata's order) and the span's map is then
// rebuilt once with xpdata.MapBuilder: its attributes moved over, the
// annotations appended. A span that already carries triage.* attributes
// is written with Put and Remove as before.

// annotate sets a span's incident then root annotations on its attributes
// (the keys both write describe the run: none is left from the incident).
// It reports whether it appended them to the span's own (false: written
// with Put, or none to write).
func (w *attrWriter) annotate(attrs pcommon.Map, inc, root []annotation) bool {
	if attributeCount(inc)+attributeCount(root) < minRebuiltAnnotations {
		applyAnnotations(attrs, inc, root)
		return false
	}
	both := len(inc) > 0 && len(root) > 0
	l := laidOut{inc, root}
	w.reset()
	w.putAll(l, inc, 0)
	if both {
		for _, k := range sharedKeys {
			w.remove(l, k)
		}
	}
	w.putAll(l, root, int32(len(inc)))
	if len(w.list) == 0 && !both {
		return false // evaluation events only
	}
	if !w.prefixed || len(w.list) == 0 {
		// (With no attribute to write, the shared keys are still
		// removed from the span's own.)
		applyAnnotations(attrs, inc, root)
		return false
	}
	// The span's attributes move to the new map, which is then either
	// theirs followed by the laid-out ones or, when one of them is a
	// triage.* attribute (the span was annotated before), theirs alone,
	// written on with Put.
	w.b.EnsureCapacity(attrs.Len() + len(w.list))
	fresh := true
	for k, v := range attrs.All() {
		if fresh && strings.HasPrefix(k, annotationPrefix) {
			fresh = false
		}
		v.MoveTo(w.b.AppendEmpty(k))
	}
	if fresh {
		for _, k := range w.list {
			a := l.at(k)
			a.set(w.b.AppendEmpty(a.key))
		}
	}
	w.b.UnsafeIntoMap(attrs)
	if !fresh {
		applyAnnotations(attrs, inc, root)
	}
	return fresh
}

// applyAnnotations is annotate with Put and Remove on attrs itself: for a
// span that already carries triage.* attributes.
func applyAnnotations(attrs pcommon.Map, inc, root []annotation) {
	attrs.EnsureCapacity(attrs.Len() + attributeCount(inc) + attributeCount(root))
	for _, a := range inc {
		a.apply(attrs)
	}
	if len(inc) > 0 && len(root) > 0 {
		for _, k := range sharedKeys {
			attrs.Remove(k)
		}
	}
	for _, a := range root {
		a.apply(attrs)
	}
}

// minRebuiltAnnotations is the fewest annotations for which a span's map
// is rebuilt: Put costs grow with the square of the annotations, and a
// rebuilt map is always a new array, where EnsureCapacity often finds room
// left by the decoder (a receiver's slices grow by doubling). Incident
// spans (about six annotations) are written with Put, run roots (a dozen
// to two dozen) rebuilt.
const minRebuiltAnnotations = 10

// annotationPrefix starts every annotation key (package wire).
const annotationPrefix = "triage."

// attrWriter lays out the attributes a sequence of Put and Remove calls
// leaves after a span's own (when the span has none of their keys): the
// same positions and values pdata gives them.
type attrWriter struct {
	// list is the annotations laid out, as indexes into the lists being
	// laid out (laidOut): ints, not pointers, so storing one takes no
	// write barrier and reset has nothing to clear.
	list []int32
	// seen has the bit keyBit of every key put: a key whose bit is clear
	// is not in list, and only the others are looked for (a run root
	// gets two dozen annotations, nearly always of distinct keys).
	seen uint64
	// prefixed is false once an annotation key without annotationPrefix
	// was put: such a key could be one of the span's.
	prefixed bool
	b        xpdata.MapBuilder
}

// reset readies w for the next span. (The string block stays: a trace's
// spans share it; release drops it.)
func (w *attrWriter) reset() {
	w.list = w.list[:0]
	w.seen = 0
	w.prefixed = true
}

// keyBit is a key's bit in attrWriter.seen: from its length and the bytes
// after the prefix and at its end, weighed so that the annotation keys of
// package wire fall on distinct bits (TestKeyBitsDistinct; a collision
// only costs a look through the list).
func keyBit(k string) uint64 {
	h := uint(len(k))
	if len(k) > len(annotationPrefix) {
		h += 8*uint(k[len(annotationPrefix)]) + 13*uint(k[len(k)-1])
	}
	return 1 << (h % 64)
}

// putAll is Map.Put* of each attribute of anns: a value replaces an
// earlier one of the same key in place, else it is appended. Evaluation
// events are not attributes.
// anns is one of l's lists, its first annotation at index base of l.
func (w *attrWriter) putAll(l laidOut, anns []annotation, base int32) {
	for i := range anns {
		a := &anns[i]
		if a.eval != nil {
			continue
		}
		if !strings.HasPrefix(a.key, annotationPrefix) {
			w.prefixed = false
		}
		k := base + int32(i)
		if bit := keyBit(a.key); w.seen&bit == 0 {
			w.seen |= bit
			w.list = append(w.list, k)
			continue
		}
		w.replace(l, k)
	}
}

func (w *attrWriter) replace(l laidOut, k int32) {
	key := l.at(k).key
	for i, j := range w.list {
		if l.at(j).key == key {
			w.list[i] = k
			return
		}
	}
	w.list = append(w.list, k)
}

// remove is Map.Remove: the last attribute takes the removed one's place.
func (w *attrWriter) remove(l laidOut, key string) {
	for i, j := range w.list {
		if l.at(j).key == key {
			last := len(w.list) - 1
			w.list[i] = w.list[last]
			w.list = w.list[:last]
			return
		}
	}
}

// laidOut is the lists of annotations a span gets, incident then root,
// indexed as one (attrWriter.list).
type laidOut struct{ inc, root []annotation }

func (l laidOut) at(k int32) *annotation {
	if int(k) < len(l.inc) {
		return &l.inc[k]
	}
	return &l.root[int(k)-len(l.inc)]
}

// set gives v the annotation's value (a.eval == nil).
func (a *annotation) set(v pcommon.Value) {
	switch a.kind {
	case pcommon.ValueTypeDouble:
		v.SetDouble(math.Float64frombits(a.bits))
	case pcommon.ValueTypeInt:
		v.SetInt(int64(a.bits))
	case pcommon.ValueTypeBool:
		v.SetBool(a.bits != 0)
	default:
		v.SetStr(a.str)
	}
}
