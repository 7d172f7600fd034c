package trajectory

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// When the in-flight guards watch a run, each chat span's input messages
// are read twice: when the span arrives (the guards' SpanReader) and when
// the root does (Build). The list is the whole conversation so far, and
// scanning it is most of the cost of either read. What applyInputJSON makes
// of a list (the tool results fed back at its end) depends on its text
// alone, so it is kept, keyed by the span and a hash of the text and its
// length, in a process-wide cache of two generations, bounded by entries
// and bytes: the second read of the span's list is one hash pass (a few
// percent of a scan) and takes the entry out (the root's read is the last
// one, so the cache holds the lists of runs still in flight). The span is part of the key so that only a re-read
// of one span hits: two traces never share an entry (replayed benchmark
// traces would otherwise hit across runs, which real traffic does not).
// The hash is seeded per process; a 64-bit collision between two texts of
// the same length on the same span is the only way to a wrong answer.

const (
	// minCachedInputBytes: shorter lists are scanned each time (the hash
	// and the lock would cost about as much).
	minCachedInputBytes = 2 << 10
	// maxInputEntries and maxInputBytes bound one generation (the bytes of
	// the results kept); when the current one is full it becomes the
	// previous one and the oldest is dropped.
	maxInputEntries = 16 << 10
	maxInputBytes   = 8 << 20
)

// spanRef names the span whose input messages are read.
type spanRef struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
}

func (c *spanCtx) ref() spanRef { return spanRef{trace: c.sp.TraceID(), span: c.sp.SpanID()} }

type inputKey struct {
	spanRef
	hash uint64
	n    int
}

type inputResultCache struct {
	seed      maphash.Seed
	mu        sync.Mutex
	cur, prev map[inputKey][]ToolResult
	bytes     int
}

var inputResults = &inputResultCache{seed: maphash.MakeSeed()}

// get returns the InputResults of the message list s (valid JSON holding an
// array of objects, or not JSON at all), as applyInputFrom reads them. The
// returned slice is the caller's (an entry is handed out once).
func (c *inputResultCache) get(s string, span spanRef) []ToolResult {
	if len(s) < minCachedInputBytes {
		return scanInputResults(s)
	}
	k := inputKey{spanRef: span, hash: maphash.String(c.seed, s), n: len(s)}
	c.mu.Lock()
	res, ok := c.cur[k]
	if ok {
		delete(c.cur, k)
		c.bytes -= resultsSize(res)
	} else if res, ok = c.prev[k]; ok {
		delete(c.prev, k)
	}
	c.mu.Unlock()
	if ok {
		return res
	}
	res = scanInputResults(s)
	// The cached copy owns its strings: s may share memory with a whole
	// request.
	kept := slices.Clone(res)
	for i := range kept {
		kept[i].CallID = strings.Clone(kept[i].CallID)
		kept[i].Name = strings.Clone(kept[i].Name)
		kept[i].Content = strings.Clone(kept[i].Content)
	}
	c.mu.Lock()
	c.putLocked(k, kept)
	c.mu.Unlock()
	return res
}

// resultsSize is what an entry is counted for, roughly.
func resultsSize(res []ToolResult) int {
	size := 64
	for i := range res {
		size += 48 + len(res[i].CallID) + len(res[i].Name) + len(res[i].Content)
	}
	return size
}

func (c *inputResultCache) putLocked(k inputKey, res []ToolResult) {
	size := resultsSize(res)
	if c.cur == nil || len(c.cur) >= maxInputEntries || c.bytes+size > maxInputBytes {
		c.prev, c.cur, c.bytes = c.cur, make(map[inputKey][]ToolResult), 0
	}
	c.cur[k] = res
	c.bytes += size
}

// scanInputResults scans the message list s and reads its fed-back results
// from its end (applyInputFrom over lazyMessages).
func scanInputResults(s string) []ToolResult {
	elems, ok := arrayElements(s, nil)
	if !ok {
		return nil // not JSON: decodeMessages finds nothing either
	}
	var st Step
	applyInputFrom(&st, &lazyMessages{s: s, elems: elems, decoded: make([]message, len(elems)), state: make([]uint8, len(elems))})
	return st.InputResults
}
