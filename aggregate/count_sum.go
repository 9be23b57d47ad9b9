package aggregate

import (
	"fmt"

	"github.com/quagmt/udecimal"
	"github.com/tidemark/tidemark/row"
)

// countCol counts rows (count()) or non-null values (count(x)).
type countCol struct {
	arg   row.Field
	field bool
	n     []int64
}

func (c *countCol) Kind() row.Kind { return row.KindInt }
func (c *countCol) Grow(n int)     { c.n = grow(c.n, n) }
func (c *countCol) Add(s int32, r *row.Row) error {
	if !c.field || !r.IsNull(c.arg.Index) {
		c.n[s]++
	}
	return nil
}
func (c *countCol) Retract(s int32, r *row.Row) error {
	if !c.field || !r.IsNull(c.arg.Index) {
		c.n[s]--
	}
	return nil
}
func (c *countCol) Merge(dst, src int32) error { c.n[dst] += c.n[src]; return nil }
func (c *countCol) Result(s int32) row.Value   { return row.Int(c.n[s]) }
func (c *countCol) Reset(s int32)              { c.n[s] = 0 }
func (c *countCol) SlotBytes() int             { return 8 }
func (c *countCol) ExtraBytes(int32) int       { return 0 }

// sumIntCol sums int values exactly; overflow is an error.
type sumIntCol struct {
	arg row.Field
	sum []int64
	n   []int64 // non-null values
}

func (c *sumIntCol) Kind() row.Kind { return row.KindInt }
func (c *sumIntCol) Grow(n int)     { c.sum = grow(c.sum, n); c.n = grow(c.n, n) }

func addInt(a, b int64) (int64, bool) {
	s := a + b
	// Overflow iff a and b have the same sign and s has the other.
	return s, (a >= 0) != (b >= 0) || (s >= 0) == (a >= 0)
}

func (c *sumIntCol) Add(s int32, r *row.Row) error {
	if r.IsNull(c.arg.Index) {
		return nil
	}
	v, ok := addInt(c.sum[s], r.I[c.arg.Slot])
	if !ok {
		return fmt.Errorf("sum(%s) overflows int64", c.arg.Name)
	}
	c.sum[s] = v
	c.n[s]++
	return nil
}
func (c *sumIntCol) Retract(s int32, r *row.Row) error {
	if r.IsNull(c.arg.Index) {
		return nil
	}
	x := r.I[c.arg.Slot]
	if x == -x && x != 0 { // MinInt64
		return fmt.Errorf("sum(%s) overflows int64", c.arg.Name)
	}
	v, ok := addInt(c.sum[s], -x)
	if !ok {
		return fmt.Errorf("sum(%s) overflows int64", c.arg.Name)
	}
	c.sum[s] = v
	c.n[s]--
	return nil
}
func (c *sumIntCol) Merge(dst, src int32) error {
	v, ok := addInt(c.sum[dst], c.sum[src])
	if !ok {
		return fmt.Errorf("sum(%s) overflows int64", c.arg.Name)
	}
	c.sum[dst] = v
	c.n[dst] += c.n[src]
	return nil
}
func (c *sumIntCol) Result(s int32) row.Value {
	if c.n[s] == 0 {
		return row.Null
	}
	return row.Int(c.sum[s])
}
func (c *sumIntCol) Reset(s int32)        { c.sum[s], c.n[s] = 0, 0 }
func (c *sumIntCol) SlotBytes() int       { return 16 }
func (c *sumIntCol) ExtraBytes(int32) int { return 0 }

// decArg reads a numeric argument as a decimal.
func decArg(f row.Field, r *row.Row) row.Decimal {
	if f.Kind == row.KindInt {
		return row.DecimalFromInt(r.I[f.Slot])
	}
	return r.D[f.Slot]
}

// sumDecCol sums decimal values exactly. The result keeps the largest
// scale of its inputs (19.99 + 0.01 = 20.00); zero is written 0, since the
// decimal type normalizes zero to scale 0.
type sumDecCol struct {
	arg   row.Field
	sum   []row.Decimal
	n     []int64
	scale []uint8
}

func (c *sumDecCol) Kind() row.Kind { return row.KindDecimal }
func (c *sumDecCol) Grow(n int) {
	c.sum, c.n, c.scale = grow(c.sum, n), grow(c.n, n), grow(c.scale, n)
}
func (c *sumDecCol) Add(s int32, r *row.Row) error {
	if r.IsNull(c.arg.Index) {
		return nil
	}
	d := r.D[c.arg.Slot]
	c.sum[s] = c.sum[s].Add(d)
	c.n[s]++
	if p := d.PrecUint(); p > c.scale[s] {
		c.scale[s] = p
	}
	return nil
}
func (c *sumDecCol) Retract(s int32, r *row.Row) error {
	if r.IsNull(c.arg.Index) {
		return nil
	}
	c.sum[s] = c.sum[s].Sub(r.D[c.arg.Slot])
	c.n[s]--
	return nil
}
func (c *sumDecCol) Merge(dst, src int32) error {
	c.sum[dst] = c.sum[dst].Add(c.sum[src])
	c.n[dst] += c.n[src]
	c.scale[dst] = max(c.scale[dst], c.scale[src])
	return nil
}
func (c *sumDecCol) Result(s int32) row.Value {
	if c.n[s] == 0 {
		return row.Null
	}
	return row.Dec(fixScale(c.sum[s], c.scale[s]))
}
func (c *sumDecCol) Reset(s int32)        { c.sum[s], c.n[s], c.scale[s] = udecimal.Zero, 0, 0 }
func (c *sumDecCol) SlotBytes() int       { return 32 + 8 + 1 }
func (c *sumDecCol) ExtraBytes(int32) int { return 0 }

// avgCol keeps an exact decimal sum and a count.
type avgCol struct {
	arg   row.Field
	sum   []row.Decimal
	n     []int64
	scale []uint8 // largest input scale seen
}

func (c *avgCol) Kind() row.Kind { return row.KindDecimal }
func (c *avgCol) Grow(n int) {
	c.sum, c.n, c.scale = grow(c.sum, n), grow(c.n, n), grow(c.scale, n)
}
func (c *avgCol) Add(s int32, r *row.Row) error {
	if r.IsNull(c.arg.Index) {
		return nil
	}
	d := decArg(c.arg, r)
	c.sum[s] = c.sum[s].Add(d)
	c.n[s]++
	if p := d.PrecUint(); p > c.scale[s] {
		c.scale[s] = p
	}
	return nil
}
func (c *avgCol) Retract(s int32, r *row.Row) error {
	if r.IsNull(c.arg.Index) {
		return nil
	}
	c.sum[s] = c.sum[s].Sub(decArg(c.arg, r))
	c.n[s]--
	return nil
}
func (c *avgCol) Merge(dst, src int32) error {
	c.sum[dst] = c.sum[dst].Add(c.sum[src])
	c.n[dst] += c.n[src]
	if c.scale[src] > c.scale[dst] {
		c.scale[dst] = c.scale[src]
	}
	return nil
}

// Result is sum/count rounded half away from zero to max(6, input scale)
// digits after the point.
func (c *avgCol) Result(s int32) row.Value {
	n := c.n[s]
	if n <= 0 {
		return row.Null
	}
	scale := c.scale[s]
	if scale < 6 {
		scale = 6
	}
	q, err := c.sum[s].Div(row.DecimalFromInt(n))
	if err != nil {
		return row.Null
	}
	q = q.RoundHAZ(scale)
	return row.Dec(fixScale(q, scale))
}
func (c *avgCol) Reset(s int32)        { c.sum[s], c.n[s], c.scale[s] = udecimal.Zero, 0, 0 }
func (c *avgCol) SlotBytes() int       { return 32 + 8 + 1 }
func (c *avgCol) ExtraBytes(int32) int { return 0 }

// fixScale returns d with exactly scale digits after the point.
func fixScale(d row.Decimal, scale uint8) row.Decimal {
	if d.PrecUint() == scale {
		return d
	}
	neg, hi, lo, prec, ok := d.ToHiLo()
	if !ok || prec > scale {
		return d
	}
	// Multiply the coefficient by 10^(scale-prec) while keeping the value.
	m := udecimal.MustFromInt64(1, 0)
	ten := udecimal.MustFromInt64(10, 0)
	for i := prec; i < scale; i++ {
		m = m.Mul(ten)
	}
	base, err := udecimal.NewFromHiLo(neg, hi, lo, 0)
	if err != nil {
		return d
	}
	coef := base.Mul(m)
	n2, hi2, lo2, _, ok := coef.ToHiLo()
	if !ok {
		return d
	}
	out, err := udecimal.NewFromHiLo(n2, hi2, lo2, scale)
	if err != nil {
		return d
	}
	return out
}
