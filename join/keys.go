package join

import "hash/maphash"

// keyTable finds a key's state in a group: an open-addressing hash table
// (linear probing, backward-shift deletion) of 8-byte slots, each the
// index of a keyState in group.ks and the low 32 bits of the key's hash;
// the key itself is compared with keyState.key. At most 3/4 full, so 11
// to 21 bytes per key, against a Go map[string]int32's 25 to 57 (its
// slots hold the key's 16-byte header beside the value). The table is
// never iterated: nothing depends on the hash seed's order.
//
// It is not a u64map.Map (the core's uint64-keyed table): its keys are
// byte strings compared in full (DESIGN.md: a hash with full-key
// comparison), so a table keyed by a 64-bit hash would need a path for two
// keys of one hash, and its 16-byte cells (hash and index) would double
// these 8-byte slots. BenchmarkStateBytes (q4's shape, 65,536 keys over
// 128 key groups, 1,000,000 rows; 2026-12-03) measures 10.02 key-B/row and
// 38.57 heap-B/row, of which the slots are 128 groups × 1,024 × 8 bytes =
// 1.05 B/row: 16-byte cells would add 1.05 (key-B/row +10 %, heap-B/row
// +2.7 %) to the state the join's memory work is shrinking, for no probe
// saved (a slot already compares 32 bits of the hash before the key).
type keyTable struct {
	slots []keySlot // a power of two long, or nil
	n     int       // keys held
}

// keySlot is a slot of a keyTable: at is the keyState's index + 1 (0:
// empty), h the key's hash's low 32 bits.
type keySlot struct {
	at int32
	h  uint32
}

var keySeed = maphash.MakeSeed()

func keyHash(k []byte) uint32 { return uint32(maphash.Bytes(keySeed, k)) }

// len returns the number of keys held.
func (t *keyTable) len() int { return t.n }

// bytes returns the table's heap bytes.
func (t *keyTable) bytes() int64 { return int64(cap(t.slots)) * 8 }

// find returns the index in ks of key k, whose hash is h.
func (t *keyTable) find(ks []keyState, k []byte, h uint32) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := uint32(len(t.slots) - 1)
	for p := h & mask; ; p = (p + 1) & mask {
		s := t.slots[p]
		if s.at == 0 {
			return 0, false
		}
		if s.h == h && ks[s.at-1].key == string(k) {
			return s.at - 1, true
		}
	}
}

// add records key index i, whose key's hash is h and which is absent.
func (t *keyTable) add(i int32, h uint32) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	mask := uint32(len(t.slots) - 1)
	p := h & mask
	for t.slots[p].at != 0 {
		p = (p + 1) & mask
	}
	t.slots[p] = keySlot{at: i + 1, h: h}
	t.n++
}

func (t *keyTable) grow() {
	old := t.slots
	t.slots = make([]keySlot, max(8, 2*len(old)))
	mask := uint32(len(t.slots) - 1)
	for _, s := range old {
		if s.at == 0 {
			continue
		}
		p := s.h & mask
		for t.slots[p].at != 0 {
			p = (p + 1) & mask
		}
		t.slots[p] = s
	}
}

// del removes key index i, whose key's hash is h. Entries after it in its
// run move back, so that no probe stops early at the hole.
func (t *keyTable) del(i int32, h uint32) {
	if t.n == 0 {
		return
	}
	mask := uint32(len(t.slots) - 1)
	p := h & mask
	for t.slots[p].at != i+1 {
		if t.slots[p].at == 0 {
			return // absent
		}
		p = (p + 1) & mask
	}
	t.slots[p] = keySlot{}
	t.n--
	hole := p
	for j := (p + 1) & mask; t.slots[j].at != 0; j = (j + 1) & mask {
		home := t.slots[j].h & mask
		// The entry at j stays when its home lies cyclically in (hole, j].
		if hole <= j && hole < home && home <= j || hole > j && (hole < home || home <= j) {
			continue
		}
		t.slots[hole] = t.slots[j]
		t.slots[j] = keySlot{}
		hole = j
	}
}
