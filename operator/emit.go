package operator

import (
	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/window"
)

// inst is one (window, key) instance: its accumulator slot and emission
// bookkeeping.
type inst struct {
	key     uint32
	slot    int32 // −1 once removed
	rows    int64 // rows contributing (adds − retractions)
	version uint32
	emitted bool          // a row for this instance is live downstream
	dirty   bool          // changed since the last emission
	group   uint16        // the key's key group
	birth   uint64        // the step that created the instance (OrderBirth)
	emitW   window.Window // window of the live downstream row (its identity)
	emitV   uint32        // version of the live downstream row
}

// firing is why an instance is being emitted.
type firing uint8

const (
	fireEarly  firing = iota // processing-time early firing
	fireOnTime               // the watermark reached the window end
	fireLate                 // a late record updated a fired window
	fireClose                // the allowed lateness passed: final
)

// emit produces the rows for one firing of an instance, per emit mode.
func (o *Operator) emit(in *inst, w window.Window, kind firing) {
	if in.rows <= 0 {
		return
	}
	if o.rankedUpdating() {
		// An updating Top-N emitted each change of its ranks as it came
		// (emitRanks): the close makes them final.
		if kind == fireClose {
			o.closeRanks(in, w)
		}
		return
	}
	if o.cfg.Mode == Final {
		if kind != fireClose {
			return
		}
		in.version++
		o.pushFinal(in.key, w, in.slot, in.version)
		in.emitted, in.dirty, in.emitW, in.emitV = true, false, w, in.version
		return
	}
	final := kind == fireClose
	if !final && in.emitted && !in.dirty {
		return // nothing changed since the last row
	}
	op := changelog.Insert
	if in.emitted {
		op = changelog.UpdateAfter
		if o.cfg.Mode == Retract {
			o.push(changelog.UpdateBefore, in.key, in.emitW, o.prev(in.slot), in.emitV, false)
		}
	}
	in.version++
	vals := o.results(in.slot)
	o.push(op, in.key, w, vals, in.version, final)
	if o.cfg.Mode == Retract {
		o.slots.prev[in.slot] = append(o.slots.prev[in.slot][:0], vals...)
	}
	in.emitted, in.dirty, in.emitW, in.emitV = true, false, w, in.version
}

// emitDelete withdraws an instance's live downstream row, if any.
func (o *Operator) emitDelete(in *inst) {
	if !in.emitted || o.cfg.Mode == Final {
		return
	}
	in.version++
	var vals []row.Value
	if o.cfg.Mode == Retract {
		vals = o.prev(in.slot)
	} else {
		vals = o.results(in.slot)
	}
	o.push(changelog.Delete, in.key, in.emitW, vals, in.version, false)
	in.emitted = false
}

// results returns slot s's current results in the output arena.
func (o *Operator) results(s int32) []row.Value {
	start := len(o.vals)
	o.vals = o.slots.results(o.vals, s)
	return o.vals[start:len(o.vals):len(o.vals)]
}

// prev returns a copy of slot s's last emitted results in the output arena.
func (o *Operator) prev(s int32) []row.Value {
	start := len(o.vals)
	o.vals = append(o.vals, o.slots.prev[s]...)
	return o.vals[start:len(o.vals):len(o.vals)]
}

// noKey is the key of a keyless operator's rows: empty, not nil, as
// decodeKey returns it.
var noKey = []row.Value{}

// rowKeyChunk is the number of key values of one allocation of
// Operator.rowKey's arena (64 bytes each).
const rowKeyChunk = 1024

// rowKey returns key id's values decoded into memory the emitted rows own:
// a row keeps its key after the operator's next call (a writer holds it),
// so the arena is never reused; a full chunk is left to the rows and a
// new one allocated.
//
// With transient keys (SetTransientKeys) the arena is reused from the
// start at each Drain, and a full arena is replaced by one twice its size,
// so that it settles at the size of the largest batch of rows between two
// drains.
func (o *Operator) rowKey(id uint32) []row.Value {
	n := len(o.keys.fields)
	if n == 0 {
		return noKey
	}
	v := o.keySlots(n)
	enc := o.keys.ent(id).enc
	if x, ok := o.keys.intOf(enc); ok {
		// One int, bool or time field, not null: decodeKeyInto's value
		// without its loop over fields and tags.
		v[0] = row.Value{Kind: o.keys.fields[0].Kind, I: int64(x)}
		return v
	}
	decodeKeyInto(v, enc, o.keys.fields)
	return v
}

// keySlots returns n values of the key arena for one row's key (rowKey,
// rankKey), starting a new chunk when the arena is full.
func (o *Operator) keySlots(n int) []row.Value {
	if len(o.keyArena)+n > cap(o.keyArena) {
		c := rowKeyChunk
		if o.transientKeys {
			c = 2 * cap(o.keyArena)
		}
		o.keyArena = make([]row.Value, 0, max(c, rowKeyChunk, n))
	}
	start := len(o.keyArena)
	o.keyArena = o.keyArena[:start+n]
	v := o.keyArena[start : start+n : start+n]
	return v
}

// rankKey is rowKey with the rank appended: key id's values, then rank
// as an int (a ranked operator's rows, Config.Ranked).
func (o *Operator) rankKey(id uint32, rank int) []row.Value {
	n := len(o.keys.fields) + 1
	v := o.keySlots(n)
	if n > 1 {
		decodeKeyInto(v[:n-1], o.keys.ent(id).enc, o.keys.fields)
	}
	v[n-1] = row.Int(int64(rank))
	return v
}

// pushFinal pushes the final insert of key's instance in window w from
// slot s: one row of the slot's results or, for a ranked operator
// (Config.Ranked), one row per row its Ranker keeps, in rank order, each
// keyed by the key and its rank.
func (o *Operator) pushFinal(key uint32, w window.Window, s int32, version uint32) {
	if !o.cfg.Ranked {
		o.push(changelog.Insert, key, w, o.results(s), version, true)
		return
	}
	rk := o.cfg.Aggs[0].(aggregate.Ranker)
	for k := range rk.Ranks(s) {
		start := len(o.vals)
		o.vals = rk.AppendRank(o.vals, s, k)
		o.pushRow(changelog.Insert, key, o.rankKey(key, k+1), w, o.vals[start:len(o.vals):len(o.vals)], version, true)
	}
}

// emitRanks emits, for an updating Top-N (Config.Ranked in mode update or
// retract), the ranks of key instance in (window w) that the record just
// added changed: with the row placed at rank i (0-based), every rank from
// i to the last kept holds a new row — the new one at i, each lower rank
// the row the rank above held. Each such rank's row is an insert the
// first time, else an update_after (in mode retract preceded by an
// update_before of the rank's previous row and version), not final, its
// version the rank's next (Ranker.Bump): versions count 1, 2, 3 … per
// (window, key, rank). A row that did not enter the N first emits
// nothing. This is Flink's Rank operator's updating result on an
// append-only input (AppendOnlyTopNFunction with the rank number).
func (o *Operator) emitRanks(in *inst, w window.Window) {
	rk := o.cfg.Aggs[0].(aggregate.Ranker)
	i := rk.Placed()
	if i < 0 {
		return
	}
	s := in.slot
	m := rk.Ranks(s)
	wd := rk.Width()
	for k := i; k < m; k++ {
		old := rk.Bump(s, k)
		if old > 0 && o.cfg.Mode == Retract {
			// The rank's previous row: the one now a rank lower, or, for
			// the last rank, the row pushed past the n-th.
			start := len(o.vals)
			if k+1 < m {
				o.vals = rk.AppendRank(o.vals, s, k+1)
			} else {
				o.vals, _ = rk.AppendLeft(o.vals)
			}
			if len(o.vals)-start == wd {
				o.pushRow(changelog.UpdateBefore, in.key, o.rankKey(in.key, k+1), in.emitW, o.vals[start:len(o.vals):len(o.vals)], old, false)
			} else {
				o.vals = o.vals[:start]
			}
		}
		o.pushRank(rk, in, k, w, old, false)
	}
	in.version++
	in.emitted, in.dirty, in.emitW, in.emitV = true, false, w, in.version
}

// rankedUpdating reports whether the operator is an updating Top-N
// (Config.Ranked in mode update or retract).
func (o *Operator) rankedUpdating() bool { return o.cfg.Ranked && o.cfg.Mode != Final }

// closeRanks emits an updating Top-N's rows when window w closes: each
// kept rank's row again, final, its version the rank's next — an
// update_after, in mode retract after an update_before of the same row
// with the rank's previous version (as an aggregation's close).
func (o *Operator) closeRanks(in *inst, w window.Window) {
	rk := o.cfg.Aggs[0].(aggregate.Ranker)
	s := in.slot
	for k := range rk.Ranks(s) {
		old := rk.Bump(s, k)
		if old > 0 && o.cfg.Mode == Retract {
			start := len(o.vals)
			o.vals = rk.AppendRank(o.vals, s, k)
			o.pushRow(changelog.UpdateBefore, in.key, o.rankKey(in.key, k+1), in.emitW, o.vals[start:len(o.vals):len(o.vals)], old, false)
		}
		o.pushRank(rk, in, k, w, old, true)
	}
	in.version++
	in.emitted, in.dirty, in.emitW, in.emitV = true, false, w, in.version
}

// pushRank appends rank k's row (0-based) of key instance in as window
// w's: an insert when the rank had no version yet (old 0), else an
// update_after; its version old+1 (Ranker.Bump), final as given.
func (o *Operator) pushRank(rk aggregate.Ranker, in *inst, k int, w window.Window, old uint32, final bool) {
	op := changelog.Insert
	if old > 0 {
		op = changelog.UpdateAfter
	}
	start := len(o.vals)
	o.vals = rk.AppendRank(o.vals, in.slot, k)
	o.pushRow(op, in.key, o.rankKey(in.key, k+1), w, o.vals[start:len(o.vals):len(o.vals)], old+1, final)
}

func (o *Operator) push(op changelog.Op, key uint32, w window.Window, vals []row.Value, version uint32, final bool) {
	o.pushRow(op, key, o.rowKey(key), w, vals, version, final)
}

// pushRow appends a row of key (its values kv) to the output.
func (o *Operator) pushRow(op changelog.Op, key uint32, kv []row.Value, w window.Window, vals []row.Value, version uint32, final bool) {
	switch o.cfg.Order {
	case OrderGroup:
		o.ord = append(o.ord, EmitOrder{A: o.ordA, B: o.ordB, C: uint64(o.keys.ent(key).group)})
	case OrderBirth:
		o.ord = append(o.ord, EmitOrder{A: o.ordA, B: o.ordB, C: o.ordC})
	}
	o.out = append(o.out, changelog.Row{
		Op:          op,
		WindowStart: w.Start,
		WindowEnd:   w.End,
		Key:         kv,
		Values:      vals,
		Version:     uint64(version),
		IsFinal:     final,
		WatermarkAt: o.wm,
		UpdatedAt:   o.now,
	})
	o.emitted++
}
