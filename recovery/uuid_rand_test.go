package recovery

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The buffered reader serves every byte once, across refills and in reads
// of any size, and the ids made from it are distinct UUIDv7s.
func TestRandBufferIDs(t *testing.T) {
	r := newRandBuffer()
	seen := map[uuid.UUID]bool{}
	next := newV7(r)
	var prev uuid.UUID
	for i := 0; i < 3*len(r.buf)/16+5; i++ {
		before := time.Now().UnixMilli()
		id, err := next()
		after := time.Now().UnixMilli()
		if err != nil {
			t.Fatal(err)
		}
		if id.Version() != 7 || id.Variant() != uuid.RFC4122 {
			t.Fatalf("id %s: version %d variant %v", id, id.Version(), id.Variant())
		}
		// As uuid.NewV7's: the time of the call in milliseconds (past
		// it only when sequence numbers spill over), and ids increasing
		// in their time and sequence.
		sec, _ := id.Time().UnixTime()
		if ms := int64(id[0])<<40 | int64(id[1])<<32 | int64(id[2])<<24 | int64(id[3])<<16 | int64(id[4])<<8 | int64(id[5]); ms < before || ms > after+1 || sec != ms/1000 {
			t.Fatalf("id %s: time %d ms, called at %d ms", id, ms, before)
		}
		if i > 0 && bytes.Compare(id[:8], prev[:8]) <= 0 {
			t.Fatalf("id %s after %s: not increasing", id, prev)
		}
		prev = id
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

// Ids made while the clock stands still (or goes back) still increase:
// the sequence counts on past the last id's, and its overflow carries
// into the milliseconds, as uuid.NewV7's does.
func TestRandBufferIDsStoppedClock(t *testing.T) {
	r := newRandBuffer()
	const at = int64(1_800_000_000_123_456_789)
	clock := at
	r.nanos = func() int64 { return clock }
	next := newV7(r)
	var prev uuid.UUID
	for i := 0; i < 5000; i++ {
		if i == 4000 {
			clock = at - int64(time.Second) // the clock stepped back
		}
		id, err := next()
		if err != nil {
			t.Fatal(err)
		}
		if id.Version() != 7 || id.Variant() != uuid.RFC4122 {
			t.Fatalf("id %s: version %d variant %v", id, id.Version(), id.Variant())
		}
		if i > 0 && bytes.Compare(id[:8], prev[:8]) <= 0 {
			t.Fatalf("id %d %s after %s: not increasing", i, id, prev)
		}
		prev = id
	}
	// The first id: at's milliseconds and its sub-millisecond time in
	// 256 ns steps; 4999 ids later the sequence has carried past 4095.
	first := at/1e6<<12 | (at%1e6)>>8
	got := int64(0)
	for _, c := range prev[:6] {
		got = got<<8 | int64(c)
	}
	got = got<<12 | int64(prev[6]&0x0f)<<8 | int64(prev[7])
	if got != first+4999 {
		t.Fatalf("last id %s: time and sequence %d, want %d", prev, got, first+4999)
	}
}
