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

// sumIntCol sums int values exactly; overflow is an error. Each slot's
// sum and count sit together (one cache line per update).
type sumIntCol struct {
	arg row.Field
	acc []intAcc
}

type intAcc struct {
	sum int64
	n   int64 // non-null values
}

func (c *sumIntCol) Kind() row.Kind { return row.KindInt }
func (c *sumIntCol) Grow(n int)     { c.acc = grow(c.acc, n) }

func addInt(a, b int64) (int64, bool) {
	s := a + b
	// Overflow iff a and b have the same sign and s has the other.
	return s, (a >= 0) != (b >= 0) || (s >= 0) == (a >= 0)
}

func (c *sumIntCol) Add(s int32, r *row.Row) error {
	if r.IsNull(c.arg.Index) {
		return nil
	}
	a := &c.acc[s]
	v, ok := addInt(a.sum, r.I[c.arg.Slot])
	if !ok {
		return fmt.Errorf("sum(%s) overflows int64", c.arg.Name)
	}
	a.sum = v
	a.n++
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
	a := &c.acc[s]
	v, ok := addInt(a.sum, -x)
	if !ok {
		return fmt.Errorf("sum(%s) overflows int64", c.arg.Name)
	}
	a.sum = v
	a.n--
	return nil
}
func (c *sumIntCol) Merge(dst, src int32) error {
	d, s := &c.acc[dst], &c.acc[src]
	v, ok := addInt(d.sum, s.sum)
	if !ok {
		return fmt.Errorf("sum(%s) overflows int64", c.arg.Name)
	}
	d.sum = v
	d.n += s.n
	return nil
}

// Check implements Checker.
func (c *sumIntCol) Check(s int32, r *row.Row, weight int) error {
	if r.IsNull(c.arg.Index) {
		return nil
	}
	x := r.I[c.arg.Slot]
	if weight < 0 {
		if x == -x && x != 0 {
			return fmt.Errorf("sum(%s) overflows int64", c.arg.Name)
		}
		x = -x
	}
	if _, ok := addInt(c.acc[s].sum, x); !ok {
		return fmt.Errorf("sum(%s) overflows int64", c.arg.Name)
	}
	return nil
}

// CheckMerge implements Checker.
func (c *sumIntCol) CheckMerge(dst, src int32) error {
	if _, ok := addInt(c.acc[dst].sum, c.acc[src].sum); !ok {
		return fmt.Errorf("sum(%s) overflows int64", c.arg.Name)
	}
	return nil
}

func (c *sumIntCol) Result(s int32) row.Value {
	if c.acc[s].n == 0 {
		return row.Null
	}
	return row.Int(c.acc[s].sum)
}
func (c *sumIntCol) Reset(s int32)        { c.acc[s] = intAcc{} }
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
// decimal type normalizes zero to scale 0. Each slot's sum, count and
// scale sit together.
type sumDecCol struct {
	arg row.Field
	acc []decAcc
}

type decAcc struct {
	sum   row.Decimal
	n     int64 // non-null values
	scale uint8 // largest input scale
}

func (a *decAcc) add(d row.Decimal) {
	a.sum = a.sum.Add(d)
	a.n++
	if p := d.PrecUint(); p > a.scale {
		a.scale = p
	}
}

func (a *decAcc) sub(d row.Decimal) {
	a.sum = a.sum.Sub(d)
	a.n--
}

func (a *decAcc) merge(b *decAcc) {
	a.sum = a.sum.Add(b.sum)
	a.n += b.n
	a.scale = max(a.scale, b.scale)
}

func (c *sumDecCol) Kind() row.Kind { return row.KindDecimal }
func (c *sumDecCol) Grow(n int)     { c.acc = grow(c.acc, n) }
func (c *sumDecCol) Add(s int32, r *row.Row) error {
	if !r.IsNull(c.arg.Index) {
		c.acc[s].add(r.D[c.arg.Slot])
	}
	return nil
}
func (c *sumDecCol) Retract(s int32, r *row.Row) error {
	if !r.IsNull(c.arg.Index) {
		c.acc[s].sub(r.D[c.arg.Slot])
	}
	return nil
}
func (c *sumDecCol) Merge(dst, src int32) error { c.acc[dst].merge(&c.acc[src]); return nil }
func (c *sumDecCol) Result(s int32) row.Value {
	a := &c.acc[s]
	if a.n == 0 {
		return row.Null
	}
	return row.Dec(fixScale(a.sum, a.scale))
}
func (c *sumDecCol) Reset(s int32)        { c.acc[s] = decAcc{} }
func (c *sumDecCol) SlotBytes() int       { return 48 }
func (c *sumDecCol) ExtraBytes(int32) int { return 0 }

// avgCol keeps an exact decimal sum and a count per slot.
type avgCol struct {
	arg row.Field
	acc []decAcc
}

func (c *avgCol) Kind() row.Kind { return row.KindDecimal }
func (c *avgCol) Grow(n int)     { c.acc = grow(c.acc, n) }
func (c *avgCol) Add(s int32, r *row.Row) error {
	if !r.IsNull(c.arg.Index) {
		c.acc[s].add(decArg(c.arg, r))
	}
	return nil
}
func (c *avgCol) Retract(s int32, r *row.Row) error {
	if !r.IsNull(c.arg.Index) {
		c.acc[s].sub(decArg(c.arg, r))
	}
	return nil
}
func (c *avgCol) Merge(dst, src int32) error { c.acc[dst].merge(&c.acc[src]); return nil }

// Result is sum/count rounded half away from zero to max(6, input scale)
// digits after the point. The rounding is exact: the quotient truncated to
// that scale is corrected by one unit in the last place when the remainder
// is at least half of it (the decimal type's own division truncates at 19
// digits, which leaves no digit to round on at scale 19).
func (c *avgCol) Result(s int32) row.Value {
	a := &c.acc[s]
	if a.n <= 0 {
		return row.Null
	}
	scale := max(a.scale, 6)
	n := row.DecimalFromInt(a.n)
	q, err := a.sum.Div(n)
	if err != nil {
		return row.Null
	}
	q = q.Trunc(scale)
	rem := a.sum.Sub(q.Mul(n)) // exact; same sign as the sum
	ulp := udecimal.MustFromInt64(1, scale)
	if rem.Abs().Mul(udecimal.MustFromInt64(2, 0)).Cmp(ulp.Mul(n)) >= 0 {
		if a.sum.IsNeg() {
			q = q.Sub(ulp)
		} else {
			q = q.Add(ulp)
		}
	}
	return row.Dec(fixScale(q, scale))
}
func (c *avgCol) Reset(s int32)        { c.acc[s] = decAcc{} }
func (c *avgCol) SlotBytes() int       { return 48 }
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
