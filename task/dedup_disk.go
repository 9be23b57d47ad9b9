package task

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/tidemark/tidemark/dedup"
	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/state/bloom"
)

// The dedup node on the disk backend (docs/state.md): the ids live in the
// task's state.Store; each key group keeps a hot tier of two generations
// of tables (cur, the node's tables, and prev), bounded by the tier's
// budget. A lookup tries cur, prev, then — only where the store may hold
// ids the tier does not (the key group evicted a generation, or was
// restored from files) — the store, through the ids prefetched for the
// batch of items being processed, in one sorted pass. New ids are written
// back in one batch at a checkpoint or when the tier is full; the sweep
// deletes each key group's expired buckets with one range delete. Each
// key group keeps, per bucket, a Bloom filter of the ids it wrote there
// (state/bloom), so that a lookup skips the buckets that never received
// the id: most new ids cost no store read.

// dedupCold is a dedup node's disk state.
type dedupCold struct {
	store state.Store
	node  int   // the key prefix's node
	width int64 // bucket width, seconds
	hot   int   // the tier's budget in bytes (both generations)
	prev  []*dedup.Table
	// cold marks the key groups whose ids the tier may not all hold (so a
	// miss asks the store).
	cold  []bool
	batch state.Batch
	// Per key group, the buckets the store may hold ids in: [low, top)
	// (top 0: none written), and swept, the first bucket not deleted by
	// range. They are part of the key group's section.
	low, top, swept []uint32
	// found holds the ids the store returned for the batch being
	// processed (prefetch), and absent those it did not hold.
	found  map[uint64]coldID
	absent map[uint64]struct{}
	keys   [][]byte
	kbuf   []byte
	ids    []uint64
	ticks  int
	// pending counts the ids the current tables added since the last
	// write-back (the sum of their Added), for the trickle.
	pending int
	// filters holds, per key group, a filter per bucket of the ids
	// written to that bucket since the key group was restored (or
	// started); known[i] is the first bucket they cover: the buckets
	// before it held ids at the restore, which no filter knows, so they
	// are always probed. A bucket at or after known with no filter
	// received no id (no probe); one whose filter was refused (the
	// filters' share of the tier is spent) is always probed. fbytes is
	// the filters' size, within fcap (half the tier's budget, at least
	// minFilters), and it counts in the tier's bytes.
	filters [][]bucketFilter
	known   []uint32
	// fsize is, per key group, the ids its newest bucket filter took: the
	// first capacity of its next one (a key group's buckets receive
	// about as many ids each at a steady rate).
	fsize        []int
	fbytes, fcap int
	// Reads and Writes count store lookups (keys asked) and ids written;
	// skips the probes of a bucket the filters answered (no lookup).
	reads, writes, hits, skips int64
}

// bucketFilter is a bucket's filter of the ids written to it; f nil: no
// filter (refused for lack of room), the bucket is always probed. A
// filter of a restored bucket (before known) is rebuilt from the store:
// scan is the next key to read (nil once every id of the bucket is in
// f; until then the bucket is probed), and the ids written since the
// restore are added as they are written. counted is the count last
// written to the bucket's count key (writeCounts).
type bucketFilter struct {
	b       uint32
	f       *bloom.Filter
	scan    []byte
	counted int
}

// rebuildScan is how many keys of the restored buckets a dedup node reads
// into their filters per check of its tier (every 256 deliveries): a
// restored store's filters are rebuilt by one scan of its ids, spread
// over the run, so that the restore itself reads nothing.
const rebuildScan = 2048

// countSuffix ends a bucket's count key: after the key prefix, the
// bucket (4 bytes), eight 0xff bytes and this byte — 13 bytes, where an
// id's key has 12, sorting after every id of the bucket, so the sweep's
// range delete takes it with them. Its value is the number of ids the
// bucket's filter took (Uint), the first capacity of the filter a
// restore rebuilds.
const countSuffix = 1

// firstFilter is the least first capacity of a bucket's filter (ids:
// 320 bytes).
const firstFilter = 256

// minFilters is the least room for a dedup node's filters, whatever its
// tier's budget (at least 1 MiB in a run: disk.Split).
const minFilters = 256 << 10

// mayHold reports whether the store may hold id in bucket b of key group
// i: false only when b is covered by the filters and its filter (or its
// absence: no id was written there) says the id was never written.
func (c *dedupCold) mayHold(i int, b uint32, id uint64) bool {
	if b < c.known[i] {
		for _, bf := range c.filters[i] {
			if bf.b == b {
				return bf.f == nil || bf.scan != nil || bf.f.MayContain(id)
			}
		}
		return true
	}
	for _, bf := range c.filters[i] {
		if bf.b == b {
			return bf.f == nil || bf.f.MayContain(id)
		}
	}
	return false
}

// noteWrite adds id, written to bucket b of key group i, to the bucket's
// filter, starting it (or refusing it, past fcap) on the bucket's first
// id.
func (c *dedupCold) noteWrite(i int, b uint32, id uint64) {
	fs := c.filters[i]
	k := 0
	for k < len(fs) && fs[k].b != b {
		k++
	}
	if k == len(fs) {
		if b < c.known[i] {
			return // a restored bucket without a filter: always probed
		}
		capacity := max(c.fsize[i], firstFilter)
		var f *bloom.Filter
		if c.fbytes+capacity*bloom.BitsPerKey/8 <= c.fcap {
			f = bloom.New(capacity)
			c.fbytes += f.Bytes()
		}
		c.filters[i] = append(fs, bucketFilter{b: b, f: f})
		fs = c.filters[i]
	}
	c.addToFilter(i, &fs[k], id)
}

// addToFilter adds id to bf's filter, dropping the filter (the bucket
// then always probed) when its growth would pass the room.
func (c *dedupCold) addToFilter(i int, bf *bucketFilter, id uint64) {
	f := bf.f
	if f == nil {
		return
	}
	before := f.Bytes()
	f.Add(id)
	c.fsize[i] = max(c.fsize[i], f.Len())
	if grown := f.Bytes() - before; grown > 0 {
		c.fbytes += grown
		if c.fbytes > c.fcap {
			c.fbytes -= f.Bytes()
			bf.f, bf.scan = nil, nil
		}
	}
}

// checkpointWrite is the write-back of a checkpoint: the new ids, the
// pending range deletes, then the buckets' counts that the ids changed.
func (d *dedupNode) checkpointWrite() error {
	if err := d.writeBack(); err != nil {
		return err
	}
	d.writeCounts()
	if d.cold.batch.Count() == 0 {
		return nil
	}
	return d.cold.store.Commit(d.cold.batch)
}

// appendCountKey appends bucket b's count key in key group g.
func (c *dedupCold) appendCountKey(dst []byte, g int, b uint32) []byte {
	dst = dedup.AppendBucket(state.KeyPrefix(dst, g, c.node), b)
	return append(dst, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, countSuffix)
}

// writeCounts puts into the batch the count key of every bucket whose
// complete filter took ids since its count was last written (at a
// checkpoint: a restore sizes the filters it rebuilds by them).
func (d *dedupNode) writeCounts() {
	c := d.cold
	var kb []byte
	for i := range c.filters {
		for k := range c.filters[i] {
			bf := &c.filters[i][k]
			if bf.f == nil || bf.scan != nil || bf.f.Len() == bf.counted {
				continue
			}
			kb = c.appendCountKey(kb[:0], d.rng.Lo+i, bf.b)
			var e state.Encoder
			e.Uint(uint64(bf.f.Len()))
			c.batch.Set(kb, e.Bytes())
			bf.counted = bf.f.Len()
		}
	}
}

// startRebuild gives key group i's restored buckets [from, top) filters
// to rebuild (rebuildStep), each first sized by its count key where the
// store holds one, within the room; a bucket without room is always
// probed.
func (d *dedupNode) startRebuild(i int, from, top uint32) error {
	c := d.cold
	if from >= top {
		return nil
	}
	g := d.rng.Lo + i
	keys := make([][]byte, 0, top-from)
	for b := from; b < top; b++ {
		keys = append(keys, c.appendCountKey(nil, g, b))
	}
	counts := make([]int, len(keys))
	var derr error
	if err := c.store.Lookup(keys, func(k int, v []byte) {
		dec := state.NewDecoder(v)
		n := dec.Uint()
		if dec.Err() != nil || n > 1<<30 {
			derr = fmt.Errorf("key group %d: bucket %d's id count: %v", g, from+uint32(k), dec.Err())
			return
		}
		counts[k] = int(n)
	}); err != nil {
		return err
	}
	if derr != nil {
		return derr
	}
	for k, n := range counts {
		b := from + uint32(k)
		capacity := max(n, c.fsize[i], firstFilter)
		bf := bucketFilter{b: b, counted: n}
		if c.fbytes+capacity*bloom.BitsPerKey/8 <= c.fcap {
			bf.f = bloom.New(capacity)
			c.fbytes += bf.f.Bytes()
			bf.scan = dedup.AppendBucket(state.KeyPrefix(nil, g, c.node), b)
		}
		c.filters[i] = append(c.filters[i], bf)
	}
	return nil
}

// rebuildStep reads up to n keys of the restored buckets whose filters are
// being rebuilt into them; a filter whose bucket is read to its end is
// complete (its bucket probed through it from then on).
func (d *dedupNode) rebuildStep(n int) error {
	c := d.cold
	var hi []byte
	for i := range c.filters {
		g := d.rng.Lo + i
		plen := len(state.KeyPrefix(nil, g, c.node))
		for k := range c.filters[i] {
			bf := &c.filters[i][k]
			if bf.scan == nil {
				continue
			}
			hi = dedup.AppendBucket(state.KeyPrefix(hi[:0], g, c.node), bf.b+1)
			var next []byte
			err := c.store.Scan(bf.scan, hi, func(key, _ []byte) bool {
				if n <= 0 {
					next = append([]byte(nil), key...)
					return false
				}
				n--
				if len(key) == plen+12 {
					c.addToFilter(i, bf, binary.BigEndian.Uint64(key[plen+4:]))
				}
				return bf.f != nil
			})
			if err != nil {
				return err
			}
			if bf.f == nil {
				continue // no room: the bucket stays probed
			}
			bf.scan = next
			if n <= 0 {
				return nil
			}
		}
	}
	return nil
}

// dropFilters forgets key group i's filters of the buckets before end
// (deleted by range).
func (c *dedupCold) dropFilters(i int, end uint32) {
	fs := c.filters[i][:0]
	for _, bf := range c.filters[i] {
		if bf.b >= end {
			fs = append(fs, bf)
		} else if bf.f != nil {
			c.fbytes -= bf.f.Bytes()
		}
	}
	clear(c.filters[i][len(fs):])
	c.filters[i] = fs
}

type coldID struct {
	payload uint32
	expiry  int64
}

// UseStore puts the task's keyed state on the disk backend: its dedup
// node keeps its ids in store, each interval join that can its buffered
// rows (join.Operator.UseStore) and each window stage that can
// (operator.Operator.UseStore: tumbling windows, sliced sliding and
// cumulating windows) its panes or slices, under hot
// tiers sharing hot bytes evenly. Call it right after New, before Restore
// or any item. Errors: a graph with more nodes than the key prefix can
// name.
func (t *Task) UseStore(store state.Store, hot int) error {
	if len(t.nodes) > 1<<16 {
		return fmt.Errorf("task: %d nodes, the disk backend's keys name at most 65536", len(t.nodes))
	}
	var spilling []int
	users := 0
	for ni, nr := range t.nodes {
		switch {
		case nr.dedup != nil, nr.join != nil && nr.join.op.DiskCapable():
			users++
		case nr.stage != nil && nr.stage.op.UseStore(store, ni, 0):
			spilling = append(spilling, ni)
			users++
		}
	}
	if users > 1 {
		hot /= users
	}
	for _, ni := range spilling {
		t.nodes[ni].stage.op.UseStore(store, ni, hot)
	}
	for ni, nr := range t.nodes {
		if d := nr.dedup; d != nil {
			n := d.rng.Len()
			d.cold = &dedupCold{store: store, node: ni, width: dedup.BucketWidth(d.p.TTL), hot: hot,
				prev: make([]*dedup.Table, n), cold: make([]bool, n), low: make([]uint32, n), top: make([]uint32, n), swept: make([]uint32, n),
				batch: store.NewBatch(), found: map[uint64]coldID{}, absent: map[uint64]struct{}{},
				filters: make([][]bucketFilter, n), known: make([]uint32, n), fsize: make([]int, n), fcap: max(hot/2, minFilters)}
		}
		if j := nr.join; j != nil && j.op.DiskCapable() {
			if err := j.op.UseStore(store, ni, hot); err != nil {
				return fmt.Errorf("%s: %w", j.st.Name, err)
			}
		}
	}
	return nil
}

// observeCold classifies a delivery in key group i on the disk backend,
// as Table.Observe does in memory.
func (d *dedupNode) observeCold(i int, t *dedup.Table, id uint64, payload uint32, ts int64) (dedup.Outcome, uint32, error) {
	c := d.cold
	if id == 0 {
		id = 1
	}
	if p, ok := t.Find(id); ok {
		return outcome(p, payload), p, nil
	}
	if pt := c.prev[i]; pt != nil {
		if p, ok := pt.Find(id); ok {
			return outcome(p, payload), p, nil
		}
	}
	if c.cold[i] {
		e, ok, err := d.coldLookup(i, id)
		if err != nil {
			return 0, 0, err
		}
		if ok && e.expiry > t.Cut() {
			t.Remember(id, e.payload, e.expiry)
			c.hits++
			return outcome(e.payload, payload), e.payload, nil
		}
	}
	out, first := t.Observe(id, payload, ts)
	if out == dedup.First {
		c.pending++
	}
	if c.ticks++; c.ticks&255 == 0 {
		if err := d.maybeTurn(); err != nil {
			return 0, 0, err
		}
	}
	return out, first, nil
}

func outcome(first, payload uint32) dedup.Outcome {
	if first == payload {
		return dedup.Duplicate
	}
	return dedup.Conflict
}

// coldLookup returns what the store holds for id in key group i: the
// prefetched answer, or (an item the batch's prefetch did not see) a
// lookup of its own.
func (d *dedupNode) coldLookup(i int, id uint64) (coldID, bool, error) {
	c := d.cold
	if e, ok := c.found[id]; ok {
		return e, true, nil
	}
	if _, ok := c.absent[id]; ok {
		return coldID{}, false, nil
	}
	if err := d.fetch(d.rng.Lo+i, []uint64{id}); err != nil {
		return coldID{}, false, err
	}
	// The answer serves this item only: the id is put into the tier now
	// (found or added), and a later turn of the tier makes it stale.
	e, ok := c.found[id]
	delete(c.found, id)
	delete(c.absent, id)
	return e, ok, nil
}

// PrefetchIDs looks up, in one sorted pass, the event ids (hashes) of a
// batch of records about to be pushed one by one (push mode, at one
// task), so that the dedup node's misses of the batch cost one pass of
// the store, as at several tasks. Nothing on the memory backend.
func (t *Task) PrefetchIDs(ids []uint64) error {
	for _, nr := range t.nodes {
		if d := nr.dedup; d != nil && d.cold != nil {
			if err := d.prefetchIDs(ids); err != nil {
				return fmt.Errorf("dedup: %w", err)
			}
		}
	}
	return nil
}

// prefetchIDs is prefetch for a list of id hashes.
func (d *dedupNode) prefetchIDs(ids []uint64) error {
	c := d.cold
	clear(c.found)
	clear(c.absent)
	c.ids = c.ids[:0]
	for _, id := range ids {
		if id == 0 {
			id = 1
		}
		if i := keygroup.OfHash(id, d.g.KeyGroups) - d.rng.Lo; i >= 0 && i < len(c.cold) && c.cold[i] && d.tierMiss(i, id) {
			c.ids = append(c.ids, id)
		}
	}
	if len(c.ids) == 0 {
		return nil
	}
	return d.fetch(-1, c.ids)
}

// tierMiss reports whether neither generation of key group i's tier
// holds id.
func (d *dedupNode) tierMiss(i int, id uint64) bool {
	if t := d.tables[i]; t != nil {
		if _, ok := t.Find(id); ok {
			return false
		}
	}
	if pt := d.cold.prev[i]; pt != nil {
		if _, ok := pt.Find(id); ok {
			return false
		}
	}
	return true
}

// prefetch looks up, in one sorted pass, the ids of items the tier will
// miss in the key groups that need the store, before the items are
// classified one by one.
func (d *dedupNode) prefetch(in []*Packet) error {
	c := d.cold
	clear(c.found)
	clear(c.absent)
	c.ids = c.ids[:0]
	for _, p := range in {
		for k := range p.Len() {
			it := p.At(k)
			id := it.IDHash
			if id == 0 {
				id = 1
			}
			kg := keygroup.OfHash(it.IDHash, d.g.KeyGroups)
			i := kg - d.rng.Lo
			if i < 0 || i >= len(c.cold) || !c.cold[i] {
				continue
			}
			if t := d.tables[i]; t != nil {
				if _, ok := t.Find(id); ok {
					continue
				}
			}
			if pt := c.prev[i]; pt != nil {
				if _, ok := pt.Find(id); ok {
					continue
				}
			}
			c.ids = append(c.ids, id)
		}
	}
	if len(c.ids) == 0 {
		return nil
	}
	return d.fetch(-1, c.ids)
}

// fetch looks ids up in the store (kg ≥ 0: all in key group kg; −1: each
// in its own), in every bucket a remembered id may be in, and records
// each in found or absent.
func (d *dedupNode) fetch(kg int, ids []uint64) error {
	c := d.cold
	type probe struct {
		key []byte
		id  uint64
	}
	probes := make([]probe, 0, len(ids)*3)
	c.kbuf = c.kbuf[:0]
	for _, id := range ids {
		g := kg
		if g < 0 {
			g = keygroup.OfHash(id, d.g.KeyGroups)
		}
		i := g - d.rng.Lo
		t := d.table(i)
		lo := max(dedup.BucketsBefore(t.Cut(), c.width), c.swept[i], c.low[i])
		for b := lo; b < c.top[i]; b++ {
			if !c.mayHold(i, b, id) {
				c.skips++
				continue
			}
			start := len(c.kbuf)
			c.kbuf = state.KeyPrefix(c.kbuf, g, c.node)
			c.kbuf = dedup.AppendBucket(c.kbuf, b)
			c.kbuf = append(c.kbuf, 0, 0, 0, 0, 0, 0, 0, 0)
			putID(c.kbuf[len(c.kbuf)-8:], id)
			probes = append(probes, probe{key: c.kbuf[start:len(c.kbuf):len(c.kbuf)], id: id})
		}
		c.absent[id] = struct{}{}
	}
	slices.SortFunc(probes, func(a, b probe) int { return compareBytes(a.key, b.key) })
	probes = slices.CompactFunc(probes, func(a, b probe) bool { return string(a.key) == string(b.key) })
	c.keys = c.keys[:0]
	for _, p := range probes {
		c.keys = append(c.keys, p.key)
	}
	c.reads += int64(len(c.keys))
	if len(c.keys) == 0 {
		return nil
	}
	return c.store.Lookup(c.keys, func(k int, v []byte) {
		payload, exp, ok := dedup.ParseValue(v)
		if !ok {
			return
		}
		id := probes[k].id
		if e, ok := c.found[id]; ok && e.expiry >= exp {
			return
		}
		c.found[id] = coldID{payload: payload, expiry: exp}
		delete(c.absent, id)
	})
}

func putID(dst []byte, id uint64) {
	for k := 7; k >= 0; k-- {
		dst[k] = byte(id)
		id >>= 8
	}
}

func compareBytes(a, b []byte) int {
	switch {
	case string(a) < string(b):
		return -1
	case string(a) > string(b):
		return 1
	}
	return 0
}

// writeBack puts the ids every key group's current table added since the
// last write-back, and the pending range deletes, into the store in one
// batch.
func (d *dedupNode) writeBack() error {
	c := d.cold
	var kb []byte
	for i, t := range d.tables {
		if t == nil || t.Added() == 0 {
			continue
		}
		g := d.rng.Lo + i
		t.TakeAdded(func(id uint64, payload uint32, exp int64) {
			b := dedup.BucketOf(exp, c.width)
			if c.top[i] == 0 {
				c.low[i], c.top[i] = b, b+1
			} else {
				c.low[i], c.top[i] = min(c.low[i], b), max(c.top[i], b+1)
			}
			kb = state.KeyPrefix(kb[:0], g, c.node)
			kb = dedup.AppendKey(kb, id, exp, c.width)
			var vb [dedup.ValueLen]byte
			c.batch.Set(kb, dedup.AppendValue(vb[:0], payload, exp))
			c.noteWrite(i, b, id)
			c.writes++
		})
	}
	c.pending = 0
	if c.batch.Count() == 0 {
		return nil
	}
	return c.store.Commit(c.batch)
}

// trickleIDs is how many new ids the dedup node's hot tier gathers
// before it writes them back to the store between checkpoints (one batch
// of about 100 KiB; checked every 256 new ids): a checkpoint then writes
// back about that many at most, where
// it wrote the whole interval's new ids (docs/state.md, "Checkpoints").
// The ids stay in the tier; only the store learns them sooner.
const trickleIDs = 4096

// maybeTurn turns the tier's generations when it holds more than its
// budget: the current tables' new ids are written back, the previous
// generation is dropped (its ids are in the store), the current one
// becomes the previous one and new tables start.
func (d *dedupNode) maybeTurn() error {
	c := d.cold
	bytes := c.fbytes
	for i, t := range d.tables {
		if t != nil {
			bytes += t.Bytes()
		}
		if pt := c.prev[i]; pt != nil {
			bytes += pt.Bytes()
		}
	}
	if bytes <= c.hot {
		// The tier is not full: its new ids are written back in batches of
		// trickleIDs as they come, so that a checkpoint's write-back (on
		// the task's path, holding back records) has at most that many
		// left per key group's tables, not an interval's worth.
		if c.pending >= trickleIDs {
			if err := d.writeBack(); err != nil {
				return err
			}
		}
		return d.rebuildStep(rebuildScan)
	}
	if err := d.writeBack(); err != nil {
		return err
	}
	if err := d.rebuildStep(rebuildScan); err != nil {
		return err
	}
	// The prefetched answers may now be stale: an id absent then is in the
	// store once its generation is dropped.
	clear(c.found)
	clear(c.absent)
	for i, t := range d.tables {
		if pt := c.prev[i]; pt != nil && pt.Len() > 0 {
			c.cold[i] = true
		}
		c.prev[i] = t
		d.tables[i] = nil
	}
	return nil
}

// sweepCold deletes, in each key group the store holds ids of, the
// buckets the sweep cut has wholly expired (one range delete each), and
// applies the cut to the previous generation.
func (d *dedupNode) sweepCold(s dedup.SweepState) {
	c := d.cold
	end := dedup.BucketsBefore(s.Cut, c.width)
	var lo, hi []byte
	for i := range c.top {
		if pt := c.prev[i]; pt != nil {
			pt.ApplySweep(s)
		}
		if c.top[i] == 0 || end <= c.swept[i] {
			continue
		}
		g := d.rng.Lo + i
		lo = dedup.AppendBucket(state.KeyPrefix(lo[:0], g, c.node), 0)
		hi = dedup.AppendBucket(state.KeyPrefix(hi[:0], g, c.node), end)
		c.batch.DeleteRange(lo, hi)
		c.swept[i] = end
		c.dropFilters(i, end)
		d.changed[i] = true
	}
}

// Dedup key-group sections on the disk backend: the ids are in the
// store's files, so a section holds only the key group's bounded parts: a
// full section, Byte(4), Uint(low) Uint(top) Uint(swept) (the buckets the
// store may hold ids in and the first not deleted), then the payload cache
// (payloadCache.snapshot); or a delta, Byte(5), the same bounds, then the
// cache's puts since the key group's previous section.

func (d *dedupNode) snapshotCold(i int) (data []byte, delta bool) {
	c, pc, ch := d.cold, &d.caches[i], &d.chains[i]
	var e state.Encoder
	if ch.full && ch.deltas < maxDeltas(d.rng.Lo+i) {
		e.Grow(16 + pc.putsSize())
		e.Byte(5)
		e.Uint(uint64(c.low[i]))
		e.Uint(uint64(c.top[i]))
		e.Uint(uint64(c.swept[i]))
		pc.appendPuts(&e)
		ch.deltas++
		return e.Bytes(), true
	}
	e.Grow(16 + pc.size())
	e.Byte(4)
	e.Uint(uint64(c.low[i]))
	e.Uint(uint64(c.top[i]))
	e.Uint(uint64(c.swept[i]))
	pc.snapshot(&e)
	*ch = chain{full: true}
	return e.Bytes(), false
}

// restoreCold reads a disk-backend section (a delta after the full one)
// into key group i: its ids are in the store restored beside the
// sections, so the key group asks the store on a miss.
func (d *dedupNode) restoreCold(i int, dec *state.Decoder, delta bool) error {
	c := d.cold
	kind := dec.Byte()
	switch {
	case dec.Err() != nil:
		return dec.Err()
	case kind == 2 || kind == 3:
		return errors.New("a section of the memory backend (its ids in the section), restored into the disk backend")
	case delta && kind != 5, !delta && kind != 4:
		return fmt.Errorf("section kind %d, want %d", kind, map[bool]int{false: 4, true: 5}[delta])
	}
	if delta && !d.chains[i].full {
		return errors.New("a delta section without a full section before it")
	}
	low, top, swept := dec.Uint(), dec.Uint(), dec.Uint()
	if dec.Err() == nil && (low > top || top > 1<<32-1 || swept > 1<<32-1) {
		dec.Fail("dedup buckets [%d, %d), swept %d", low, top, swept)
	}
	if err := dec.Err(); err != nil {
		return err
	}
	c.low[i], c.top[i], c.swept[i] = uint32(low), uint32(top), uint32(swept)
	c.cold[i] = top > 0
	// The restored store's ids are in no filter: each bucket it may hold
	// ids in gets one rebuilt from the store (rebuildStep), and is probed
	// until its filter is complete.
	c.dropFilters(i, math.MaxUint32)
	c.known[i] = uint32(top)
	if top > 0 {
		if err := d.startRebuild(i, max(c.low[i], c.swept[i]), c.top[i]); err != nil {
			return err
		}
	}
	if delta {
		d.caches[i].restorePuts(dec)
		d.chains[i].deltas++
		return dec.Err()
	}
	d.caches[i] = payloadCache{capacity: d.perKG}
	d.caches[i].restore(dec)
	d.chains[i] = chain{full: true}
	return dec.Err()
}

// Flush writes the disk backend's changes since the last flush — the new
// ids of the hot tiers, the expired buckets' range deletes, the rows of
// the interval joins' tiers not yet in the store — to the store: the runner calls it before a snapshot of the store
// (a checkpoint round). Nothing on the memory backend.
func (t *Task) Flush() error {
	for _, nr := range t.nodes {
		if d := nr.dedup; d != nil && d.cold != nil {
			if err := d.checkpointWrite(); err != nil {
				return fmt.Errorf("dedup: %w", err)
			}
		}
		if j := nr.join; j != nil {
			if err := j.op.Flush(); err != nil {
				return fmt.Errorf("%s: %w", j.st.Name, err)
			}
		}
	}
	return nil
}

// ColdStats are a task's disk-backend counters: keys the dedup node
// looked up in the store, ids it found there, ids it wrote and the
// buckets its filters spared a lookup (Skips); keys the
// interval joins loaded from the store, the rows those loads read
// and the rows the joins wrote (join.ColdStats); the window stages'
// partials written to the store (WindowWrites) and read back
// (WindowReads), and among them the instances of fired windows waiting
// for late rows (WindowFiredWrites, WindowFiredReads).
type ColdStats struct {
	Reads, Hits, Writes, Skips               int64
	JoinLoads, JoinRowsRead, JoinRowsWritten int64
	WindowWrites, WindowReads                int64
	WindowFiredWrites, WindowFiredReads      int64
}

// ColdStats returns the task's disk-backend counters (zero on the memory
// backend).
func (t *Task) ColdStats() ColdStats {
	var s ColdStats
	for _, nr := range t.nodes {
		if d := nr.dedup; d != nil && d.cold != nil {
			s.Reads += d.cold.reads
			s.Hits += d.cold.hits
			s.Writes += d.cold.writes
			s.Skips += d.cold.skips
		}
		if j := nr.join; j != nil {
			js := j.op.ColdStats()
			s.JoinLoads += js.Loads
			s.JoinRowsRead += js.RowsRead
			s.JoinRowsWritten += js.RowsWritten
		}
		if nr.stage != nil {
			w, r, _ := nr.stage.op.SpillStats()
			s.WindowWrites += w
			s.WindowReads += r
			fw, fr := nr.stage.op.FiredSpills()
			s.WindowFiredWrites += fw
			s.WindowFiredReads += fr
		}
	}
	return s
}
