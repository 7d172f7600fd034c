package recovery

import (
	"bytes"
	"testing"

	"github.com/google/uuid"
)

// The buffered reader serves every byte once, across refills and in reads
// of any size, and the ids made from it are distinct UUIDv7s.
func TestRandBufferIDs(t *testing.T) {
	r := newRandBuffer()
	seen := map[uuid.UUID]bool{}
	next := newV7(r)
	for i := 0; i < 3*len(r.buf)/16+5; i++ {
		id, err := next()
		if err != nil {
			t.Fatal(err)
		}
		if id.Version() != 7 || id.Variant() != uuid.RFC4122 {
			t.Fatalf("id %s: version %d variant %v", id, id.Version(), id.Variant())
		}
		if seen[id] {
			t.Fatalf("id %s repeated after %d ids", id, i)
		}
		seen[id] = true
	}
	// Reads across a refill: no 16-byte window of what was served repeats.
	for _, size := range []int{1, 7, 16, 500, 513, 1500} {
		p := make([]byte, size)
		if n, err := r.Read(p); n != size || err != nil {
			t.Fatalf("read %d: %d, %v", size, n, err)
		}
		if size >= 32 && bytes.Equal(p[:16], p[16:32]) {
			t.Fatalf("read %d: bytes repeat", size)
		}
		chunks := map[string]bool{}
		for i := 0; i+16 <= len(p); i += 16 {
			if chunks[string(p[i:i+16])] {
				t.Fatalf("read %d: a 16-byte chunk repeats", size)
			}
			chunks[string(p[i:i+16])] = true
		}
	}
}
