package operator

import "fmt"

// sliceCellsAgree checks that every slice index cell of a key held by
// value carries its entry's slot (the cell's aux), as applySlice's fast
// path reads it there instead of from the entry.
func sliceCellsAgree(o *Operator) error {
	for _, s := range o.sl.list {
		n := 0
		for _, c := range s.idx.ints.cells {
			if c.v == 0 {
				continue
			}
			n++
			if int(c.v-1) >= s.ents.len() {
				return fmt.Errorf("slice %v: key %d: entry %d of %d", s.w, c.k, c.v-1, s.ents.len())
			}
			if e := s.ents.at(int(c.v - 1)); e.slot != c.aux {
				return fmt.Errorf("slice %v: key %d: cell slot %d, entry slot %d", s.w, c.k, c.aux, e.slot)
			}
		}
		if n != s.idx.ints.n {
			return fmt.Errorf("slice %v: %d cells used, %d counted", s.w, n, s.idx.ints.n)
		}
	}
	return nil
}

// sliceCellAgrees is sliceCellsAgree for one key held by value, in every
// slice (cheap enough to run after each record).
func sliceCellAgrees(o *Operator, key int64) error {
	for _, s := range o.sl.list {
		c := s.idx.ints.find(uint64(key))
		if c == nil {
			continue
		}
		if e := s.ents.at(int(c.v - 1)); e.slot != c.aux {
			return fmt.Errorf("slice %v: key %d: cell slot %d, entry slot %d", s.w, key, c.aux, e.slot)
		}
	}
	return nil
}
