package recovery

import (
	"crypto/rand"
	"sync"

	"github.com/google/uuid"
)

// Decision ids take their random bits from crypto/rand, as uuid.NewV7
// does, but read 512 bytes at a time (one read serves 32 ids) instead of
// 16 bytes per id: the read, not the id, was most of NewV7's cost.

// randBuffer is an io.Reader serving crypto/rand's bytes from a buffer
// refilled as it runs out; each byte is served once.
type randBuffer struct {
	mu  sync.Mutex
	buf [512]byte
	off int // bytes of buf already served; len(buf) when empty
}

func newRandBuffer() *randBuffer { return &randBuffer{off: len(randBuffer{}.buf)} }

func (r *randBuffer) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
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

// newV7 is uuid.NewV7 reading its random bits from r.
func newV7(r *randBuffer) func() (uuid.UUID, error) {
	return func() (uuid.UUID, error) { return uuid.NewV7FromReader(r) }
}
