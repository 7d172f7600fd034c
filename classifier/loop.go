package classifier

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strings"
	"unsafe"

	"github.com/triage-otel/triage/trajectory"
)

const confLoop = 0.9

// maxCanonicalLen bounds the canonical arguments compared for similarity,
// so that a comparison costs a constant and detection stays linear.
// Equality compares the whole canonical form (argsIdentity).
const maxCanonicalLen = 256

// canonicalArgs returns arguments with object keys sorted and whitespace
// removed, so that {"b":1, "a":2} equals {"a":2,"b":1}. Malformed JSON is
// compared as trimmed text.
func canonicalArgs(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "{}"
	}
	if canon, ok := canonicalFast(raw); ok {
		return canon
	}
	if !mayOpenJSONValue(raw[0]) {
		// Decoding fails at the first byte: not JSON (a result's identity,
		// "result:…", is never decoded).
		return raw
	}
	return canonicalDecoded(raw)
}

// mayOpenJSONValue reports whether a JSON value may start with c (no
// white space: the text is trimmed).
func mayOpenJSONValue(c byte) bool {
	switch c {
	case '{', '[', '"', '-', 't', 'f', 'n':
		return true
	}
	return isDigit(c)
}

// canonicalDecoded is canonicalArgs by decoding into Go values and encoding
// them again, for what canonicalFast leaves.
func canonicalDecoded(raw string) string {
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

// maskVolatile replaces by "#" the values that differ between two answers
// to the same question: ISO timestamps, times of day, UUIDs, long hex or
// numeric ids. It is
//
//	regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?` +
//		`|\b\d{1,2}:\d{2}(?::\d{2})?\b` +
//		`|\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b` +
//		`|\b[0-9a-fA-F]{16,}\b|\b\d{10,}\b`).ReplaceAllString(s, "#")
//
// (volatileValue in the tests, which compare the two) matched by hand: the
// expression ran at every position of every result that identifies a call.
// Like it, the scan takes the leftmost match, the first alternative that
// matches there, and goes on after it.
func maskVolatile(s string) string {
	if !mayHoldVolatile(s) {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		// Every volatile value starts with a hex digit, and all but a
		// timestamp (which starts with a digit) at a word boundary: a
		// letter after a word character starts none.
		if c := s[i]; !isHexByte(c) || !isDigit(c) && i > 0 && isWordByte(s[i-1]) {
			i++
			continue
		}
		e := volatileEnd(s, i)
		if e < 0 {
			i++
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:i])
		b.WriteByte('#')
		i, last = e, e
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// volatileEnd is the end of the volatile value starting at i, or -1.
func volatileEnd(s string, i int) int {
	if e := timestampEnd(s, i); e >= 0 {
		return e
	}
	if !wordBoundary(s, i) {
		return -1
	}
	if e := timeOfDayEnd(s, i); e >= 0 {
		return e
	}
	if e := uuidEnd(s, i); e >= 0 {
		return e
	}
	// \b[0-9a-fA-F]{16,}\b and \b\d{10,}\b: a shorter run than the longest
	// would end between two word characters.
	if h := runEnd(s, i, isHexByte); h-i >= 16 && wordBoundary(s, h) {
		return h
	}
	if d := runEnd(s, i, isDigit); d-i >= 10 && wordBoundary(s, d) {
		return d
	}
	return -1
}

// timestampEnd matches \d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?
// at i: each optional part is taken when it is there (nothing after it can
// fail).
func timestampEnd(s string, i int) int {
	if !digitsAt(s, i, 4) || !byteIs(s, i+4, '-') || !digitsAt(s, i+5, 2) || !byteIs(s, i+7, '-') || !digitsAt(s, i+8, 2) ||
		!(byteIs(s, i+10, 'T') || byteIs(s, i+10, ' ')) || !digitsAt(s, i+11, 2) || !byteIs(s, i+13, ':') || !digitsAt(s, i+14, 2) {
		return -1
	}
	e := i + 16
	if byteIs(s, e, ':') && digitsAt(s, e+1, 2) {
		e += 3
		if byteIs(s, e, '.') && digitsAt(s, e+1, 1) {
			e = runEnd(s, e+1, isDigit)
		}
	}
	switch {
	case byteIs(s, e, 'Z'):
		e++
	case (byteIs(s, e, '+') || byteIs(s, e, '-')) && digitsAt(s, e+1, 2):
		if byteIs(s, e+3, ':') && digitsAt(s, e+4, 2) {
			e += 6
		} else if digitsAt(s, e+3, 2) {
			e += 5
		}
	}
	return e
}

// timeOfDayEnd matches \d{1,2}:\d{2}(?::\d{2})?\b at i (after a word
// boundary), in the expression's order: two digits before one, the
// seconds taken when a boundary follows them.
func timeOfDayEnd(s string, i int) int {
	for _, n := range [...]int{2, 1} {
		j := i + n
		if !digitsAt(s, i, n) || !byteIs(s, j, ':') || !digitsAt(s, j+1, 2) {
			continue
		}
		j += 3
		if byteIs(s, j, ':') && digitsAt(s, j+1, 2) && wordBoundary(s, j+3) {
			return j + 3
		}
		if wordBoundary(s, j) {
			return j
		}
	}
	return -1
}

// uuidEnd matches [0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b at i.
func uuidEnd(s string, i int) int {
	e := i
	for k, n := range [...]int{8, 4, 4, 4, 12} {
		if k > 0 {
			if !byteIs(s, e, '-') {
				return -1
			}
			e++
		}
		if runEnd(s, e, isHexByte)-e < n {
			return -1
		}
		e += n
	}
	if !wordBoundary(s, e) {
		return -1
	}
	return e
}

func byteIs(s string, i int, c byte) bool { return i < len(s) && s[i] == c }

// digitsAt reports whether s holds n ASCII digits at i.
func digitsAt(s string, i, n int) bool {
	if i+n > len(s) {
		return false
	}
	for k := i; k < i+n; k++ {
		if !isDigit(s[k]) {
			return false
		}
	}
	return true
}

// runEnd is the end of the run of bytes in class starting at i.
func runEnd(s string, i int, in func(byte) bool) int {
	for i < len(s) && in(s[i]) {
		i++
	}
	return i
}

func isHexByte(c byte) bool { return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F') }

// wordBoundary is regexp's \b at i: an ASCII word character on one side
// only (the bytes of other runes are not word characters).
func wordBoundary(s string, i int) bool {
	before := i > 0 && isWordByte(s[i-1])
	after := i < len(s) && isWordByte(s[i])
	return before != after
}

// mayHoldVolatile is a necessary condition for a volatile value: every
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

// newLoopCall keeps the identity of the canonical arguments for equality
// and a bounded prefix for similarity.
func newLoopCall(name, rawArgs string, failed bool, pos, callIx int) loopCall {
	canon := canonicalArgs(rawArgs)
	return loopCall{name: name, args: identityOf(canon),
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
	args   argsIdentity
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
	r, ok, _ := detectLoopIn(nil, calls, threshold, window, similarity)
	return r, ok
}

// detectLoopIn is detectLoop with ring as room for the detector's ring
// (emptied; it is returned with what it grew to).
func detectLoopIn(ring []loopSlot, calls []loopCall, threshold, window int, similarity float64) (loopResult, bool, []loopSlot) {
	if threshold < 2 || window < threshold || len(calls) < threshold {
		return loopResult{}, false, ring
	}
	d := makeLoopDetector(threshold, window, similarity)
	clear(ring[:cap(ring)])
	d.ring = slices.Grow(ring[:0], min(window, len(calls))) // the ring never grows
	for i := range calls {
		if r, ok := d.add(calls[i]); ok {
			return r, true, d.ring
		}
		if calls[i].failed {
			d.lastFailed()
		}
	}
	return loopResult{}, false, d.ring
}

// loopKey identifies equal calls.
type loopKey struct {
	name string
	args argsIdentity
}

// argsIdentity identifies canonical arguments for equality: arguments up
// to maxCanonicalLen bytes (nearly all) by their text, compared exactly
// and without hashing them; longer ones by their bounded prefix and their
// SHA-256 digest, so that the detector's state stays bounded. The prefix
// is also what similarity compares. text is the canonical text, or for
// long arguments the prefix followed by the digest's 32 bytes (one string:
// a ring slot is 48 B, not 64, and a long identity keeps its own copy of
// the prefix, not the whole canonical text the prefix was cut from).
type argsIdentity struct {
	text string
	long bool
}

func identityOf(canon string) argsIdentity {
	if len(canon) <= maxCanonicalLen {
		return argsIdentity{text: canon}
	}
	// The text's bytes, not a copy (up to maxResultIdentity of a result):
	// Sum256 only reads them.
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(canon), len(canon)))
	return argsIdentity{text: canon[:maxCanonicalLen] + string(sum[:]), long: true}
}

// prefix is the bounded text of the arguments (what similarity compares).
func (a argsIdentity) prefix() string {
	if a.long {
		return a.text[:len(a.text)-sha256.Size]
	}
	return a.text
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
// bounded by window: a ring of the last window calls (with, for a window
// wider than loopRingScan, their counts by key); similarity compares each
// call only with its predecessor. The ring grows to the window as calls
// are added (a run of few calls keeps few slots).
type loopDetector struct {
	threshold, window int
	similarity        float64
	// counts are the counted calls of the ring by key, kept only for a
	// window wider than loopRingScan (a narrower ring is counted by
	// scanning it: the in-flight guards keep a detector per held run, and
	// a map costs more than the ring).
	counts     map[loopKey]int
	ring       []loopSlot
	n          int // calls added
	prev       loopCall
	prevFailed bool
	simRun     int // length of the current run of similar consecutive calls
}

// loopRingScan is the widest window whose ring is counted by scanning it.
const loopRingScan = 32

func makeLoopDetector(threshold, window int, similarity float64) loopDetector {
	d := loopDetector{threshold: threshold, window: window, similarity: similarity}
	if window > loopRingScan {
		d.counts = make(map[loopKey]int)
	}
	return d
}

// count adds delta to the count of key k (when counts are kept) and
// returns the counted calls of the ring with key k.
func (d *loopDetector) count(k loopKey, delta int) int {
	if d.counts != nil {
		d.counts[k] += delta
		n := d.counts[k]
		if n <= 0 {
			delete(d.counts, k)
		}
		return n
	}
	n := 0
	for i := range d.ring {
		if d.ring[i].counted && d.ring[i].key == k {
			n++
		}
	}
	return n
}

// lastFailed marks the most recently added call as failed (its failure may
// become known after it was added, e.g. from the result fed back to the
// model).
func (d *loopDetector) lastFailed() { d.prevFailed = true }

// minRing is the room the ring is first given.
const minRing = 2

// grow adds a slot to the ring (still narrower than the window), doubling
// its room up to the window when it is full.
func (d *loopDetector) grow() {
	if len(d.ring) < cap(d.ring) {
		d.ring = d.ring[:len(d.ring)+1]
		return
	}
	ring := make([]loopSlot, len(d.ring)+1, min(max(2*cap(d.ring), minRing), d.window))
	copy(ring, d.ring)
	d.ring = ring
}

// add appends the next call and reports the loop it completes, if any.
func (d *loopDetector) add(c loopCall) (loopResult, bool) {
	if d.threshold < 2 || d.window < d.threshold {
		return loopResult{}, false
	}
	i := d.n
	if i == len(d.ring) && i < d.window {
		d.grow()
	}
	retry := i > 0 && d.prevFailed && d.prev.name == c.name && d.prev.args == c.args
	slot := &d.ring[i%d.window]
	if i >= d.window && slot.counted {
		slot.counted = false
		d.count(slot.key, -1)
	}
	*slot = loopSlot{}
	var res loopResult
	found := false
	if !retry && !c.unrecorded && (c.name != "" || c.byResult) {
		k := loopKey{c.name, c.args}
		*slot = loopSlot{key: k, counted: true}
		if n := d.count(k, 1); n >= d.threshold {
			res, found = loopResult{tool: c.name, count: n, lastIx: c.callIx, lastPos: c.pos}, true
		}
	}
	if !found && d.similarity > 0 && d.similarity <= 1 {
		if i > 0 && !retry && !c.unrecorded && !d.prev.unrecorded && (c.name != "" || c.byResult) && d.prev.name == c.name && argSimilarity(d.prev.args.prefix(), c.args.prefix()) >= d.similarity {
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
	d loopDetector
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
	return &LoopDetector{d: makeLoopDetector(c.opts.LoopThreshold, c.opts.LoopWindow, c.opts.LoopSimilarity)}
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

// Bytes bounds the heap the detector holds: its state and its ring of the
// window's calls (with their counts for a wide window), as much as the
// ring holds once it has grown to the window. It does not grow with the
// calls added.
func (l *LoopDetector) Bytes() int {
	slots := max(l.d.window, 1)
	n := int(unsafe.Sizeof(*l)) + slots*int(unsafe.Sizeof(loopSlot{}))
	if l.d.counts != nil {
		n += slots * int(unsafe.Sizeof(loopSlot{})+8)
	}
	return n
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
