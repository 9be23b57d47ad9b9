package operator

import "slices"

// entChunkBits sets the chunk of a chunkVec: 4,096 elements (160 KiB of
// sliceEnt, 128 KiB of keyEntry).
const entChunkBits = 12

// chunkVec is a vector held in chunks of 1<<entChunkBits elements (the
// first grows by append up to that size, so that a small vector stays
// small): once the first chunk is full, adding an element never copies
// the earlier ones and a pointer from at stays valid while the vector
// grows. Before, an add may move the first chunk: hold no pointer from at
// across an add. A slice of q5's ~600,000 auctions in one array grew by a
// quarter at a time (Go's append for large slices), copying 24 MiB in all
// and leaving four times its final size as garbage; the garbage, not the
// state, set the heap's peak.
type chunkVec[T any] struct {
	chunks [][]T
	n      int
}

// entVec is a slice's entries in arrival order.
type entVec = chunkVec[sliceEnt]

// len returns the number of elements.
func (v *chunkVec[T]) len() int { return v.n }

// at returns element i (0 ≤ i < len).
func (v *chunkVec[T]) at(i int) *T {
	return &v.chunks[i>>entChunkBits][i&(1<<entChunkBits-1)]
}

// add appends e.
func (v *chunkVec[T]) add(e T) {
	c := v.n >> entChunkBits
	if c == len(v.chunks) {
		if c == 0 {
			v.chunks = append(v.chunks, nil)
		} else {
			v.chunks = append(v.chunks, make([]T, 0, 1<<entChunkBits))
		}
	}
	v.chunks[c] = append(v.chunks[c], e)
	v.n++
}

// reset empties v, keeping its memory.
func (v *chunkVec[T]) reset() {
	for i := range v.chunks {
		v.chunks[i] = v.chunks[i][:0]
	}
	v.n = 0
}

// sortFunc sorts the elements by cmp (stable).
func (v *chunkVec[T]) sortFunc(cmp func(a, b T) int) {
	all := make([]T, 0, v.n)
	for _, c := range v.chunks {
		all = append(all, c...)
	}
	slices.SortStableFunc(all, cmp)
	v.reset()
	for _, e := range all {
		v.add(e)
	}
}
