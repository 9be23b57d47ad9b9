package aggregate

import (
	"cmp"
	"strings"

	"github.com/tidemark/tidemark/row"
)

// newExtreme builds min or max for the argument's kind, with a multiset per
// slot when the input may retract.
func newExtreme(sp Spec) (Column, error) {
	isMax := sp.Func == "max"
	f := sp.Arg
	switch {
	case f.Kind.InI():
		get := func(r *row.Row) int64 { return r.I[f.Slot] }
		box := func(v int64) row.Value { return row.Value{Kind: f.Kind, I: v} }
		if sp.Retract {
			return &multiExtreme[int64, int64]{arg: f, max: isMax, get: get, key: func(v int64) int64 { return v }, cmp: cmp.Compare[int64], box: box}, nil
		}
		return &extreme[int64]{arg: f, max: isMax, get: get, cmp: cmp.Compare[int64], box: box, keep: func(v int64) int64 { return v }}, nil
	case f.Kind == row.KindString:
		get := func(r *row.Row) string { return r.S[f.Slot] }
		box := func(v string) row.Value { return row.Str(v) }
		if sp.Retract {
			return &multiExtreme[string, string]{arg: f, max: isMax, get: get, key: func(v string) string { return v }, cmp: strings.Compare, box: box, clone: true}, nil
		}
		return &extreme[string]{arg: f, max: isMax, get: get, cmp: strings.Compare, box: box, keep: strings.Clone}, nil
	case f.Kind == row.KindDecimal:
		get := func(r *row.Row) row.Decimal { return r.D[f.Slot] }
		box := func(v row.Decimal) row.Value { return row.Dec(v) }
		// Equal values that differ in scale (0.1, 0.10) order by scale, so
		// the text of the result does not depend on arrival order.
		dc := func(a, b row.Decimal) int {
			if c := a.Cmp(b); c != 0 {
				return c
			}
			return cmp.Compare(a.PrecUint(), b.PrecUint())
		}
		if sp.Retract {
			// Key decimals by their trimmed text so 2.0 and 2.00 are one value.
			return &multiExtreme[row.Decimal, string]{arg: f, max: isMax, get: get, key: func(v row.Decimal) string { return v.String() }, cmp: dc, box: box, history: true}, nil
		}
		return &extreme[row.Decimal]{arg: f, max: isMax, get: get, cmp: dc, box: box, keep: func(v row.Decimal) row.Decimal { return v }}, nil
	}
	return nil, &argKindError{sp}
}

type argKindError struct{ sp Spec }

func (e *argKindError) Error() string {
	return e.sp.Func + "(" + e.sp.Arg.Name + ") does not accept " + e.sp.Arg.Kind.String()
}

// extreme keeps the running min or max; it cannot retract.
type extreme[T any] struct {
	arg   row.Field
	max   bool
	get   func(*row.Row) T
	cmp   func(a, b T) int
	box   func(T) row.Value
	keep  func(T) T // copies values that point into decoder buffers
	v     []T
	valid []bool
}

func (c *extreme[T]) Kind() row.Kind { return c.arg.Kind }
func (c *extreme[T]) Grow(n int)     { c.v, c.valid = grow(c.v, n), grow(c.valid, n) }
func (c *extreme[T]) better(a, b T) bool {
	if c.max {
		return c.cmp(a, b) > 0
	}
	return c.cmp(a, b) < 0
}
func (c *extreme[T]) Add(s int32, r *row.Row) error {
	if r.IsNull(c.arg.Index) {
		return nil
	}
	if ci, ok := any(c).(*extreme[int64]); ok {
		extremeInt(ci, s, r.I[c.arg.Slot])
		return nil
	}
	x := c.get(r)
	if !c.valid[s] || c.better(x, c.v[s]) {
		c.v[s], c.valid[s] = c.keep(x), true
	}
	return nil
}

// extremeInt is Add for int and timestamp values (min and max of Nexmark q5's
// and q7's bids): the comparison inline, not through the column's get,
// cmp and keep functions (about 100 instructions a row before).
func extremeInt(c *extreme[int64], s int32, x int64) {
	if !c.valid[s] || c.max && x > c.v[s] || !c.max && x < c.v[s] {
		c.v[s], c.valid[s] = x, true
	}
}
func (c *extreme[T]) Retract(int32, *row.Row) error { return ErrNotRetractable }
func (c *extreme[T]) Merge(dst, src int32) error {
	if c.valid[src] && (!c.valid[dst] || c.better(c.v[src], c.v[dst])) {
		c.v[dst], c.valid[dst] = c.v[src], true
	}
	return nil
}
func (c *extreme[T]) Result(s int32) row.Value {
	if !c.valid[s] {
		return row.Null
	}
	return c.box(c.v[s])
}
func (c *extreme[T]) Reset(s int32) {
	var zero T
	c.v[s], c.valid[s] = zero, false
}
func (c *extreme[T]) SlotBytes() int {
	var zero T
	switch any(zero).(type) {
	case int64:
		return 9
	case string:
		return 17
	}
	return 33
}
func (c *extreme[T]) ExtraBytes(s int32) int {
	if v, ok := any(c.v[s]).(string); ok {
		return len(v)
	}
	return 0
}

// multiset is the per-slot state of a retractable min/max: each value with
// its multiplicity, and the current extreme. Entries are updated through
// their pointer, never re-assigned: assigning m[k] would store a key that
// may point into a reused decoder buffer (see distinct).
type multiset[T any, K comparable] struct {
	vals  map[K]*msEntry[T]
	best  T
	valid bool
}

type msEntry[T any] struct {
	n int64
	v T
}

// multiExtreme is min or max with retraction: a multiset per slot, and a
// rescan when the current extreme is retracted to zero.
type multiExtreme[T any, K comparable] struct {
	arg     row.Field
	max     bool
	get     func(*row.Row) T
	key     func(T) K
	cmp     func(a, b T) int
	box     func(T) row.Value
	clone   bool // string values must be copied out of decoder buffers
	history bool // decimals: equal values of other scales share an entry (HistoryDependent)
	m       []*multiset[T, K]
	scratch []*msEntry[T] // AppendSlot's sort buffer
}

func (c *multiExtreme[T, K]) Kind() row.Kind { return c.arg.Kind }

// HistoryDependent implements HistoryDependent: a decimal extreme keeps
// the representation it saw.
func (c *multiExtreme[T, K]) HistoryDependent() bool { return c.history }
func (c *multiExtreme[T, K]) Grow(n int)             { c.m = grow(c.m, n) }
func (c *multiExtreme[T, K]) better(a, b T) bool {
	if c.max {
		return c.cmp(a, b) > 0
	}
	return c.cmp(a, b) < 0
}
func (c *multiExtreme[T, K]) own(x T) T {
	if c.clone {
		if s, ok := any(x).(string); ok {
			return any(strings.Clone(s)).(T)
		}
	}
	return x
}
func (c *multiExtreme[T, K]) add(s int32, x T, n int64) {
	ms := c.m[s]
	if ms == nil {
		ms = &multiset[T, K]{vals: map[K]*msEntry[T]{}}
		c.m[s] = ms
	}
	e, ok := ms.vals[c.key(x)]
	if ok {
		e.n += n
		if c.better(x, e.v) { // equal values: keep the text min or max would pick
			e.v = c.own(x)
		}
	} else {
		e = &msEntry[T]{n: n, v: c.own(x)}
		ms.vals[c.key(e.v)] = e
	}
	if !ms.valid || c.better(e.v, ms.best) {
		ms.best, ms.valid = e.v, true
	}
}
func (c *multiExtreme[T, K]) Add(s int32, r *row.Row) error {
	if r.IsNull(c.arg.Index) {
		return nil
	}
	c.add(s, c.get(r), 1)
	return nil
}
func (c *multiExtreme[T, K]) Retract(s int32, r *row.Row) error {
	if r.IsNull(c.arg.Index) {
		return nil
	}
	ms := c.m[s]
	if ms == nil {
		return nil
	}
	x := c.get(r)
	k := c.key(x)
	e, ok := ms.vals[k]
	if !ok {
		return nil // retracting a value never added: nothing to undo
	}
	if e.n > 1 {
		e.n--
		return nil
	}
	delete(ms.vals, k)
	// The removed value was the extreme when it had the extreme's key:
	// comparing x itself would miss it when x is the extreme in another
	// scale (retracting 2 when 2.00 is the maximum).
	if c.key(ms.best) == k {
		ms.valid = false
		for _, e := range ms.vals { // order-independent: the extreme is unique
			if !ms.valid || c.better(e.v, ms.best) {
				ms.best, ms.valid = e.v, true
			}
		}
	}
	return nil
}
func (c *multiExtreme[T, K]) Merge(dst, src int32) error {
	ms := c.m[src]
	if ms == nil {
		return nil
	}
	for _, e := range ms.vals { // order-independent: counts add, the extreme is unique
		c.add(dst, e.v, e.n)
	}
	return nil
}
func (c *multiExtreme[T, K]) Result(s int32) row.Value {
	ms := c.m[s]
	if ms == nil || !ms.valid {
		return row.Null
	}
	return c.box(ms.best)
}
func (c *multiExtreme[T, K]) Reset(s int32) { c.m[s] = nil }
func (c *multiExtreme[T, K]) SlotBytes() int {
	return 8
}
func (c *multiExtreme[T, K]) ExtraBytes(s int32) int {
	ms := c.m[s]
	if ms == nil {
		return 0
	}
	return 96 + len(ms.vals)*96
}
