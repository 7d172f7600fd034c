package recovery

import (
	"crypto/rand"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Decision ids take their random bits from crypto/rand, as uuid.NewV7
// does, but read 512 bytes at a time (one read serves 64 ids: an id keeps
// 62 random bits) instead of 16 bytes per id: the read, not the id, was
// most of NewV7's cost.

// randBuffer is an io.Reader serving crypto/rand's bytes from a buffer
// refilled as it runs out; each byte is served once.
type randBuffer struct {
	mu  sync.Mutex
	buf [512]byte
	off int // bytes of buf already served; len(buf) when empty
	// lastV7 is the time and sequence (milliseconds<<12 | sequence) of
	// the last UUIDv7 made from the buffer (newV7).
	lastV7 int64
	// nanos is the clock of the ids (Unix nanoseconds): time.Now's.
	nanos func() int64
}

func newRandBuffer() *randBuffer {
	return &randBuffer{off: len(randBuffer{}.buf), nanos: func() int64 { return time.Now().UnixNano() }}
}

func (r *randBuffer) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.take(p)
}

// take is Read with r.mu held.
func (r *randBuffer) take(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if r.off == len(r.buf) {
			if _, err := rand.Read(r.buf[:]); err != nil {
				return n, err
			}
			r.off = 0
		}
		c := copy(p[n:], r.buf[r.off:])
		clear(r.buf[r.off : r.off+c]) // a served byte is not kept
		r.off += c
		n += c
	}
	return n, nil
}

// newV7 makes UUIDv7s as uuid.NewV7 does, its random bits read from r.
// (uuid.NewV7FromReader reads them through an io.Reader, which puts each
// id on the heap: an allocation per decision.)
func newV7(r *randBuffer) func() (uuid.UUID, error) {
	return r.newV7
}

// newV7 is a UUIDv7 laid out as uuid.NewV7 lays it out: the Unix time in
// milliseconds (48 bits), the version, a 12-bit sequence (the
// sub-millisecond time in 256 ns steps, one past the last id's when the
// clock has not moved past it, so ids from r are increasing), the RFC 4122
// variant and 62 random bits.
func (r *randBuffer) newV7() (uuid.UUID, error) {
	var id uuid.UUID
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.take(id[8:]); err != nil {
		return uuid.Nil, err
	}
	nano := r.nanos()
	milli := nano / int64(time.Millisecond)
	now := milli<<12 + (nano-milli*int64(time.Millisecond))>>8
	if now <= r.lastV7 {
		now = r.lastV7 + 1
	}
	r.lastV7 = now
	milli, seq := now>>12, now&0xfff
	id[0] = byte(milli >> 40)
	id[1] = byte(milli >> 32)
	id[2] = byte(milli >> 24)
	id[3] = byte(milli >> 16)
	id[4] = byte(milli >> 8)
	id[5] = byte(milli)
	id[6] = 0x70 | byte(seq>>8)&0x0f
	id[7] = byte(seq)
	id[8] = id[8]&0x3f | 0x80 // variant RFC 4122
	return id, nil
}
