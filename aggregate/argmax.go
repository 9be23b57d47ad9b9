package aggregate

import (
	"cmp"
	"fmt"
	"strings"
	"unsafe"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// argExtreme is arg_max(x, y) / arg_min(x, y): the value of y on the row
// with the largest (smallest) x. Rows whose x or y is null are skipped.
// Ties on x go to the smallest y (row.Value.Compare), so the result does
// not depend on arrival order or on how panes merge. It cannot retract:
// a stage using it needs an input without retractions (an upstream stage
// in emit mode final, or the source).
//
// It is what Nexmark q5 ("the auction with the most bids per window") and
// q7 ("the bid with the highest price") need; where the reference query
// returns every row tied on x, arg_max returns one (the smallest y).
type argExtreme struct {
	x, y row.Field
	max  bool
	// ints says x and y are int or timestamp fields: Add compares their
	// int64s in the row without boxing them (row.Row.Get) first.
	ints  bool
	xv    []row.Value // per slot: the best x, null when empty
	yv    []row.Value // its y
	valid []bool
}

func newArgExtreme(sp Spec) (Column, error) {
	if !sp.HasArg || !sp.HasArg2 {
		return nil, fmt.Errorf("%s() needs two arguments: the value to maximize and the field to return, e.g. %s(bid.price, bid.auction)", sp.Func, sp.Func)
	}
	if sp.Retract {
		return nil, fmt.Errorf("%s() cannot take back a row, and this stage's input retracts (an upstream stage not in emit mode final, or order_by)", sp.Func)
	}
	switch sp.Arg.Kind {
	case row.KindInt, row.KindTime, row.KindDecimal, row.KindString:
	default:
		return nil, fmt.Errorf("%s(%s, …) needs an int, decimal, string or timestamp to compare, %s is %s", sp.Func, sp.Arg.Name, sp.Arg.Name, sp.Arg.Kind)
	}
	intLike := func(k row.Kind) bool { return k == row.KindInt || k == row.KindTime }
	return &argExtreme{x: sp.Arg, y: sp.Arg2, max: sp.Func == "arg_max", ints: intLike(sp.Arg.Kind) && intLike(sp.Arg2.Kind)}, nil
}

func (c *argExtreme) Kind() row.Kind { return c.y.Kind }
func (c *argExtreme) Grow(n int) {
	c.xv, c.yv, c.valid = grow(c.xv, n), grow(c.yv, n), grow(c.valid, n)
}

// better reports whether (x, y) beats (bx, by).
func (c *argExtreme) better(x, y, bx, by row.Value) bool {
	switch d := x.Compare(bx); {
	case d > 0:
		return c.max
	case d < 0:
		return !c.max
	}
	return order(y, by) < 0
}

// order is row.Value.Compare with equal decimals of different scales
// ordered by scale (1.5 before 1.50), so that a tie's result does not
// depend on arrival order (as min and max do).
func order(a, b row.Value) int {
	if d := a.Compare(b); d != 0 || a.Kind != row.KindDecimal || b.Kind != row.KindDecimal {
		return d
	}
	return cmp.Compare(a.D.PrecUint(), b.D.PrecUint())
}

func own(v row.Value) row.Value {
	if v.Kind == row.KindString {
		v.S = strings.Clone(v.S)
	}
	return v
}

func (c *argExtreme) Add(s int32, r *row.Row) error {
	if r.IsNull(c.x.Index) || r.IsNull(c.y.Index) {
		return nil
	}
	if c.ints {
		// better, on the int64s: a larger (smaller) x wins, a tie goes to
		// the smaller y.
		if c.valid[s] {
			x, y, bx, by := r.I[c.x.Slot], r.I[c.y.Slot], c.xv[s].I, c.yv[s].I
			if x == bx && y >= by || x != bx && (x > bx) != c.max {
				return nil
			}
		}
		c.xv[s], c.yv[s], c.valid[s] = r.Get(c.x), r.Get(c.y), true
		return nil
	}
	x, y := r.Get(c.x), r.Get(c.y)
	if !c.valid[s] || c.better(x, y, c.xv[s], c.yv[s]) {
		c.xv[s], c.yv[s], c.valid[s] = own(x), own(y), true
	}
	return nil
}
func (c *argExtreme) Retract(int32, *row.Row) error { return ErrNotRetractable }
func (c *argExtreme) Merge(dst, src int32) error {
	if c.valid[src] && (!c.valid[dst] || c.better(c.xv[src], c.yv[src], c.xv[dst], c.yv[dst])) {
		c.xv[dst], c.yv[dst], c.valid[dst] = c.xv[src], c.yv[src], true
	}
	return nil
}
func (c *argExtreme) Result(s int32) row.Value {
	if !c.valid[s] {
		return row.Null
	}
	return c.yv[s]
}
func (c *argExtreme) Reset(s int32) {
	c.xv[s], c.yv[s], c.valid[s] = row.Null, row.Null, false
}

// SlotBytes: two boxed values and a flag.
func (c *argExtreme) SlotBytes() int { return 2*int(unsafe.Sizeof(row.Value{})) + 1 }
func (c *argExtreme) ExtraBytes(s int32) int {
	return len(c.xv[s].S) + len(c.yv[s].S)
}

// AppendSlot writes valid, then x and y (state.Encoder.Value).
func (c *argExtreme) AppendSlot(e *state.Encoder, s int32) {
	e.Bool(c.valid[s])
	if c.valid[s] {
		e.Value(c.xv[s])
		e.Value(c.yv[s])
	}
}
func (c *argExtreme) RestoreSlot(d *state.Decoder, s int32) {
	c.valid[s] = d.Bool()
	c.xv[s], c.yv[s] = row.Null, row.Null
	if c.valid[s] {
		c.xv[s], c.yv[s] = d.Value(), d.Value()
	}
}
