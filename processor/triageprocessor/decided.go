package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/xpdata"
	"go.uber.org/zap"

	"github.com/triage-otel/triage/trajectory"
	"github.com/triage-otel/triage/wire"
)

// attrLate marks a span annotated after its trace was decided: the run
// annotations it carries repeat those of spans already forwarded (the
// stand-ins of a root that had not arrived), so the triage connector
// neither counts the run nor emits its decision again.
const attrLate = wire.AttrLate

// Limits of processor_triage_decision_cache_evicted.
const (
	cacheLimitCount = "decision_cache_size"
	cacheLimitBytes = "decision_cache_bytes"
)

// decided is what the decision cache keeps of a decided trace: only what a
// span arriving after the decision can need. Spans that were part of the
// decision were annotated and forwarded with it; a later copy of one of them
// is a retransmission and is forwarded as it is (annotating it again would
// count its incident twice downstream). What can still arrive for the first
// time is the root of a run decided without it, which gets the run's
// verdict and decision.
type decided struct {
	// roots holds the annotations of run roots that had not arrived, by
	// their span ID (the parent the run's top spans share). Usually one; a
	// slice is smaller than a map and late spans are rare.
	roots []missingRoot
	// lateRoot annotates any other parentless span of the trace arriving
	// late, when the trace was decided without a root.
	lateRoot []annotation
	// cutBy is the per-trace limit that forced the decision, if any: later
	// spans of the trace are counted as cut.
	cutBy string
}

// nothingKept is the decision of every trace whose late spans need nothing
// from it (all its runs' roots were there, no limit cut it): nearly every
// trace. It is shared, so the cache holds no decided struct of its own
// for them. A decided value is never modified once made.
var nothingKept = &decided{}

// keep returns d as the decision cache holds it: nothingKept when it keeps
// nothing, else a copy of its own.
func keep(d decided) *decided {
	if len(d.roots) == 0 && len(d.lateRoot) == 0 && d.cutBy == "" {
		return nothingKept
	}
	kept := new(decided)
	*kept = d
	return kept
}

// cachedDecision is a decision cache entry.
type cachedDecision struct {
	d *decided
	// at is when the trace was decided (Unix nanoseconds).
	at int64
	// size is what the entry is accounted for in decision_cache_bytes.
	size int
}

// missingRoot is the span ID of a run root that had not arrived when its
// trace was decided, and the annotations it gets if it arrives.
type missingRoot struct {
	id   pcommon.SpanID
	anns []annotation
}

// rootAnnotations returns the annotations kept for a missing run root.
func (d *decided) rootAnnotations(id pcommon.SpanID) ([]annotation, bool) {
	for i := range d.roots {
		if d.roots[i].id == id {
			return d.roots[i].anns, true
		}
	}
	return nil, false
}

// annotateLate sets the decision's annotations on a span that arrived after
// it, if the span is a run root that was missing.
func (d *decided) annotateLate(span ptrace.Span) {
	anns, ok := d.rootAnnotations(span.SpanID())
	if !ok {
		if !span.ParentSpanID().IsEmpty() || len(d.lateRoot) == 0 {
			return
		}
		anns = d.lateRoot
	}
	attrs := span.Attributes()
	for _, a := range anns {
		a.apply(attrs)
	}
	attrs.PutBool(attrLate, true)
	var b xpdata.MapBuilder
	addEvaluations(&b, span, anns)
}

func (d *decided) annotateLateAll(td ptrace.Traces) {
	if len(d.roots) == 0 && len(d.lateRoot) == 0 {
		return
	}
	trajectory.ForEachSpan(td, d.annotateLate)
}

// Accounted sizes, in bytes. decidedEntryBytes is one cache entry that
// keeps nothing (nothingKept): the LRU's slot and map slot, with the key;
// an entry that keeps annotations has a decided struct of its own too
// (measured by TestDecidedCacheBytesPerEntry; README "Sizing").
const (
	decidedEntryBytes  = 76
	decidedStructBytes = int(unsafe.Sizeof(decided{}))
	missingRootBytes   = int(unsafe.Sizeof(missingRoot{}))
	annotationBytes    = int(unsafe.Sizeof(annotation{}))
	// stringBytes is the allocation overhead of a string kept by an
	// annotation (its bytes are counted by length).
	stringBytes = 16
)

// cacheSize is what d's cache entry is accounted for: the entry plus the
// annotations it keeps. Strings are counted by length (constant ones too,
// so this over-counts a little); a slice shared by lateRoot and a root is
// counted once.
func (d *decided) cacheSize() int {
	n := decidedEntryBytes
	if d != nothingKept {
		n += decidedStructBytes
	}
	var counted []*annotation
	add := func(anns []annotation) {
		if cap(anns) == 0 {
			return
		}
		first := &anns[:1][0]
		for _, c := range counted {
			if c == first {
				return
			}
		}
		counted = append(counted, first)
		n += cap(anns) * annotationBytes
		for i := range anns {
			if anns[i].str != "" {
				n += stringBytes + len(anns[i].str)
			}
			if e := anns[i].eval; e != nil {
				n += evaluationBytes + len(e.label) + len(e.explanation)
			}
		}
	}
	n += cap(d.roots) * missingRootBytes
	for i := range d.roots {
		add(d.roots[i].anns)
	}
	add(d.lateRoot)
	return n
}

// decidedCache remembers decided traces so that their late spans are
// forwarded at once (and a missing root annotated) instead of opening a new
// trace that would be decided again. It is an LRU bounded by entries
// (decision_cache_size) and by accounted bytes (decision_cache_bytes).
// Callers hold the processor's lock.
type decidedCache struct {
	lru      *traceLRU[cachedDecision]
	bytes    int
	maxBytes int
	// young is the age under which an evicted entry means late spans may
	// open new traces (decision_wait: a missing root typically comes that
	// late).
	young time.Duration

	now      int64  // time of the add in progress, for the eviction callback
	evicting string // the limit the eviction in progress enforces
	stats    decidedStats
}

// decidedStats is what changed since the last takeStats, recorded outside
// the processor's lock.
type decidedStats struct {
	evicted    map[string]int64
	young      int64
	bytesDelta int64
}

func newDecidedCache(size, maxBytes int, young time.Duration) (*decidedCache, error) {
	c := &decidedCache{maxBytes: maxBytes, young: young}
	lru, err := newTraceLRU(size, c.onEvict)
	if err != nil {
		return nil, fmt.Errorf("decision_cache_size: %w", err)
	}
	c.lru = lru
	return c, nil
}

func (c *decidedCache) onEvict(_ pcommon.TraceID, d cachedDecision) {
	c.bytes -= d.size
	c.stats.bytesDelta -= int64(d.size)
	if c.stats.evicted == nil {
		c.stats.evicted = make(map[string]int64, 2)
	}
	c.stats.evicted[c.evicting]++
	if c.now-d.at < int64(c.young) {
		c.stats.young++
	}
}

func (c *decidedCache) get(id pcommon.TraceID) (*decided, bool) {
	e, ok := c.lru.Get(id)
	return e.d, ok
}

func (c *decidedCache) len() int { return c.lru.Len() }

// add remembers a decided trace, evicting the least recently used entries
// beyond either bound. The newest entry always stays.
func (c *decidedCache) add(id pcommon.TraceID, d *decided, now time.Time) {
	e := cachedDecision{d: d, at: now.UnixNano(), size: d.cacheSize()}
	c.now = e.at
	if old, ok := c.lru.Peek(id); ok {
		c.bytes -= old.size
		c.stats.bytesDelta -= int64(old.size)
	}
	c.bytes += e.size
	c.stats.bytesDelta += int64(e.size)
	c.evicting = cacheLimitCount
	c.lru.Add(id, e)
	c.evicting = cacheLimitBytes
	for c.bytes > c.maxBytes && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
}

func (c *decidedCache) takeStats() decidedStats {
	s := c.stats
	c.stats = decidedStats{}
	return s
}

// recordDecidedCache records what the cache did since the last call.
func (p *triageProcessor) recordDecidedCache(ctx context.Context, s decidedStats) {
	if s.bytesDelta != 0 {
		p.tb.ProcessorTriageDecisionCacheBytes.Add(ctx, s.bytesDelta)
	}
	for limit, n := range s.evicted {
		p.tb.ProcessorTriageDecisionCacheEvicted.Add(ctx, n, adds1("cache_limit", limit)...)
	}
	if s.young > 0 {
		p.warnCacheEvicted.Log(p.logger, s.young,
			zap.Int("decision_cache_size", p.cfg.DecisionCacheSize), zap.Int("decision_cache_bytes", p.cfg.DecisionCacheBytes),
			zap.Duration("decided_less_than", p.cfg.DecisionWait))
	}
}
