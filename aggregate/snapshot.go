package aggregate

// Checkpoint encoding of one slot of each column (Column.AppendSlot and
// Column.RestoreSlot). Integers are state varints, decimals their exact
// text (scale kept), strings length-prefixed:
//
//	count            Int(n)
//	sum(int)         Int(sum) Int(n)
//	sum(decimal),
//	avg              Decimal(sum) Int(n) Byte(scale | 0x80 if the sum is held
//	                 in big.Int form)
//	min/max          Bool(valid) [value]
//	min/max with
//	retraction       Uint(entries) {Uint(multiplicity) value}… in ascending
//	                 value order, then Bool(valid) [current extreme]
//	count_distinct   Uint(entries) {Fixed64(hash key) Uint(multiplicity)}…
//	                 in ascending key order (56-bit keys of the values'
//	                 hashes: distinct.go)
//
// A value is Int for bool, int and timestamp arguments, String for
// strings, Decimal for decimals. The current extreme of a retractable
// min/max is written rather than recomputed because it is not always the
// extreme of the multiset (retracting 2.0 from a slot holding 2.00 leaves
// the extreme in place, see Retract); restoring it keeps every future
// Result identical.

import (
	"math/big"
	"slices"
	"strconv"

	"github.com/quagmt/udecimal"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// maxEntries bounds a slot's multiset or distinct set on restore (each
// entry also takes at least two bytes of input, which bounds it first).
const maxEntries = 1 << 30

// AppendSlot implements Column.
func (c *countCol) AppendSlot(e *state.Encoder, s int32) { e.Int(c.n[s]) }

// RestoreSlot implements Column.
func (c *countCol) RestoreSlot(d *state.Decoder, s int32) { c.n[s] = d.Int() }

// AppendSlot implements Column.
func (c *sumIntCol) AppendSlot(e *state.Encoder, s int32) {
	e.Int(c.acc[s].sum)
	e.Int(c.acc[s].n)
}

// RestoreSlot implements Column.
func (c *sumIntCol) RestoreSlot(d *state.Decoder, s int32) {
	sum := d.Int()
	c.acc[s] = intAcc{sum: sum, hi: sum >> 63, n: d.Int()}
}

// bigForm is the scale byte's flag for a sum held in big.Int form.
const bigForm = 0x80

// appendDecAcc writes a decimal accumulator. A sum that once overflowed
// 128 bits stays in big.Int form in the decimal type even when it shrinks
// back, and that form is visible (fixScale leaves such a sum's scale as
// is): the flag lets restore rebuild the same form.
func appendDecAcc(e *state.Encoder, a *decAcc) {
	appendDecimal(e, a.sum)
	e.Int(a.n)
	sc := a.scale
	if _, _, _, _, ok := a.sum.ToHiLo(); !ok {
		sc |= bigForm
	}
	e.Byte(sc)
}

func restoreDecAcc(d *state.Decoder, a *decAcc) {
	sum := d.Decimal()
	n := d.Int()
	sc := d.Byte()
	if d.Err() != nil {
		return
	}
	if sc&^bigForm > row.MaxDecimalScale {
		d.Fail("decimal sum scale %d is above %d", sc&^bigForm, row.MaxDecimalScale)
		return
	}
	if sc&bigForm != 0 {
		sum = toBigForm(sum)
	}
	*a = decAcc{sum: sum, n: n, scale: sc &^ bigForm}
}

// appendDecimal writes d exactly as e.Decimal does (its text with its
// scale, length-prefixed), without allocating for a coefficient below
// 2^64.
func appendDecimal(e *state.Encoder, d row.Decimal) {
	var buf [48]byte
	e.Bytes8(appendDecimalText(buf[:0], d))
}

// appendDecimalText appends row.FormatDecimal(d): the coefficient's digits
// with the point prec digits from the right, zero-padded ("0.005"), and a
// leading "-" for a negative value.
func appendDecimalText(dst []byte, d row.Decimal) []byte {
	neg, hi, lo, prec, ok := d.ToHiLo()
	if !ok || hi != 0 {
		return row.FormatDecimal(dst, d)
	}
	if neg {
		dst = append(dst, '-')
	}
	var digits [20]byte
	ds := strconv.AppendUint(digits[:0], lo, 10)
	p := int(prec)
	if p == 0 {
		return append(dst, ds...)
	}
	if len(ds) <= p {
		dst = append(dst, '0', '.')
		for i := len(ds); i < p; i++ {
			dst = append(dst, '0')
		}
		return append(dst, ds...)
	}
	dst = append(dst, ds[:len(ds)-p]...)
	dst = append(dst, '.')
	return append(dst, ds[len(ds)-p:]...)
}

// two128 is 2^128, the first coefficient the decimal type holds as a
// big.Int.
var two128 = udecimal.MustParse(new(big.Int).Lsh(big.NewInt(1), 128).String())

// toBigForm returns d (same value and scale) held in big.Int form: adding
// 2^128 moves the coefficient to a big.Int, and subtracting it keeps that
// form. Zero has a single form.
func toBigForm(d row.Decimal) row.Decimal {
	if d.IsZero() {
		return d
	}
	return d.Add(two128).Sub(two128)
}

// AppendSlot implements Column.
func (c *sumDecCol) AppendSlot(e *state.Encoder, s int32) { appendDecAcc(e, &c.acc[s]) }

// RestoreSlot implements Column.
func (c *sumDecCol) RestoreSlot(d *state.Decoder, s int32) { restoreDecAcc(d, &c.acc[s]) }

// AppendSlot implements Column.
func (c *avgCol) AppendSlot(e *state.Encoder, s int32) { appendDecAcc(e, &c.acc[s]) }

// RestoreSlot implements Column.
func (c *avgCol) RestoreSlot(d *state.Decoder, s int32) { restoreDecAcc(d, &c.acc[s]) }

// appendValue writes a min/max value: int64 as Int, string as String,
// decimal as Decimal.
func appendValue[T any](e *state.Encoder, v T) {
	switch x := any(v).(type) {
	case int64:
		e.Int(x)
	case string:
		e.String(x)
	case row.Decimal:
		appendDecimal(e, x)
	}
}

// readValue reads what appendValue wrote.
func readValue[T any](d *state.Decoder) T {
	var v T
	switch p := any(&v).(type) {
	case *int64:
		*p = d.Int()
	case *string:
		*p = d.String()
	case *row.Decimal:
		*p = d.Decimal()
	}
	return v
}

// AppendSlot implements Column.
func (c *extreme[T]) AppendSlot(e *state.Encoder, s int32) {
	e.Bool(c.valid[s])
	if c.valid[s] {
		appendValue(e, c.v[s])
	}
}

// RestoreSlot implements Column.
func (c *extreme[T]) RestoreSlot(d *state.Decoder, s int32) {
	var zero T
	c.v[s], c.valid[s] = zero, false
	if d.Bool() {
		v := readValue[T](d)
		if d.Err() == nil {
			c.v[s], c.valid[s] = v, true
		}
	}
}

// AppendSlot implements Column.
func (c *multiExtreme[T, K]) AppendSlot(e *state.Encoder, s int32) {
	ms := c.m[s]
	if ms == nil {
		e.Uint(0)
		e.Bool(false)
		return
	}
	c.scratch = c.scratch[:0]
	for _, en := range ms.vals {
		c.scratch = append(c.scratch, en)
	}
	// Entries hold distinct values (keys identify values), so the order is
	// total.
	slices.SortFunc(c.scratch, func(a, b *msEntry[T]) int { return c.cmp(a.v, b.v) })
	e.Uint(uint64(len(c.scratch)))
	for _, en := range c.scratch {
		e.Uint(uint64(en.n))
		appendValue(e, en.v)
	}
	clear(c.scratch)
	e.Bool(ms.valid)
	if ms.valid {
		appendValue(e, ms.best)
	}
}

// RestoreSlot implements Column.
func (c *multiExtreme[T, K]) RestoreSlot(d *state.Decoder, s int32) {
	c.m[s] = nil
	n := d.Len(maxEntries, 2)
	var ms *multiset[T, K]
	if n > 0 {
		ms = &multiset[T, K]{vals: make(map[K]*msEntry[T], n)}
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		cnt := d.Uint()
		v := readValue[T](d)
		if d.Err() != nil {
			return
		}
		if cnt < 1 || cnt > 1<<62 {
			d.Fail("%s multiplicity %d", c.arg.Name, cnt)
			return
		}
		k := c.key(v)
		if _, dup := ms.vals[k]; dup {
			d.Fail("%s value listed twice", c.arg.Name)
			return
		}
		ms.vals[k] = &msEntry[T]{n: int64(cnt), v: v}
	}
	valid := d.Bool()
	var best T
	if valid {
		best = readValue[T](d)
	}
	if d.Err() != nil {
		return
	}
	if ms == nil && valid {
		ms = &multiset[T, K]{vals: map[K]*msEntry[T]{}}
	}
	if ms != nil {
		ms.best, ms.valid = best, valid
	}
	c.m[s] = ms
}
