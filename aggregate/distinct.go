package aggregate

import (
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/u64map"
)

// count_distinct(x) keeps, per slot, the set of x's values as 56-bit
// hashes with their multiplicities, so that retraction stays exact: a
// value leaves the count when its last occurrence is retracted.
//
// A slot's set is an open-addressing table (linear probing, at most 3/4
// full, backward-shift deletion, so no tombstones) of 8-byte words,
// hash<<8 | multiplicity: 8 bytes per entry, 8 to 21 bytes per distinct
// value by the table's load (about 15 on average; a value's text is never
// stored). Multiplicities from 255 on are kept in a map beside the tables.
// Tables come from free lists by size, and a slot Reset when its window
// closes gives its table back, so a stage adding values to windows that
// open and close allocates nothing per event once the tables of its open
// windows exist.
//
// The hash: xxHash64 of a string's bytes; of a decimal's text with
// trailing zeros removed (2.0 and 2.00 are one value); for ints, bools
// and timestamps, MurmurHash3's fmix64 of the value (a bijection). Its top
// 56 bits identify a value. Two different values of one slot share them
// with probability about n²/2⁵⁷ for n distinct values in the slot (n =
// 10,000: 7·10⁻¹⁰; n = 1,000,000: 7·10⁻⁶), and are then counted as one —
// the same trade-off dedup makes for event ids (docs/semantics.md).

// distinctWord packs a value's hash key (the top 56 bits of its hash) and
// its multiplicity (1 … 254, or distinctOver: look in the over map).
type distinctWord = uint64

const (
	distinctOver    = 0xff // the multiplicity is in distinct.over
	distinctMinSize = 8    // the smallest table, in words
	distinctMinLog  = 3
)

// distinctSet is one slot's table.
type distinctSet struct {
	t []distinctWord // len a power of two, or nil when empty
	n int32          // distinct values
}

// overKey names a multiplicity held in the over map.
type overKey struct {
	slot int32
	key  uint64 // hash key (56 bits)
}

type distinct struct {
	arg     row.Field
	hash    func(c *distinct, r *row.Row) uint64
	sets    []distinctSet
	free    [][][]distinctWord // free tables by log2 of their size
	over    map[overKey]uint64 // multiplicities of 255 and more
	text    []byte             // a decimal's text, while hashed
	scratch []uint64           // AppendSlot's sort buffer
}

// newDistinct builds count_distinct(x).
func newDistinct(sp Spec) Column {
	f := sp.Arg
	c := &distinct{arg: f}
	switch {
	case f.Kind.InI():
		c.hash = func(c *distinct, r *row.Row) uint64 { return fmix64(uint64(r.I[c.arg.Slot])) }
	case f.Kind == row.KindDecimal:
		c.hash = func(c *distinct, r *row.Row) uint64 {
			d := r.D[c.arg.Slot]
			if d.IsZero() {
				return xxhash.Sum64String("0")
			}
			c.text, _ = d.AppendText(c.text[:0]) // trailing zeros removed
			return xxhash.Sum64(c.text)
		}
	default:
		c.hash = func(c *distinct, r *row.Row) uint64 { return xxhash.Sum64String(r.S[c.arg.Slot]) }
	}
	return c
}

// fmix64 is MurmurHash3's 64-bit finalizer (u64map.Fmix64).
func fmix64(x uint64) uint64 { return u64map.Fmix64(x) }

// key is the 56-bit hash key of a hash.
func key(h uint64) uint64 { return h >> 8 }

func (c *distinct) Kind() row.Kind { return row.KindInt }
func (c *distinct) Grow(n int)     { c.sets = grow(c.sets, n) }

// table returns a cleared table of 2^lg words, from the free list if it
// has one.
func (c *distinct) table(lg int) []distinctWord {
	for len(c.free) <= lg {
		c.free = append(c.free, nil)
	}
	if f := c.free[lg]; len(f) > 0 {
		t := f[len(f)-1]
		c.free[lg] = f[:len(f)-1]
		return t
	}
	return make([]distinctWord, 1<<lg)
}

// release clears t and puts it on its free list.
func (c *distinct) release(t []distinctWord) {
	clear(t)
	lg := log2(len(t))
	c.free[lg] = append(c.free[lg], t)
}

func log2(n int) int {
	lg := 0
	for 1<<lg < n {
		lg++
	}
	return lg
}

// find returns the index of k's word in t, or −1.
func find(t []distinctWord, k uint64) int {
	mask := uint64(len(t) - 1)
	for i := k & mask; ; i = (i + 1) & mask {
		switch w := t[i]; {
		case w == 0:
			return -1
		case w>>8 == k:
			return int(i)
		}
	}
}

// place puts word w (its key absent) into t.
func place(t []distinctWord, w distinctWord) {
	mask := uint64(len(t) - 1)
	i := (w >> 8) & mask
	for t[i] != 0 {
		i = (i + 1) & mask
	}
	t[i] = w
}

// remove deletes the word at i, shifting back the words of its probe run
// that can move (Knuth, TAOCP vol. 3, §6.4, Algorithm R).
func remove(t []distinctWord, i int) {
	mask := len(t) - 1
	j := i
	for {
		t[i] = 0
		for {
			j = (j + 1) & mask
			if t[j] == 0 {
				return
			}
			home := int(t[j]>>8) & mask
			// Leave t[j] where it is if its home lies cyclically in (i, j].
			if i <= j {
				if i < home && home <= j {
					continue
				}
			} else if i < home || home <= j {
				continue
			}
			break
		}
		t[i] = t[j]
		i = j
	}
}

// insert adds n occurrences of the value with key k to slot s. One probe
// run finds k's word or the empty word where k goes (find and place in
// one pass; only a table that must grow first is probed again).
func (c *distinct) insert(s int32, k uint64, n uint64) {
	set := &c.sets[s]
	if set.t == nil {
		set.t = c.table(distinctMinLog)
	}
	t := set.t
	mask := uint64(len(t) - 1)
	i := k & mask
	for ; t[i] != 0; i = (i + 1) & mask {
		w := t[i]
		if w>>8 != k {
			continue
		}
		m := w & 0xff
		if m == distinctOver {
			c.over[overKey{s, k}] += n
			return
		}
		if m+n < distinctOver {
			t[i] = w + n
			return
		}
		if c.over == nil {
			c.over = map[overKey]uint64{}
		}
		c.over[overKey{s, k}] = m + n
		t[i] = k<<8 | distinctOver
		return
	}
	w := k<<8 | n
	if n >= distinctOver {
		if c.over == nil {
			c.over = map[overKey]uint64{}
		}
		c.over[overKey{s, k}] = n
		w = k<<8 | distinctOver
	}
	if int(set.n+1)*4 > len(t)*3 {
		set.t = c.table(log2(len(t)) + 1)
		for _, x := range t {
			if x != 0 {
				place(set.t, x)
			}
		}
		c.release(t)
		place(set.t, w)
	} else {
		t[i] = w
	}
	set.n++
}

// multiplicity returns the multiplicity of the word w of slot s.
func (c *distinct) multiplicity(s int32, w distinctWord) uint64 {
	if m := w & 0xff; m != distinctOver {
		return m
	}
	return c.over[overKey{s, w >> 8}]
}

func (c *distinct) Add(s int32, r *row.Row) error {
	if r.IsNull(c.arg.Index) {
		return nil
	}
	c.insert(s, key(c.hash(c, r)), 1)
	return nil
}

func (c *distinct) Retract(s int32, r *row.Row) error {
	set := &c.sets[s]
	if r.IsNull(c.arg.Index) || set.t == nil {
		return nil
	}
	k := key(c.hash(c, r))
	i := find(set.t, k)
	if i < 0 {
		return nil
	}
	switch m := set.t[i] & 0xff; {
	case m == distinctOver:
		ok := overKey{s, k}
		if v := c.over[ok] - 1; v < distinctOver {
			delete(c.over, ok)
			set.t[i] = k<<8 | v
		} else {
			c.over[ok] = v
		}
	case m > 1:
		set.t[i]--
	default:
		remove(set.t, i)
		set.n--
		if set.n == 0 {
			c.release(set.t)
			set.t = nil
		}
	}
	return nil
}

func (c *distinct) Merge(dst, src int32) error {
	t := c.sets[src].t
	if dst == src {
		// Doubling in place: read a copy, as inserting may grow the table.
		c.scratch = append(c.scratch[:0], t...)
		t = c.scratch
	}
	for _, w := range t { // order-independent: multiplicities add
		if w != 0 {
			c.insert(dst, w>>8, c.multiplicity(src, w))
		}
	}
	return nil
}

func (c *distinct) Result(s int32) row.Value { return row.Int(int64(c.sets[s].n)) }

func (c *distinct) Reset(s int32) {
	set := &c.sets[s]
	if set.t == nil {
		return
	}
	if len(c.over) > 0 {
		for _, w := range set.t {
			if w&0xff == distinctOver {
				delete(c.over, overKey{s, w >> 8})
			}
		}
	}
	c.release(set.t)
	*set = distinctSet{}
}

func (c *distinct) SlotBytes() int { return 32 }

func (c *distinct) ExtraBytes(s int32) int { return 8 * len(c.sets[s].t) }

// AppendSlot implements Column: Uint(entries) {Fixed64(hash key)
// Uint(multiplicity)}… in ascending key order.
func (c *distinct) AppendSlot(e *state.Encoder, s int32) {
	c.scratch = c.scratch[:0]
	for _, w := range c.sets[s].t {
		if w != 0 {
			c.scratch = append(c.scratch, w)
		}
	}
	// A word is its 56-bit key above an 8-bit count and keys are unique
	// in a set, so the words' order is their keys'.
	slices.Sort(c.scratch)
	e.Uint(uint64(len(c.scratch)))
	for _, w := range c.scratch {
		e.Fixed64(w >> 8)
		e.Uint(c.multiplicity(s, w))
	}
}

// RestoreSlot implements Column.
func (c *distinct) RestoreSlot(d *state.Decoder, s int32) {
	c.Reset(s)
	n := d.Len(maxEntries, 9)
	var prev uint64
	for i := 0; i < n; i++ {
		k := d.Fixed64()
		cnt := d.Uint()
		if d.Err() != nil {
			return
		}
		switch {
		case cnt < 1 || cnt > 1<<62:
			d.Fail("%s multiplicity %d", c.arg.Name, cnt)
			return
		case k >= 1<<56:
			d.Fail("%s hash key %#x above 56 bits", c.arg.Name, k)
			return
		case i > 0 && k <= prev:
			d.Fail("%s value listed twice or out of order", c.arg.Name)
			return
		}
		prev = k
		c.insert(s, k, cnt)
	}
}
