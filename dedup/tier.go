package dedup

import (
	"encoding/binary"
	"math"
)

// The disk backend (docs/state.md) keeps a pipeline's ids in a store
// beneath a bounded hot tier of Tables: the methods below let a runner
// look an id up without adding it, put in an id read back from the store
// without marking it as a change, and take the ids added since the last
// write-back. The store's layout of an id is here too, so that the table
// and its keys agree on expiry seconds.

// Find returns the payload hash of a remembered id (not forgotten by the
// sweep cut), and whether the table holds it. It adds nothing.
func (t *Table) Find(id uint64) (payload uint32, ok bool) {
	if id == 0 {
		id = 1
	}
	mask := uint64(len(t.slots) - 1)
	for i := id & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch s.id {
		case 0:
			return 0, false
		case id:
			if t.expired(s) {
				return 0, false
			}
			return s.payload, true
		}
	}
}

// Remember puts an id the store holds into the table — its payload hash
// and expiry second (since the epoch) — without tracking it as added:
// it is no change to write back. The id must be absent from the table
// (Find). An expiry already cut by the sweep is not put.
func (t *Table) Remember(id uint64, payload uint32, expirySec int64) {
	if id == 0 {
		id = 1
	}
	if expirySec <= t.cut {
		return
	}
	if !t.baseSet {
		t.base, t.baseSet = expirySec-1<<31, true
	}
	rel := expirySec - t.base
	switch {
	case rel < 1:
		rel = 1
	case rel > math.MaxUint32:
		rel = math.MaxUint32
	}
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(len(t.slots) * 2)
	}
	s := slot{id: id, payload: payload, expiry: uint32(rel)}
	if !t.replace(s) {
		t.insertSlot(s)
		if !t.expired(&s) {
			t.live++
		}
	}
}

// TakeAdded calls f for every id added since the last TakeAdded or
// section (with Track) — its payload hash and expiry second since the
// epoch — in the order they were added (an id added twice comes twice,
// the newer last), and forgets them.
func (t *Table) TakeAdded(f func(id uint64, payload uint32, expirySec int64)) {
	for i := range t.added {
		s := &t.added[i]
		f(s.id, s.payload, t.base+int64(s.expiry))
	}
	t.added = t.added[:0]
}

// ExpirySec returns the expiry second (since the epoch) an id observed at
// event time ts (ms) gets: ts + TTL, rounded up to the second.
func (t *Table) ExpirySec(ts int64) int64 { return (ts + t.ttl + 999) / 1000 }

// Cut returns the sweep cut (seconds): ids whose expiry second is at or
// before it are forgotten.
func (t *Table) Cut() int64 { return t.cut }

// Store keys and values of ids (after the key-group and node prefix,
// state.KeyPrefix): the expiry bucket — the expiry second divided by the
// bucket width, 4 bytes big-endian — then the id hash, 8 bytes
// big-endian; the value is the payload hash (4 bytes) and the expiry
// second (8 bytes), little-endian. An id's bucket follows its expiry, so
// the ids that expire together are one span of the key group, deleted by
// one range delete (BucketsBefore).

// KeyLen is the length of an id's key after the prefix.
const KeyLen = 12

// ValueLen is the length of an id's value.
const ValueLen = 12

// BucketWidth returns the bucket width in seconds for a TTL of ttl ms:
// half the TTL, at least a second. A remembered id's expiry is within a
// TTL and the out-of-orderness of the watermark, so it is in one of about
// three buckets.
func BucketWidth(ttlMs int64) int64 { return max(ttlMs/2000, 1) }

// AppendKey appends the key of id expiring at expirySec (after the
// prefix) for buckets of width seconds.
func AppendKey(dst []byte, id uint64, expirySec, width int64) []byte {
	dst = binary.BigEndian.AppendUint32(dst, bucketOf(expirySec, width))
	return binary.BigEndian.AppendUint64(dst, id)
}

// AppendBucket appends the start of bucket b's keys (after the prefix).
func AppendBucket(dst []byte, b uint32) []byte { return binary.BigEndian.AppendUint32(dst, b) }

// bucketOf is the bucket of an expiry second (clamped to the uint32
// range; seconds before the epoch go to bucket 0).
func bucketOf(expirySec, width int64) uint32 {
	b := expirySec / width
	switch {
	case b < 0:
		return 0
	case b > math.MaxUint32-1:
		return math.MaxUint32 - 1
	}
	return uint32(b)
}

// BucketOf returns the bucket of an expiry second for buckets of width
// seconds.
func BucketOf(expirySec, width int64) uint32 { return bucketOf(expirySec, width) }

// BucketsBefore returns the first bucket that may hold an id the sweep
// cut (seconds) has not forgotten: every bucket before it holds only
// forgotten ids (expiry second ≤ cut).
func BucketsBefore(cut, width int64) uint32 {
	if cut == math.MinInt64 || cut < 0 {
		return 0
	}
	return bucketOf((cut+1)/width*width, width)
}

// AppendValue appends an id's value.
func AppendValue(dst []byte, payload uint32, expirySec int64) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, payload)
	return binary.LittleEndian.AppendUint64(dst, uint64(expirySec))
}

// ParseValue reads an id's value; false for a value of the wrong length
// (damage).
func ParseValue(v []byte) (payload uint32, expirySec int64, ok bool) {
	if len(v) != ValueLen {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint32(v), int64(binary.LittleEndian.Uint64(v[4:])), true
}
