package aggregate

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// firstBy is first_by(y, k1, k2, …) and last_by(y, k1, k2, …): the value
// of y on the row that comes first (last_by: last) when the slot's rows
// are sorted by (k1, k2, …), each key ascending or, for a key written
// desc(k), descending (Spec.Order, Spec.Desc); null keys sort below every
// value. Ties on every key go to the row added first (first_by) or last
// (last_by), so one call per column of a row picks the same row for
// every column: SQL's ROW_NUMBER() OVER (PARTITION BY … ORDER BY …) = 1
// (Flink's Top-1, which keeps the first of equal rows) and its
// deduplication keeping the last row by event time (ORDER BY ts DESC,
// where a later row of equal time replaces the earlier). A null y is a
// value like any other (the row's column is null). It cannot retract: a
// stage using it needs an input without retractions.
type firstBy struct {
	y     row.Field
	keys  []row.Field
	desc  []bool
	last  bool
	yv    []row.Value
	kv    []row.Value // per slot: len(keys) key values
	valid []bool
	tmp   []row.Value
}

func newFirstBy(sp Spec) (Column, error) {
	if !sp.HasArg || len(sp.Order) == 0 {
		return nil, fmt.Errorf("%s() needs the value and at least one key to order by, e.g. %s(bid.bidder, desc(bid.price), date_time)", sp.Func, sp.Func)
	}
	if sp.Retract {
		return nil, fmt.Errorf("%s() cannot take back a row, and this stage's input retracts (an upstream stage not in emit mode final, or order_by)", sp.Func)
	}
	for _, k := range sp.Order {
		switch k.Kind {
		case row.KindInt, row.KindTime, row.KindDecimal, row.KindString, row.KindBool:
		default:
			return nil, fmt.Errorf("%s(…, %s) orders by %s, which is %s", sp.Func, k.Name, k.Name, k.Kind)
		}
	}
	desc := sp.Desc
	if len(desc) < len(sp.Order) {
		desc = append(append([]bool(nil), desc...), make([]bool, len(sp.Order)-len(desc))...)
	}
	return &firstBy{y: sp.Arg, keys: sp.Order, desc: desc, last: sp.Func == "last_by", tmp: make([]row.Value, len(sp.Order))}, nil
}

func (c *firstBy) Kind() row.Kind { return c.y.Kind }
func (c *firstBy) Grow(n int) {
	c.yv, c.valid = grow(c.yv, n), grow(c.valid, n)
	c.kv = grow(c.kv, n*len(c.keys))
}

// cmp orders key tuples a and b: < 0 when a comes first.
func (c *firstBy) cmp(a, b []row.Value) int {
	for i := range a {
		d := a[i].Compare(b[i])
		if d == 0 && a[i].Kind == row.KindDecimal {
			d = order(a[i], b[i])
		}
		if d != 0 {
			if c.desc[i] {
				return -d
			}
			return d
		}
	}
	return 0
}

// wins reports whether a new row with keys k replaces slot s's.
func (c *firstBy) wins(k []row.Value, s int32) bool {
	if !c.valid[s] {
		return true
	}
	n := len(c.keys)
	d := c.cmp(k, c.kv[int(s)*n:int(s)*n+n])
	if c.last {
		return d >= 0
	}
	return d < 0
}

func (c *firstBy) Add(s int32, r *row.Row) error {
	for i, k := range c.keys {
		c.tmp[i] = r.Get(k)
	}
	if !c.wins(c.tmp, s) {
		return nil
	}
	n := len(c.keys)
	for i, v := range c.tmp {
		c.kv[int(s)*n+i] = own(v)
	}
	c.yv[s], c.valid[s] = own(r.Get(c.y)), true
	return nil
}

func (c *firstBy) Retract(int32, *row.Row) error { return ErrNotRetractable }

func (c *firstBy) Merge(dst, src int32) error {
	if !c.valid[src] {
		return nil
	}
	n := len(c.keys)
	if !c.wins(c.kv[int(src)*n:int(src)*n+n], dst) {
		return nil
	}
	copy(c.kv[int(dst)*n:int(dst)*n+n], c.kv[int(src)*n:int(src)*n+n])
	c.yv[dst], c.valid[dst] = c.yv[src], true
	return nil
}

func (c *firstBy) Result(s int32) row.Value {
	if !c.valid[s] {
		return row.Null
	}
	return c.yv[s]
}

func (c *firstBy) Reset(s int32) {
	n := len(c.keys)
	clear(c.kv[int(s)*n : int(s)*n+n])
	c.yv[s], c.valid[s] = row.Null, false
}

// SlotBytes: the value, the keys and a flag.
func (c *firstBy) SlotBytes() int { return (1+len(c.keys))*int(unsafe.Sizeof(row.Value{})) + 1 }

func (c *firstBy) ExtraBytes(s int32) int {
	n := len(c.yv[s].S)
	for _, v := range c.kv[int(s)*len(c.keys) : int(s)*len(c.keys)+len(c.keys)] {
		n += len(v.S)
	}
	return n
}

// AppendSlot writes valid, then y and the keys (state.Encoder.Value).
func (c *firstBy) AppendSlot(e *state.Encoder, s int32) {
	e.Bool(c.valid[s])
	if !c.valid[s] {
		return
	}
	e.Value(c.yv[s])
	n := len(c.keys)
	for _, v := range c.kv[int(s)*n : int(s)*n+n] {
		e.Value(v)
	}
}

func (c *firstBy) RestoreSlot(d *state.Decoder, s int32) {
	c.Reset(s)
	c.valid[s] = d.Bool()
	if !c.valid[s] {
		return
	}
	c.yv[s] = ownDecoded(d.Value())
	n := len(c.keys)
	for i := range n {
		c.kv[int(s)*n+i] = ownDecoded(d.Value())
	}
}

func ownDecoded(v row.Value) row.Value {
	if v.Kind == row.KindString {
		v.S = strings.Clone(v.S)
	}
	return v
}
