package join

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"

	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// The disk backend (docs/state.md) for an interval join (inner, left or
// full; an outer one without an absolute upper bound): the buffered rows
// live in the task's state.Store beneath a bounded hot tier — the
// operator's own per-key lists and column stores. Invariant: a key
// present in memory has every one of its live rows in memory (some may
// also be in the store; a side marked partial has only its rows not yet
// written); a key absent from memory in a key group marked cold may have
// rows in the store only. A row of an inner side never changes once
// buffered, so it is written once; a row of an outer side changes its
// decided state (matched, padded) after it is written: it is written
// again, under the same key (its write order is kept with it), at the
// next write-back.
//
//   - Write-back: the rows not yet in the store are written in one batch
//     when the tier is full (a turn) and at Flush (a checkpoint).
//   - A turn writes back, then drops from memory the keys no row touched
//     since the previous turn; the key groups that dropped keys are cold.
//   - A row of a key absent from memory in a cold key group loads the
//     key's rows of both sides from the store first (one scan per side
//     and live bucket), so the join then proceeds in memory as on the
//     memory backend.
//   - Expiry by range: rows are keyed time-major, by a bucket of their
//     event time, so the rows of a side freed by the other side's
//     watermark are whole buckets: one range delete per key group and
//     side at each advance. Rows freed in memory but still in the store
//     (their bucket not wholly freed yet) are skipped when a key is
//     loaded: they could match nothing accepted any more.
//   - Padded rows of keys not in memory: an outer row written while its
//     padding is undecided also gets an entry in its side's pad index,
//     by its pad time. At each advance the index's entries whose pad time
//     the other side's watermark has reached (one scan per key group and
//     outer side, then one range delete) name the keys to load: each is
//     loaded (its side's rows) and the advance then pads them in memory
//     as the memory backend does. An entry may be stale (the row matched
//     since): its load finds the row decided and pads nothing.
//
// Store keys (after state.KeyPrefix): the side (1 byte), the bucket (8
// bytes, big-endian, sign bit flipped: the event time ÷ the bucket width,
// floored), the join key's length (4 bytes, big-endian) and bytes, the
// event time (8, flipped) and the row's write order within its key group
// (8, big-endian: the arrival order of rows of one key and time). The
// value is the kept columns (state.Encoder.Value each), after, on an
// outer side, the row's arrival step (Uint) and its decided state (Byte:
// 1 matched, 2 padded). The pad index of side s: the byte 2 + s, the pad
// time (8, flipped), the row's write order (8); the value is the join
// key.

// coldState is an interval join's disk tier.
type coldState struct {
	store state.Store
	node  int   // the key prefix's node
	hot   int   // the tier's budget, bytes
	width int64 // bucket width, ms
	batch state.Batch
	g     []coldGroup // by key group − Groups.Lo
	ticks int
	// every is how many rows pass between checks of the tier's size
	// (256; tests lower it).
	every int
	kbuf  []byte
	hbuf  []byte
	vals  []row.Value
	enc   state.Encoder
	err   error // a failure of the store in a call that returns none (Advance)
	stats ColdStats
	// fbytes is the bytes of the key groups' filters of keys gone
	// (coldGroup.gone), within fcap (goneCap) but for the last Add.
	fbytes, fcap int
}

// coldGroup is a key group's part of the disk tier: the buckets per side
// the store may hold rows in, [max(lo, swept), hi] when has, and the next
// write order.
type coldGroup struct {
	has       [2]bool
	lo, hi    [2]int64
	swept     [2]int64 // buckets before it were deleted by range
	ord       uint64
	cold      bool // the store may hold rows of keys absent from memory
	unwritten int  // rows in memory not yet in the store
	// gone holds, oldest first, Bloom filters of the keys that left
	// memory with rows in the store (gone.go): a key absent from memory
	// and from every filter has no live row in the store, so its row
	// needs no load. A filter goes once the range deletes pass its
	// buckets. fsize is the most keys a filter took: the first capacity
	// of the next.
	gone  []goneFilter
	fsize int
	// restored: the key group's rows came from a checkpoint (the filters
	// do not know their keys), or its filters outgrew their share
	// (blind), in buckets up to upTo per side; until the range deletes
	// pass them, every absent key is loaded.
	restored bool
	upTo     [2]int64
	// padDone is, per outer side, the watermark up to which the pad
	// index was scanned (its entries at or before it deleted by range);
	// padMax the latest pad time of an entry written (math.MinInt64:
	// none), so that a key group whose entries are all scanned costs no
	// scan; padCut the pad time before which the scanned entries are
	// deleted by range (the deletes lag the scans by up to a bucket: a
	// range delete per advance would make every iterator of the store
	// fragment a memtable full of them).
	padDone, padMax, padCut [2]int64
	kg                      int // the key group
}

// ColdStats are a join's disk-tier counters: keys loaded from the store,
// rows read by those loads, rows written, tier turns, range deletes, and
// rows of keys absent from memory that needed no load (no row of the key
// in the store); of outer joins, rows written again (their decided state
// changed after they were written: RowsWritten counts them too) and keys
// loaded for their padded rows (PadLoads; Loads counts them too); Blind
// counts the times a key group's filters of keys gone outgrew their
// share and were forgotten (gone.go: its absent keys then loaded until
// the range deletes pass them).
type ColdStats struct {
	Loads, RowsRead, RowsWritten, Turns, RangeDeletes, Skipped int64
	Rewrites, PadLoads, Blind                                  int64
	// Deletes counts the temporal join's versions deleted from the store
	// by key (pruned below the anchor).
	Deletes int64
}

// DiskCapable reports whether the join keeps its rows on the disk backend
// (UseStore): an interval join, inner, left or full — an outer one
// without an absolute upper bound (its left rows' pad times are not in
// event-time order) — and a temporal join (its versions; its probes stay
// in memory). Window joins keep their state in memory on either backend
// (docs/state.md, "Status").
func (o *Operator) DiskCapable() bool {
	return o.cfg.Type == Interval && (o.cfg.Kind == Inner || o.cfg.UpperCol < 0) || o.cfg.Type == Temporal
}

// UseStore puts the join's buffered rows in store, under the prefix of
// graph node node, beneath a hot tier of hot bytes. Call it right after
// New, before RestoreGroups or any row. Errors: a join that is not
// DiskCapable, a node beyond the key prefix.
func (o *Operator) UseStore(store state.Store, node, hot int) error {
	if !o.DiskCapable() {
		return errors.New("join: only an interval join (an outer one without an absolute upper bound) and a temporal join keep their rows on disk")
	}
	if node < 0 || node >= 1<<16 {
		return fmt.Errorf("join: node %d beyond the key prefix", node)
	}
	width := max(int64(1000), o.cfg.Upper-min(o.cfg.Lower, 0)+o.cfg.Lateness)
	o.cold = &coldState{store: store, node: node, hot: hot, width: width, batch: store.NewBatch(), every: 256,
		g: make([]coldGroup, o.cfg.Groups.Len()), fcap: goneCap(hot)}
	for i := range o.cold.g {
		o.cold.g[i] = newColdGroup()
		o.cold.g[i].kg = o.cfg.Groups.Lo + i
	}
	for i := range o.groups {
		o.groups[i] = o.newGroup()
		o.groups[i].cold, o.groups[i].tier = &o.cold.g[i], o.cold
	}
	return nil
}

// ColdStats returns the disk tier's counters (zero on the memory backend).
func (o *Operator) ColdStats() ColdStats {
	if o.cold == nil {
		return ColdStats{}
	}
	return o.cold.stats
}

// freeConst returns c with expireTime(x) ≤ x.ts + c for every row x of
// side s (equal but for a left row's absolute bound, which is earlier).
func (o *Operator) freeConst(s int) int64 {
	if s == R {
		return add(-o.cfg.Lower, o.cfg.Lateness+1)
	}
	return add(o.cfg.Upper, o.cfg.Lateness+1)
}

func newColdGroup() coldGroup {
	none := [2]int64{math.MinInt64, math.MinInt64}
	return coldGroup{swept: none, padDone: none, padMax: none, padCut: none}
}

// flagsOf returns the decided state of an outer row's n as stored: 1
// matched, 2 padded (the match count itself matters only as > 0).
func flagsOf(n uint32) byte {
	var f byte
	if n&cntMask > 0 {
		f |= 1
	}
	if n&padded != 0 {
		f |= 2
	}
	return f
}

// nOfFlags is the inverse of flagsOf (a matched row counts one match).
func nOfFlags(f byte) uint32 {
	var n uint32
	if f&1 != 0 {
		n = 1
	}
	if f&2 != 0 {
		n |= padded
	}
	return n
}

// restate notes that x's n (side s) was before: where the row is in the
// store on an outer side and its decided state changed, it is written
// again at the next write-back. Nothing on the memory backend.
func (g *group) restate(s int, x *rec, before uint32) {
	st := &g.store[s]
	if !st.rewrite || flagsOf(before) == flagsOf(x.n) || !st.isWritten(x.slot) {
		return
	}
	st.clearWritten(x.slot)
	g.cold.unwritten++
}

// appendPadKey appends side s's pad-index key of pad time t (the start of
// the index when t is math.MinInt64) in key group kg.
func (c *coldState) appendPadKey(dst []byte, kg, s int, t int64) []byte {
	dst = state.KeyPrefix(dst, kg, c.node)
	dst = append(dst, byte(2+s))
	return binary.BigEndian.AppendUint64(dst, flip(t))
}

func (c *coldState) bucket(ts int64) int64 {
	b := ts / c.width
	if ts%c.width != 0 && ts < 0 {
		b--
	}
	return b
}

func flip(v int64) uint64 { return uint64(v) ^ 1<<63 }

// appendBucketKey appends the start of side s's bucket b in key group kg.
func (c *coldState) appendBucketKey(dst []byte, kg, s int, b int64) []byte {
	dst = state.KeyPrefix(dst, kg, c.node)
	dst = append(dst, byte(s))
	return binary.BigEndian.AppendUint64(dst, flip(b))
}

// appendKeyPrefix appends the start of key's rows of side s in bucket b.
func (c *coldState) appendKeyPrefix(dst []byte, kg, s int, b int64, key []byte) []byte {
	dst = c.appendBucketKey(dst, kg, s, b)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(key)))
	return append(dst, key...)
}

// touch prepares key (of key group index gi) for a row of side side: the
// key present in memory, touched, with every live row of the other side
// (the rows the new row probes) in memory, loaded from the store where
// the key group is cold. Its own side's stored rows are loaded only when
// a row of the other side needs them (keyState.partial): a bid probes
// its auction, and needs the auction's earlier bids only when another
// auction row of the key comes.
func (o *Operator) touch(gi int, key []byte, side int) error {
	c := o.cold
	g := o.groups[gi]
	os := 1 - side
	if i, ok := g.keys.find(g.ks, key, keyHash(key)); ok {
		ks := &g.ks[i]
		ks.hot = true
		if ks.partial[os] {
			return o.loadSide(gi, i, os, Inf)
		}
		return nil
	}
	cg := &c.g[gi]
	if !cg.cold {
		return nil
	}
	if cg.restored && !(past(cg, L) && past(cg, R)) {
		// Rows restored from a checkpoint may be of any key.
	} else {
		cg.restored = false
		if !cg.mayHold(maphash.Bytes(keySeed, key)) {
			c.stats.Skipped++
			return nil
		}
	}
	ki, ks := g.key(key)
	ks.partial = [2]bool{cg.has[L], cg.has[R]}
	c.stats.Loads++
	return o.loadSide(gi, ki, os, Inf)
}

// loadSide reads key ki's stored rows of side s into memory, before the
// rows of the side already there (they came after every stored one),
// skipping the rows a watermark has freed — but for the rows of an outer
// side still undecided whose pad time is after dueAfter (padScan: their
// padded rows are due at this advance, which then frees them; a row due
// before dueAfter was padded at an earlier advance, and its stored copy
// may be stale if memory then freed it).
func (o *Operator) loadSide(gi int, ki int32, s int, dueAfter int64) error {
	c := o.cold
	g := o.groups[gi]
	cg := &c.g[gi]
	kg := o.cfg.Groups.Lo + gi
	key := []byte(g.ks[ki].key)
	g.ks[ki].partial[s] = false
	if !cg.has[s] {
		return nil
	}
	w := o.wm[1-s]
	st := &g.store[s]
	var got []rec
	for b := max(cg.lo[s], cg.swept[s]); b <= cg.hi[s]; b++ {
		c.kbuf = c.appendKeyPrefix(c.kbuf[:0], kg, s, b, key)
		c.hbuf = append(append(c.hbuf[:0], c.kbuf...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
		plen := len(c.kbuf)
		var ferr error
		err := c.store.Scan(c.kbuf, c.hbuf, func(k, v []byte) bool {
			if len(k) != plen+16 {
				ferr = fmt.Errorf("join: a stored row's key of %d bytes, want %d", len(k), plen+16)
				return false
			}
			ts := int64(binary.BigEndian.Uint64(k[plen:]) ^ 1<<63)
			d := state.NewDecoder(v)
			var seq uint64
			var flags byte
			if st.rewrite {
				seq, flags = d.Uint(), d.Byte()
				if d.Err() == nil && flags > 3 {
					d.Fail("row flags %d", flags)
				}
			}
			c.vals = c.vals[:0]
			for range o.cfg.Keep[s] {
				c.vals = append(c.vals, d.Value())
			}
			if d.Err() == nil && d.Remaining() != 0 {
				d.Fail("%d bytes after the row", d.Remaining())
			}
			if d.Err() != nil {
				ferr = fmt.Errorf("join: a stored row of key group %d: %w", kg, d.Err())
				return false
			}
			slot, err := st.putValues(c.vals, seq)
			if err != nil {
				ferr = fmt.Errorf("join: a stored row of key group %d, side %d: %w", kg, s, err)
				return false
			}
			x := rec{ts: ts, slot: slot, n: nOfFlags(flags)}
			c.stats.RowsRead++
			if w != NoWatermark && o.expireTime(g, s, &x) <= w && (!st.rewrite || decided(&x) || o.padTime(g, s, &x) <= dueAfter) {
				st.del(slot) // freed: it matches nothing accepted any more
				return true
			}
			st.setWritten(slot)
			if st.rewrite {
				st.ords[slot] = binary.BigEndian.Uint64(k[plen+8:]) + 1
			}
			got = append(got, x) // in (ts, order): the store's key order
			return true
		})
		if err == nil {
			err = ferr
		}
		if err != nil {
			return err
		}
	}
	if len(got) == 0 {
		return nil
	}
	ks := &g.ks[ki]
	// Merge by event time; of one time the stored rows first (they
	// arrived before the rows in memory, which were never written).
	mem := ks.rows[s]
	merged := make([]rec, 0, len(got)+len(mem))
	a, b := 0, 0
	for a < len(got) || b < len(mem) {
		if b == len(mem) || a < len(got) && got[a].ts <= mem[b].ts {
			merged = append(merged, got[a])
			a++
		} else {
			merged = append(merged, mem[b])
			b++
		}
	}
	ks.rows[s] = merged
	if o.outer(s) {
		// The rows before the cursor are decided and were due (a row
		// inserted before it is due at once).
		p := 0
		for p < len(merged) && decided(&merged[p]) && o.padTime(g, s, &merged[p]) <= w {
			p++
		}
		ks.pad[s] = int32(p)
	}
	o.intervalSchedule(g, ki, s)
	return nil
}

// goneNow records, at once, that a key with stored rows not loaded (a
// partial side) leaves memory outside a turn (its rows in memory all
// freed).
func (c *coldState) goneNow(cg *coldGroup, ks *keyState) {
	last := [2]int64{math.MinInt64, math.MinInt64}
	for s := range 2 {
		if ks.partial[s] {
			last[s] = cg.hi[s]
		}
	}
	c.addGone(cg, maphash.Bytes(keySeed, []byte(ks.key)), last)
}

// dropStaleTimers removes from g's timer heaps the timers of keys no
// longer in memory (and others superseded), which would otherwise stay
// until their time: a heap sorted by time is a heap.
func dropStaleTimers(g *group) {
	for c := range g.heaps {
		h := g.heaps[c][:0]
		for _, t := range g.heaps[c] {
			if ks := &g.ks[t.key]; ks.live && ks.gen == t.gen && ks.sched[c] == t.t {
				h = append(h, t)
			}
		}
		clear(g.heaps[c][len(h):])
		slices.SortFunc(h, func(a, b timer) int { return cmp.Compare(a.t, b.t) })
		if cap(h) > 64 && len(h) < cap(h)/4 {
			h = slices.Clone(h)
		}
		g.heaps[c] = h
	}
}

// past reports whether the range deletes have taken every restored row
// of side s of the key group.
func past(cg *coldGroup, s int) bool { return !cg.has[s] || cg.swept[s] > cg.upTo[s] }

// maybeTurn turns the tier when it holds more than its budget: every row
// not yet in the store is written, and the keys not touched since the
// previous turn leave memory.
func (o *Operator) maybeTurn() error {
	c := o.cold
	if c.ticks++; c.ticks < c.every {
		return nil
	}
	c.ticks = 0
	if o.tierBytes() <= int64(c.hot) {
		return nil
	}
	if err := o.writeBack(); err != nil {
		return err
	}
	c.stats.Turns++
	o.dropKeys(false)
	if o.tierBytes() > int64(c.hot)/2 {
		// Most keys were touched: let them all go, so that the tier has
		// room for half its budget of new rows before the next turn (a
		// turn costs a pass over the tier).
		o.dropKeys(true)
	}
	return nil
}

// tierBytes estimates the bytes of the rows and keys in memory, by what
// is live (the arrays keep their capacity for the rows to come).
func (o *Operator) tierBytes() int64 {
	n := int64(0)
	for _, g := range o.groups {
		for s := range 2 {
			st := &g.store[s]
			_, cols := st.bytes()
			n += cols + int64(st.live)*int64(recBytes+8+16*st.nS)
		}
		n += int64(g.keys.len()) * (keyStateBytes + 8 + 16)
		for _, h := range g.heaps {
			n += int64(len(h)) * timerBytes
		}
	}
	return n + int64(o.cold.fbytes)
}

// dropKeys lets the keys of the tier go — every key with all, else those
// no row touched since the previous turn — and clears the touched marks.
// Their rows must be in the store (writeBack).
func (o *Operator) dropKeys(all bool) {
	c := o.cold
	for gi, g := range o.groups {
		dropped := false
		for i := range g.ks {
			ks := &g.ks[i]
			if !ks.live {
				continue
			}
			if ks.hot && !all {
				ks.hot = false
				continue
			}
			if o.cfg.Type == Temporal {
				if len(ks.rows[L]) > 0 {
					continue // a key with probes stays (they are never written)
				}
				for _, x := range ks.rows[R] {
					g.store[R].del(x.slot)
				}
				ks.rows[R] = ks.rows[R][:0]
				g.dropKey(int32(i))
				dropped = true
				continue
			}
			last := [2]int64{math.MinInt64, math.MinInt64}
			for s := range 2 {
				for _, x := range ks.rows[s] {
					g.store[s].del(x.slot)
					last[s] = max(last[s], c.bucket(x.ts))
				}
				if ks.partial[s] {
					last[s] = c.g[gi].hi[s] // its stored rows' buckets are not known
				}
				ks.rows[s] = ks.rows[s][:0]
				ks.partial[s] = false
			}
			c.addGone(&c.g[gi], maphash.Bytes(keySeed, []byte(ks.key)), last)
			g.dropKey(int32(i))
			dropped = true
		}
		if dropped {
			c.g[gi].cold = true
			o.changed[gi] = true
			if o.cfg.Type != Temporal {
				c.expireGone(&c.g[gi])
			}
			dropStaleTimers(g)
		}
	}
}

// writeBack writes every row of the tier not yet in the store, and the
// pending range deletes, in one batch.
func (o *Operator) writeBack() error {
	c := o.cold
	if c.err != nil {
		return c.err
	}
	for gi, g := range o.groups {
		cg := &c.g[gi]
		if cg.unwritten == 0 {
			continue
		}
		kg := o.cfg.Groups.Lo + gi
		if o.cfg.Type == Temporal {
			o.writeVersions(kg, g, cg)
			continue
		}
		for i := range g.ks {
			ks := &g.ks[i]
			if !ks.live {
				continue
			}
			for s := range 2 {
				st := &g.store[s]
				for _, x := range ks.rows[s] {
					if st.isWritten(x.slot) {
						continue
					}
					b := c.bucket(x.ts)
					c.kbuf = c.appendKeyPrefix(c.kbuf[:0], kg, s, b, []byte(ks.key))
					c.kbuf = binary.BigEndian.AppendUint64(c.kbuf, flip(x.ts))
					ord := cg.ord
					c.enc.Reset()
					if st.rewrite {
						if st.ords[x.slot] != 0 {
							ord = st.ords[x.slot] - 1 // written before: the same key
							c.stats.Rewrites++
						} else {
							cg.ord++
							st.ords[x.slot] = ord + 1
							if !decided(&x) {
								// Its padding is due at a watermark to come
								// (every row due was decided at the last
								// advance, or as it came): the pad index.
								pt := o.padTime(g, s, &x)
								c.hbuf = c.appendPadKey(c.hbuf[:0], kg, s, pt)
								c.hbuf = binary.BigEndian.AppendUint64(c.hbuf, ord)
								c.batch.Set(c.hbuf, []byte(ks.key))
								cg.padMax[s] = max(cg.padMax[s], pt)
							}
						}
						c.enc.Uint(st.seq(x.slot))
						c.enc.Byte(flagsOf(x.n))
					} else {
						cg.ord++
					}
					c.kbuf = binary.BigEndian.AppendUint64(c.kbuf, ord)
					for col := range o.cfg.Keep[s] {
						c.enc.Value(st.get(x.slot, col))
					}
					c.batch.Set(c.kbuf, c.enc.Bytes())
					st.setWritten(x.slot)
					if !cg.has[s] {
						cg.has[s], cg.lo[s], cg.hi[s] = true, b, b
					} else {
						cg.lo[s], cg.hi[s] = min(cg.lo[s], b), max(cg.hi[s], b)
					}
					c.stats.RowsWritten++
				}
				if ks.partial[s] {
					// The side's stored rows are not in memory: its rows in
					// memory must be only the unwritten ones, so that a load
					// merges without doubles. They are all in the store now.
					for _, x := range ks.rows[s] {
						st.del(x.slot)
					}
					ks.rows[s] = ks.rows[s][:0]
					ks.pad[s] = 0
				}
			}
		}
		cg.unwritten = 0
		o.changed[gi] = true
	}
	if c.batch.Count() == 0 {
		return nil
	}
	return c.store.Commit(c.batch)
}

// padScan loads, before an advance of key group gi, the keys of the
// outer rows in the store whose padded rows the new watermarks make due
// (the pad index's entries up to the other side's watermark) and are not
// in memory — absent, or their side partial — so that the advance pads
// them as in memory; the entries scanned are deleted by range (written
// at the next write-back) once the scans have passed a bucket width
// since the last delete, and at +∞. It reports whether it changed the
// state. A failure of the store is kept for the next write-back.
func (o *Operator) padScan(gi int) bool {
	c := o.cold
	cg := &c.g[gi]
	if !cg.cold || c.err != nil {
		return false
	}
	g := o.groups[gi]
	kg := o.cfg.Groups.Lo + gi
	did := false
	for s := range 2 {
		w := o.wm[1-s]
		if !o.outer(s) || w == NoWatermark || w <= cg.padDone[s] {
			continue
		}
		if cg.padMax[s] <= cg.padDone[s] {
			cg.padDone[s] = w // no entry after the last scan: later ones are after w
			did = o.padCutAt(gi, s, w) || did
			continue
		}
		from := cg.padDone[s]
		if from != math.MinInt64 {
			from++
		}
		lo := c.appendPadKey(nil, kg, s, from)
		var hi []byte
		if w == Inf {
			hi = append(state.KeyPrefix(nil, kg, c.node), byte(3+s))
		} else {
			hi = c.appendPadKey(nil, kg, s, w+1)
		}
		var keys []string
		err := c.store.Scan(lo, hi, func(k, v []byte) bool {
			if i, ok := g.keys.find(g.ks, v, keyHash(v)); ok && !g.ks[i].partial[s] {
				return true // in memory with all its rows: the advance pads them
			}
			keys = append(keys, string(v))
			return true
		})
		if err != nil {
			c.err = err
			return did
		}
		prev := cg.padDone[s]
		cg.padDone[s] = w
		o.padCutAt(gi, s, w)
		did = true
		slices.Sort(keys)
		keys = slices.Compact(keys)
		for _, k := range keys {
			key := []byte(k)
			ki, ok := g.keys.find(g.ks, key, keyHash(key))
			if !ok {
				var ks *keyState
				ki, ks = g.key(key)
				ks.partial = [2]bool{cg.has[L], cg.has[R]}
			}
			c.stats.Loads++
			c.stats.PadLoads++
			if err := o.loadSide(gi, ki, s, prev); err != nil {
				c.err = err
				return did
			}
			if ks := &g.ks[ki]; len(ks.rows[L]) == 0 && len(ks.rows[R]) == 0 {
				g.dropKey(ki) // every row of it decided and freed
			}
		}
	}
	return did
}

// padCutAt deletes by range side s's pad-index entries up to w (all
// scanned) in key group gi, when the last such delete is a bucket width
// behind or w is +∞. It reports whether it did.
func (o *Operator) padCutAt(gi, s int, w int64) bool {
	c := o.cold
	cg := &c.g[gi]
	if cg.padCut[s] >= w || cg.padMax[s] <= cg.padCut[s] ||
		w != Inf && cg.padCut[s] != math.MinInt64 && c.bucket(w) <= c.bucket(cg.padCut[s]) {
		return false
	}
	kg := o.cfg.Groups.Lo + gi
	var hi []byte
	if w == Inf {
		hi = append(state.KeyPrefix(nil, kg, c.node), byte(3+s))
	} else {
		hi = c.appendPadKey(nil, kg, s, w+1)
	}
	c.batch.DeleteRange(c.appendPadKey(nil, kg, s, math.MinInt64), hi)
	c.stats.RangeDeletes++
	cg.padCut[s] = w
	return true
}

// sweepCold deletes by range, per key group and side, the buckets the
// other side's watermark has wholly freed (Advance; written at the next
// write-back); of a temporal join, every version once both watermarks
// are +∞.
func (o *Operator) sweepCold() {
	c := o.cold
	if o.cfg.Type == Temporal {
		if min(o.wm[L], o.wm[R]) != Inf {
			return
		}
		for gi := range c.g {
			if cg := &c.g[gi]; cg.has[R] {
				kg := o.cfg.Groups.Lo + gi
				c.batch.DeleteRange(append(state.KeyPrefix(nil, kg, c.node), byte(R)), append(state.KeyPrefix(nil, kg, c.node), byte(R+1)))
				c.stats.RangeDeletes++
				cg.has[R] = false
				o.changed[gi] = true
			}
		}
		return
	}
	for s := range 2 {
		w := o.wm[1-s]
		if w == NoWatermark {
			continue
		}
		var end int64 = math.MaxInt64
		if w != Inf {
			// Bucket b is wholly freed when its last time's expiry,
			// (b+1)·width − 1 + freeConst, is at or before w.
			end = c.bucket(add(w, -o.freeConst(s)) + 1)
		}
		for gi := range c.g {
			cg := &c.g[gi]
			if !cg.has[s] || end <= max(cg.lo[s], cg.swept[s]) {
				continue
			}
			kg := o.cfg.Groups.Lo + gi
			lo := c.appendBucketKey(nil, kg, s, math.MinInt64)
			hi := c.appendBucketKey(nil, kg, s, min(end, cg.hi[s]+1))
			cg.swept[s] = end
			if end > cg.hi[s] {
				cg.has[s] = false // every row the store held of the side is gone
			}
			c.batch.DeleteRange(lo, hi)
			c.stats.RangeDeletes++
			o.changed[gi] = true
			c.expireGone(cg)
		}
	}
}

// Flush writes the rows of the tier not yet in the store, and the
// pending range deletes, in one batch: the runner calls it before a
// snapshot of the store and of the key groups' sections (a checkpoint).
// Nothing on the memory backend.
func (o *Operator) Flush() error {
	if o.cold == nil {
		return nil
	}
	return o.writeBack()
}

// A key group's section on the disk backend, version 3: the rows are in
// the store (Flush wrote them), so the section holds only the bounds:
//
//	Byte(3) Byte(type) per side: Bool(has) Int(lo) Int(hi) Int(swept)
//	Uint(next write order) per side: Int(padMax) Int(padDone)
//
// and, of a temporal join, its probes (in memory only: never in the
// store), by encoded key:
//
//	Uint(#keys) per key: String(key) Uint(cursor) Uint(#probes)
//	  per probe: Int(ts) Uint(seq) Uint(n) Value per kept column
//
// Version 2 (an inner join's, before outer joins were on disk) lacks the
// pad index's bounds. A restore loads the versions of the keys with
// probes from the store.

func (o *Operator) snapshotCold(gi int, e *state.Encoder) {
	cg := &o.cold.g[gi]
	e.Byte(3)
	e.Byte(byte(o.cfg.Type))
	for s := range 2 {
		e.Bool(cg.has[s])
		e.Int(cg.lo[s])
		e.Int(cg.hi[s])
		e.Int(cg.swept[s])
	}
	e.Uint(cg.ord)
	for s := range 2 {
		e.Int(cg.padMax[s])
		e.Int(cg.padDone[s])
	}
	if o.cfg.Type != Temporal {
		return
	}
	g := o.groups[gi]
	keys := o.keyOrder[:0]
	for i := range g.ks {
		if g.ks[i].live && len(g.ks[i].rows[L]) > 0 {
			keys = append(keys, int32(i))
		}
	}
	slices.SortFunc(keys, func(a, b int32) int { return strings.Compare(g.ks[a].key, g.ks[b].key) })
	o.keyOrder = keys
	e.Uint(uint64(len(keys)))
	for _, ki := range keys {
		ks := &g.ks[ki]
		e.String(ks.key)
		e.Uint(uint64(ks.pad[L]))
		e.Uint(uint64(len(ks.rows[L])))
		for _, x := range ks.rows[L] {
			e.Int(x.ts)
			e.Uint(g.store[L].seq(x.slot))
			e.Uint(uint64(x.n))
			o.putValues(e, g, L, x.slot)
		}
	}
}

func (o *Operator) restoreCold(gi int, version byte, d *state.Decoder) error {
	cg := &o.cold.g[gi]
	if t := Type(d.Byte()); d.Err() == nil && t != o.cfg.Type {
		return fmt.Errorf("a section of join type %d, the join is of type %d", t, o.cfg.Type)
	}
	ng := newColdGroup()
	ng.kg = cg.kg
	for s := range 2 {
		ng.has[s] = d.Bool()
		ng.lo[s], ng.hi[s], ng.swept[s] = d.Int(), d.Int(), d.Int()
		if d.Err() == nil && ng.has[s] && ng.lo[s] > ng.hi[s] {
			d.Fail("side %d: buckets [%d, %d]", s, ng.lo[s], ng.hi[s])
		}
	}
	ng.ord = d.Uint()
	if version >= 3 {
		for s := range 2 {
			ng.padMax[s], ng.padDone[s] = d.Int(), d.Int()
		}
	}
	if err := d.Err(); err != nil {
		return err
	}
	ng.cold = ng.has[L] || ng.has[R] || ng.padMax[L] != math.MinInt64 || ng.padMax[R] != math.MinInt64
	ng.restored, ng.upTo = ng.cold, ng.hi
	for i := range cg.gone {
		o.cold.fbytes -= cg.gone[i].f.Bytes()
	}
	*cg = ng
	if o.cfg.Type == Temporal {
		return o.restoreProbes(gi, d)
	}
	return nil
}

// restoreProbes reads a temporal join's probes of key group index gi
// (snapshotCold) and loads their keys' versions from the store.
func (o *Operator) restoreProbes(gi int, d *state.Decoder) error {
	g := o.groups[gi]
	kg := o.cfg.Groups.Lo + gi
	n := d.Len(1<<31-1, 3)
	for range n {
		k := d.String()
		pad := d.Len(1<<31-1, 0)
		m := d.Len(1<<31-1, 3)
		if d.Err() != nil {
			break
		}
		if owner := keygroup.OfKey([]byte(k), o.cfg.KeyGroups); owner != kg {
			return fmt.Errorf("key %q belongs to key group %d", k, owner)
		}
		if _, dup := g.keys.find(g.ks, []byte(k), keyHash([]byte(k))); dup {
			return fmt.Errorf("key %q listed twice", k)
		}
		if m == 0 || pad > m {
			return fmt.Errorf("key %q: %d probes, cursor %d", k, m, pad)
		}
		ki, _ := g.key([]byte(k))
		var prev struct {
			ts  int64
			seq uint64
		}
		for j := range m {
			x := rec{ts: d.Int()}
			seq := d.Uint()
			nf := d.Uint()
			if nf > 1<<32-1 {
				d.Fail("probe flags %d", nf)
			}
			x.n = uint32(nf)
			o.vals = o.vals[:0]
			for range o.cfg.Keep[L] {
				o.vals = append(o.vals, d.Value())
			}
			if err := d.Err(); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			if j > 0 && (x.ts < prev.ts || x.ts == prev.ts && seq <= prev.seq) {
				return fmt.Errorf("key %q: probes not in event-time order", k)
			}
			prev.ts, prev.seq = x.ts, seq
			slot, err := g.store[L].putValues(o.vals, seq)
			if err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			x.slot = slot
			ks := &g.ks[ki]
			ks.rows[L] = append(ks.rows[L], x)
		}
		o.vals = o.vals[:0]
		g.ks[ki].pad[L] = int32(pad)
		if err := o.loadVersions(gi, ki); err != nil {
			return err
		}
		o.temporalSchedule(g, ki)
	}
	return d.Err()
}

// The temporal join on the disk backend: the versions (side R) of the
// keys live in the store beneath the hot tier; the probes (side L) stay
// in memory — they wait at most the right side's out-of-orderness and
// allowed lateness — and a key holding probes stays in memory. A key
// present in memory has all its versions in memory; a key absent from
// memory in a cold key group may have versions in the store only, and a
// row of it (a probe or a version) loads them first: one scan of the
// key's span. Store keys (after state.KeyPrefix): the side (1 byte, R),
// the join key's length (4 bytes) and bytes, the version time (8,
// flipped) and the write order within the key group (8): a key's
// versions are one span, in (version time, arrival) order. The value is
// the version's arrival step (Uint), then its kept columns. A version
// pruned below the anchor, or a lone tombstone dropped, is deleted by
// its key (a point delete: a key prunes one version at a time, and a
// range delete per prune would make every iterator fragment the
// memtable's range deletes); the versions of keys absent from memory are
// pruned when the key is loaded again; at the end of both inputs one
// range delete per key group takes them all.

// appendVersionKey appends the store key of a version of key at ts with
// write order ord in key group kg (without ts and ord: the start of the
// key's span).
func (c *coldState) appendVersionKey(dst []byte, kg int, key []byte) []byte {
	dst = state.KeyPrefix(dst, kg, c.node)
	dst = append(dst, byte(R))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(key)))
	return append(dst, key...)
}

// touchTemporal prepares key (of key group index gi) for a row: present
// in memory, touched, with every version loaded where the key group is
// cold.
func (o *Operator) touchTemporal(gi int, key []byte) error {
	c := o.cold
	g := o.groups[gi]
	if i, ok := g.keys.find(g.ks, key, keyHash(key)); ok {
		g.ks[i].hot = true
		return nil
	}
	cg := &c.g[gi]
	if !cg.cold || !cg.has[R] {
		return nil
	}
	ki, _ := g.key(key)
	c.stats.Loads++
	return o.loadVersions(gi, ki)
}

// loadVersions reads key ki's stored versions into memory (the key holds
// none in memory). The batch's deletes (versions pruned, perhaps of this
// key before it left memory) are committed first: the scan must not see
// them.
func (o *Operator) loadVersions(gi int, ki int32) error {
	c := o.cold
	if c.batch.Count() > 0 {
		if err := c.store.Commit(c.batch); err != nil {
			return err
		}
	}
	g := o.groups[gi]
	kg := o.cfg.Groups.Lo + gi
	st := &g.store[R]
	ks := &g.ks[ki]
	c.kbuf = c.appendVersionKey(c.kbuf[:0], kg, []byte(ks.key))
	plen := len(c.kbuf)
	c.hbuf = append(append(c.hbuf[:0], c.kbuf...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	got := ks.rows[R][:0]
	var ferr error
	err := c.store.Scan(c.kbuf, c.hbuf, func(k, v []byte) bool {
		if len(k) != plen+16 {
			ferr = fmt.Errorf("join: a stored version's key of %d bytes, want %d", len(k), plen+16)
			return false
		}
		d := state.NewDecoder(v)
		seq := d.Uint()
		c.vals = c.vals[:0]
		for range o.cfg.Keep[R] {
			c.vals = append(c.vals, d.Value())
		}
		if d.Err() == nil && d.Remaining() != 0 {
			d.Fail("%d bytes after the version", d.Remaining())
		}
		if d.Err() != nil {
			ferr = fmt.Errorf("join: a stored version of key group %d: %w", kg, d.Err())
			return false
		}
		slot, err := st.putValues(c.vals, seq)
		if err != nil {
			ferr = fmt.Errorf("join: a stored version of key group %d: %w", kg, err)
			return false
		}
		st.setWritten(slot)
		st.ords[slot] = binary.BigEndian.Uint64(k[plen+8:]) + 1
		got = append(got, rec{ts: int64(binary.BigEndian.Uint64(k[plen:]) ^ 1<<63), slot: slot})
		c.stats.RowsRead++
		return true
	})
	if err == nil {
		err = ferr
	}
	g.ks[ki].rows[R] = got
	return err
}

// forgetVersion deletes version v of ks from the store, where it was
// written (temporalPrune; nothing on the memory backend).
func (o *Operator) forgetVersion(g *group, ks *keyState, v *rec) {
	st := &g.store[R]
	if !st.keepOrd || st.ords[v.slot] == 0 {
		return
	}
	c := o.cold
	c.kbuf = c.appendVersionKey(c.kbuf[:0], g.cold.kg, []byte(ks.key))
	c.kbuf = binary.BigEndian.AppendUint64(c.kbuf, flip(v.ts))
	c.kbuf = binary.BigEndian.AppendUint64(c.kbuf, st.ords[v.slot]-1)
	c.batch.Delete(c.kbuf)
	c.stats.Deletes++
}

// writeVersions adds the versions of key group kg not yet in the store to
// the batch.
func (o *Operator) writeVersions(kg int, g *group, cg *coldGroup) {
	c := o.cold
	st := &g.store[R]
	for i := range g.ks {
		ks := &g.ks[i]
		if !ks.live {
			continue
		}
		for _, v := range ks.rows[R] {
			if st.isWritten(v.slot) {
				continue
			}
			c.kbuf = c.appendVersionKey(c.kbuf[:0], kg, []byte(ks.key))
			c.kbuf = binary.BigEndian.AppendUint64(c.kbuf, flip(v.ts))
			c.kbuf = binary.BigEndian.AppendUint64(c.kbuf, cg.ord)
			st.ords[v.slot] = cg.ord + 1
			cg.ord++
			c.enc.Reset()
			c.enc.Uint(st.seq(v.slot))
			for col := range o.cfg.Keep[R] {
				c.enc.Value(st.get(v.slot, col))
			}
			c.batch.Set(c.kbuf, c.enc.Bytes())
			st.setWritten(v.slot)
			cg.has[R] = true
			c.stats.RowsWritten++
		}
	}
	cg.unwritten = 0
	o.changed[kg-o.cfg.Groups.Lo] = true
}
