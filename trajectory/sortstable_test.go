package trajectory

import (
	"sort"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// FuzzSortSteps holds sortSteps (sortStable) to sort.SliceStable, which it
// replaced: the same steps in the same order, equal steps kept in theirs.
func FuzzSortSteps(f *testing.F) {
	f.Add([]byte{3, 1, 2, 1, 1, 0, 2, 2})
	f.Add([]byte{0, 0, 0, 0, 0, 0})
	f.Add([]byte{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 9, 9})
	long := make([]byte, 200)
	for i := range long {
		long[i] = byte(i * 37 % 11)
	}
	f.Add(long)
	f.Fuzz(func(t *testing.T, b []byte) {
		var got []Step
		for k := 0; k+1 < len(b); k += 2 {
			got = append(got, Step{Name: string(rune('a' + k%26)), ToolCallID: string(rune(k)), End: pcommon.Timestamp(b[k] % 5), Start: pcommon.Timestamp(b[k+1] % 3)})
		}
		want := append([]Step(nil), got...)
		sort.SliceStable(want, func(a, c int) bool {
			if want[a].End != want[c].End {
				return want[a].End < want[c].End
			}
			return want[a].Start < want[c].Start
		})
		sortSteps(got)
		for i := range want {
			if got[i].ToolCallID != want[i].ToolCallID {
				t.Fatalf("step %d: %q, want %q", i, got[i].ToolCallID, want[i].ToolCallID)
			}
		}
	})
}
