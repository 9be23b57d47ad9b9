package operator

import "fmt"

// sliceCellsAgree checks that every slice entry of a key held by value
// has its index cell, naming the entry and carrying its slot, as
// applySlice's fast path reads the slot there instead of from the entry,
// and that the index holds no other keys.
func sliceCellsAgree(o *Operator) error {
	for _, s := range o.sl.list {
		byValue := 0
		for i := range s.ents.len() {
			e := s.ents.at(i)
			v, ok := o.keys.intOf(o.keys.ent(e.key).enc)
			if !ok {
				continue // a null key, held by its encoding
			}
			byValue++
			c, ok := s.idx.ints.Get(v)
			if !ok || int(c.i) != i {
				return fmt.Errorf("slice %v: key %d: cell %+v, %v for entry %d", s.w, v, c, ok, i)
			}
			if e.slot != c.slot {
				return fmt.Errorf("slice %v: key %d: cell slot %d, entry slot %d", s.w, v, c.slot, e.slot)
			}
		}
		if n := s.idx.ints.Len(); n != byValue {
			return fmt.Errorf("slice %v: %d keys in the index, %d entries held by value", s.w, n, byValue)
		}
	}
	return nil
}

// sliceCellAgrees is sliceCellsAgree for one key held by value, in every
// slice (cheap enough to run after each record).
func sliceCellAgrees(o *Operator, key int64) error {
	for _, s := range o.sl.list {
		c := s.idx.ints.Ptr(uint64(key))
		if c == nil {
			continue
		}
		if e := s.ents.at(int(c.i)); e.slot != c.slot {
			return fmt.Errorf("slice %v: key %d: cell slot %d, entry slot %d", s.w, key, c.slot, e.slot)
		}
	}
	return nil
}
