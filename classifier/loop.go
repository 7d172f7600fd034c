package classifier

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/triage-otel/triage/trajectory"
)

const confLoop = 0.9

// maxCanonicalLen bounds the canonical arguments compared for similarity,
// so that a comparison costs a constant and detection stays linear.
// Equality compares a digest of the whole canonical form.
const maxCanonicalLen = 256

// canonicalArgs returns arguments with object keys sorted and whitespace
// removed, so that {"b":1, "a":2} equals {"a":2,"b":1}. Malformed JSON is
// compared as trimmed text.
func canonicalArgs(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "{}"
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return raw
	}
	if s, ok := v.(string); ok {
		// Arguments encoded twice ("{\"city\":\"Paris\"}").
		d2 := json.NewDecoder(strings.NewReader(s))
		d2.UseNumber()
		var inner any
		if d2.Decode(&inner) == nil {
			v = inner
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps are encoded with sorted keys
		return raw
	}
	return strings.TrimSpace(buf.String())
}

// loopArgs is what identifies a call for the loop detector: its
// arguments, or, when the instrumentation recorded none, the result it got
// (with timestamps, UUIDs and other volatile values masked): equal results
// of the same tool are the same question asked again.
func (c *call) loopArgs() string { return loopIdentity(c.args, c.result) }

func loopIdentity(args string, result *trajectory.ToolResult) string {
	if args != "" || result == nil || result.Content == "" {
		return args
	}
	return resultIdentity + maskVolatile(truncate(result.Content, maxResultIdentity))
}

// resultIdentity prefixes a call identity taken from the call's result.
const resultIdentity = "result:"

// maxResultIdentity bounds the part of a result that identifies a call.
const maxResultIdentity = 4096

// volatileValue matches values that differ between two answers to the
// same question: ISO timestamps, times of day, UUIDs, long hex or numeric
// ids.
var volatileValue = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?|\b\d{1,2}:\d{2}(?::\d{2})?\b|\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b|\b[0-9a-fA-F]{16,}\b|\b\d{10,}\b`)

func maskVolatile(s string) string {
	if !mayHoldVolatile(s) {
		return s
	}
	return volatileValue.ReplaceAllString(s, "#")
}

// mayHoldVolatile is a necessary condition for a volatileValue match: every
// alternative holds a digit or, for a UUID or long hex id written in
// letters only, a run of at least eight hex digits.
func mayHoldVolatile(s string) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			return true
		case 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
			if run++; run >= 8 {
				return true
			}
		default:
			run = 0
		}
	}
	return false
}

// newLoopCall keeps a digest of the canonical arguments for equality and
// a bounded prefix for similarity.
func newLoopCall(name, rawArgs string, failed bool, pos, callIx int) loopCall {
	canon := canonicalArgs(rawArgs)
	return loopCall{name: name, digest: sha256.Sum256([]byte(canon)), prefix: truncate(canon, maxCanonicalLen),
		failed: failed, pos: pos, callIx: callIx, unrecorded: strings.TrimSpace(rawArgs) == ""}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// loopCall is one tool call as the loop detector sees it.
type loopCall struct {
	name   string
	digest [sha256.Size]byte
	prefix string
	failed bool
	pos    int // order key in the run
	callIx int // index in the classifier's call list
	// unnamed calls count only when identified by their result: a call
	// known by neither name nor arguments says nothing about repetition.
	byResult bool
	// unrecorded: neither arguments nor a result were recorded (content
	// capture off). Equal names are not equal calls, so such a call is
	// never a loop step; see loopUndecidable.
	unrecorded bool
}

// loopResult describes a detected loop.
type loopResult struct {
	tool    string
	count   int
	lastIx  int // call index completing the loop
	lastPos int
}

// detectLoop finds the same tool called with equal canonical arguments at
// least threshold times within window consecutive calls (see loopDetector).
// Cost is linear in the number of calls.
func detectLoop(calls []loopCall, threshold, window int, similarity float64) (loopResult, bool) {
	if threshold < 2 || window < threshold || len(calls) < threshold {
		return loopResult{}, false
	}
	d := newLoopDetector(threshold, window, similarity)
	for i := range calls {
		if r, ok := d.add(calls[i]); ok {
			return r, true
		}
		if calls[i].failed {
			d.lastFailed()
		}
	}
	return loopResult{}, false
}

// loopKey identifies equal calls.
type loopKey struct {
	name   string
	digest [sha256.Size]byte
}

// loopSlot is one call of the window.
type loopSlot struct {
	key     loopKey
	counted bool
}

// loopDetector is the loop rule over a stream of tool calls in run order:
// the same tool called with equal canonical arguments at least threshold
// times within window consecutive calls is a loop. A call that repeats the
// previous call right after it failed is a retry, not a loop step, and is
// not counted. With similarity > 0, consecutive calls of the same tool whose
// arguments are at least that similar also count as equal. State is
// bounded by window: a ring of the last window calls and their counts;
// similarity compares each call only with its predecessor.
type loopDetector struct {
	threshold, window int
	similarity        float64
	counts            map[loopKey]int
	ring              []loopSlot
	n                 int // calls added
	prev              loopCall
	prevFailed        bool
	simRun            int // length of the current run of similar consecutive calls
}

func newLoopDetector(threshold, window int, similarity float64) *loopDetector {
	return &loopDetector{threshold: threshold, window: window, similarity: similarity,
		counts: make(map[loopKey]int), ring: make([]loopSlot, max(window, 1))}
}

// lastFailed marks the most recently added call as failed (its failure may
// become known after it was added, e.g. from the result fed back to the
// model).
func (d *loopDetector) lastFailed() { d.prevFailed = true }

// add appends the next call and reports the loop it completes, if any.
func (d *loopDetector) add(c loopCall) (loopResult, bool) {
	if d.threshold < 2 || d.window < d.threshold {
		return loopResult{}, false
	}
	i := d.n
	retry := i > 0 && d.prevFailed && d.prev.name == c.name && d.prev.digest == c.digest
	slot := &d.ring[i%d.window]
	if i >= d.window && slot.counted {
		d.counts[slot.key]--
		if d.counts[slot.key] <= 0 {
			delete(d.counts, slot.key)
		}
	}
	*slot = loopSlot{}
	var res loopResult
	found := false
	if !retry && !c.unrecorded && (c.name != "" || c.byResult) {
		k := loopKey{c.name, c.digest}
		d.counts[k]++
		*slot = loopSlot{key: k, counted: true}
		if n := d.counts[k]; n >= d.threshold {
			res, found = loopResult{tool: c.name, count: n, lastIx: c.callIx, lastPos: c.pos}, true
		}
	}
	if !found && d.similarity > 0 && d.similarity <= 1 {
		if i > 0 && !retry && !c.unrecorded && !d.prev.unrecorded && (c.name != "" || c.byResult) && d.prev.name == c.name && argSimilarity(d.prev.prefix, c.prefix) >= d.similarity {
			d.simRun++
		} else {
			d.simRun = 1
		}
		if d.simRun >= d.threshold {
			res, found = loopResult{tool: c.name, count: d.simRun, lastIx: c.callIx, lastPos: c.pos}, true
		}
	}
	d.prev, d.prevFailed = c, c.failed
	d.n++
	return res, found
}

// LoopDetector applies the classifier's loop rule (its LoopThreshold,
// LoopWindow and LoopSimilarity) to tool calls as they happen, for callers
// that see a run while it is still going. Classify applies the same rule
// to the whole run: fed the calls of a run in order, a LoopDetector finds
// the loop at the same call. Not safe for concurrent use.
type LoopDetector struct {
	d *loopDetector
	n int
}

// Loop is a loop a LoopDetector found.
type Loop struct {
	Tool       string
	Count      int // equal (or similar) calls in the window
	Window     int // the window, in calls
	Confidence float64
}

// NewLoopDetector returns a LoopDetector with the classifier's loop
// settings.
func (c *Classifier) NewLoopDetector() *LoopDetector {
	return &LoopDetector{d: newLoopDetector(c.opts.LoopThreshold, c.opts.LoopWindow, c.opts.LoopSimilarity)}
}

// Add appends the next tool call of the run — its arguments and the
// result it got (nil when none was seen), which identifies a call whose
// arguments were not recorded; failed: already known to have failed — and
// reports whether it completes a loop.
func (l *LoopDetector) Add(tool, arguments string, result *trajectory.ToolResult, failed bool) (Loop, bool) {
	id := loopIdentity(arguments, result)
	lc := newLoopCall(tool, id, false, l.n, l.n)
	lc.byResult = strings.HasPrefix(id, resultIdentity)
	r, ok := l.d.add(lc)
	if failed {
		l.d.lastFailed()
	}
	l.n++
	if !ok {
		return Loop{}, false
	}
	return Loop{Tool: r.tool, Count: r.count, Window: l.d.window, Confidence: confLoop}, true
}

// LastFailed records that the most recently added call failed, when that
// became known after Add (a retry of it is then not a loop step).
func (l *LoopDetector) LastFailed() { l.d.lastFailed() }

// argSimilarity is 1 - normalised Levenshtein distance of two bounded
// strings.
func argSimilarity(a, b string) float64 {
	if a == b {
		return 1
	}
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	d := prev[len(rb)]
	return 1 - float64(d)/float64(max(len(ra), len(rb)))
}
