package triageprocessor

import (
	"testing"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// traceLRU replaces simplelru for the buffer and the decision cache: the
// same sequence of operations gives the same values, order and evictions.
func TestTraceLRUMatchesSimpleLRU(t *testing.T) {
	const size = 5
	var gotEvicted, wantEvicted []pcommon.TraceID
	got, err := newTraceLRU(size, func(id pcommon.TraceID, _ int) { gotEvicted = append(gotEvicted, id) })
	require.NoError(t, err)
	want, err := simplelru.NewLRU[pcommon.TraceID, int](size, func(id pcommon.TraceID, _ int) { wantEvicted = append(wantEvicted, id) })
	require.NoError(t, err)

	// A fixed pseudo-random sequence over more keys than the size, so
	// that slots are freed and reused.
	x := uint32(1)
	for step := range 5000 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		id := traceID(uint64(x%12) + 1)
		switch op := (x >> 8) % 6; op {
		case 0, 1:
			assert.Equal(t, want.Add(id, step), got.Add(id, step), "step %d: Add", step)
		case 2:
			wv, wok := want.Get(id)
			gv, gok := got.Get(id)
			assert.Equal(t, [2]any{wv, wok}, [2]any{gv, gok}, "step %d: Get", step)
		case 3:
			wv, wok := want.Peek(id)
			gv, gok := got.Peek(id)
			assert.Equal(t, [2]any{wv, wok}, [2]any{gv, gok}, "step %d: Peek", step)
		case 4:
			assert.Equal(t, want.Remove(id), got.Remove(id), "step %d: Remove", step)
		case 5:
			wk, wv, wok := want.GetOldest()
			gk, gv, gok := got.GetOldest()
			assert.Equal(t, [3]any{wk, wv, wok}, [3]any{gk, gv, gok}, "step %d: GetOldest", step)
			if x&1 == 0 {
				wk, wv, wok = want.RemoveOldest()
				gk, gv, gok = got.RemoveOldest()
				assert.Equal(t, [3]any{wk, wv, wok}, [3]any{gk, gv, gok}, "step %d: RemoveOldest", step)
			}
		}
		require.Equal(t, want.Len(), got.Len(), "step %d: Len", step)
	}
	assert.Equal(t, wantEvicted, gotEvicted)
	// Oldest to newest, all of them.
	var order []pcommon.TraceID
	for {
		id, _, ok := got.RemoveOldest()
		if !ok {
			break
		}
		order = append(order, id)
	}
	assert.Equal(t, want.Keys(), order)
	assert.LessOrEqual(t, cap(got.entries), size+1, "the slots never grow beyond the size")
}

// A removed trace's slot keeps nothing reachable.
func TestTraceLRURemovedSlotCleared(t *testing.T) {
	c, err := newTraceLRU[*heldTrace](2, nil)
	require.NoError(t, err)
	c.Add(traceID(1), &heldTrace{})
	c.Add(traceID(2), &heldTrace{})
	c.Remove(traceID(1))
	c.RemoveOldest()
	for i := range c.entries {
		assert.Nil(t, c.entries[i].value, "slot %d", i)
	}
}
