// Package u64map is the core's one hash table of uint64 keys: an
// open-addressing table with linear probing and deletion, used where a Go
// map's per-entry cost shows in a record's path (the operator's keys and
// slice entries held by value, the dedup payload cache's index of ids).
// It sits in the core beside row and keygroup and imports nothing of the
// module: a package of any layer may use it, and it does no IO.
//
// A cell holds a key and its value side by side (a Map[uint32] or a
// Map[int32] has 16-byte cells, four to a cache line): a lookup reads one
// cache line unless its probe crosses a line boundary, where a Go map
// reads its group's control word and then the slot, most often in another
// line. At most 3/4 of the cells are used, so a probe ends at an empty
// cell; a deletion shifts the cells of the probe run after it back into
// place (Knuth's Algorithm R, TAOCP vol. 3, 6.4), so there are no
// tombstones and a table that sees as many deletions as insertions never
// fills up. A cell is empty when its key is 0; key 0 itself is held apart,
// beside the cells.
//
// The hash is MurmurHash3's 64-bit finalizer (fmix64, Austin Appleby,
// public domain) of the key xored with a seed drawn once per process, so
// keys crafted to collide need the seed. The layout therefore differs from
// process to process, and the table offers no iteration: nothing can
// depend on its order. A caller that needs its keys in an order keeps them
// in that order itself (as the operator's entries by arrival, the payload
// cache's ring).
//
// A Map is not safe for concurrent use; its zero value is an empty table.
package u64map

import (
	"hash/maphash"
	"unsafe"
)

// minCells is the smallest table, in cells.
const minCells = 16

// seed is xored into keys before hashing (random per process).
var seed = new(maphash.Hash).Sum64()

// hash is Fmix64 of k ^ seed.
func hash(k uint64) uint64 { return Fmix64(k ^ seed) }

// Fmix64 is MurmurHash3's 64-bit finalizer (Austin Appleby, public
// domain): a bijection whose every output bit depends on every input bit.
// It must never change: besides the tables' hash (seeded per process,
// never stored), dedup's canonical payload hashes and aggregate's
// distinct-value hashes are built from it, and those are kept in
// checkpoints.
func Fmix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Map is a hash table from uint64 keys to values of type V. Values are
// stored in the table's cells: a pointer from Ptr or Upsert stays valid
// until the next Put, Upsert, Delete or Reset.
type Map[V any] struct {
	cells   []cell[V] // len a power of two (at least minCells), or nil
	n       int       // keys held in cells (key 0 not counted)
	zero    V         // key 0's value, when hasZero
	hasZero bool
}

// cell is one cell of a Map: k == 0 marks it empty.
type cell[V any] struct {
	k uint64
	v V
}

// Len returns the number of keys held.
func (m *Map[V]) Len() int {
	if m.hasZero {
		return m.n + 1
	}
	return m.n
}

// Cells returns the number of cells the table has allocated (0, or a
// power of two at least 16).
func (m *Map[V]) Cells() int { return len(m.cells) }

// Bytes returns the heap bytes of the table's cells: Cells times the size
// of a key and a V side by side (16 for a V of up to 8 bytes on amd64).
func (m *Map[V]) Bytes() int64 { return int64(len(m.cells)) * int64(unsafe.Sizeof(cell[V]{})) }

// Get returns key k's value and true, or V's zero value and false when k
// is absent.
func (m *Map[V]) Get(k uint64) (v V, ok bool) {
	p := m.Ptr(k)
	if p == nil {
		return v, false
	}
	return *p, true
}

// Ptr returns a pointer to key k's value, or nil when k is absent. The
// pointer is valid until the next Put, Upsert, Delete or Reset.
func (m *Map[V]) Ptr(k uint64) *V {
	if k == 0 || m.n == 0 {
		return m.zeroPtr(k)
	}
	mask := uint64(len(m.cells) - 1)
	for h := hash(k) & mask; ; h = (h + 1) & mask {
		c := &m.cells[h]
		if c.k == k {
			return &c.v
		}
		if c.k == 0 {
			return nil
		}
	}
}

// zeroPtr is Ptr for key 0 or an empty table, kept out of the probe's
// path.
func (m *Map[V]) zeroPtr(k uint64) *V {
	if k == 0 && m.hasZero {
		return &m.zero
	}
	return nil
}

// Put records v as key k's value, replacing k's earlier one.
func (m *Map[V]) Put(k uint64, v V) {
	p, _ := m.Upsert(k)
	*p = v
}

// Upsert returns a pointer to key k's value and whether k is new: a new
// key is inserted with V's zero value. The pointer is valid until the next
// Put, Upsert, Delete or Reset.
func (m *Map[V]) Upsert(k uint64) (*V, bool) {
	if k == 0 {
		if m.hasZero {
			return &m.zero, false
		}
		var z V
		m.zero, m.hasZero = z, true
		return &m.zero, true
	}
	if 4*(m.n+1) > 3*len(m.cells) {
		if p := m.Ptr(k); p != nil { // a full table does not grow for a key it holds
			return p, false
		}
		m.grow()
	}
	mask := uint64(len(m.cells) - 1)
	for h := hash(k) & mask; ; h = (h + 1) & mask {
		c := &m.cells[h]
		if c.k == k {
			return &c.v, false
		}
		if c.k == 0 {
			c.k = k
			m.n++
			return &c.v, true
		}
	}
}

// Delete removes key k and reports whether it was present. The cells of
// the probe run after k's whose home lies cyclically at or before the
// freed cell move back into it, one after the other, until the run ends.
func (m *Map[V]) Delete(k uint64) bool {
	if k == 0 {
		if !m.hasZero {
			return false
		}
		var z V
		m.zero, m.hasZero = z, false
		return true
	}
	if m.n == 0 {
		return false
	}
	mask := uint64(len(m.cells) - 1)
	i := hash(k) & mask
	for {
		c := &m.cells[i]
		if c.k == k {
			break
		}
		if c.k == 0 {
			return false
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; m.cells[j].k != 0; j = (j + 1) & mask {
		// The cell at j may move to i unless its home h lies cyclically
		// in (i, j]: its probe would then not pass i.
		h := hash(m.cells[j].k) & mask
		if (j-h)&mask >= (j-i)&mask {
			m.cells[i] = m.cells[j]
			i = j
		}
	}
	m.cells[i] = cell[V]{}
	m.n--
	return true
}

// Reset empties the table, keeping its cells.
func (m *Map[V]) Reset() {
	if m.n > 0 {
		clear(m.cells)
		m.n = 0
	}
	var z V
	m.zero, m.hasZero = z, false
}

// grow doubles the table (or makes the first) and puts the cells back.
func (m *Map[V]) grow() {
	old := m.cells
	m.cells = make([]cell[V], max(minCells, 2*len(old)))
	mask := uint64(len(m.cells) - 1)
	for _, c := range old {
		if c.k == 0 {
			continue
		}
		h := hash(c.k) & mask
		for m.cells[h].k != 0 {
			h = (h + 1) & mask
		}
		m.cells[h] = c
	}
}
