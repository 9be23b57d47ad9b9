package join

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/window"
)

// Type is a join's type.
type Type uint8

// The join types (package doc).
const (
	Window Type = iota
	Interval
	Temporal
)

// Kind is a join's kind: which unmatched rows it emits.
type Kind uint8

// The join kinds.
const (
	Inner Kind = iota // matched pairs only
	Left              // and left rows without a match, right columns null
	Full              // and right rows without a match too
	Semi              // each left row with at least one match, once (window joins)
	Anti              // each left row without a match (window joins)
)

// Sides of a join.
const (
	L = 0 // the left side
	R = 1 // the right side (a temporal join's versions)
)

// Column is one output column: a kept column of a side, or a window bound.
type Column struct {
	// Side is L or R; WindowStart or WindowEnd for a window join's bounds.
	Side int8
	// Col is the index among the side's kept columns (Config.Keep).
	Col int
}

// Window bounds as Column.Side.
const (
	WindowStart int8 = -1
	WindowEnd   int8 = -2
)

// Config configures an Operator.
type Config struct {
	Type Type
	Kind Kind
	// Mode is the emit mode: Final emits only rows that can no longer
	// change; Update and Retract emit at the on-time point and revise
	// (Update as a delete and an insert, Retract as an update_before /
	// update_after pair).
	Mode operator.Mode
	// Lower and Upper bound an interval join: Lower ≤ r.ts − l.ts ≤ Upper,
	// ms. With UpperCol, Upper is the largest span the absolute bound may
	// lie after l.ts (max_span).
	Lower, Upper int64
	// UpperCol is the left kept column holding an absolute upper bound on
	// r.ts (a timestamp), −1 for none.
	UpperCol int
	// TombCol is the right kept column (a bool) marking a temporal join's
	// tombstone versions, −1 for none.
	TombCol int
	// Assigner assigns a window join's windows.
	Assigner window.Assigner
	// Lateness is the allowed lateness, ms.
	Lateness int64
	// Keep lists, per side, the kinds of the columns kept for each row.
	Keep [2][]row.Kind
	// Columns are the output columns.
	Columns []Column
	// KeyGroups is the pipeline's number of key groups; Groups the task's.
	KeyGroups int
	Groups    keygroup.Range
}

// Outcome is what Process did with a row.
type Outcome uint8

// The outcomes.
const (
	OnTime       Outcome = iota // joined; its side's watermark had not passed it
	LateAccepted                // joined, though its side's watermark had passed it (within the allowed lateness)
	TooLate                     // not applied: its side's watermark is past its event time + allowed lateness
)

// Order is the position of a row an Advance emitted among the rows of one
// advance across every task: by (A, B, C), then the order of emission
// (rows with equal A, B and C come from one buffered row, in one task).
type Order struct {
	A, B int64
	C    uint64
}

// NoWatermark is the watermark before any row (−∞).
const NoWatermark = changelog.WatermarkNone

// Inf is the watermark at the end of a bounded input (+∞).
const Inf = changelog.WatermarkInfinity

// Operator is a join's keyed state over a task's key groups. Not safe for
// concurrent use.
type Operator struct {
	cfg      Config
	hold     [2]int64 // HoldBack(&cfg)
	groups   []*group // by key group − cfg.Groups.Lo
	wm       [2]int64 // the sides' watermarks
	now      int64
	out      []changelog.Row
	order    []Order
	vals     []row.Value
	wins     []window.Window
	sortIx   []int
	keyOrder []int32 // SnapshotGroup's scratch
	// pending rows of the current Advance, before sorting
	adv     []advRow
	changed []bool
	// stats
	emitted int64
	// cold is the disk backend's tier (disk.go); nil on the memory
	// backend.
	cold *coldState
}

// advRow is a row an Advance made, with its order.
type advRow struct {
	o   Order
	n   int // rows emitted before it in this advance (ties)
	row changelog.Row
}

// rec is one buffered row: 16 bytes. Its arrival step (Process's seq),
// where the join needs it, is kept in the side's store beside its columns
// (store.seq); the order of a key's rows of one event time is their
// arrival order, the order of the calls to Process.
type rec struct {
	ts   int64
	slot int32  // its columns (and step) in the side's store
	n    uint32 // matches so far (interval outer), flags (temporal)
}

// Flags in rec.n of a temporal probe, and of an interval row.
const (
	padded   = 1 << 31 // interval: its padded row was emitted (and not replaced)
	resolved = 1 << 30 // temporal: its row was emitted (update/retract), or it was resolved
	cntMask  = resolved - 1
)

// keyState is one key's buffered rows (interval and temporal joins):
// rows[L] and rows[R] in (ts, seq) order.
type keyState struct {
	key   string
	rows  [2][]rec
	pad   [2]int32 // interval: rows before this index have had their padding decided
	sched [3]int64
	gen   uint32
	live  bool
	hot   bool // disk backend: touched since the tier's last turn
	// partial marks, on the disk backend, a side whose stored rows are
	// not loaded yet (disk.go, touch).
	partial [2]bool
}

// group is one key group's state.
type group struct {
	keys  keyTable // key → index in ks
	ks    []keyState
	free  []int32
	store [2]store
	heaps [3]timerHeap // by clock: 0 W_left, 1 W_right, 2 min of both
	// pool holds empty arrays that lists grew out of, by capacity 1 << i
	// (group.grow).
	pool  [listPoolClasses][][]rec
	panes []*pane // window joins, by (end, start)
	// cold is the key group's part of the disk tier and tier the tier
	// (nil on the memory backend).
	cold *coldGroup
	tier *coldState
}

// Clocks of the timer heaps.
const (
	clockL   = 0
	clockR   = 1
	clockMin = 2
)

// New returns an operator for cfg. Errors: an invalid configuration.
func New(cfg Config) (*Operator, error) {
	if cfg.KeyGroups <= 0 || cfg.Groups.Len() <= 0 {
		return nil, errors.New("join: no key groups")
	}
	switch cfg.Type {
	case Window:
		if cfg.Assigner == nil {
			return nil, errors.New("join: a window join needs an assigner")
		}
		cfg.Assigner = cfg.Assigner.Clone()
	case Interval:
		if cfg.UpperCol < 0 && cfg.Upper < cfg.Lower {
			return nil, fmt.Errorf("join: upper bound %d ms is below lower %d ms", cfg.Upper, cfg.Lower)
		}
		if cfg.Kind == Semi || cfg.Kind == Anti {
			return nil, errors.New("join: semi and anti joins are window joins")
		}
	case Temporal:
		if cfg.Kind != Inner && cfg.Kind != Left {
			return nil, errors.New("join: a temporal join is inner or left")
		}
	default:
		return nil, fmt.Errorf("join: type %d", cfg.Type)
	}
	for _, c := range cfg.Columns {
		if c.Side >= 0 && (int(c.Side) > R || c.Col < 0 || c.Col >= len(cfg.Keep[c.Side])) {
			return nil, fmt.Errorf("join: output column of side %d, kept column %d", c.Side, c.Col)
		}
		if c.Side < 0 && cfg.Type != Window {
			return nil, errors.New("join: window bounds in the output of a join without windows")
		}
	}
	if cfg.UpperCol >= len(cfg.Keep[L]) || cfg.UpperCol >= 0 && cfg.Keep[L][cfg.UpperCol] != row.KindTime {
		return nil, errors.New("join: the upper-bound column is not a kept timestamp of the left side")
	}
	if cfg.TombCol >= len(cfg.Keep[R]) || cfg.TombCol >= 0 && cfg.Keep[R][cfg.TombCol] != row.KindBool {
		return nil, errors.New("join: the tombstone column is not a kept bool of the right side")
	}
	o := &Operator{cfg: cfg, wm: [2]int64{NoWatermark, NoWatermark}, now: NoWatermark, hold: HoldBack(&cfg)}
	o.groups = make([]*group, cfg.Groups.Len())
	o.changed = make([]bool, cfg.Groups.Len())
	for i := range o.groups {
		o.groups[i] = o.newGroup()
	}
	return o, nil
}

func (o *Operator) newGroup() *group {
	g := &group{}
	for s := range 2 {
		g.store[s] = newStore(o.cfg.Keep[s], o.keepsSeq(s))
		g.store[s].track = o.cold != nil
		g.store[s].rewrite = o.cold != nil && o.cfg.Type == Interval && o.outer(s)
		g.store[s].keepOrd = g.store[s].rewrite || o.cold != nil && o.cfg.Type == Temporal && s == R
	}
	return g
}

// keepsSeq reports whether side s's rows keep their arrival steps: the
// rows an Advance may emit for them are ordered by it (Order.C) — a
// window join's and a temporal join's rows, an interval join's outer
// side's. An interval join's inner side's rows need only their order
// among the rows of their key, which is their place in its list.
func (o *Operator) keepsSeq(s int) bool {
	return o.cfg.Type != Interval || o.outer(s)
}

// Config returns the operator's configuration (read only: the operator
// keeps what New derived from it).
func (o *Operator) Config() *Config { return &o.cfg }

// Watermarks returns the sides' watermarks.
func (o *Operator) Watermarks() (left, right int64) { return o.wm[L], o.wm[R] }

// OutputWatermark returns the watermark of the rows the join emits
// (docs/semantics.md, "Joins"): min(W_left, W_right), held back by how far
// behind it a row the join emits on time may lie (HoldBack).
func (o *Operator) OutputWatermark() int64 {
	h := &o.hold
	return min(sub(o.wm[L], h[L]), sub(o.wm[R], h[R]))
}

// HoldBack returns, per side, how far the join's output watermark trails
// that side's watermark, ms: the output watermark is
// min(W_left − h[L], W_right − h[R]), so that every row the join emits on
// time has an event time at or after the output watermark before it
// (Flink SQL's interval join delays its watermark the same way). Window
// joins: the window's size (+ the allowed lateness in mode Final: rows
// come out at the close); an outer interval join: the longest a padded row
// waits for the other side (Upper, or −Lower for the right rows of a full
// join; + the allowed lateness in mode Final); a temporal join: the
// allowed lateness on the right side in mode Final; otherwise 0.
func HoldBack(c *Config) [2]int64 {
	var h [2]int64
	a := int64(0)
	if c.Mode == operator.Final {
		a = c.Lateness
	}
	switch c.Type {
	case Window:
		size := int64(0)
		if c.Assigner != nil {
			size = windowSize(c.Assigner)
		}
		h[L], h[R] = size+a, size+a
	case Interval:
		if c.Kind == Left || c.Kind == Full {
			h[R] = max(0, c.Upper+a)
		}
		if c.Kind == Full {
			h[L] = max(0, a-c.Lower)
		}
	case Temporal:
		h[R] = a
	}
	return h
}

// windowSize is the longest window a window assigner makes (a calendar
// day may last 25 hours).
func windowSize(a window.Assigner) int64 {
	var ws []window.Window
	longest := int64(0)
	// Probe a few instants across a year: calendar days vary.
	for t := int64(0); t < 366*86_400_000; t += 86_400_000 / 2 {
		ws = a.Assign(1_300_000_000_000+t, ws[:0])
		for _, w := range ws {
			longest = max(longest, w.End-w.Start)
		}
		if longest > 0 && longest%86_400_000 != 0 && longest < 86_400_000 {
			break // a fixed-length window: one probe tells
		}
	}
	if longest%86_400_000 == 0 {
		longest += 3_600_000 // a day with a daylight-saving change
	}
	return longest
}

// sub returns w − d for a watermark w, keeping ±∞.
func sub(w, d int64) int64 {
	if w == Inf || w == NoWatermark || d == 0 {
		return w
	}
	if w < math.MinInt64+d+1 {
		return NoWatermark
	}
	return w - d
}

// add returns w + d for a time, saturating.
func add(w, d int64) int64 {
	switch {
	case w == Inf || w == NoWatermark:
		return w
	case d > 0 && w > math.MaxInt64-d-1:
		return Inf - 1
	case d < 0 && w < math.MinInt64-d+1:
		return NoWatermark + 1
	}
	return w + d
}

// Process applies a row of side s whose join key is key (encoded;
// operator.AppendKey of the key fields) in key group kg, with event time
// ts and arrival seq (the runner's step), at processing time now. Calls
// come in arrival order (seq never decreases from one call to the next,
// as the task's node merges its inputs by step): rows of one key and time
// pair up, and are kept, in that order. Its kept columns are read
// from r at fields (Config.Keep's order). The rows it makes wait in Drain.
func (o *Operator) Process(s int, kg int, key []byte, ts int64, seq uint64, r *row.Row, fields []row.Field, now int64) (Outcome, error) {
	if !o.cfg.Groups.Contains(kg) {
		return 0, fmt.Errorf("join: key group %d is not the task's [%d, %d)", kg, o.cfg.Groups.Lo, o.cfg.Groups.Hi)
	}
	if len(fields) != len(o.cfg.Keep[s]) {
		return 0, fmt.Errorf("join: %d kept fields for side %d, want %d", len(fields), s, len(o.cfg.Keep[s]))
	}
	o.now = max(o.now, now)
	// Too late by its own side's watermark (interval and temporal joins:
	// the rows it could pair with may be gone); a window join's row is too
	// late when all its windows have closed (windowRow).
	if o.cfg.Type != Window && add(ts, o.cfg.Lateness) < o.wm[s] {
		return TooLate, nil
	}
	out := OnTime
	if ts < o.wm[s] {
		out = LateAccepted
	}
	gi := kg - o.cfg.Groups.Lo
	o.changed[gi] = true
	g := o.groups[gi]
	switch o.cfg.Type {
	case Window:
		if !o.windowRow(g, s, key, ts, seq, r, fields) {
			return TooLate, nil
		}
	case Interval:
		if o.cold != nil {
			if err := o.touch(gi, key, s); err != nil {
				return 0, err
			}
			o.cold.g[gi].unwritten++
		}
		o.intervalRow(g, s, key, ts, seq, r, fields)
		if o.cold != nil {
			if err := o.maybeTurn(); err != nil {
				return 0, err
			}
		}
	case Temporal:
		if o.cold != nil {
			if err := o.touchTemporal(gi, key); err != nil {
				return 0, err
			}
			if s == R {
				o.cold.g[gi].unwritten++
			}
		}
		o.temporalRow(g, s, key, ts, seq, r, fields)
		if o.cold != nil {
			if err := o.maybeTurn(); err != nil {
				return 0, err
			}
		}
	}
	return out, nil
}

// Advance moves the sides' watermarks to left and right (each never goes
// back) at processing time now: windows fire and close, padded rows come
// out, probes resolve, state expires. The rows it makes wait in Drain, in
// Order.
func (o *Operator) Advance(left, right, now int64) {
	o.now = max(o.now, now)
	left, right = max(left, o.wm[L]), max(right, o.wm[R])
	if left == o.wm[L] && right == o.wm[R] {
		return
	}
	o.wm[L], o.wm[R] = left, right
	o.adv = o.adv[:0]
	for gi, g := range o.groups {
		var did bool
		switch o.cfg.Type {
		case Window:
			did = o.windowAdvance(g)
		case Interval:
			if o.cold != nil && o.padScan(gi) {
				o.changed[gi] = true
			}
			did = o.intervalAdvance(g)
		case Temporal:
			did = o.temporalAdvance(g)
		}
		if did {
			o.changed[gi] = true
		}
		end := left == Inf && right == Inf
		if g.keys.len() == 0 && (len(g.ks) > 256 || end && len(g.ks) > 0) {
			// No key holds rows: give the key table's memory back (it
			// never shrinks), and the list pool's; every timer left is stale. At the
			// end of the inputs, also the column stores'.
			g.keys, g.ks, g.free = keyTable{}, nil, nil
			g.pool = [listPoolClasses][][]rec{}
			g.heaps = [3]timerHeap{}
		}
		if end {
			for s := range g.store {
				if g.store[s].live == 0 && g.store[s].slots > 0 {
					g.store[s].reset()
				}
			}
		}
	}
	if o.cold != nil {
		o.sweepCold()
	}
	if len(o.adv) == 0 {
		return
	}
	slices.SortStableFunc(o.adv, func(a, b advRow) int {
		switch {
		case a.o.A != b.o.A:
			return cmp64(a.o.A, b.o.A)
		case a.o.B != b.o.B:
			return cmp64(a.o.B, b.o.B)
		case a.o.C != b.o.C:
			if a.o.C < b.o.C {
				return -1
			}
			return 1
		}
		return a.n - b.n
	})
	for i := range o.adv {
		o.out = append(o.out, o.adv[i].row)
		o.order = append(o.order, o.adv[i].o)
	}
	o.adv = o.adv[:0]
}

func cmp64(a, b int64) int {
	if a < b {
		return -1
	}
	return 1
}

// Pending returns the number of rows waiting in Drain.
func (o *Operator) Pending() int { return len(o.out) }

// Drain returns the rows made since the last Drain and, for the rows of an
// Advance, their orders (Order per row: orders[i] belongs to rows[i];
// empty orders for the rows of a Process). Both are valid until the next
// call into the operator.
func (o *Operator) Drain() (rows []changelog.Row, orders []Order) {
	rows, orders = o.out, o.order
	o.emitted += int64(len(rows))
	o.out, o.order = o.out[:0], o.order[:0]
	o.vals = o.vals[:0]
	return rows, orders
}

// emit appends a row of the left and right buffered rows (nil: nulls) with
// op and event time ts; win gives a window join's bounds.
func (o *Operator) emit(g *group, op changelog.Op, lr, rr *rec, ts int64, win window.Window, final bool, adv *Order) {
	start, cols := len(o.vals), o.cfg.Columns
	// Rows made before keep the old array if this one grows.
	o.vals = slices.Grow(o.vals, len(cols))[:start+len(cols)]
	vals := o.vals[start:]
	ls, rs := &g.store[L], &g.store[R]
	for i, c := range cols {
		switch {
		case c.Side == L && lr != nil:
			vals[i] = ls.get(lr.slot, c.Col)
		case c.Side == R && rr != nil:
			vals[i] = rs.get(rr.slot, c.Col)
		case c.Side == WindowStart:
			vals[i] = row.Time(win.Start)
		case c.Side == WindowEnd:
			vals[i] = row.Time(win.End)
		default:
			vals[i] = row.Null
		}
	}
	r := changelog.Row{Op: op, WindowStart: ts, WindowEnd: ts, Values: vals[:len(cols):len(cols)],
		Version: 1, IsFinal: final, WatermarkAt: o.OutputWatermark(), UpdatedAt: o.now}
	if adv != nil {
		o.adv = append(o.adv, advRow{o: *adv, n: len(o.adv), row: r})
		return
	}
	o.out = append(o.out, r)
}

// replace emits the revision of row a into row b (either may be absent:
// lr == nil... per the caller): in mode Retract an update_before /
// update_after pair, in mode Update a delete and an insert.
func (o *Operator) replace(g *group, al, ar, bl, br *rec, ats, bts int64, win window.Window, adv *Order) {
	before, after := changelog.Delete, changelog.Insert
	if o.cfg.Mode == operator.Retract {
		before, after = changelog.UpdateBefore, changelog.UpdateAfter
	}
	o.emit(g, before, al, ar, ats, win, false, adv)
	o.emit(g, after, bl, br, bts, win, false, adv)
}

// Changed returns the key groups whose state changed since the last
// ClearChanged, in ascending order.
func (o *Operator) Changed(dst []int) []int {
	for i, c := range o.changed {
		if c {
			dst = append(dst, o.cfg.Groups.Lo+i)
		}
	}
	return dst
}

// ClearChanged forgets the changes.
func (o *Operator) ClearChanged() { clear(o.changed) }

// Stats is a join's state size.
type Stats struct {
	Keys       int   // keys holding buffered rows
	Rows       int   // buffered rows (both sides; a window join counts a row once per window)
	StateBytes int64 // estimated heap bytes of the state
	// ColumnBytes is the part of StateBytes that holds the kept columns'
	// values themselves (8 bytes per int, time and bool, 16 per decimal,
	// a string's length): the rest is bookkeeping.
	ColumnBytes int64
	RowsEmitted int64
	Windows     int // open windows (window joins)
}

// Stats walks the state: call it for reports.
func (o *Operator) Stats() Stats {
	st := Stats{RowsEmitted: o.emitted}
	for _, g := range o.groups {
		for s := range 2 {
			b, c := g.store[s].bytes()
			st.StateBytes += b
			st.ColumnBytes += c
		}
		st.StateBytes += int64(cap(g.ks))*keyStateBytes + g.keys.bytes()
		for i := range g.ks {
			k := &g.ks[i]
			if !k.live {
				continue
			}
			st.Keys++
			st.StateBytes += int64(len(k.key))
			for s := range 2 {
				st.Rows += len(k.rows[s])
				st.StateBytes += int64(cap(k.rows[s])) * recBytes
			}
		}
		for _, h := range g.heaps {
			st.StateBytes += int64(cap(h)) * timerBytes
		}
		for k, p := range g.pool {
			st.StateBytes += int64(len(p)) * int64(1<<k) * recBytes
		}
		for _, p := range g.panes {
			st.Windows++
			st.StateBytes += paneBytes + int64(len(p.keys))*mapEntryBytes + int64(len(p.ents))*paneKeyBytes
			for i := range p.ents {
				e := &p.ents[i]
				st.Keys++
				st.StateBytes += int64(len(e.key))
				for s := range 2 {
					st.Rows += len(e.rows[s])
					st.StateBytes += int64(cap(e.rows[s])) * recBytes
				}
			}
		}
	}
	return st
}

// Sizes for Stats (amd64).
const (
	recBytes      = 16
	keyStateBytes = 104
	mapEntryBytes = 32 // a map[string]int32 entry: key header, value, control byte, load
	timerBytes    = 16
	paneBytes     = 96
	paneKeyBytes  = 64
)

// Rows returns the buffered rows (for tests): per side, the event times of
// the rows of every key, sorted.
func (o *Operator) Rows() (left, right []int64) {
	for _, g := range o.groups {
		for i := range g.ks {
			for _, r := range g.ks[i].rows[L] {
				left = append(left, r.ts)
			}
			for _, r := range g.ks[i].rows[R] {
				right = append(right, r.ts)
			}
		}
		for _, p := range g.panes {
			for i := range p.ents {
				for _, r := range p.ents[i].rows[L] {
					left = append(left, r.ts)
				}
				for _, r := range p.ents[i].rows[R] {
					right = append(right, r.ts)
				}
			}
		}
	}
	slices.Sort(left)
	slices.Sort(right)
	return left, right
}

// Live returns the number of buffered rows and the store slots in use (for
// tests: every slot belongs to a buffered row).
func (o *Operator) Live() (rows, slots int) {
	l, r := o.Rows()
	for _, g := range o.groups {
		slots += g.store[L].live + g.store[R].live
	}
	return len(l) + len(r), slots
}

// key returns the key's state in g, made when absent.
func (g *group) key(k []byte) (int32, *keyState) {
	h := keyHash(k)
	if i, ok := g.keys.find(g.ks, k, h); ok {
		return i, &g.ks[i]
	}
	var i int32
	if n := len(g.free); n > 0 {
		i = g.free[n-1]
		g.free = g.free[:n-1]
	} else {
		g.ks = append(g.ks, keyState{})
		i = int32(len(g.ks) - 1)
	}
	ks := &g.ks[i]
	gen, rows := ks.gen, ks.rows // a freed key's empty row slices are reused
	*ks = keyState{key: string(k), gen: gen, rows: rows, sched: [3]int64{Inf, Inf, Inf}, live: true, hot: true}
	g.keys.add(i, h)
	return i, ks
}

// dropKey frees a key without rows.
func (g *group) dropKey(i int32) {
	ks := &g.ks[i]
	if g.cold != nil && (ks.partial[L] || ks.partial[R]) {
		g.tier.goneNow(g.cold, ks)
	}
	g.keys.del(i, keyHash([]byte(ks.key)))
	gen := ks.gen + 1
	var rows [2][]rec
	for s := range rows {
		if c := cap(ks.rows[s]); c > 0 && c <= 16 {
			rows[s] = ks.rows[s][:0] // kept for the next key (cleared by the callers)
		}
	}
	*ks = keyState{gen: gen, rows: rows, sched: [3]int64{Inf, Inf, Inf}}
	g.free = append(g.free, i)
}

// insert adds r to rows in event-time order, after the rows of its time
// (they arrived before it), and returns its index. rows must be the only
// reference to its array: a full list grows into another (g.grow).
func (g *group) insert(rows []rec, r rec) ([]rec, int) {
	i := len(rows)
	for i > 0 && rows[i-1].ts > r.ts {
		i--
		if len(rows)-i > 8 {
			// Far out of order: binary search.
			i = upperBound(rows, r.ts)
			break
		}
	}
	if len(rows) == cap(rows) {
		rows = g.grow(rows)
	}
	rows = slices.Insert(rows, i, r) // within its capacity
	return rows, i
}

// Lists of up to listPoolMax entries grow by doubling through a pool per
// capacity (1, 2, 4, …): the array a list outgrows is kept for the next
// list growing to that size, so that a key's list allocates about once
// (the size it ends at) rather than once per doubling — q4's and q9's
// bids, ~15 a key, made 5 allocations a key (1, 2, 4, 8, 16 entries),
// most of the join's allocations. At most listPoolKeep arrays are kept
// per capacity and group.
const (
	listPoolClasses = 5 // capacities 1 … 16
	listPoolKeep    = 16
)

// grow returns a list of twice rows' capacity (at least 1) holding rows,
// from the pool where it has one, and gives rows' array to the pool.
func (g *group) grow(rows []rec) []rec {
	c := cap(rows)
	nc := max(1, 2*c)
	var n []rec
	if k := poolClass(nc); k >= 0 {
		if p := &g.pool[k]; len(*p) > 0 {
			n = (*p)[len(*p)-1]
			(*p)[len(*p)-1] = nil
			*p = (*p)[:len(*p)-1]
		}
	}
	if n == nil {
		n = make([]rec, 0, nc)
	}
	n = append(n, rows...)
	if k := poolClass(c); k >= 0 && len(g.pool[k]) < listPoolKeep {
		g.pool[k] = append(g.pool[k], rows[:0])
	}
	return n
}

// poolClass returns the pool index of capacity c, −1 for none.
func poolClass(c int) int {
	if c <= 0 || c&(c-1) != 0 {
		return -1
	}
	k := bits.Len(uint(c)) - 1
	if k >= listPoolClasses {
		return -1
	}
	return k
}

// lowerBound returns the first index of rows with ts ≥ t.
func lowerBound(rows []rec, t int64) int {
	lo, hi := 0, len(rows)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if rows[m].ts < t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// upperBound returns the first index of rows with ts > t.
func upperBound(rows []rec, t int64) int {
	lo, hi := 0, len(rows)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if rows[m].ts <= t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// schedule makes the key due on clock c at t (the earliest wins).
func (g *group) schedule(i int32, c int, t int64) {
	ks := &g.ks[i]
	if t >= ks.sched[c] {
		return
	}
	ks.sched[c] = t
	g.heaps[c].push(timer{t: t, key: i, gen: ks.gen})
}

// due pops the keys due on clock c at watermark w (each once; their
// schedule reset), appending them to dst.
func (g *group) due(c int, w int64, dst []int32) []int32 {
	h := &g.heaps[c]
	for len(*h) > 0 && (*h)[0].t <= w {
		t := h.pop()
		ks := &g.ks[t.key]
		if ks.gen != t.gen || ks.sched[c] != t.t {
			continue // stale
		}
		ks.sched[c] = Inf
		dst = append(dst, t.key)
	}
	return dst
}

// timer is a key due on a clock at t.
type timer struct {
	t   int64
	key int32
	gen uint32
}

// timerHeap is a min-heap of timers by t.
type timerHeap []timer

func (h *timerHeap) push(t timer) {
	*h = append(*h, t)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].t <= s[i].t {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *timerHeap) pop() timer {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && s[l].t < s[m].t {
			m = l
		}
		if r < n && s[r].t < s[m].t {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	if cap(s) > 64 && len(s) < cap(s)/4 {
		*h = slices.Clone(s)
	}
	return top
}

// store keeps one side's kept columns of a key group's rows in typed
// arrays, a slot per row; freed slots are reused.
type store struct {
	kinds []row.Kind
	at    []int // per column: its index in ints, decs or strs of a slot
	nI    int
	nD    int
	nS    int
	ints  []int64
	decs  []row.Decimal
	strs  []string
	// nulls holds nw bytes per slot: bit c set when column c is null (≤
	// 64 columns; one byte per row for up to 8 kept columns); nil until
	// a row with a null column comes (setNulls).
	nulls []byte
	nw    int
	// seqs holds each slot's arrival step when the side keeps them
	// (Operator.keepsSeq; nil otherwise).
	seqs    []uint64
	keepSeq bool
	slots   int32 // slots made (live or free)
	free    []int32
	live    int
	strB    int64 // bytes of the strings held
	// track keeps, on the disk backend, whether each slot's row is in the
	// task's store (written; nil bits otherwise).
	track   bool
	written []uint64
	// rewrite marks, on the disk backend, an outer side of an interval
	// join: its rows' decided state changes after they are written, so
	// each written row keeps its write order (ords: the order + 1, 0 for
	// a row not written yet) to be written again under the same store key.
	rewrite bool
	keepOrd bool // ords kept: rewrite, or a temporal join's versions (deleted by key)
	ords    []uint64
}

func newStore(kinds []row.Kind, keepSeq bool) store {
	s := store{kinds: kinds, nw: max(1, (len(kinds)+7)/8), keepSeq: keepSeq}
	for _, k := range kinds {
		switch {
		case k.InI():
			s.at = append(s.at, s.nI)
			s.nI++
		case k == row.KindDecimal:
			s.at = append(s.at, s.nD)
			s.nD++
		default:
			s.at = append(s.at, s.nS)
			s.nS++
		}
	}
	return s
}

// MaxKept is the largest number of columns a side keeps.
const MaxKept = 64

// alloc returns a free slot.
func (s *store) alloc() int32 {
	s.live++
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		return i
	}
	i := s.slots
	s.slots++
	if s.nulls != nil {
		for range s.nw {
			s.nulls = append(s.nulls, 0)
		}
	}
	if s.keepSeq {
		s.seqs = append(s.seqs, 0)
	}
	if s.track && int(i)>>6 >= len(s.written) {
		s.written = append(s.written, 0)
	}
	if s.keepOrd {
		s.ords = append(s.ords, 0)
	}
	s.ints = append(s.ints, make([]int64, s.nI)...)
	s.decs = append(s.decs, make([]row.Decimal, s.nD)...)
	s.strs = append(s.strs, make([]string, s.nS)...)
	return i
}

// put copies the kept fields of r, and its arrival step seq, into a new
// slot.
func (s *store) put(r *row.Row, fields []row.Field, seq uint64) int32 {
	i := s.alloc()
	s.setSeq(i, seq)
	var nulls uint64
	for c, f := range fields {
		if r.IsNull(f.Index) {
			nulls |= 1 << c
			continue
		}
		j := s.at[c]
		switch k := s.kinds[c]; {
		case k.InI():
			s.ints[int(i)*s.nI+j] = r.I[f.Slot]
		case k == row.KindDecimal:
			s.decs[int(i)*s.nD+j] = r.D[f.Slot]
		default:
			v := strings.Clone(r.S[f.Slot])
			s.strs[int(i)*s.nS+j] = v
			s.strB += int64(len(v))
		}
	}
	s.setNulls(i, nulls)
	return i
}

// setSeq records slot i's arrival step, where the side keeps them.
func (s *store) setSeq(i int32, seq uint64) {
	if s.keepSeq {
		s.seqs[i] = seq
	}
}

// seq returns slot i's arrival step (0 where the side keeps none).
func (s *store) seq(i int32) uint64 {
	if s.keepSeq {
		return s.seqs[i]
	}
	return 0
}

// setNulls records slot i's null bits. The bits are made with the first
// null (until then no slot has any: a byte per row saved where the kept
// columns are never null).
func (s *store) setNulls(i int32, bits uint64) {
	if s.nulls == nil {
		if bits == 0 {
			return
		}
		s.nulls = make([]byte, int(s.slots)*s.nw, int(s.slots+s.slots/4+1)*s.nw)
	}
	b := s.nulls[int(i)*s.nw : int(i+1)*s.nw]
	for k := range b {
		b[k] = byte(bits >> (8 * k))
	}
}

// isNull reports whether column c of slot i is null.
func (s *store) isNull(i int32, c int) bool {
	return s.nulls != nil && s.nulls[int(i)*s.nw+c>>3]&(1<<(c&7)) != 0
}

// putValues stores values (a restored row) and its arrival step into a
// new slot. Errors: a value of another kind than its column.
func (s *store) putValues(vals []row.Value, seq uint64) (int32, error) {
	if len(vals) != len(s.kinds) {
		return 0, fmt.Errorf("%d values, want %d columns", len(vals), len(s.kinds))
	}
	for c, v := range vals {
		if !v.IsNull() && v.Kind != s.kinds[c] {
			return 0, fmt.Errorf("column %d: a %s value, want %s", c, v.Kind, s.kinds[c])
		}
	}
	i := s.alloc()
	s.setSeq(i, seq)
	var nulls uint64
	for c, v := range vals {
		if v.IsNull() {
			nulls |= 1 << c
			continue
		}
		j := s.at[c]
		switch k := s.kinds[c]; {
		case k.InI():
			s.ints[int(i)*s.nI+j] = v.I
		case k == row.KindDecimal:
			s.decs[int(i)*s.nD+j] = v.D
		default:
			s.strs[int(i)*s.nS+j] = v.S
			s.strB += int64(len(v.S))
		}
	}
	s.setNulls(i, nulls)
	return i, nil
}

// get returns column c of slot i.
func (s *store) get(i int32, c int) row.Value {
	if s.isNull(i, c) {
		return row.Null
	}
	j := s.at[c]
	switch k := s.kinds[c]; {
	case k.InI():
		return row.Value{Kind: k, I: s.ints[int(i)*s.nI+j]}
	case k == row.KindDecimal:
		return row.Dec(s.decs[int(i)*s.nD+j])
	default:
		return row.Str(s.strs[int(i)*s.nS+j])
	}
}

// getInt returns an int-like column of slot i and whether it is set.
func (s *store) getInt(i int32, c int) (int64, bool) {
	if s.isNull(i, c) {
		return 0, false
	}
	return s.ints[int(i)*s.nI+s.at[c]], true
}

// del frees slot i.
func (s *store) del(i int32) {
	for j := range s.nS {
		k := int(i)*s.nS + j
		s.strB -= int64(len(s.strs[k]))
		s.strs[k] = ""
	}
	if s.track {
		s.written[i>>6] &^= 1 << (i & 63)
	}
	if s.keepOrd {
		s.ords[i] = 0
	}
	s.free = append(s.free, i)
	s.live--
	if s.live == 0 && s.slots > 256 {
		s.reset() // give the memory back
	}
}

// reset empties the store, giving its memory back.
func (s *store) reset() {
	track, rewrite, keepOrd := s.track, s.rewrite, s.keepOrd
	*s = newStore(s.kinds, s.keepSeq)
	s.track, s.rewrite, s.keepOrd = track, rewrite, keepOrd
}

// setWritten marks slot i's row as written to the task's store.
func (s *store) setWritten(i int32) { s.written[i>>6] |= 1 << (i & 63) }

// clearWritten marks slot i's row as changed since it was written.
func (s *store) clearWritten(i int32) { s.written[i>>6] &^= 1 << (i & 63) }

// isWritten reports whether slot i's row is in the task's store.
func (s *store) isWritten(i int32) bool { return s.written[i>>6]&(1<<(i&63)) != 0 }

// bytes returns the store's estimated heap bytes and the part that holds
// column values.
func (s *store) bytes() (total, cols int64) {
	total = int64(cap(s.nulls)) + int64(cap(s.written))*8 + int64(cap(s.ords))*8 + int64(cap(s.seqs))*8 + int64(cap(s.ints))*8 + int64(cap(s.decs))*16 + int64(cap(s.strs))*16 + s.strB + int64(cap(s.free))*4
	live := int64(s.live)
	cols = live*int64(s.nI)*8 + live*int64(s.nD)*16 + s.strB
	return total, cols
}
