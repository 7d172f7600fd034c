package trajectory

import (
	"fmt"
	"hash/maphash"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// longHistory is a message list long enough to be cached, ending with the
// results of the last turn's calls.
func longHistory(turns int, last string) string {
	var b strings.Builder
	b.WriteString(`[{"role":"user","content":"q"}`)
	for i := range turns {
		fmt.Fprintf(&b, `,{"role":"assistant","tool_calls":[{"id":"c%d","function":{"name":"f","arguments":"{\"i\":%d}"}}]},{"role":"tool","tool_call_id":"c%d","content":"result %d %s"}`, i, i, i, i, strings.Repeat("x", 40))
	}
	fmt.Fprintf(&b, `,{"role":"tool","tool_call_id":"c%d","content":%q}]`, turns-1, last)
	return b.String()
}

func TestInputResultsCachedReadsMatchAndAreTheCallers(t *testing.T) {
	s := longHistory(50, "late answer")
	require.GreaterOrEqual(t, len(s), minCachedInputBytes)
	var whole Step
	applyInput(&whole, decodeMessages(s))
	require.Len(t, whole.InputResults, 2)
	ref := spanRef{trace: pcommon.TraceID{1}, span: pcommon.SpanID{2}}
	for range 3 { // the first read scans, the second hits the cache, the third scans again
		var st Step
		applyInputJSON(&st, s, ref)
		assert.Equal(t, whole.InputResults, st.InputResults)
		// What a caller does with its results does not reach the cache.
		st.InputResults[0].Content = "changed"
		st.InputResults = append(st.InputResults[:1], ToolResult{Name: "added"})
	}
	// The same list on another span is read again, as is a list differing
	// in one byte.
	var again Step
	applyInputJSON(&again, s, spanRef{trace: pcommon.TraceID{1}, span: pcommon.SpanID{3}})
	assert.Equal(t, whole.InputResults, again.InputResults)
	other := strings.Replace(s, "late answer", "late answeR", 1)
	var st Step
	applyInputJSON(&st, other, ref)
	assert.Equal(t, "late answeR", st.InputResults[1].Content)
	// Not JSON, cached or not, yields nothing.
	bad := s[:len(s)-1]
	for range 2 {
		var st Step
		applyInputJSON(&st, bad, ref)
		assert.Empty(t, st.InputResults)
	}
}

func TestInputResultCacheGenerationsAreBounded(t *testing.T) {
	c := &inputResultCache{}
	for i := range maxInputEntries + 1 {
		c.putLocked(inputKey{hash: uint64(i), n: 1}, nil)
	}
	assert.Len(t, c.cur, 1)
	assert.Len(t, c.prev, maxInputEntries)
	big := []ToolResult{{Content: strings.Repeat("r", maxInputBytes/2)}}
	c.putLocked(inputKey{hash: 1 << 40, n: 1}, big)
	c.putLocked(inputKey{hash: 1<<40 + 1, n: 1}, big)
	assert.Len(t, c.cur, 1, "a generation holds at most maxInputBytes of results")
	assert.LessOrEqual(t, c.bytes, maxInputBytes)
}

func TestInputResultCacheHandsAnEntryOutOnce(t *testing.T) {
	c := &inputResultCache{seed: maphash.MakeSeed()}
	s := longHistory(50, "answer")
	ref := spanRef{trace: pcommon.TraceID{9}, span: pcommon.SpanID{9}}
	first := c.get(s, ref)
	require.Len(t, c.cur, 1)
	assert.Equal(t, first, c.get(s, ref))
	assert.Empty(t, c.cur, "the second read takes the entry out")
	assert.Zero(t, c.bytes)
	assert.Equal(t, first, c.get(s, ref), "a third read scans again")
}
