package classifier

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"strings"
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

// newLoopCall keeps a digest of the canonical arguments for equality and
// a bounded prefix for similarity.
func newLoopCall(name, rawArgs string, failed bool, pos, callIx int) loopCall {
	canon := canonicalArgs(rawArgs)
	return loopCall{name: name, digest: sha256.Sum256([]byte(canon)), prefix: truncate(canon, maxCanonicalLen),
		failed: failed, pos: pos, callIx: callIx}
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
}

// loopResult describes a detected loop.
type loopResult struct {
	tool    string
	count   int
	lastIx  int // call index completing the loop
	lastPos int
}

// detectLoop finds the same tool called with equal canonical arguments at
// least threshold times within window consecutive calls. A call that
// repeats the previous call right after it failed is a retry, not a loop
// step, and is not counted. With similarity > 0, consecutive calls of the
// same tool whose arguments are at least that similar also count as equal.
// Cost is linear in the number of calls: a sliding window of counts, and
// similarity compares each call only with its predecessor.
func detectLoop(calls []loopCall, threshold, window int, similarity float64) (loopResult, bool) {
	if threshold < 2 || window < threshold || len(calls) < threshold {
		return loopResult{}, false
	}
	type key struct {
		name   string
		digest [sha256.Size]byte
	}
	counts := make(map[key]int)
	counted := make([]bool, len(calls))
	simRun := 0 // length of the current run of similar consecutive calls
	for i := range calls {
		c := &calls[i]
		retry := i > 0 && calls[i-1].failed && calls[i-1].name == c.name && calls[i-1].digest == c.digest
		if i >= window && counted[i-window] {
			old := &calls[i-window]
			counts[key{old.name, old.digest}]--
		}
		if !retry && c.name != "" {
			k := key{c.name, c.digest}
			counts[k]++
			counted[i] = true
			if counts[k] >= threshold {
				return loopResult{tool: c.name, count: counts[k], lastIx: c.callIx, lastPos: c.pos}, true
			}
		}
		if similarity > 0 && similarity <= 1 {
			if i > 0 && !retry && c.name != "" && calls[i-1].name == c.name && argSimilarity(calls[i-1].prefix, c.prefix) >= similarity {
				simRun++
			} else {
				simRun = 1
			}
			if simRun >= threshold {
				return loopResult{tool: c.name, count: simRun, lastIx: c.callIx, lastPos: c.pos}, true
			}
		}
	}
	return loopResult{}, false
}

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
