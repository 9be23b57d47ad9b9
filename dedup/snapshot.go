package dedup

import (
	"math/bits"

	"github.com/tidemark/tidemark/state"
)

// Snapshot appends the table's state: its size, base, sweep point and
// every remembered id at its slot index (delta-encoded), so that Restore
// rebuilds the identical table. Size: about 14 bytes per remembered id.
func (t *Table) Snapshot(e *state.Encoder) {
	e.Byte(1)
	e.Int(t.ttl)
	e.Uint(uint64(len(t.slots)))
	e.Bool(t.baseSet)
	e.Int(t.base)
	e.Int(t.nextSweep)
	e.Uint(uint64(t.inserts))
	e.Int(t.cut)
	e.Uint(uint64(t.n))
	prev := -1
	for i, s := range t.slots {
		if s.id == 0 {
			continue
		}
		e.Uint(uint64(i - prev))
		prev = i
		e.Fixed64(s.id)
		e.Fixed32(s.payload)
		e.Uint(uint64(s.expiry))
	}
}

// Restore replaces the table's state with one Snapshot wrote. Errors: a
// truncated or inconsistent snapshot (a slot size that is not a power of
// two, an index out of range, a TTL that differs from the table's).
func (t *Table) Restore(d *state.Decoder) error {
	d.Section("dedup table", 1)
	ttl := d.Int()
	size := d.Len(1<<34, 0)
	baseSet := d.Bool()
	base := d.Int()
	nextSweep := d.Int()
	inserts := d.Len(1<<62, 0)
	cut := d.Int()
	n := d.Len(size, 14)
	if err := d.Err(); err != nil {
		return err
	}
	if ttl != t.ttl {
		d.Fail("dedup TTL %d ms, the pipeline's is %d ms", ttl, t.ttl)
	}
	if size < 1 || bits.OnesCount(uint(size)) != 1 || n*4 > size*3+3 {
		d.Fail("dedup table of %d slots holding %d ids", size, n)
	}
	if err := d.Err(); err != nil {
		return err
	}
	slots := make([]slot, size)
	i := -1
	for range n {
		i += int(d.Uint())
		s := slot{id: d.Fixed64(), payload: d.Fixed32()}
		exp := d.Uint()
		if d.Err() != nil {
			return d.Err()
		}
		if i < 0 || i >= size || s.id == 0 || slots[i].id != 0 || exp > 1<<32-1 {
			d.Fail("dedup slot %d", i)
			return d.Err()
		}
		s.expiry = uint32(exp)
		slots[i] = s
	}
	t.slots, t.n, t.base, t.baseSet, t.nextSweep, t.inserts, t.cut = slots, n, base, baseSet, nextSweep, inserts, cut
	return nil
}
