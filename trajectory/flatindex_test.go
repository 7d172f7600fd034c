package trajectory

import (
	"maps"
	"slices"
	"testing"
)

// FuzzIndexed holds indexed to the map it replaced: the same values made,
// visited in increasing index order.
func FuzzIndexed(f *testing.F) {
	f.Add([]byte{0, 1, 0, 3, 0, 1})
	f.Add([]byte{1, 0, 0, 255, 0, 0, 3, 232})
	f.Add([]byte{0, 9, 0, 2, 200, 0, 0, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		var x indexed[int]
		ref := map[int]*int{}
		for k := 0; k+1 < len(b); k += 2 {
			i := int(b[k])<<8 | int(b[k+1])
			if b[k]&0x80 != 0 {
				i = int(b[k+1]) // mostly small indexes
			}
			*x.at(i) += k + 1
			p := ref[i]
			if p == nil {
				p = new(int)
				ref[i] = p
			}
			*p += k + 1
		}
		if x.len() != len(ref) {
			t.Fatalf("len %d, want %d", x.len(), len(ref))
		}
		var got, want []int
		x.each(func(v *int) { got = append(got, *v) })
		for _, i := range slices.Sorted(maps.Keys(ref)) {
			want = append(want, *ref[i])
		}
		if !slices.Equal(got, want) {
			t.Fatalf("values %v, want %v", got, want)
		}
	})
}
