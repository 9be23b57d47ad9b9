package aggregate

import (
	"fmt"
	"math"
	"math/bits"

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
//
// A slot's sum is held in 128 bits (two's complement, hi:lo) so that
// Merge never fails: the window operator merges the partial sums of a
// window's slices, whose running total may leave int64 on the way (+big,
// +big, −big) although the window's total fits. Add and Retract keep a
// slot within int64 (an error otherwise, the slot unchanged), CheckMerge
// tells whether a merge's result fits, and Result is only defined for a
// slot whose sum fits (the operator checks every window's total before a
// record changes it: Magnitude, RowMagnitude).
type sumIntCol struct {
	arg row.Field
	acc []intAcc
}

type intAcc struct {
	sum int64 // the low 64 bits of the sum: the sum itself when it fits int64
	hi  int64 // the high 64 bits: sum >> 63 (0 or −1) when it fits
	n   int64 // non-null values
}

// add128 returns a + (hi:lo) in 128 bits.
func add128(a *intAcc, lo uint64, hi int64) (uint64, int64) {
	l, carry := bits.Add64(uint64(a.sum), lo, 0)
	return l, a.hi + hi + int64(carry)
}

// fits reports whether the 128-bit value hi:lo is an int64.
func fits(lo uint64, hi int64) bool { return hi == int64(lo)>>63 }

func (c *sumIntCol) Kind() row.Kind { return row.KindInt }
func (c *sumIntCol) Grow(n int)     { c.acc = grow(c.acc, n) }

// addInt adds x (sign-extended) to a, reporting whether the result fits
// int64; a is unchanged when it does not.
func addInt(a *intAcc, x int64) bool {
	l, h := add128(a, uint64(x), x>>63)
	if !fits(l, h) {
		return false
	}
	a.sum, a.hi = int64(l), h
	return true
}

func (c *sumIntCol) overflow() error { return fmt.Errorf("sum(%s) overflows int64", c.arg.Name) }

func (c *sumIntCol) Add(s int32, r *row.Row) error {
	if r.IsNull(c.arg.Index) {
		return nil
	}
	a := &c.acc[s]
	if !addInt(a, r.I[c.arg.Slot]) {
		return c.overflow()
	}
	a.n++
	return nil
}
func (c *sumIntCol) Retract(s int32, r *row.Row) error {
	if r.IsNull(c.arg.Index) {
		return nil
	}
	x := r.I[c.arg.Slot]
	if x == math.MinInt64 { // −x is not an int64
		return c.overflow()
	}
	a := &c.acc[s]
	if !addInt(a, -x) {
		return c.overflow()
	}
	a.n--
	return nil
}

// Merge adds src's sum to dst's in 128 bits; it never fails (CheckMerge
// says whether the result fits int64).
func (c *sumIntCol) Merge(dst, src int32) error {
	d, s := &c.acc[dst], &c.acc[src]
	l, h := add128(d, uint64(s.sum), s.hi)
	d.sum, d.hi = int64(l), h
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
		if x == math.MinInt64 {
			return c.overflow()
		}
		x = -x
	}
	if l, h := add128(&c.acc[s], uint64(x), x>>63); !fits(l, h) {
		return c.overflow()
	}
	return nil
}

// CheckMerge implements Checker.
func (c *sumIntCol) CheckMerge(dst, src int32) error {
	s := &c.acc[src]
	if l, h := add128(&c.acc[dst], uint64(s.sum), s.hi); !fits(l, h) {
		return c.overflow()
	}
	return nil
}

// Magnitude implements Checker: |sum| of slot s, at most 2^64 − 1.
func (c *sumIntCol) Magnitude(s int32) uint64 {
	a := &c.acc[s]
	lo, hi := uint64(a.sum), a.hi
	if hi < 0 { // negate the 128-bit value
		var b uint64
		lo, b = bits.Sub64(0, lo, 0)
		hi = -hi - int64(b)
	}
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

// RowMagnitude implements Checker: |x| of the row's argument (0 for null).
func (c *sumIntCol) RowMagnitude(r *row.Row) uint64 {
	if r.IsNull(c.arg.Index) {
		return 0
	}
	x := r.I[c.arg.Slot]
	if x < 0 {
		return uint64(-(x + 1)) + 1 // MinInt64 included
	}
	return uint64(x)
}

// Result returns the sum; defined only for a slot whose sum fits int64
// (the type comment).
func (c *sumIntCol) Result(s int32) row.Value {
	if c.acc[s].n == 0 {
		return row.Null
	}
	return row.Int(c.acc[s].sum)
}
func (c *sumIntCol) Reset(s int32)        { c.acc[s] = intAcc{} }
func (c *sumIntCol) SlotBytes() int       { return 24 }
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
	arg     row.Field
	acc     []decAcc
	retract bool // built for an input that retracts: HistoryDependent
}

// HistoryDependent implements HistoryDependent: with retraction the
// result keeps the largest scale seen.
func (c *sumDecCol) HistoryDependent() bool { return c.retract }

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
	arg     row.Field
	acc     []decAcc
	retract bool // decimal argument and an input that retracts: HistoryDependent
}

// HistoryDependent implements HistoryDependent: with retraction of
// decimals the result keeps the largest scale seen.
func (c *avgCol) HistoryDependent() bool { return c.retract }

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
