package operator

import (
	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/row"
)

// slotTable allocates accumulator slots across the aggregate columns: slot s
// is one (window, key) instance in every column.
type slotTable struct {
	cols []aggregate.Column
	chk  []aggregate.Checker // the columns whose updates can fail
	n    int                 // slots ever allocated
	free []int32             // reusable slots
	prev [][]row.Value
	keep bool // keep last emitted values per slot (retract mode)
}

func (t *slotTable) alloc() int32 {
	if n := len(t.free); n > 0 {
		s := t.free[n-1]
		t.free = t.free[:n-1]
		return s
	}
	s := int32(t.n)
	t.n++
	for _, c := range t.cols {
		c.Grow(t.n)
	}
	if t.keep {
		for len(t.prev) < t.n {
			t.prev = append(t.prev, nil)
		}
	}
	return s
}

func (t *slotTable) release(s int32) {
	for _, c := range t.cols {
		c.Reset(s)
	}
	if t.keep {
		t.prev[s] = t.prev[s][:0]
	}
	t.free = append(t.free, s)
}

// reset empties slot s, keeping it allocated.
func (t *slotTable) reset(s int32) {
	for _, c := range t.cols {
		c.Reset(s)
	}
	if t.keep {
		t.prev[s] = t.prev[s][:0]
	}
}

// check returns the error applying r to slot s would meet, changing
// nothing.
func (t *slotTable) check(s int32, r *row.Row, weight int) error {
	for _, c := range t.chk {
		if err := c.Check(s, r, weight); err != nil {
			return err
		}
	}
	return nil
}

// apply adds (weight > 0) or retracts (weight < 0) row r in slot s.
func (t *slotTable) apply(s int32, r *row.Row, weight int) error {
	for _, c := range t.cols {
		var err error
		if weight > 0 {
			err = c.Add(s, r)
		} else {
			err = c.Retract(s, r)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (t *slotTable) merge(dst, src int32) error {
	for _, c := range t.cols {
		if err := c.Merge(dst, src); err != nil {
			return err
		}
	}
	return nil
}

// results appends slot s's results to dst.
func (t *slotTable) results(dst []row.Value, s int32) []row.Value {
	for _, c := range t.cols {
		dst = append(dst, c.Result(s))
	}
	return dst
}

// slotBytes is the fixed size of a slot across columns.
func (t *slotTable) slotBytes() int {
	n := 0
	for _, c := range t.cols {
		n += c.SlotBytes()
	}
	return n
}

func (t *slotTable) extraBytes(s int32) int {
	n := 0
	for _, c := range t.cols {
		n += c.ExtraBytes(s)
	}
	if t.keep {
		n += cap(t.prev[s]) * 72
	}
	return n
}
