// Package callgrind holds what benchmarks need to be counted right under
// valgrind's callgrind (the instruction counts BENCHMARKS.md reports).
package callgrind

// GrowStack grows the calling goroutine's stack (by about 64 KiB a level,
// depth levels) before a benchmark's timed region: a stack copy inside a
// function callgrind toggles collection on (--toggle-collect) throws off
// its tracking of the call, and the count with it. Under GOGC=off, as
// instruction counts are taken, the stack never shrinks back.
//
//go:noinline
func GrowStack(depth int) byte {
	var pad [64 << 10]byte
	pad[depth] = byte(depth)
	if depth > 0 {
		pad[0] = GrowStack(depth - 1)
	}
	return pad[0] + pad[depth]
}
