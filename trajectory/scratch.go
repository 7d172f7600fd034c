package trajectory

import (
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Build's per-span working memory (the nodes, the trace tree, the run
// marks) is the same few arrays on every call, sized by the spans of the
// input: it is taken from a pool and given back cleared of every reference
// into the input, so that a collector calling Build for each trace does
// not allocate it each time. Nothing Build returns points into it; a
// scratch serves one Build call at a time.

// buildScratch is the working memory of one Build call.
type buildScratch struct {
	opts    buildOptions
	inputs  inputLists
	memo    messageMemo
	nodes   []node  // the input's spans, in input order
	byTrace []node  // the same grouped by trace, when there are several
	traceOf []int32 // trace ordinal of each of nodes
	tids    []pcommon.TraceID
	// traceIdx finds a trace's ordinal when there are many traces; byID a
	// span's node within its trace (linkNodes).
	traceIdx map[pcommon.TraceID]int
	byID     map[pcommon.SpanID]int32
	// arena holds the int32 arrays of the trace being built (sc.int32s).
	arena []int32
}

// maxPooledMapEntries bounds the maps kept in a pooled scratch: clearing a
// map costs its capacity, which one huge input would leave to every later
// call.
const maxPooledMapEntries = 4096

var buildScratchPool = sync.Pool{New: func() any { return new(buildScratch) }}

// reset clears every reference into Build's input and options, so that a
// pooled scratch keeps no request alive.
func (sc *buildScratch) reset() {
	clear(sc.nodes)
	clear(sc.byTrace)
	sc.nodes, sc.byTrace = sc.nodes[:0], sc.byTrace[:0]
	sc.opts = buildOptions{}
	sc.inputs = inputLists{}
	sc.memo.reset()
	if len(sc.traceIdx) > maxPooledMapEntries {
		sc.traceIdx = nil
	}
	clear(sc.traceIdx)
	if len(sc.byID) > maxPooledMapEntries {
		sc.byID = nil
	}
}

// traceOrdinal returns the ordinal of trace tid in tids, appending it when
// it is new. A few traces are looked up in tids, more in a map.
func (sc *buildScratch) traceOrdinal(tids []pcommon.TraceID, tid pcommon.TraceID) (int, []pcommon.TraceID) {
	const linear = 8
	if len(tids) <= linear {
		for t := range tids {
			if tids[t] == tid {
				return t, tids
			}
		}
		if len(tids) < linear {
			return len(tids), append(tids, tid)
		}
		if sc.traceIdx == nil {
			sc.traceIdx = make(map[pcommon.TraceID]int)
		}
		for t := range tids {
			sc.traceIdx[tids[t]] = t
		}
	} else if t, ok := sc.traceIdx[tid]; ok {
		return t, tids
	}
	sc.traceIdx[tid] = len(tids)
	return len(tids), append(tids, tid)
}

// spanIndex returns the empty span ID map of the trace being built.
func (sc *buildScratch) spanIndex() map[pcommon.SpanID]int32 {
	if sc.byID == nil {
		sc.byID = make(map[pcommon.SpanID]int32)
	}
	clear(sc.byID)
	return sc.byID
}

// int32s returns n zeroed int32s for the trace being built (buildTrace
// empties the arena for each trace; an array taken before the arena grows
// stays valid).
func (sc *buildScratch) int32s(n int) []int32 {
	if len(sc.arena)+n > cap(sc.arena) {
		sc.arena = make([]int32, 0, max(2*cap(sc.arena), 10*n+64))
	}
	s := sc.arena[len(sc.arena) : len(sc.arena)+n]
	sc.arena = sc.arena[:len(sc.arena)+n]
	clear(s)
	return s
}
