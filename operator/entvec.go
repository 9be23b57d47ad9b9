package operator

import "slices"

// entChunkBits sets the chunk of an entVec: 4,096 entries (160 KiB of
// sliceEnt).
const entChunkBits = 12

// entVec is a slice's entries in arrival order, held in chunks of
// 1<<entChunkBits entries (the first grows by append up to that size):
// adding an entry never copies the earlier ones. A slice of q5's ~600,000
// auctions in one array grew by a quarter at a time (Go's append for large
// slices), copying 24 MiB in all and leaving four times its final size as
// garbage; the garbage, not the state, set the heap's peak.
type entVec struct {
	chunks [][]sliceEnt
	n      int
}

// len returns the number of entries.
func (v *entVec) len() int { return v.n }

// at returns entry i (0 ≤ i < len).
func (v *entVec) at(i int) *sliceEnt {
	return &v.chunks[i>>entChunkBits][i&(1<<entChunkBits-1)]
}

// add appends e.
func (v *entVec) add(e sliceEnt) {
	c := v.n >> entChunkBits
	if c == len(v.chunks) {
		if c == 0 {
			v.chunks = append(v.chunks, nil)
		} else {
			v.chunks = append(v.chunks, make([]sliceEnt, 0, 1<<entChunkBits))
		}
	}
	v.chunks[c] = append(v.chunks[c], e)
	v.n++
}

// reset empties v, keeping its memory.
func (v *entVec) reset() {
	for i := range v.chunks {
		v.chunks[i] = v.chunks[i][:0]
	}
	v.n = 0
}

// sortFunc sorts the entries by cmp (stable).
func (v *entVec) sortFunc(cmp func(a, b sliceEnt) int) {
	all := make([]sliceEnt, 0, v.n)
	for _, c := range v.chunks {
		all = append(all, c...)
	}
	slices.SortStableFunc(all, cmp)
	v.reset()
	for _, e := range all {
		v.add(e)
	}
}
