package operator

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/window"
)

// snapFields is the input schema of the snapshot tests:
// {k string, g int, v int, d decimal, s string}.
type snapFields struct {
	schema        *row.Schema
	k, g, v, d, s row.Field
}

func newSnapFields(t interface{ Fatal(...any) }) snapFields {
	sc := row.NewSchema()
	add := func(name string, k row.Kind) row.Field {
		f, err := sc.Add(name, k)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	return snapFields{schema: sc, k: add("k", row.KindString), g: add("g", row.KindInt),
		v: add("v", row.KindInt), d: add("d", row.KindDecimal), s: add("s", row.KindString)}
}

// aggChoice names an aggregate over one of the snapshot fields.
type aggChoice struct {
	fn  string
	arg string // "", "v", "d" or "s"
}

var snapAggs = []aggChoice{
	{"count", ""}, {"count", "v"}, {"sum", "v"}, {"sum", "d"}, {"avg", "v"}, {"avg", "d"},
	{"min", "v"}, {"max", "v"}, {"min", "d"}, {"max", "d"}, {"min", "s"}, {"max", "s"},
	{"count_distinct", "v"}, {"count_distinct", "d"}, {"count_distinct", "s"},
}

// snapConfig is everything needed to build equal operators again.
type snapConfig struct {
	kind     string // tumbling, sliding, session
	size     int64
	slide    int64
	gap      int64
	lateness int64
	early    int64
	mode     Mode
	keys     int // 0: no key, 1: k, 2: k and g, 3: g alone (a one-int key)
	aggs     []aggChoice
	retract  bool
	groups   int   // key groups (0: the default)
	order    Order // Config.Order
	noSlice  bool  // Config.NoSlicing
	// assigner, when set, replaces Fixed{size, slide} (a clone for each
	// operator); origin is then the first watermark (runChunked).
	assigner window.Assigner
	origin   int64
}

func (c snapConfig) build(t interface{ Fatal(...any) }, f snapFields) *Operator {
	field := map[string]row.Field{"v": f.v, "d": f.d, "s": f.s}
	var cols []aggregate.Column
	for i, a := range c.aggs {
		sp := aggregate.Spec{Name: fmt.Sprintf("a%d", i), Func: a.fn, Retract: c.retract}
		if a.arg != "" {
			sp.Arg, sp.HasArg = field[a.arg], true
		}
		col, err := aggregate.New(sp)
		if err != nil {
			t.Fatal(err)
		}
		cols = append(cols, col)
	}
	key := []row.Field{f.k, f.g}[:min(c.keys, 2)]
	if c.keys == 3 {
		key = []row.Field{f.g}
	}
	cfg := Config{AllowedLateness: c.lateness, Mode: c.mode, EarlyEvery: c.early, Aggs: cols,
		Key: key, KeyGroups: c.groups, Order: c.order, NoSlicing: c.noSlice}
	switch c.kind {
	case "session":
		cfg.Gap = c.gap
	default:
		cfg.Assigner = &window.Fixed{Size: c.size, Slide: c.slide}
		if c.assigner != nil {
			cfg.Assigner = c.assigner.Clone()
		}
	}
	op, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func drawSnapConfig(t *rapid.T, kind string) snapConfig {
	c := snapConfig{kind: kind}
	c.size = rapid.SampledFrom([]int64{10, 20}).Draw(t, "size")
	c.slide = c.size
	if kind == "sliding" {
		// size a multiple of slide (10/5, 20/5) or not (10/3, 20/7).
		c.slide = rapid.SampledFrom([]int64{c.size / 2, c.size / 4, 3, 7}).Draw(t, "slide")
	}
	c.gap = rapid.Int64Range(1, 15).Draw(t, "gap")
	c.lateness = rapid.SampledFrom([]int64{0, 5, 15, 1000}).Draw(t, "lateness")
	c.early = rapid.SampledFrom([]int64{0, 0, 3, 7}).Draw(t, "early")
	c.mode = Mode(rapid.IntRange(0, 2).Draw(t, "mode"))
	c.keys = rapid.SampledFrom([]int{1, 1, 2, 0, 3}).Draw(t, "keys")
	c.aggs = rapid.SliceOfNDistinct(rapid.SampledFrom(snapAggs), 1, 5, func(a aggChoice) aggChoice { return a }).Draw(t, "aggs")
	c.retract = rapid.Bool().Draw(t, "retract")
	return c
}

// snapStep is one call into the operator.
type snapStep struct {
	kind   int // 0 add, 1 retract, 2 watermark, 3 processing time, 4 snapshot and restore
	ev     snapEvent
	pick   int   // retract: index into the live events
	wm     int64 // watermark step
	dtNow  int64 // processing time advance
	ntimes int
}

type snapEvent struct {
	key   string
	g     int64
	ts    int64
	v     *int64
	d     string
	s     string
	dNull bool
	gNull bool
}

var snapDecimals = []string{"19.99", "0.01", "2", "2.0", "2.00", "-5.5", "0.10", "1000000"}

func drawSnapSteps(t *rapid.T, retract bool) []snapStep {
	return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) snapStep {
		st := snapStep{dtNow: rapid.SampledFrom([]int64{0, 1, 2, 5}).Draw(t, "dt")}
		switch k := rapid.IntRange(0, 19).Draw(t, "kind"); {
		case k < 10:
			st.kind = 0
		case k < 13:
			st.kind = 1
			if !retract {
				st.kind = 0
			}
		case k < 16:
			st.kind = 2
		case k < 18:
			st.kind = 3
		default:
			st.kind = 4
		}
		st.pick = rapid.IntRange(0, 1000).Draw(t, "pick")
		st.wm = rapid.SampledFrom([]int64{0, 1, 3, 7, 15, 40, -5}).Draw(t, "wmStep")
		e := snapEvent{
			key: rapid.SampledFrom([]string{"a", "b", "c", "d"}).Draw(t, "key"),
			g:   rapid.Int64Range(0, 1).Draw(t, "g"),
			ts:  rapid.Int64Range(0, 150).Draw(t, "ts"),
			d:   rapid.SampledFrom(snapDecimals).Draw(t, "d"),
			s:   rapid.SampledFrom([]string{"x", "y", "", "xy"}).Draw(t, "s"),
		}
		if rapid.IntRange(0, 5).Draw(t, "vNull") > 0 {
			v := rapid.Int64Range(-5, 50).Draw(t, "v")
			e.v = &v
		}
		e.dNull = rapid.IntRange(0, 7).Draw(t, "dNull") == 0
		st.ev = e
		return st
	}), 30, 200).Draw(t, "steps")
}

func (f snapFields) fill(r *row.Row, e snapEvent) {
	f.schema.Shape(r)
	r.Set(f.k, row.Str(e.key))
	if e.gNull {
		r.SetNull(f.g.Index)
	} else {
		r.Set(f.g, row.Int(e.g))
	}
	if e.v != nil {
		r.Set(f.v, row.Int(*e.v))
	} else {
		r.SetNull(f.v.Index)
	}
	if e.dNull {
		r.SetNull(f.d.Index)
	} else {
		d, _ := row.ParseDecimal([]byte(e.d))
		r.Set(f.d, row.Dec(d))
	}
	r.Set(f.s, row.Str(e.s))
}

// formatRows renders drained rows with everything a sink sees: op, window,
// key, values with their kinds, version, is_final, watermark_at,
// updated_at.
func formatRows(rows []changelog.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		var b strings.Builder
		fmt.Fprintf(&b, "%s [%d,%d) key=", r.Op, r.WindowStart, r.WindowEnd)
		for _, v := range r.Key {
			fmt.Fprintf(&b, "%d:%s,", v.Kind, v)
		}
		b.WriteString(" vals=")
		for _, v := range r.Values {
			fmt.Fprintf(&b, "%d:%s,", v.Kind, v)
		}
		fmt.Fprintf(&b, " v%d final=%v wm=%d at=%d", r.Version, r.IsFinal, r.WatermarkAt, r.UpdatedAt)
		out[i] = b.String()
	}
	return out
}

func snapshotBytes(o *Operator) []byte {
	var e state.Encoder
	o.Snapshot(&e)
	return bytes.Clone(e.Bytes())
}

// restoreFrom builds a fresh operator from cfg and restores snap into it,
// checking that the whole input was read and that the restored operator
// snapshots to the same bytes.
func restoreFrom(t fataler, cfg snapConfig, f snapFields, snap []byte) *Operator {
	b := cfg.build(t, f)
	d := state.NewDecoder(snap)
	if err := b.Restore(d); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if d.Remaining() != 0 {
		t.Fatalf("restore left %d bytes", d.Remaining())
	}
	if again := snapshotBytes(b); !bytes.Equal(again, snap) {
		t.Fatalf("snapshot of the restored operator differs:\n%x\nwant\n%x", again, snap)
	}
	return b
}

// checkSnapshotRestore runs a random input through an operator A that
// never stops and an operator B that is snapshotted and rebuilt (New +
// Restore) at random points, and requires identical outcomes and drained
// rows after every call, and identical snapshots of A and B at every
// restart and at the end.
func checkSnapshotRestore(t *rapid.T, kind string) {
	f := newSnapFields(t)
	cfg := drawSnapConfig(t, kind)
	runSnapshotRestore(t, f, cfg, drawSnapSteps(t, cfg.retract))
}

// fataler is what the snapshot checks need of *testing.T and *rapid.T.
type fataler interface {
	Fatal(...any)
	Fatalf(string, ...any)
}

// runSnapshotRestore is checkSnapshotRestore's body for given steps.
func runSnapshotRestore(t fataler, f snapFields, cfg snapConfig, steps []snapStep) {
	a, b := cfg.build(t, f), cfg.build(t, f)
	r := f.schema.NewRow()
	var live []snapEvent
	var wm, now int64
	restarts := 0
	compare := func(i int, what string) {
		ra, rb := formatRows(a.Drain()), formatRows(b.Drain())
		if strings.Join(ra, "\n") != strings.Join(rb, "\n") {
			t.Fatalf("step %d (%s, %d restarts): rows differ\nuninterrupted:\n%s\nrestored:\n%s",
				i, what, restarts, strings.Join(ra, "\n"), strings.Join(rb, "\n"))
		}
	}
	for i, st := range steps {
		now += st.dtNow
		switch st.kind {
		case 0, 1:
			e, weight := st.ev, 1
			if st.kind == 1 {
				if len(live) == 0 {
					continue
				}
				j := st.pick % len(live)
				e, weight = live[j], -1
				live = append(live[:j], live[j+1:]...)
			} else if cfg.retract {
				live = append(live, e)
			}
			f.fill(r, e)
			oa, erra := a.Process(r, e.ts, weight, now)
			f.fill(r, e)
			ob, errb := b.Process(r, e.ts, weight, now)
			if erra != nil || errb != nil {
				t.Fatalf("step %d: %v / %v", i, erra, errb)
			}
			if oa != ob {
				t.Fatalf("step %d: outcome %d uninterrupted, %d restored", i, oa, ob)
			}
			compare(i, "process")
		case 2:
			wm += st.wm
			ea, eb := a.AdvanceWatermark(wm, now), b.AdvanceWatermark(wm, now)
			if ea != nil || eb != nil {
				t.Fatal(ea, eb)
			}
			compare(i, "watermark")
		case 3:
			a.OnProcessingTime(now)
			b.OnProcessingTime(now)
			compare(i, "processing time")
		case 4:
			snap := snapshotBytes(b)
			if sa := snapshotBytes(a); !bytes.Equal(sa, snap) {
				t.Fatalf("step %d: snapshots of equal states differ:\n%x\n%x", i, sa, snap)
			}
			b = restoreFrom(t, cfg, f, snap)
			restarts++
			sameDerived(t, a, b)
		}
	}
	// Snapshot at the end too, then close everything.
	b = restoreFrom(t, cfg, f, snapshotBytes(b))
	sameDerived(t, a, b)
	if !bytes.Equal(snapshotBytes(a), snapshotBytes(b)) {
		t.Fatal("final snapshots differ")
	}
	a.AdvanceWatermark(changelog.WatermarkInfinity, now+1)
	b.AdvanceWatermark(changelog.WatermarkInfinity, now+1)
	compare(len(steps), "end")
	sameDerived(t, a, b)
}

// sameDerived checks that the state Restore derives rather than reads
// (key values, groups, reference counts and idleness, pane indexes and
// live counts, session counts and timers) equals the running operator's.
func sameDerived(t fataler, a, b *Operator) {
	// StateBytes is an estimate that counts capacities, which depend on
	// the memory's history (a restored slot has no spare capacity).
	sa, sb := a.Stats(), b.Stats()
	sa.StateBytes, sb.StateBytes = 0, 0
	if sa != sb {
		t.Fatalf("stats differ: %+v vs %+v", sa, sb)
	}
	ka, kb := a.keys, b.keys
	if ka.ents.len() != kb.ents.len() || ka.idle != kb.idle || ka.count() != kb.count() {
		t.Fatalf("key tables differ: %d/%d/%d vs %d/%d/%d", ka.ents.len(), ka.idle, ka.count(), kb.ents.len(), kb.idle, kb.count())
	}
	for id := range uint32(ka.ents.len()) {
		x, y := ka.ent(id), kb.ent(id)
		var xx, yx keyExtra
		if x.keyExtra != nil {
			xx = *x.keyExtra
		}
		if y.keyExtra != nil {
			yx = *y.keyExtra
		}
		if x.enc != y.enc || x.refs != y.refs || x.idle != y.idle || x.group != y.group || xx.maxVer != yx.maxVer ||
			xx.closedHeld != yx.closedHeld || xx.closedEnd != yx.closedEnd || (x.keyExtra == nil) != (y.keyExtra == nil) && ka.holds(uint32(id)) ||
			ka.holds(uint32(id)) && fmt.Sprint(ka.values(uint32(id))) != fmt.Sprint(kb.values(uint32(id))) || len(xx.sessions) != len(yx.sessions) {
			t.Fatalf("key %d differs: %+v %+v vs %+v %+v", id, *x, xx, *y, yx)
		}
		if ka.holds(uint32(id)) != kb.holds(uint32(id)) {
			t.Fatalf("key %d in one id map only", id)
		}
	}
	if len(a.panes.list) != len(b.panes.list) {
		t.Fatalf("%d panes vs %d", len(a.panes.list), len(b.panes.list))
	}
	for i, p := range a.panes.list {
		q := b.panes.list[i]
		if p.live != q.live || len(p.idx) != len(q.idx) || b.panes.byEnd[q.w.End] != q {
			t.Fatalf("pane %s differs: live %d/%d idx %d/%d", p.w, p.live, q.live, len(p.idx), len(q.idx))
		}
		for k, i := range p.idx {
			if q.idx[k] != i {
				t.Fatalf("pane %s: index of key %q differs", p.w, k)
			}
		}
	}
	sameSlices(t, a, b)
	if a.sess.live != b.sess.live || a.sess.seq != b.sess.seq {
		t.Fatalf("sessions: live %d/%d seq %d/%d", a.sess.live, b.sess.live, a.sess.seq, b.sess.seq)
	}
	// Every live timer of the running operator has its twin.
	type tk struct {
		at   int64
		kind uint8
		seq  uint64
	}
	live := func(h timerHeap, o *Operator) map[tk]bool {
		m := map[tk]bool{}
		for _, x := range h {
			if x.kind == timerForget {
				// Live when it would end the key's memory (its key id
				// is the same in both: the key table is restored as is).
				if ke := o.keys.ent(x.key); ke.closedHeld && x.at == o.forgetAt(ke.closedEnd) {
					m[tk{x.at, x.kind, uint64(x.key)}] = true
				}
				continue
			}
			// A session's timer stands for its pending fire (unless it
			// fired) or close at its current end: a timer for an end it
			// has grown past is armed again for the current one when it
			// comes due (advanceSessions).
			s := x.s
			if s.dead || (x.kind == timerFire && s.fired) {
				continue
			}
			at := s.w.End
			if x.kind == timerClose {
				at += a.lateness
			}
			m[tk{at, x.kind, x.ord}] = true
		}
		return m
	}
	if la, lb := live(a.sess.timers, a), live(b.sess.timers, b); fmt.Sprint(la) != fmt.Sprint(lb) {
		t.Fatalf("live timers differ:\n%v\n%v", la, lb)
	}
}

// sameSlices checks that the slices of a restored operator, and what it
// derives from them (last windows, live counts, the index, the keys'
// references, the processed windows), equal the running operator's.
func sameSlices(t fataler, a, b *Operator) {
	x, y := &a.sl, &b.sl
	if x.on != y.on || len(x.list) != len(y.list) || x.seq != y.seq || x.done != y.done {
		t.Fatalf("slices: on %v/%v, %d/%d slices, next arrival %d/%d, done %v/%v", x.on, y.on, len(x.list), len(y.list), x.seq, y.seq, x.done, y.done)
	}
	if !x.on {
		return // the keys' references are to panes
	}
	for i, s := range x.list {
		q := y.list[i]
		if s.w != q.w || s.lastW != q.lastW || s.live != q.live || s.ents.len() != q.ents.len() || y.byStart[q.w.Start] != q {
			t.Fatalf("slice %s differs: last window %v/%v live %d/%d entries %d/%d", s.w, s.lastW, q.lastW, s.live, q.live, s.ents.len(), q.ents.len())
		}
		for j := range s.ents.len() {
			e, f := s.ents.at(j), q.ents.at(j)
			ka, kb := a.keys.ent(e.key).enc, b.keys.ent(f.key).enc
			if ka != kb || e.seq != f.seq || e.birth != f.birth || e.rows != f.rows || (e.slot < 0) != (f.slot < 0) || e.group != f.group {
				t.Fatalf("slice %s entry %d differs: %+v (%q) vs %+v (%q)", s.w, j, e, ka, f, kb)
			}
		}
	}
	refs := func(o *Operator) map[string][]string {
		m := map[string][]string{}
		for id := range uint32(o.keys.ents.len()) {
			ke := o.keys.ent(id)
			if !o.keys.holds(uint32(id)) || ke.refs <= 0 {
				continue
			}
			var panes []paneRef
			if ke.keyExtra != nil {
				panes = ke.panes
			}
			for _, r := range panes {
				var s *slice
				for _, x := range o.sl.list {
					if x.w.End == r.end {
						s = x
					}
				}
				if s == nil || s.ents.at(int(r.idx)).key != uint32(id) {
					t.Fatalf("key %q: reference %+v to no entry of its own", ke.enc, r)
				}
				m[ke.enc] = append(m[ke.enc], fmt.Sprint(r))
			}
			sort.Strings(m[ke.enc])
		}
		return m
	}
	if ra, rb := refs(a), refs(b); fmt.Sprint(ra) != fmt.Sprint(rb) {
		t.Fatalf("key references to slices differ:\n%v\n%v", ra, rb)
	}
}

// TestSnapshotRestoreTumbling: tumbling windows, every emit mode, early
// firings, allowed lateness, retractions and every aggregate kind: a
// restored operator continues exactly as the uninterrupted one.
func TestSnapshotRestoreTumbling(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkSnapshotRestore(t, "tumbling") })
}

// TestSnapshotRestoreSliding is TestSnapshotRestoreTumbling for sliding
// windows (records partly too late included).
func TestSnapshotRestoreSliding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkSnapshotRestore(t, "sliding") })
}

// TestSnapshotRestoreSessions is TestSnapshotRestoreTumbling for session
// windows (merges, dropped sessions, continued versions).
func TestSnapshotRestoreSessions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkSnapshotRestore(t, "session") })
}

// TestSnapshotRestoreAcrossSweeps: restarts before and after the key table
// frees idle keys (which the random tests, with few keys, never reach):
// freed ids are reused in the same order, so output and state stay equal.
func TestSnapshotRestoreAcrossSweeps(t *testing.T) {
	f := newSnapFields(t)
	all := []aggChoice{{"count", ""}, {"sum", "d"}, {"max", "d"}, {"count_distinct", "s"}}
	for _, cfg := range []snapConfig{
		{kind: "tumbling", size: 10, slide: 10, lateness: 15, early: 3, mode: Retract, keys: 1, aggs: all, retract: true},
		{kind: "sliding", size: 20, slide: 5, lateness: 5, mode: Update, keys: 2, aggs: all, retract: true},
		{kind: "session", gap: 6, lateness: 10, early: 3, mode: Retract, keys: 1, aggs: all, retract: true},
	} {
		var steps []snapStep
		wm := int64(0)
		toWM := func(w int64) {
			steps = append(steps, snapStep{kind: 2, wm: w - wm, dtNow: 1})
			wm = w
		}
		for i := 0; i < 1200; i++ {
			v := int64(i % 13)
			steps = append(steps, snapStep{kind: 0, dtNow: 1, ev: snapEvent{key: fmt.Sprintf("p%d", i), ts: int64(i / 4), d: snapDecimals[i%8], s: "x", v: &v}})
			if i%37 == 0 {
				toWM(int64(i/4) - 4)
			}
			if i%150 == 149 {
				steps = append(steps, snapStep{kind: 4})
			}
		}
		toWM(400)
		steps = append(steps, snapStep{kind: 4})
		for i := 0; i < 700; i++ {
			x := uint64(i)*0x9E3779B97F4A7C15 ^ 5
			x ^= x >> 29
			v := int64(x % 11)
			st := snapStep{kind: 0, dtNow: 1, ev: snapEvent{key: fmt.Sprintf("k%d", x%40), g: int64(x % 2), ts: 400 + int64(i/3) + int64(x%7), d: snapDecimals[x%8], s: []string{"x", "y", "zz"}[x%3], v: &v}}
			if x%5 == 0 {
				st.kind, st.pick = 1, int(x/5)
			}
			steps = append(steps, st)
			if i%37 == 0 {
				toWM(400 + int64(i/3) - 4)
			}
			if i%11 == 0 {
				steps = append(steps, snapStep{kind: 3, dtNow: 1})
			}
			if i%50 == 49 {
				steps = append(steps, snapStep{kind: 4})
			}
		}
		runSnapshotRestore(t, f, cfg, steps)
	}
}

// richSnapshots returns configurations and snapshots of operators with
// state of every kind (tombstones, freed keys, free slots, multisets,
// distinct sets, fired panes, sessions), for the corruption tests.
func richSnapshots(t testing.TB) (snapFields, []snapConfig, [][]byte) {
	f := newSnapFields(t)
	all := []aggChoice{{"count", ""}, {"sum", "d"}, {"avg", "v"}, {"max", "d"}, {"min", "s"}, {"count_distinct", "s"}, {"sum", "v"}}
	cfgs := []snapConfig{
		{kind: "tumbling", size: 10, slide: 10, lateness: 15, early: 3, mode: Retract, keys: 1, aggs: all, retract: true},
		{kind: "sliding", size: 20, slide: 5, lateness: 5, early: 0, mode: Update, keys: 2, aggs: all[:4], retract: true},
		{kind: "session", gap: 6, lateness: 10, early: 3, mode: Retract, keys: 1, aggs: all, retract: true},
		{kind: "tumbling", size: 10, slide: 10, lateness: 0, mode: Final, keys: 0, aggs: []aggChoice{{"max", "v"}, {"min", "d"}}},
	}
	var snaps [][]byte
	r := f.schema.NewRow()
	for _, c := range cfgs {
		op := c.build(t, f)
		// Phase 1: 1200 keys once each, then every window closes: the idle
		// keys outnumber the live ones and the key table frees them.
		for i := 0; i < 1200; i++ {
			v := int64(i % 13)
			e := snapEvent{key: fmt.Sprintf("p%d", i), ts: int64(i / 4), d: snapDecimals[i%8], s: "x", v: &v}
			f.fill(r, e)
			if _, err := op.Process(r, e.ts, 1, int64(i)); err != nil {
				t.Fatal(err)
			}
			if i%37 == 0 {
				op.AdvanceWatermark(int64(i/4)-4, int64(i))
			}
		}
		op.AdvanceWatermark(400, 1200)
		// Phase 2: a fixed pseudo-random walk over 40 keys, reusing freed
		// ids, with retractions, late records, early firings.
		var live []snapEvent
		for i := 0; i < 700; i++ {
			x := uint64(i)*0x9E3779B97F4A7C15 ^ uint64(len(c.aggs))
			x ^= x >> 29
			e := snapEvent{key: fmt.Sprintf("k%d", x%40), g: int64(x % 2), ts: 400 + int64(i/3) + int64(x%7), d: snapDecimals[x%8], s: []string{"x", "y", "zz"}[x%3]}
			v := int64(x % 11)
			e.v = &v
			weight := 1
			if c.retract && x%5 == 0 && len(live) > 0 {
				j := int(x/5) % len(live)
				e, weight = live[j], -1
				live = append(live[:j], live[j+1:]...)
			} else if c.retract {
				live = append(live, e)
			}
			f.fill(r, e)
			if _, err := op.Process(r, e.ts, weight, int64(1200+i)); err != nil {
				t.Fatal(err)
			}
			if i%37 == 0 {
				op.AdvanceWatermark(400+int64(i/3)-4, int64(1200+i))
			}
			if i%11 == 0 {
				op.OnProcessingTime(int64(1200 + i))
			}
		}
		op.Drain()
		if c.keys > 0 && (len(op.keys.free) == 0 || len(op.slots.free) == 0) {
			t.Fatalf("%s: no freed keys (%d) or free slots (%d): the corruption tests would miss them", c.kind, len(op.keys.free), len(op.slots.free))
		}
		snaps = append(snaps, snapshotBytes(op))
	}
	return f, cfgs, snaps
}

// exercise drives a restored operator through a few calls, which must not
// panic whatever state a corrupt snapshot produced.
func exercise(t testing.TB, op *Operator, f snapFields) {
	r := f.schema.NewRow()
	for i, key := range []string{"k1", "k2", "k1", "k3"} {
		v := int64(i)
		e := snapEvent{key: key, ts: int64(600 + i*3), d: "1.5", s: "x", v: &v}
		f.fill(r, e)
		op.Process(r, e.ts, 1, 5000)
		op.Process(r, e.ts, -1, 5001)
		op.Process(r, e.ts, 1, 5002)
	}
	op.OnProcessingTime(6000)
	op.OnProcessingTime(7000)
	op.AdvanceWatermark(610, 7001)
	op.AdvanceWatermark(changelog.WatermarkInfinity, 7002)
	op.Drain()
	op.Stats()
}

// TestRestoreCorruptInput: every strict prefix of a snapshot is an error
// (wrapping state.ErrTruncated) and leaves the operator fresh, so the
// full snapshot restores into it afterwards; no single-bit flip makes
// Restore (or the use of what it restored) panic.
func TestRestoreCorruptInput(t *testing.T) {
	f, cfgs, snaps := richSnapshots(t)
	for ci, snap := range snaps {
		cfg := cfgs[ci]
		for cut := 0; cut < len(snap); cut += 1 + cut/50 {
			op := cfg.build(t, f)
			err := op.Restore(state.NewDecoder(snap[:cut]))
			if !errors.Is(err, state.ErrTruncated) {
				t.Fatalf("%s: prefix of %d/%d bytes: %v, want a truncation error", cfg.kind, cut, len(snap), err)
			}
			if cut%97 == 0 {
				d := state.NewDecoder(snap)
				if err := op.Restore(d); err != nil {
					t.Fatalf("%s: restore after a failed one: %v", cfg.kind, err)
				}
				if !bytes.Equal(snapshotBytes(op), snap) {
					t.Fatalf("%s: restore after a failed one differs", cfg.kind)
				}
			}
		}
		flips, ok := 0, 0
		// Every bit of the first 32 bytes (header, free lists), then a
		// spread of about 600 more.
		for bit := 0; bit < len(snap)*8; bit += max(1, min(bit/256, len(snap)*8/600)) {
			bad := bytes.Clone(snap)
			bad[bit/8] ^= 1 << (bit % 8)
			op := cfg.build(t, f)
			flips++
			if op.Restore(state.NewDecoder(bad)) == nil {
				ok++
				exercise(t, op, f)
			}
		}
		t.Logf("%s: %d bytes, %d flips, %d still parse", cfg.kind, len(snap), flips, ok)
	}
	// A snapshot restored under another configuration is refused.
	op := cfgs[1].build(t, f)
	if err := op.Restore(state.NewDecoder(snaps[0])); err == nil || errors.Is(err, state.ErrTruncated) {
		t.Fatalf("tumbling snapshot into a sliding operator of other aggregates: %v", err)
	}
	// Restore needs a fresh operator.
	op = cfgs[0].build(t, f)
	op.AdvanceWatermark(5, 0)
	if err := op.Restore(state.NewDecoder(snaps[0])); !errors.Is(err, ErrNotFresh) {
		t.Fatalf("restore into a used operator: %v", err)
	}
}

// TestSnapshotDeterministic: two operators fed the same input (each with
// its own Go maps, whose iteration orders differ) snapshot to the same
// bytes, and snapshotting twice gives the same bytes.
func TestSnapshotDeterministic(t *testing.T) {
	f := newSnapFields(t)
	cfg := snapConfig{kind: "tumbling", size: 1000, slide: 1000, lateness: 10, mode: Retract, keys: 1,
		aggs: []aggChoice{{"count_distinct", "s"}, {"count_distinct", "v"}, {"max", "d"}, {"min", "s"}, {"sum", "d"}}, retract: true}
	build := func() *Operator {
		op := cfg.build(t, f)
		r := f.schema.NewRow()
		for i := 0; i < 400; i++ {
			v := int64(i * 7 % 101)
			e := snapEvent{key: fmt.Sprintf("k%d", i%3), ts: int64(i % 50), v: &v,
				d: fmt.Sprintf("%d.%d", i%41, i%10), s: fmt.Sprintf("s%d", i*13%97)}
			f.fill(r, e)
			if _, err := op.Process(r, e.ts, 1, 0); err != nil {
				t.Fatal(err)
			}
		}
		op.Drain()
		return op
	}
	a, b := build(), build()
	sa := snapshotBytes(a)
	if !bytes.Equal(sa, snapshotBytes(a)) {
		t.Fatal("two snapshots of one operator differ")
	}
	if !bytes.Equal(sa, snapshotBytes(b)) {
		t.Fatal("snapshots of operators with equal states differ")
	}
}

// FuzzOperatorRestore: Restore of arbitrary bytes returns an error or a
// state that snapshots stably and can be driven without panics. The first
// input byte picks one of richSnapshots' configurations.
func FuzzOperatorRestore(f *testing.F) {
	fields, cfgs, snaps := richSnapshots(f)
	for i, s := range snaps {
		f.Add(append([]byte{byte(i)}, s...))
		f.Add(append([]byte{byte(i)}, s[:len(s)/2]...))
	}
	f.Add([]byte{0, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		cfg := cfgs[int(in[0])%len(cfgs)]
		op := cfg.build(t, fields)
		if err := op.Restore(state.NewDecoder(in[1:])); err != nil {
			return
		}
		snap := snapshotBytes(op)
		again := cfg.build(t, fields)
		if err := again.Restore(state.NewDecoder(snap)); err != nil {
			t.Fatalf("snapshot of a restored operator does not restore: %v", err)
		}
		if !bytes.Equal(snapshotBytes(again), snap) {
			t.Fatal("snapshot of a restored operator is not stable")
		}
		exercise(t, op, fields)
	})
}
