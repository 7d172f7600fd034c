package trajectory

import (
	"maps"
	"slices"
)

// indexed holds values by a non-negative index (the N of flattened
// attributes such as llm.input_messages.N.message.role), in index order.
// The indexes a span uses are small and dense: they are the positions of
// a slice (a map per message and per call list, and its keys sorted, were
// most of what reading flattened messages allocated); an index from
// maxDenseIndex on, which no real message list reaches, goes to a map, so
// one attribute cannot make the slice large.
type indexed[T any] struct {
	dense  []*T // nil: not made
	n      int  // values made
	sparse map[int]*T
}

// maxDenseIndex bounds the indexes held in indexed's slice.
const maxDenseIndex = 256

// at returns the value at index i, made (zero) when it is not there.
func (x *indexed[T]) at(i int) *T {
	if i < maxDenseIndex {
		if i >= len(x.dense) {
			x.dense = append(x.dense, make([]*T, i+1-len(x.dense))...)
		}
		p := x.dense[i]
		if p == nil {
			p = new(T)
			x.dense[i] = p
			x.n++
		}
		return p
	}
	if x.sparse == nil {
		x.sparse = make(map[int]*T)
	}
	p := x.sparse[i]
	if p == nil {
		p = new(T)
		x.sparse[i] = p
		x.n++
	}
	return p
}

// len is the number of values made.
func (x *indexed[T]) len() int { return x.n }

// each calls fn with every value made, by increasing index.
func (x *indexed[T]) each(fn func(*T)) {
	for _, p := range x.dense {
		if p != nil {
			fn(p)
		}
	}
	if len(x.sparse) > 0 {
		for _, k := range slices.Sorted(maps.Keys(x.sparse)) {
			fn(x.sparse[k])
		}
	}
}
