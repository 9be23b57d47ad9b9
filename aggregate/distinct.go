package aggregate

import (
	"cmp"
	"strings"

	"github.com/tidemark/tidemark/row"
)

// newDistinct builds count_distinct(x): a value → multiplicity map per slot,
// exact under retraction.
func newDistinct(sp Spec) Column {
	f := sp.Arg
	switch {
	case f.Kind.InI():
		return &distinct[int64]{arg: f, get: func(r *row.Row) int64 { return r.I[f.Slot] }, own: func(v int64) int64 { return v }}
	case f.Kind == row.KindDecimal:
		// Keyed by trimmed text: 2.0 and 2.00 are the same value.
		return &distinct[string]{arg: f, get: func(r *row.Row) string { return r.D[f.Slot].String() }, own: func(v string) string { return v }}
	default:
		return &distinct[string]{arg: f, get: func(r *row.Row) string { return r.S[f.Slot] }, own: strings.Clone, strs: true}
	}
}

// distinct keeps each slot's values with their multiplicities. Counts are
// held by pointer: an existing entry is updated through it and never
// re-assigned, because assigning m[k] stores k again, and a string k read
// from a row points into a decoder buffer that is reused (the map would
// then hold a key whose bytes change under it).
type distinct[K cmp.Ordered] struct {
	arg     row.Field
	get     func(*row.Row) K
	own     func(K) K
	strs    bool
	m       []map[K]*int64
	scratch []K // AppendSlot's sort buffer
}

func (c *distinct[K]) Kind() row.Kind { return row.KindInt }
func (c *distinct[K]) Grow(n int)     { c.m = grow(c.m, n) }
func (c *distinct[K]) Add(s int32, r *row.Row) error {
	if r.IsNull(c.arg.Index) {
		return nil
	}
	m := c.m[s]
	if m == nil {
		m = map[K]*int64{}
		c.m[s] = m
	}
	k := c.get(r)
	if n, ok := m[k]; ok {
		*n++
		return nil
	}
	one := int64(1)
	m[c.own(k)] = &one
	return nil
}
func (c *distinct[K]) Retract(s int32, r *row.Row) error {
	if r.IsNull(c.arg.Index) || c.m[s] == nil {
		return nil
	}
	m := c.m[s]
	k := c.get(r)
	if n, ok := m[k]; ok {
		if *n > 1 {
			*n--
		} else {
			delete(m, k)
		}
	}
	return nil
}
func (c *distinct[K]) Merge(dst, src int32) error {
	if c.m[src] == nil {
		return nil
	}
	if c.m[dst] == nil {
		c.m[dst] = make(map[K]*int64, len(c.m[src]))
	}
	for k, n := range c.m[src] { // order-independent: counts add; src keys are owned
		if d, ok := c.m[dst][k]; ok {
			*d += *n
		} else {
			v := *n
			c.m[dst][k] = &v
		}
	}
	return nil
}
func (c *distinct[K]) Result(s int32) row.Value { return row.Int(int64(len(c.m[s]))) }
func (c *distinct[K]) Reset(s int32)            { c.m[s] = nil }
func (c *distinct[K]) SlotBytes() int           { return 8 }
func (c *distinct[K]) ExtraBytes(s int32) int {
	m := c.m[s]
	if m == nil {
		return 0
	}
	per := 32
	if c.strs {
		per = 48
	}
	n := 48 + len(m)*per
	if c.strs {
		for k := range m {
			n += len(any(k).(string))
		}
	}
	return n
}
