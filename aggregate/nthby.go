package aggregate

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// MaxNth is the largest n of nth_by (Spec.N): the rows a slot keeps.
const MaxNth = 1000

// nthBy is nth_by(y, n, k1, k2, …): the value of y on the row that comes
// n-th (1-based) when the slot's rows are sorted by (k1, k2, …) as
// first_by sorts them (each key ascending, or descending when written
// desc(k); null keys below every value; ties to the row added first), or
// null while the slot has fewer than n rows. nth_by(y, 1, k…) is
// first_by(y, k…). One call per column and rank of a row picks the same
// row for every column: SQL's ROW_NUMBER() OVER (PARTITION BY … ORDER BY
// …) = n, the n-th row of Flink's Top-N. A slot keeps its n first rows
// (their keys and y). Merge (session windows) ranks the source slot's
// rows after the destination's equal ones. It cannot retract.
type nthBy struct {
	fb   firstBy // the keys, their order, and scratch
	n    int
	rows [][]nthRow // per slot: at most n rows, in rank order
}

// nthRow is one kept row: its order keys and value.
type nthRow struct {
	keys []row.Value
	y    row.Value
}

func newNthBy(sp Spec) (Column, error) {
	if !sp.HasArg || len(sp.Order) == 0 {
		return nil, fmt.Errorf("nth_by() needs the value, the rank and at least one key to order by, e.g. nth_by(bid.bidder, 3, desc(bid.price))")
	}
	if sp.N < 1 || sp.N > MaxNth {
		return nil, fmt.Errorf("nth_by(…, %d, …): the rank is 1 to %d", sp.N, MaxNth)
	}
	sp.Func = "first_by"
	c, err := newFirstBy(sp)
	if err != nil {
		return nil, fmt.Errorf("nth_by%s", err.Error()[len("first_by"):])
	}
	return &nthBy{fb: *c.(*firstBy), n: sp.N}, nil
}

func (c *nthBy) Kind() row.Kind { return c.fb.y.Kind }
func (c *nthBy) Grow(n int)     { c.rows = grow(c.rows, n) }

// place inserts a row of keys k (and value y) into rows at its rank: after
// every row that does not come after it; it is dropped when that is past
// the n-th.
func (c *nthBy) place(rows []nthRow, k []row.Value, y row.Value, copyKeys bool) []nthRow {
	i := len(rows)
	for i > 0 && c.fb.cmp(k, rows[i-1].keys) < 0 {
		i--
	}
	if i >= c.n {
		return rows
	}
	if copyKeys {
		kk := make([]row.Value, len(k))
		for j, v := range k {
			kk[j] = own(v)
		}
		k, y = kk, own(y)
	}
	if len(rows) == c.n {
		rows = rows[:c.n-1] // the n-th leaves
	}
	return slices.Insert(rows, i, nthRow{keys: k, y: y})
}

func (c *nthBy) Add(s int32, r *row.Row) error {
	for i, k := range c.fb.keys {
		c.fb.tmp[i] = r.Get(k)
	}
	c.rows[s] = c.place(c.rows[s], c.fb.tmp, r.Get(c.fb.y), true)
	return nil
}

func (c *nthBy) Retract(int32, *row.Row) error { return ErrNotRetractable }

func (c *nthBy) Merge(dst, src int32) error {
	for _, x := range c.rows[src] {
		c.rows[dst] = c.place(c.rows[dst], x.keys, x.y, false)
	}
	return nil
}

func (c *nthBy) Result(s int32) row.Value {
	if len(c.rows[s]) < c.n {
		return row.Null
	}
	return c.rows[s][c.n-1].y
}

func (c *nthBy) Reset(s int32) { c.rows[s] = nil }

// SlotBytes: the slice header.
func (c *nthBy) SlotBytes() int { return int(unsafe.Sizeof([]nthRow{})) }

func (c *nthBy) ExtraBytes(s int32) int {
	n := cap(c.rows[s]) * int(unsafe.Sizeof(nthRow{}))
	for _, x := range c.rows[s] {
		n += len(x.keys)*int(unsafe.Sizeof(row.Value{})) + len(x.y.S)
		for _, v := range x.keys {
			n += len(v.S)
		}
	}
	return n
}

// AppendSlot writes the number of rows, then each row's y and keys in
// rank order (state.Encoder.Value).
func (c *nthBy) AppendSlot(e *state.Encoder, s int32) {
	e.Uint(uint64(len(c.rows[s])))
	for _, x := range c.rows[s] {
		e.Value(x.y)
		for _, v := range x.keys {
			e.Value(v)
		}
	}
}

func (c *nthBy) RestoreSlot(d *state.Decoder, s int32) {
	c.Reset(s)
	n := d.Len(c.n, 1)
	rows := make([]nthRow, 0, n)
	for range n {
		x := nthRow{y: ownDecoded(d.Value()), keys: make([]row.Value, len(c.fb.keys))}
		for i := range x.keys {
			x.keys[i] = ownDecoded(d.Value())
		}
		if len(rows) > 0 && c.fb.cmp(x.keys, rows[len(rows)-1].keys) < 0 {
			d.Fail("nth_by: rows out of rank order")
		}
		rows = append(rows, x)
	}
	if d.Err() == nil {
		c.rows[s] = rows
	}
}
