package operator

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/window"
)

// wideInts are the values of the int field g in drawWideSteps: around 0,
// negative, and the ends of int64 (a one-int key is held by value in the
// key table's and the slices' open-addressing tables).
var wideInts = []int64{0, 0, 1, -1, 2, 3, -7, 1 << 40, math.MinInt64, math.MaxInt64, math.MinInt64 + 1, math.MaxInt64 - 1}

// drawWideSteps is drawSnapSteps with more keys: eight strings k and
// twelve ints g (wideInts) or null, so that a window's keys spread over
// its slices and records arrive late into earlier slices.
func drawWideSteps(t *rapid.T, retract bool) []snapStep {
	return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) snapStep {
		st := snapStep{dtNow: rapid.SampledFrom([]int64{0, 1, 2, 5}).Draw(t, "dt")}
		switch k := rapid.IntRange(0, 19).Draw(t, "kind"); {
		case k < 11:
			st.kind = 0
		case k < 14:
			st.kind = 1
			if !retract {
				st.kind = 0
			}
		case k < 17:
			st.kind = 2
		case k < 18:
			st.kind = 3
		default:
			st.kind = 4
		}
		st.pick = rapid.IntRange(0, 1000).Draw(t, "pick")
		st.wm = rapid.SampledFrom([]int64{0, 1, 3, 7, 15, 40, -5}).Draw(t, "wmStep")
		e := snapEvent{
			key:   rapid.SampledFrom([]string{"a", "b", "c", "d", "e", "f", "g", "h"}).Draw(t, "key"),
			g:     rapid.SampledFrom(wideInts).Draw(t, "g"),
			gNull: rapid.IntRange(0, 9).Draw(t, "gNull") == 0,
			ts:    rapid.Int64Range(0, 150).Draw(t, "ts"),
			d:     rapid.SampledFrom(snapDecimals).Draw(t, "d"),
			s:     rapid.SampledFrom([]string{"x", "y", "", "xy"}).Draw(t, "s"),
		}
		if rapid.IntRange(0, 5).Draw(t, "vNull") > 0 {
			v := rapid.Int64Range(-5, 50).Draw(t, "v")
			e.v = &v
		}
		e.dNull = rapid.IntRange(0, 7).Draw(t, "dNull") == 0
		st.ev = e
		return st
	}), 30, 250).Draw(t, "steps")
}

// runChunked is runSlicedVsUnsliced with the sliced operator's watermark
// advances in chunks of at most about limit rows (AdvanceWatermarkLimit,
// then ContinueAdvance after each Drain) and its keys transient
// (SetTransientKeys: each chunk is read before the next call), against an
// unsliced operator advancing in one call: the chunks together are its
// rows, in its order.
func runChunked(t fataler, f snapFields, cfg snapConfig, steps []snapStep, groups bool, limit int) {
	ucfg := cfg
	ucfg.noSlice = true
	a, b := cfg.build(t, f), ucfg.build(t, f)
	if !a.Sliced() || b.Sliced() {
		t.Fatalf("sliced %v / %v", a.Sliced(), b.Sliced())
	}
	a.SetTransientKeys(true)
	r := f.schema.NewRow()
	var live []snapEvent
	wm, now := cfg.origin, int64(0)
	var sch *EarlySchedule
	if cfg.early > 0 {
		sch = &EarlySchedule{Every: cfg.early}
	}
	compare := func(i int, what string, ra []string) {
		rb := formatRows(b.Drain())
		if strings.Join(ra, "\n") != strings.Join(rb, "\n") {
			t.Fatalf("step %d (%s): rows differ\nsliced:\n%s\nunsliced:\n%s", i, what, strings.Join(ra, "\n"), strings.Join(rb, "\n"))
		}
	}
	advance := func(wm, now int64) []string {
		var rows []string
		more := a.AdvanceWatermarkLimit(wm, now, limit)
		for {
			chunk := formatRows(a.Drain())
			if len(chunk) > limit+1 { // a retract-mode pair may pass limit by one
				t.Fatalf("a chunk of %d rows, limit %d", len(chunk), limit)
			}
			rows = append(rows, chunk...)
			if !more {
				return rows
			}
			more = a.ContinueAdvance(limit)
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
			a.SetStep(uint64(i))
			oa, erra := a.Process(r, e.ts, weight, now)
			f.fill(r, e)
			b.SetStep(uint64(i))
			ob, errb := b.Process(r, e.ts, weight, now)
			if fmt.Sprint(erra) != fmt.Sprint(errb) {
				t.Fatalf("step %d: errors %v / %v", i, erra, errb)
			}
			if oa != ob {
				t.Fatalf("step %d: outcome %d sliced, %d unsliced", i, oa, ob)
			}
			compare(i, "process", formatRows(a.Drain()))
		case 2:
			wm += st.wm
			ra := advance(wm, now)
			b.AdvanceWatermark(wm, now)
			compare(i, "watermark", ra)
		case 3:
			if sch != nil && sch.Due(now) {
				a.FireEarly(now)
				b.FireEarly(now)
			}
			compare(i, "early", formatRows(a.Drain()))
		case 4:
			if groups {
				a = restoreGroupsFrom(t, cfg, f, a)
			} else {
				a = restoreFrom(t, cfg, f, snapshotBytes(a))
			}
			a.SetTransientKeys(true)
		}
		sa, sb := a.Stats(), b.Stats()
		if sa.RowsEmitted != sb.RowsEmitted || sa.PartlyTooLate != sb.PartlyTooLate || sa.SkippedWindows != sb.SkippedWindows || sa.Keys != sb.Keys {
			t.Fatalf("step %d: counters differ: %+v vs %+v", i, sa, sb)
		}
	}
	ra := advance(changelog.WatermarkInfinity, now+1)
	b.AdvanceWatermark(changelog.WatermarkInfinity, now+1)
	compare(len(steps), "end", ra)
	if st := a.Stats(); st.Entries != 0 || st.OpenWindows != 0 || st.Keys != 0 {
		t.Fatalf("sliced state left after the end: %+v", st)
	}
}

// TestSlicedMatchesUnslicedInChunks: sliding windows with keys spread over
// their slices — a string key, two fields, or one int field around 0,
// negative, at the ends of int64 or null — records late into earlier
// slices, retractions leaving tombstones, every emit mode and order, and
// firings in chunks of 1 to 4 rows with transient keys: the sliced
// operator emits exactly the unsliced operator's rows and outcomes,
// across restores from its snapshots (whole or by key group) between
// advances.
func TestSlicedMatchesUnslicedInChunks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := newSnapFields(t)
		cfg := drawSnapConfig(t, "sliding")
		cfg.keys = rapid.SampledFrom([]int{1, 2, 3, 3}).Draw(t, "keys")
		cfg.order = Order(rapid.IntRange(0, 2).Draw(t, "order"))
		if o := cfg.build(t, f); !o.Sliced() {
			t.Skip("not sliced: an aggregate whose result depends on its history")
		}
		groups := rapid.Bool().Draw(t, "groups") && cfg.order != OrderArrival
		limit := rapid.IntRange(1, 4).Draw(t, "limit")
		runChunked(t, f, cfg, drawWideSteps(t, cfg.retract), groups, limit)
	})
}

// churnCell is the batch model's (window, key): its count, sum and first
// arrival (the step of the key's first record accepted into the window).
type churnCell struct {
	n, sum int64
	first  uint64
}

// churnModel recomputes a sliding count and sum of v by key in mode final
// naively: a record counts in each of its windows (bruteWindows) that has
// not closed; a window emits its keys with rows when it closes, windows
// in (end, start) order, keys in order of first arrival.
type churnModel struct {
	size, slide int64
	closed      int64 // windows ending at or before it have closed
	wins        map[int64]map[int64]*churnCell
	// partial counts the records in time for some windows, too late for
	// others; skipped those windows (Stats.PartlyTooLate, SkippedWindows).
	partial, skipped int64
}

type churnRow struct {
	start, end  int64
	key, n, sum int64
	first       uint64
}

func (m *churnModel) add(key, ts, v int64, seq uint64, weight int) bool {
	ok, skipped := false, int64(0)
	defer func() {
		if ok && skipped > 0 {
			m.partial++
			m.skipped += skipped
		}
	}()
	for _, w := range bruteWindows(ts, m.size, m.slide) {
		if w.End <= m.closed {
			skipped++
			continue
		}
		ks := m.wins[w.Start]
		if ks == nil {
			ks = map[int64]*churnCell{}
			m.wins[w.Start] = ks
		}
		c := ks[key]
		if c == nil {
			if weight < 0 {
				panic("model: retraction of a record never added")
			}
			c = &churnCell{first: seq}
			ks[key] = c
		}
		c.n += int64(weight)
		c.sum += int64(weight) * v
		ok = true
	}
	return ok
}

func (m *churnModel) close(through int64) []churnRow {
	var starts []int64
	for s := range m.wins {
		if s+m.size <= through {
			starts = append(starts, s)
		}
	}
	slices.Sort(starts) // one size: (end, start) order is start order
	var out []churnRow
	for _, s := range starts {
		var rows []churnRow
		for k, c := range m.wins[s] {
			if c.n > 0 {
				rows = append(rows, churnRow{start: s, end: s + m.size, key: k, n: c.n, sum: c.sum, first: c.first})
			}
		}
		slices.SortFunc(rows, func(a, b churnRow) int { return cmp.Compare(a.first, b.first) })
		out = append(out, rows...)
		delete(m.wins, s)
	}
	m.closed = max(m.closed, through)
	return out
}

// churnKey spreads key number x over int64 (negative, near both ends).
func churnKey(x int64) int64 {
	switch x % 997 {
	case 1:
		return math.MinInt64
	case 2:
		return math.MaxInt64
	case 3:
		return 0
	case 4:
		return -1
	}
	return int64(uint64(x) * 0x9e3779b97f4a7c15)
}

// TestStreamedCloseMatchesBatch is a long run of a sliding count and sum
// by one int key, against the batch model: every slice holds more than
// 4,096 keys (the chunks of the slices' and the key table's entries), the
// key range moves on so idle keys are swept and their ids reused, a
// quarter of the records land late in earlier slices (a key's first
// entry in a window's slices is then not in its first slice), some are
// retracted (tombstones), and the windows close in chunks of 1 to all
// rows (AdvanceWatermarkLimit) with transient keys, the operator restored
// from a snapshot (whole, or by key group) every few slides. The rows of
// each advance are the model's exactly — keys, windows, count, sum, in
// order of first arrival (OrderArrival) or by birth (OrderBirth, whose
// EmitOrder gives each row its key's first step) — and so are the
// unsliced operator's. Windows of 4 slices (size 40, slide 10) and of 5
// (size 25, slide 10: slices of 5); allowed lateness 0, where every
// window closes from its slices, and 15 with watermark jumps.
func TestStreamedCloseMatchesBatch(t *testing.T) {
	type tc struct {
		size, slide, lateness int64
		order                 Order
		groups                bool // restores by key group
		// dec sums a decimal copy of v, without retractions (a decimal
		// sum that takes them is not sliced: its scale depends on its
		// history): no column checks its updates, so processSliced decides
		// every window's tests from the earliest end (an int sum checks
		// for overflow and takes the loop).
		dec bool
	}
	cases := []tc{
		{40, 10, 0, OrderArrival, false, true},
		{40, 10, 0, OrderBirth, true, false},
		{25, 10, 0, OrderBirth, false, true},
		{25, 10, 15, OrderArrival, false, false},
		{40, 10, 15, OrderBirth, true, true},
	}
	epochs := 16
	if testing.Short() {
		epochs = 8
	}
	for ci, c := range cases {
		t.Run(fmt.Sprintf("size%d_slide%d_late%d_order%d_dec%v", c.size, c.slide, c.lateness, c.order, c.dec), func(t *testing.T) {
			sc := row.NewSchema()
			gf, _ := sc.Add("g", row.KindInt)
			vf, _ := sc.Add("v", row.KindInt)
			df, _ := sc.Add("d", row.KindDecimal)
			arg := vf
			if c.dec {
				arg = df
			}
			build := func(noSlice bool) *Operator {
				cnt, err := aggregate.New(aggregate.Spec{Name: "n", Func: "count", Retract: !c.dec})
				if err != nil {
					t.Fatal(err)
				}
				sum, err := aggregate.New(aggregate.Spec{Name: "s", Func: "sum", Arg: arg, HasArg: true, Retract: !c.dec})
				if err != nil {
					t.Fatal(err)
				}
				o, err := New(Config{Assigner: &window.Fixed{Size: c.size, Slide: c.slide}, Mode: Final, AllowedLateness: c.lateness,
					Key: []row.Field{gf}, Aggs: []aggregate.Column{cnt, sum}, Order: c.order, NoSlicing: noSlice})
				if err != nil {
					t.Fatal(err)
				}
				if o.Sliced() == noSlice || c.dec != (len(o.slots.chk) == 0) {
					t.Fatalf("sliced: %v, %d columns checking their updates", o.Sliced(), len(o.slots.chk))
				}
				return o
			}
			a, b := build(false), build(true)
			a.SetTransientKeys(true)
			m := &churnModel{size: c.size, slide: c.slide, closed: math.MinInt64, wins: map[int64]map[int64]*churnCell{}}
			rng := rand.New(rand.NewPCG(uint64(ci), 7))
			type rec struct{ key, ts, v int64 }
			var live []rec
			r := sc.NewRow()
			var seq uint64
			var wm int64
			maxIDs, sawFree := 0, false
			process := func(x rec, weight int) {
				seq++
				sc.Shape(r)
				r.Set(gf, row.Int(x.key))
				r.Set(vf, row.Int(x.v))
				d, _ := row.ParseDecimal([]byte(strconv.FormatInt(x.v, 10)))
				r.Set(df, row.Dec(d))
				want := m.add(x.key, x.ts, x.v, seq, weight)
				for _, o := range []*Operator{a, b} {
					o.SetStep(seq)
					out, err := o.Process(r, x.ts, weight, 0)
					if err != nil {
						t.Fatal(err)
					}
					if got := out == OnTime || out == LateAccepted; weight > 0 && got != want {
						t.Fatalf("record %+v: outcome %d, model accepts: %v", x, out, want)
					}
					if err := sliceCellAgrees(o, x.key); err != nil {
						t.Fatalf("record %+v: %v", x, err)
					}
					if seq%997 == 0 {
						if err := sliceCellsAgree(o); err != nil {
							t.Fatalf("record %+v: %v", x, err)
						}
					}
				}
				if weight > 0 && want {
					live = append(live, x)
				}
			}
			check := func(what string, rows []changelog.Row, ord []EmitOrder, want []churnRow) {
				if c.order == OrderBirth {
					if len(ord) != len(rows) {
						t.Fatalf("%s: %d rows, %d orders", what, len(rows), len(ord))
					}
					idx := make([]int, len(rows))
					for i := range idx {
						idx[i] = i
					}
					slices.SortStableFunc(idx, func(i, j int) int {
						x, y := ord[i], ord[j]
						return cmp.Or(cmp.Compare(x.A, y.A), cmp.Compare(x.B, y.B), cmp.Compare(x.C, y.C))
					})
					sorted := make([]changelog.Row, len(rows))
					sortedOrd := make([]EmitOrder, len(rows))
					for i, j := range idx {
						sorted[i], sortedOrd[i] = rows[j], ord[j]
					}
					rows, ord = sorted, sortedOrd
				}
				if len(rows) != len(want) {
					t.Fatalf("%s: %d rows, the model %d", what, len(rows), len(want))
				}
				for i, w := range want {
					g := rows[i]
					if g.Op != changelog.Insert || !g.IsFinal || g.Version != 1 || g.WindowStart != w.start || g.WindowEnd != w.end ||
						len(g.Key) != 1 || g.Key[0].I != w.key || g.Values[0].I != w.n ||
						!c.dec && g.Values[1].I != w.sum || c.dec && g.Values[1].String() != strconv.FormatInt(w.sum, 10) ||
						c.order == OrderBirth && (ord[i].C != w.first || ord[i].A != w.end || ord[i].B != w.start) {
						var o EmitOrder
						if i < len(ord) {
							o = ord[i]
						}
						t.Fatalf("%s: row %d of %d is %s (order %+v), the model's %+v", what, i, len(want), formatRows(rows[i : i+1])[0], o, w)
					}
				}
			}
			maxSlice := 0
			advance := func(to int64) {
				for _, s := range a.sl.list {
					maxSlice = max(maxSlice, s.ents.len())
				}
				wm = to
				limit := []int{1, 3, 700, 4096, math.MaxInt}[rng.IntN(5)]
				var rows []changelog.Row
				var ord []EmitOrder
				more := a.AdvanceWatermarkLimit(wm, 0, limit)
				for {
					ord = append(ord, a.DrainOrder()...)
					for _, cr := range a.Drain() { // keys reused after the next call: copy
						cr.Key = slices.Clone(cr.Key)
						cr.Values = slices.Clone(cr.Values)
						rows = append(rows, cr)
					}
					if !more {
						break
					}
					more = a.ContinueAdvance(limit)
				}
				want := m.close(wm - c.lateness)
				check(fmt.Sprintf("sliced, watermark %d, limit %d", wm, limit), rows, ord, want)
				b.AdvanceWatermark(wm, 0)
				ub := b.DrainOrder()
				check(fmt.Sprintf("unsliced, watermark %d", wm), b.Drain(), ub, want)
				maxIDs = max(maxIDs, a.keys.ents.len())
				sawFree = sawFree || len(a.keys.free) > 0
			}
			restore := func(byGroup bool) {
				if byGroup {
					a.MarkAllChanged()
					groups := a.Changed(nil)
					secs := snapGroups(a, groups)
					var parts [][]byte
					for i := len(groups) - 1; i >= 0; i-- {
						parts = append(parts, secs[groups[i]])
					}
					n := build(false)
					if err := n.RestoreGroups(parts, a.Globals()); err != nil {
						t.Fatal(err)
					}
					a = n
				} else {
					var e state.Encoder
					a.Snapshot(&e)
					n := build(false)
					if err := n.Restore(state.NewDecoder(e.Bytes())); err != nil {
						t.Fatal(err)
					}
					a = n
				}
				a.SetTransientKeys(true)
			}
			// Slices per slide: 1, or 2 when the size is not a multiple.
			x := int64(1)
			if c.size%c.slide != 0 {
				x = 2
			}
			for p := range int64(epochs) {
				lo := p * 3000 * x // the key range moves on: earlier keys go idle
				var batch []rec
				for range 6000 * x { // this slide's records
					batch = append(batch, rec{key: churnKey(lo + rng.Int64N(7000*x)), ts: p*c.slide + rng.Int64N(c.slide), v: rng.Int64N(100) - 20})
				}
				for range 2000 * x { // late into earlier slices, some too late
					back := 1 + rng.Int64N(3*c.slide)
					batch = append(batch, rec{key: churnKey(lo - 3000*x + rng.Int64N(9000*x)), ts: p*c.slide - back, v: rng.Int64N(100) - 20})
				}
				rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
				for i, x := range batch {
					process(x, 1)
					if i%10 == 0 && len(live) > 0 && !c.dec { // retract an earlier record
						j := rng.IntN(len(live))
						process(live[j], -1)
						live[j] = live[len(live)-1]
						live = live[:len(live)-1]
					}
				}
				switch {
				case c.lateness == 0:
					advance(p * c.slide)
				case p%3 == 2: // a jump past several windows' ends and lateness
					advance(p*c.slide + c.slide - 1)
				default:
					advance(p*c.slide - 2*c.slide + rng.Int64N(c.slide))
				}
				if p%4 == 3 {
					restore(c.groups && p%8 == 7)
				}
				// Records of windows closed for good no longer matter.
				n := 0
				for _, x := range live {
					if x.ts >= m.closed-c.size {
						live[n] = x
						n++
					}
				}
				live = live[:n]
			}
			advance(changelog.WatermarkInfinity)
			if st := a.Stats(); st.Entries != 0 || st.OpenWindows != 0 || st.Keys != 0 {
				t.Fatalf("state left after the end: %+v", st)
			}
			for _, o := range []*Operator{a, b} {
				if st := o.Stats(); st.PartlyTooLate != m.partial || st.SkippedWindows != m.skipped || m.partial == 0 {
					t.Fatalf("sliced %v: %d records partly too late, %d windows skipped; the model %d, %d", o.Sliced(), st.PartlyTooLate, st.SkippedWindows, m.partial, m.skipped)
				}
			}
			if maxIDs <= 2<<entChunkBits || !sawFree || maxSlice <= 1<<entChunkBits {
				t.Fatalf("the run did not exercise the chunks: %d ids at most, a free list: %v, %d entries in a slice at most", maxIDs, sawFree, maxSlice)
			}
			t.Logf("%d ids, %d entries in a slice at most", maxIDs, maxSlice)
		})
	}
}

// TestIntKeysMatchStringKeys runs long inputs with key churn through two
// operators, one keyed by the int field g (its keys held by value in the
// key table's open-addressing table, deleted by backward shift when idle
// keys are swept, their ids reused), the other by the string k holding
// g's decimal form (a Go map): tumbling, sliding (sliced) and session
// windows, every emit mode, retractions, firings in chunks, restores from
// snapshots. Each key enters a few windows and goes idle; the key table
// passes 4,096 entries. The rows must be the same but for the key's kind,
// in the same order, and so must the outcomes and the key counts.
func TestIntKeysMatchStringKeys(t *testing.T) {
	epochs := int64(14)
	if testing.Short() {
		epochs = 8
	}
	for _, c := range []snapConfig{
		{kind: "tumbling", size: 10, slide: 10, mode: Final},
		{kind: "tumbling", size: 10, slide: 10, mode: Retract, early: 3, lateness: 10},
		{kind: "sliding", size: 20, slide: 5, mode: Final},
		{kind: "sliding", size: 20, slide: 5, mode: Update, lateness: 5},
		{kind: "sliding", size: 20, slide: 7, mode: Retract},
		// One key group: sessions sweep each key group on its own, and
		// the two keys' encodings hash to different groups.
		{kind: "session", gap: 4, mode: Final, groups: 1},
		{kind: "session", gap: 4, mode: Retract, lateness: 6, groups: 1},
	} {
		c.aggs = []aggChoice{{"count", ""}, {"sum", "v"}, {"max", "s"}}
		c.retract = true
		c.order = OrderArrival
		t.Run(fmt.Sprintf("%s_mode%d_late%d", c.kind, c.mode, c.lateness), func(t *testing.T) {
			f := newSnapFields(t)
			ci, si := c, c
			ci.keys, si.keys = 3, 1
			a, b := ci.build(t, f), si.build(t, f)
			if !a.keys.intKey || b.keys.intKey {
				t.Fatal("the int-keyed operator must hold its keys by value, the other not")
			}
			rng := rand.New(rand.NewPCG(uint64(ci.size), uint64(c.mode)))
			r := f.schema.NewRow()
			var live []snapEvent
			var wm, now int64
			maxIDs, sawFree := 0, false
			render := func(rows []changelog.Row, intKey bool) []string {
				for i := range rows {
					k := rows[i].Key[0]
					if intKey {
						if k.Kind != row.KindInt {
							t.Fatalf("key %v of kind %d", k, k.Kind)
						}
						k = row.Str(fmt.Sprint(k.I))
					}
					rows[i].Key = []row.Value{k}
				}
				return formatRows(rows)
			}
			compare := func(what string) {
				ra, rb := render(a.Drain(), true), render(b.Drain(), false)
				if strings.Join(ra, "\n") != strings.Join(rb, "\n") {
					t.Fatalf("%s: rows differ\nint keys:\n%s\nstring keys:\n%s", what, strings.Join(ra, "\n"), strings.Join(rb, "\n"))
				}
			}
			process := func(e snapEvent, weight int) {
				e.key = fmt.Sprint(e.g)
				f.fill(r, e)
				oa, erra := a.Process(r, e.ts, weight, now)
				f.fill(r, e)
				ob, errb := b.Process(r, e.ts, weight, now)
				if erra != nil || errb != nil || oa != ob {
					t.Fatalf("event %+v: outcomes %d, %d, errors %v, %v", e, oa, ob, erra, errb)
				}
				if err := sliceCellAgrees(a, e.g); err != nil {
					t.Fatalf("event %+v: %v", e, err)
				}
				if rng.IntN(500) == 0 {
					if err := sliceCellsAgree(a); err != nil {
						t.Fatalf("event %+v: %v", e, err)
					}
				}
				compare("process")
			}
			advance := func(to int64) {
				wm, now = to, now+1
				limit := []int{1, 5, 300, math.MaxInt}[rng.IntN(4)]
				var ra, rb []string
				for _, x := range []struct {
					o    *Operator
					rows *[]string
					int  bool
				}{{a, &ra, true}, {b, &rb, false}} {
					more := x.o.AdvanceWatermarkLimit(wm, now, limit)
					for {
						*x.rows = append(*x.rows, render(x.o.Drain(), x.int)...)
						if !more {
							break
						}
						more = x.o.ContinueAdvance(limit)
					}
				}
				if strings.Join(ra, "\n") != strings.Join(rb, "\n") {
					t.Fatalf("watermark %d: rows differ\nint keys:\n%s\nstring keys:\n%s", wm, strings.Join(ra, "\n"), strings.Join(rb, "\n"))
				}
				if sa, sb := a.Stats(), b.Stats(); sa.Keys != sb.Keys || sa.Entries != sb.Entries || a.keys.ents.len() != b.keys.ents.len() {
					t.Fatalf("watermark %d: %d keys, %d entries, %d ids; string keys %d, %d, %d; count %d/%d idle %d/%d free %d/%d", wm, sa.Keys, sa.Entries, a.keys.ents.len(), sb.Keys, sb.Entries, b.keys.ents.len(),
						a.keys.count(), b.keys.count(), a.keys.idle, b.keys.idle, len(a.keys.free), len(b.keys.free))
				}
				maxIDs = max(maxIDs, a.keys.ents.len())
				sawFree = sawFree || len(a.keys.free) > 0
			}
			for p := range epochs {
				base := p * 10
				for i := range 3000 {
					e := snapEvent{g: churnKey(p*2000 + rng.Int64N(5000)), ts: base + rng.Int64N(10), s: []string{"x", "y", "zz"}[i%3], d: "1"}
					if rng.IntN(5) == 0 {
						e.ts -= 1 + rng.Int64N(25) // late, some too late
					}
					v := rng.Int64N(50) - 10
					e.v = &v
					process(e, 1)
					live = append(live, e)
					if rng.IntN(8) == 0 {
						j := rng.IntN(len(live))
						process(live[j], -1)
						live[j] = live[len(live)-1]
						live = live[:len(live)-1]
					}
				}
				if c.early > 0 && p%2 == 1 {
					now += c.early
					a.FireEarly(now)
					b.FireEarly(now)
					compare("early")
				}
				advance(base + rng.Int64N(6) - 2)
				if p%5 == 4 {
					a = restoreFrom(t, ci, f, snapshotBytes(a))
					b = restoreFrom(t, si, f, snapshotBytes(b))
				}
				n := 0
				for _, e := range live { // retract only what may still be held
					if e.ts >= wm-40 {
						live[n] = e
						n++
					}
				}
				live = live[:n]
			}
			advance(changelog.WatermarkInfinity)
			if st := a.Stats(); st.Entries != 0 || st.OpenWindows != 0 || st.Keys != 0 {
				t.Fatalf("state left after the end: %+v", st)
			}
			if maxIDs <= 1<<entChunkBits || !sawFree {
				t.Fatalf("the run did not exercise the key table: %d ids at most, a free list: %v", maxIDs, sawFree)
			}
		})
	}
}

// TestSlicedCalendarMatchesUnsliced is TestSlicedMatchesUnslicedInChunks
// for sliding calendar windows (sliced by local days: a slice's records
// share its windows, processSliced) in zones whose days are not 24 hours:
// clocks jumping over midnight (America/Sao_Paulo, 2018-11-04), midnight
// twice (Asia/Amman, 2014-10-31), a day of 23 and one of 25 hours
// (Europe/London). Event times and watermark steps are in half hours
// around the transition. (A day skipped whole, Pacific/Apia's 2011-12-30,
// gives two windows one start: TestCalendarWindowsSharingAStart.)
func TestSlicedCalendarMatchesUnsliced(t *testing.T) {
	zones := []struct {
		name string
		at   string // a local midnight before the transition
	}{
		{"America/Sao_Paulo", "2018-11-02"},
		{"Asia/Amman", "2014-10-29"},
		{"Europe/London", "2021-03-27"},
		{"Europe/London", "2021-10-30"},
	}
	rapid.Check(t, func(t *rapid.T) {
		z := zones[rapid.IntRange(0, len(zones)-1).Draw(t, "zone")]
		loc, err := time.LoadLocation(z.name)
		if err != nil {
			t.Skip(err)
		}
		d, err := time.ParseInLocation("2006-01-02", z.at, loc)
		if err != nil {
			t.Fatal(err)
		}
		f := newSnapFields(t)
		cfg := drawSnapConfig(t, "sliding")
		size := rapid.Int64Range(2, 4).Draw(t, "sizeDays")
		cfg.assigner = &window.Calendar{SizeDays: size, SlideDays: rapid.Int64Range(1, size).Draw(t, "slideDays"), Loc: loc}
		cfg.origin = d.UnixMilli() - 24*3_600_000
		const half = 1_800_000
		cfg.lateness *= half
		cfg.keys = rapid.SampledFrom([]int{1, 2, 3}).Draw(t, "keys")
		cfg.order = Order(rapid.IntRange(0, 2).Draw(t, "order"))
		if o := cfg.build(t, f); !o.Sliced() {
			t.Skip("not sliced: an aggregate whose result depends on its history")
		}
		steps := drawWideSteps(t, cfg.retract)
		for i := range steps {
			steps[i].ev.ts = d.UnixMilli() + steps[i].ev.ts*half
			steps[i].wm *= half
			steps[i].dtNow *= half
		}
		cfg.early *= half
		groups := rapid.Bool().Draw(t, "groups") && cfg.order != OrderArrival
		runChunked(t, f, cfg, steps, groups, rapid.IntRange(1, 4).Draw(t, "limit"))
	})
}

// TestCalendarWindowsSharingAStart: Pacific/Apia skipped 2011-12-30
// (UTC−10 to UTC+14), so the 2-day windows starting that day and the next
// share their start (the local midnight of 12-31, 1325239200000): a
// record at that instant is in both, [12-31, 01-01) and [12-31, 01-02).
// The sliced operator emits both rows, each with the record; the unsliced
// one (panes by window start) folds both into one pane and emits one row
// counting the record twice. Which answer is right is a design question
// (sinks identify rows by window start and key, so two rows would
// collide there too); it predates today's changes.
func TestCalendarWindowsSharingAStart(t *testing.T) {
	t.Skip("bug, not fixed: calendar windows over a skipped local day share a start; the unsliced operator counts a record twice in one pane, the sliced one emits two rows with the same (window_start, key)")
	loc, err := time.LoadLocation("Pacific/Apia")
	if err != nil {
		t.Skip(err)
	}
	schema, kf, _ := testSchema(t)
	const ts = 1325239200000
	want := "insert [1325239200000,1325325600000) key=4:a, vals=2:1, v1 final=true wm=1326103200000 at=0\n" +
		"insert [1325239200000,1325412000000) key=4:a, vals=2:1, v1 final=true wm=1326103200000 at=0"
	for _, noSlice := range []bool{false, true} {
		cnt, _ := aggregate.New(aggregate.Spec{Name: "n", Func: "count"})
		o, err := New(Config{Assigner: &window.Calendar{SizeDays: 2, SlideDays: 1, Loc: loc}, Mode: Final,
			Key: []row.Field{kf}, Aggs: []aggregate.Column{cnt}, NoSlicing: noSlice})
		if err != nil {
			t.Fatal(err)
		}
		r := schema.NewRow()
		r.Set(kf, row.Str("a"))
		if _, err := o.Process(r, ts, 1, 0); err != nil {
			t.Fatal(err)
		}
		o.AdvanceWatermark(ts+10*86_400_000, 0)
		if got := strings.Join(formatRows(o.Drain()), "\n"); got != want {
			t.Errorf("sliced %v: rows\n%s\nwant\n%s", o.Sliced(), got, want)
		}
	}
}
