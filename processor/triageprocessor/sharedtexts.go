package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Agent instrumentations repeat long texts on the spans of one run: the
// system prompt and the tool definitions on every chat span, the prompt
// of a call on its outer and its inner span, and, where a convention
// flattens the conversation into one attribute per message
// (llm.input_messages.N..., gen_ai.prompt.N...), every earlier message
// again on each later chat span. The receiver decodes each occurrence into
// a string of its own, and a buffer that holds the run until its root
// arrives holds every copy. sharedTexts lets the held spans of a trace
// share one copy of each long text: the values are immutable strings, so
// sharing changes no value, only how many copies are in memory.
//
// A span's texts are shared within its trace only: the trace ID is part of
// the key, so one run's spans never take another run's copy, and what
// sharing saves is what a run repeats, not what a replay of the same runs
// repeats. The texts of resources and scope names, which say the same for
// every run of a process (service, SDK, host, instrumentation library),
// are shared across traces. Only
// the spans of groups without their root are shared (shareHeld): a group
// that brings its trace's root is decided in the call that brought it and
// held no longer, so sharing its texts would cost time and save nothing.
//
// The table is a fixed set of slots, each remembering the last long text
// that hashed to it (a later equal text of the same trace takes that
// copy), so it is bounded in entries, and the bytes of its texts are
// bounded (sharedTextsBudget): what it keeps alive beyond the buffer's own
// spans is at most that.
type sharedTexts struct {
	seed   uint64
	shards [textShards]textShard
}

const (
	textShards = 16
	textSlots  = 256 // per shard
	// minSharedText is the shortest text shared: a shorter one shares
	// its 16-byte block with other small values (Go's tiny allocator),
	// so dropping its copy frees nothing for sure.
	minSharedText = 16
	// sharedTextsBudget is the most bytes of texts the table keeps, and
	// shardBudget a shard's part of it (a longer text is not shared).
	sharedTextsBudget = 4 << 20
	shardBudget       = sharedTextsBudget / textShards
)

type textShard struct {
	mu    sync.Mutex
	bytes int // of the slots' texts
	slots [textSlots]sharedText
}

type sharedText struct {
	h uint64
	s string
}

func newSharedTexts() *sharedTexts {
	return &sharedTexts{seed: rand.Uint64() | 1}
}

// shareHeld makes the long string values of the spans of the groups
// without a root share the copies of equal values seen earlier on spans of
// their trace (their attributes, their events' attributes, and the texts
// of array values), and returns the bytes of the values that took a copy.
func (t *sharedTexts) shareHeld(groups []*traceGroup) (shared int) {
	for _, g := range groups {
		if g.root || g.td == (ptrace.Traces{}) {
			continue
		}
		key := t.seed ^ binary.LittleEndian.Uint64(g.id[:8]) ^ binary.LittleEndian.Uint64(g.id[8:])
		rss := g.td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			// What a resource and a scope say is the same for every run of
			// a process (its service, SDK, host; the instrumentation
			// library): those texts are shared across traces (keyed by
			// the table's seed alone), the spans' own within their trace.
			shared += t.shareAttrs(rss.At(i).Resource().Attributes(), t.seed)
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				scope := sss.At(j).Scope()
				if c, n := t.shared(scope.Name(), t.seed); n > 0 {
					scope.SetName(c)
					shared += n
				}
				spans := sss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					span := spans.At(k)
					shared += t.shareAttrs(span.Attributes(), key)
					events := span.Events()
					for e := 0; e < events.Len(); e++ {
						shared += t.shareAttrs(events.At(e).Attributes(), key)
					}
				}
			}
		}
	}
	return shared
}

func (t *sharedTexts) shareAttrs(m pcommon.Map, key uint64) (shared int) {
	for _, v := range m.All() {
		switch v.Type() {
		case pcommon.ValueTypeStr:
			shared += t.shareValue(v, key)
		case pcommon.ValueTypeSlice:
			// Some conventions list texts in an array: the Vercel AI SDK's
			// ai.prompt.tools, one tool definition per element.
			vs := v.Slice()
			for i := 0; i < vs.Len(); i++ {
				if e := vs.At(i); e.Type() == pcommon.ValueTypeStr {
					shared += t.shareValue(e, key)
				}
			}
		}
	}
	return shared
}

// shareValue makes the string value v share the copy of an equal text the
// table holds for key, and returns its length when it did.
func (t *sharedTexts) shareValue(v pcommon.Value, key uint64) int {
	c, n := t.shared(v.Str(), key)
	if n > 0 {
		v.SetStr(c)
	}
	return n
}

// shared is the copy of s the table holds for key and its length when
// there is one; else s and 0 (s too short or too long to share, or the
// first of its text, which the table then holds).
func (t *sharedTexts) shared(s string, key uint64) (string, int) {
	if len(s) < minSharedText || len(s) > shardBudget {
		return s, 0
	}
	if c := t.text(s, key); unsafe.StringData(c) != unsafe.StringData(s) {
		return c, len(s)
	}
	return s, 0
}

// text is the copy of s the table holds for key, or s itself, which the
// table then holds.
func (t *sharedTexts) text(s string, key uint64) string {
	h := fingerprint(s, key)
	sh := &t.shards[h%textShards]
	sh.mu.Lock()
	e := &sh.slots[(h/textShards)%textSlots]
	if e.h == h && e.s == s {
		s = e.s
		sh.mu.Unlock()
		return s
	}
	// s takes the slot when the shard has room for it once the slot's
	// text is let go; else the slot is left empty and s is not kept (the
	// shard's other texts give way as later texts land on their slots).
	sh.bytes -= len(e.s)
	*e = sharedText{}
	if sh.bytes+len(s) <= shardBudget {
		*e = sharedText{h, s}
		sh.bytes += len(s)
	}
	sh.mu.Unlock()
	return s
}

// fingerprint hashes key with s's length and its first and last 32 bytes
// (all of s when it is shorter than 64 bytes; s is at least minSharedText
// long): a long text is not hashed whole, which would cost about what
// sizing it does. Texts that differ only in between share a fingerprint;
// the comparison of the whole text on a match tells them apart (the later
// one takes the slot).
func fingerprint(s string, key uint64) uint64 {
	const m = 0x9e3779b97f4a7c15
	n := len(s)
	h := key ^ uint64(n)*m
	// The words at 0, 8, 16, 24 from the start and from the end: for a
	// text of 16 to 31 bytes the last two of each side (0 and 8 from
	// either end; every offset is in bounds for n >= 16).
	offsets := [...]int{24, 16, 8, 0}
	first := 0
	if n < 32 {
		first = 2
	}
	for _, i := range offsets[first:] {
		h = (h ^ word(s, i)) * m
		h ^= h >> 29
		h = (h ^ word(s, n-8-i)) * m
		h ^= h >> 29
	}
	return h
}

// word is the little-endian word of s[i:i+8] (the caller checked that it
// is in s).
func word(s string, i int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), i)), 8))
}
