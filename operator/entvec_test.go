package operator

import (
	"cmp"
	"testing"
)

// TestEntVec adds 10,000 entries (the first chunk grown by append to
// 4,096, then two more chunks), reads each back, sorts them by seq
// descending, empties the vector and fills it again in its memory.
func TestEntVec(t *testing.T) {
	var v entVec
	const n = 10_000
	for i := range n {
		v.add(sliceEnt{seq: uint64(i), key: uint32(3 * i)})
	}
	if v.len() != n || len(v.chunks) != 3 || len(v.chunks[0]) != 4096 || len(v.chunks[2]) != n-8192 {
		t.Fatalf("len %d, %d chunks", v.len(), len(v.chunks))
	}
	for i := range n {
		if e := v.at(i); e.seq != uint64(i) || e.key != uint32(3*i) {
			t.Fatalf("entry %d: %+v", i, *e)
		}
	}
	v.at(5000).rows = 7
	if v.chunks[1][5000-4096].rows != 7 {
		t.Fatal("at(5000) is not chunk 1's entry 904")
	}
	v.sortFunc(func(a, b sliceEnt) int { return cmp.Compare(b.seq, a.seq) })
	for i := range n {
		if e := v.at(i); e.seq != uint64(n-1-i) {
			t.Fatalf("sorted entry %d: seq %d, want %d", i, e.seq, n-1-i)
		}
	}
	if v.at(n-1-5000).rows != 7 {
		t.Fatal("sorting lost an entry's rows")
	}
	c1 := &v.chunks[1][:1][0]
	v.reset()
	if v.len() != 0 {
		t.Fatalf("len %d after reset", v.len())
	}
	for i := range 5000 {
		v.add(sliceEnt{seq: uint64(i)})
	}
	if v.at(4096) != c1 || v.at(4999).seq != 4999 {
		t.Fatal("reset did not keep the chunks' memory")
	}
}

// TestChunkVecPointers: a pointer from at into a full first chunk or into
// a later chunk (allocated whole) still reads and writes the element
// after many adds; a pointer into the first chunk while it grows need
// not (chunkVec's comment: it may move).
func TestChunkVecPointers(t *testing.T) {
	var v chunkVec[keyEntry]
	for i := range 4097 {
		v.add(keyEntry{refs: int32(i)})
	}
	p, q := v.at(10), v.at(4096)
	for i := range 10_000 {
		v.add(keyEntry{refs: int32(4097 + i)})
	}
	p.refs, q.refs = -1, -2
	if v.at(10).refs != -1 || v.at(4096).refs != -2 || v.at(4097).refs != 4097 || v.at(14096).refs != 14096 {
		t.Fatalf("pointers from at went stale: %d %d", v.at(10).refs, v.at(4096).refs)
	}
}
