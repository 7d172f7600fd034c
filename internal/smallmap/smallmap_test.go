package smallmap

import (
	"strconv"
	"testing"
	"unsafe"
)

// A Map answers as a Go map, below and past the length it keeps in its
// slice, through puts, overwrites and deletes.
func TestMapAnswersAsAGoMap(t *testing.T) {
	var m Map[string, int]
	ref := map[string]int{}
	check := func(step string) {
		t.Helper()
		if m.Len() != len(ref) {
			t.Fatalf("%s: Len %d, want %d", step, m.Len(), len(ref))
		}
		for k, want := range ref {
			if v, ok := m.Get(k); !ok || v != want {
				t.Fatalf("%s: Get(%q) = %d, %v, want %d", step, k, v, ok, want)
			}
		}
		if _, ok := m.Get("absent"); ok {
			t.Fatalf("%s: found an absent key", step)
		}
		seen := map[string]int{}
		m.Each(func(k string, v int) { seen[k] = v })
		if len(seen) != len(ref) {
			t.Fatalf("%s: Each visited %d entries, want %d", step, len(seen), len(ref))
		}
	}
	for i := 0; i < 3*MaxSlice; i++ {
		k := strconv.Itoa(i % (2 * MaxSlice))
		m.Put(k, i)
		ref[k] = i
		check("put " + k)
		if i%5 == 0 {
			m.Del(k)
			delete(ref, k)
			check("del " + k)
		}
	}
}

// After Reset a Map is empty and answers as a new one, below and past the
// length it keeps in its slice.
func TestMapReset(t *testing.T) {
	var m Map[string, int]
	for _, n := range []int{3, 3 * MaxSlice, MaxSlice, 0, 5} {
		m.Reset()
		if m.Len() != 0 {
			t.Fatalf("Len %d after Reset", m.Len())
		}
		for i := range n {
			if _, ok := m.Get(strconv.Itoa(i)); ok {
				t.Fatalf("%d found after Reset", i)
			}
			m.Put(strconv.Itoa(i), i)
		}
		if m.Len() != n {
			t.Fatalf("Len %d, want %d", m.Len(), n)
		}
		for i := range n {
			if v, ok := m.Get(strconv.Itoa(i)); !ok || v != i {
				t.Fatalf("Get(%d) = %d, %v", i, v, ok)
			}
		}
	}
}

// With another bound (PutUpTo) a Map answers as a Go map below and past
// it, and keeps its entries in its slice up to it.
func TestMapPutUpTo(t *testing.T) {
	for _, max := range []int{1, 5, 2 * MaxSlice} {
		var m Map[int, int]
		ref := map[int]int{}
		for i := 0; i < 3*max; i++ {
			k := i % (2 * max)
			m.PutUpTo(k, i, max)
			ref[k] = i
			if i%4 == 3 {
				m.Del(k)
				delete(ref, k)
			}
			if inSlice := m.n != moved; (inSlice && m.Len() > max) || (!inSlice && i < max) {
				t.Fatalf("max %d, %d entries after %d puts: in slice %v", max, m.Len(), i+1, inSlice)
			}
			if m.Len() != len(ref) {
				t.Fatalf("max %d: Len %d, want %d", max, m.Len(), len(ref))
			}
			for k, want := range ref {
				if v, ok := m.Get(k); !ok || v != want {
					t.Fatalf("max %d: Get(%d) = %d, %v, want %d", max, k, v, ok, want)
				}
			}
		}
	}
}

// A Map is two words: a held run keeps five (guard), most of them empty or
// short.
func TestMapIsTwoWords(t *testing.T) {
	if n := unsafe.Sizeof(Map[string, int]{}); n != 2*unsafe.Sizeof(uintptr(0)) {
		t.Fatalf("a Map is %d bytes", n)
	}
}
