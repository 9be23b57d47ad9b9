package aggregate

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// Ranker is a column whose slot keeps whole rows in rank order: top_n.
// An operator whose only column is a Ranker (operator.Config.Ranked)
// emits, for a (window, key), one row per kept row with its rank instead
// of one row of Results.
type Ranker interface {
	Column
	// Ranks is the number of rows slot s keeps: 0 to N.
	Ranks(s int32) int
	// AppendRank appends the Width values of slot s's row of rank k
	// (0-based, k < Ranks(s)) to dst, in the order of Spec.Cols.
	AppendRank(dst []row.Value, s int32, k int) []row.Value
	// Width is the number of values of a row: len(Spec.Cols).
	Width() int
	// Placed reports where the column's last Add put its row: its
	// 0-based rank, or -1 when the row came after the n-th and the slot
	// did not change. With the row placed at rank i the ranks i to
	// Ranks(s)−1 changed: each holds the row the rank above it held
	// before, rank i the new one.
	Placed() int
	// AppendLeft appends the values of the row the last Add pushed out
	// past the n-th rank (the old row of rank n) to dst and reports
	// whether there was one; a slot that grew by the row pushed none out.
	AppendLeft(dst []row.Value) ([]row.Value, bool)
	// Bump adds one to the version of slot s's row of rank k and returns
	// the version before (0: the rank's row was never emitted). Only a
	// column built with Spec.Versions keeps versions; others return 0.
	Bump(s int32, k int) uint32
}

// topN is top_n(n, k1, k2, …) over the columns Spec.Cols: a slot keeps
// its n first rows when they are sorted by (k1, k2, …) as first_by sorts
// them (each key ascending, or descending when written desc(k); null keys
// below every value; ties to the row added first), with their values of
// every column: one state per key shared by the columns, where nth_by
// keeps n rows per column and rank. It is the state of Flink's Rank
// operator on an append-only input (AppendOnlyTopNFunction: the first N
// rows of each partition key in the ORDER BY order). Result is the
// number of rows kept (an int); the rows come through Ranker. Merge
// (session windows) ranks the source slot's rows after the destination's
// equal ones. It cannot retract.
//
// With Spec.Versions (an updating Top-N: operator.Config.Ranked in mode
// update or retract) a slot also keeps each rank's version, the number of
// rows emitted for that rank so far (Bump), as part of its state.
type topN struct {
	fb   firstBy     // the order keys, their directions, and scratch
	cols []row.Field // the values kept of each row
	n    int
	rows [][]topRow // per slot: at most n rows, in rank order
	// vers is, per slot, each rank's version (Spec.Versions; nil
	// otherwise): len(vers[s]) == len(rows[s]).
	vers     [][]uint32
	versions bool
	placed   int    // the last Add's rank, -1 when its row was not kept
	left     topRow // the row the last Add pushed past the n-th rank; nil if none
}

// topRow is one kept row: its order keys, then its column values.
type topRow []row.Value

func newTopN(sp Spec) (Column, error) {
	if len(sp.Order) == 0 {
		return nil, fmt.Errorf("top_n() needs at least one key to order by, e.g. top_n(10, desc(price), date_time)")
	}
	if sp.N < 1 || sp.N > MaxNth {
		return nil, fmt.Errorf("top_n(%d, …): n is 1 to %d", sp.N, MaxNth)
	}
	fs := sp
	fs.Func, fs.HasArg = "top_n", true
	c, err := newFirstBy(fs)
	if err != nil {
		return nil, err
	}
	return &topN{fb: *c.(*firstBy), cols: sp.Cols, n: sp.N, versions: sp.Versions, placed: -1}, nil
}

func (c *topN) Kind() row.Kind { return row.KindInt }
func (c *topN) Width() int     { return len(c.cols) }

func (c *topN) Grow(n int) {
	c.rows = grow(c.rows, n)
	if c.versions {
		c.vers = grow(c.vers, n)
	}
}

// place inserts row x (order keys first) into rows at its rank: after
// every row that does not come after it; it is dropped when that is past
// the n-th. It returns the rows, the rank it took (-1: dropped) and the
// row that left past the n-th rank (nil if none).
func (c *topN) place(rows []topRow, x topRow, copyRow bool) ([]topRow, int, topRow) {
	nk := len(c.fb.keys)
	i := len(rows)
	for i > 0 && c.fb.cmp(x[:nk], rows[i-1][:nk]) < 0 {
		i--
	}
	if i >= c.n {
		return rows, -1, nil
	}
	if copyRow {
		y := make(topRow, len(x))
		for j, v := range x {
			y[j] = own(v)
		}
		x = y
	}
	var left topRow
	if len(rows) == c.n {
		left = rows[c.n-1]
		rows = rows[:c.n-1] // the n-th leaves
	}
	return slices.Insert(rows, i, x), i, left
}

func (c *topN) Add(s int32, r *row.Row) error {
	x := c.fb.tmp[:0]
	for _, k := range c.fb.keys {
		x = append(x, r.Get(k))
	}
	for _, f := range c.cols {
		x = append(x, r.Get(f))
	}
	c.fb.tmp = x
	c.rows[s], c.placed, c.left = c.place(c.rows[s], x, true)
	if c.versions && c.placed >= 0 && c.left == nil {
		c.vers[s] = append(c.vers[s], 0) // a new last rank, never emitted
	}
	return nil
}

func (c *topN) Placed() int { return c.placed }

func (c *topN) AppendLeft(dst []row.Value) ([]row.Value, bool) {
	if c.placed < 0 || c.left == nil {
		return dst, false
	}
	return append(dst, c.left[len(c.fb.keys):]...), true
}

func (c *topN) Bump(s int32, k int) uint32 {
	if !c.versions {
		return 0
	}
	v := c.vers[s][k]
	c.vers[s][k] = v + 1
	return v
}

func (c *topN) Retract(int32, *row.Row) error { return ErrNotRetractable }

func (c *topN) Merge(dst, src int32) error {
	if c.versions {
		// An updating Top-N's slot is a key's whole state (the operator
		// reads a key's stored state back before each row): a merge
		// moves one whole slot into an empty one, versions included.
		switch {
		case len(c.rows[src]) == 0:
			return nil
		case len(c.rows[dst]) > 0:
			return fmt.Errorf("top_n: two parts of an updating Top-N's state for one key")
		}
		for _, x := range c.rows[src] {
			c.rows[dst], _, _ = c.place(c.rows[dst], x, true)
		}
		c.vers[dst] = append(c.vers[dst][:0], c.vers[src]...)
		return nil
	}
	for _, x := range c.rows[src] {
		c.rows[dst], _, _ = c.place(c.rows[dst], x, true)
	}
	return nil
}

// Result is the number of rows slot s keeps.
func (c *topN) Result(s int32) row.Value {
	return row.Value{Kind: row.KindInt, I: int64(len(c.rows[s]))}
}

func (c *topN) Ranks(s int32) int { return len(c.rows[s]) }

func (c *topN) AppendRank(dst []row.Value, s int32, k int) []row.Value {
	return append(dst, c.rows[s][k][len(c.fb.keys):]...)
}

func (c *topN) Reset(s int32) {
	c.rows[s] = nil
	if c.versions {
		c.vers[s] = nil
	}
}

// SlotBytes: the slice header.
func (c *topN) SlotBytes() int { return int(unsafe.Sizeof([]topRow{})) }

func (c *topN) ExtraBytes(s int32) int {
	n := cap(c.rows[s]) * int(unsafe.Sizeof(topRow{}))
	for _, x := range c.rows[s] {
		n += len(x) * int(unsafe.Sizeof(row.Value{}))
		for _, v := range x {
			n += len(v.S)
		}
	}
	if c.versions {
		n += cap(c.vers[s]) * 4
	}
	return n
}

// AppendSlot writes the number of rows, then each row's order keys and
// column values in rank order (state.Encoder.Value); with Spec.Versions
// each rank's version after the rows.
func (c *topN) AppendSlot(e *state.Encoder, s int32) {
	e.Uint(uint64(len(c.rows[s])))
	for _, x := range c.rows[s] {
		for _, v := range x {
			e.Value(v)
		}
	}
	if c.versions {
		for _, v := range c.vers[s] {
			e.Uint(uint64(v))
		}
	}
}

func (c *topN) RestoreSlot(d *state.Decoder, s int32) {
	c.Reset(s)
	n := d.Len(c.n, 1)
	nk, w := len(c.fb.keys), len(c.fb.keys)+len(c.cols)
	rows := make([]topRow, 0, n)
	for range n {
		x := make(topRow, w)
		for i := range x {
			x[i] = ownDecoded(d.Value())
		}
		if len(rows) > 0 && c.fb.cmp(x[:nk], rows[len(rows)-1][:nk]) < 0 {
			d.Fail("top_n: rows out of rank order")
		}
		rows = append(rows, x)
	}
	var vers []uint32
	if c.versions {
		vers = make([]uint32, n)
		for i := range vers {
			v := d.Uint()
			if v > math.MaxUint32 {
				d.Fail("top_n: a rank's version %d", v)
			}
			vers[i] = uint32(v)
		}
	}
	if d.Err() == nil {
		c.rows[s] = rows
		if c.versions {
			c.vers[s] = vers
		}
	}
}
