package join

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/window"
)

// tRow is a generated row of the differential test.
type tRow struct {
	side int
	key  int64
	ts   int64
	id   int64 // unique
	up   int64 // left rows of an interval join with an absolute bound
	tomb bool  // right rows of a temporal join
	seq  uint64
	// open lists the windows (starts) that were open when a window join's
	// row arrived: a sliding window's row may be too late for some.
	open map[int64]bool
}

// The test's kept columns: side L [key, id, up], side R [key, id, tomb];
// output columns L.id, R.id and, for window joins, window_start.
var (
	keepL = []row.Kind{row.KindInt, row.KindInt, row.KindTime}
	keepR = []row.Kind{row.KindInt, row.KindInt, row.KindBool}
)

func testSchema() (*row.Schema, [2][]row.Field) {
	s := row.NewSchema()
	k, _ := s.Add("key", row.KindInt)
	id, _ := s.Add("id", row.KindInt)
	up, _ := s.Add("up", row.KindTime)
	tb, _ := s.Add("tomb", row.KindBool)
	return s, [2][]row.Field{{k, id, up}, {k, id, tb}}
}

// batch computes the join of the accepted rows directly: the multiset of
// output rows "ts|left id|right id|window start" (−1 for null).
func batch(c *Config, rows []tRow) map[string]int {
	out := map[string]int{}
	put := func(ts int64, l, r *tRow, ws int64) {
		lid, rid := int64(-1), int64(-1)
		if l != nil {
			lid = l.id
		}
		if r != nil {
			rid = r.id
		}
		out[fmt.Sprintf("%d|%d|%d|%d", ts, lid, rid, ws)]++
	}
	var ls, rs []*tRow
	for i := range rows {
		if rows[i].side == L {
			ls = append(ls, &rows[i])
		} else {
			rs = append(rs, &rows[i])
		}
	}
	switch c.Type {
	case Interval:
		matched := map[*tRow]bool{}
		for _, l := range ls {
			for _, r := range rs {
				d := r.ts - l.ts
				ok := l.key == r.key && d >= c.Lower
				if c.UpperCol >= 0 {
					ok = ok && r.ts <= l.up
				} else {
					ok = ok && d <= c.Upper
				}
				if ok {
					put(max(l.ts, r.ts), l, r, -1)
					matched[l], matched[r] = true, true
				}
			}
		}
		for _, l := range ls {
			if !matched[l] && (c.Kind == Left || c.Kind == Full) {
				put(l.ts, l, nil, -1)
			}
		}
		for _, r := range rs {
			if !matched[r] && c.Kind == Full {
				put(r.ts, nil, r, -1)
			}
		}
	case Window:
		a := c.Assigner.Clone()
		type wk struct {
			w   int64
			key int64
		}
		groups := map[wk][2][]*tRow{}
		for i := range rows {
			x := &rows[i]
			for _, w := range a.Assign(x.ts, nil) {
				if !x.open[w.Start] {
					continue
				}
				k := wk{w.Start, x.key}
				g := groups[k]
				g[x.side] = append(g[x.side], x)
				groups[k] = g
			}
		}
		for k, g := range groups {
			for _, l := range g[L] {
				switch c.Kind {
				case Semi:
					if len(g[R]) > 0 {
						put(l.ts, l, nil, k.w)
					}
				case Anti:
					if len(g[R]) == 0 {
						put(l.ts, l, nil, k.w)
					}
				default:
					for _, r := range g[R] {
						put(max(l.ts, r.ts), l, r, k.w)
					}
					if len(g[R]) == 0 && c.Kind != Inner {
						put(l.ts, l, nil, k.w)
					}
				}
			}
			if c.Kind == Full && len(g[L]) == 0 {
				for _, r := range g[R] {
					put(r.ts, nil, r, k.w)
				}
			}
		}
	case Temporal:
		for _, p := range ls {
			var best *tRow
			for _, v := range rs {
				if v.key == p.key && v.ts <= p.ts && (best == nil || v.ts > best.ts || v.ts == best.ts && v.seq > best.seq) {
					best = v
				}
			}
			switch {
			case best != nil && !best.tomb:
				put(p.ts, p, best, -1)
			case c.Kind == Left:
				put(p.ts, p, nil, -1)
			}
		}
	}
	return out
}

// stream runs rows through an operator in arrival order, advancing each
// side's watermark to its largest event time − ooo after every row, and
// returns the net multiset of output rows, the accepted rows, and checks
// the too-late rule and the retractions.
func stream(t *rapid.T, c Config, rows []tRow, ooo int64) (map[string]int, []tRow, *Operator) {
	op, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if streamDisk && op.DiskCapable() {
		op = diskOp(t, c, openTestStore(t), 0, rapid.IntRange(1, 8).Draw(t, "every"))
	}
	s, fields := testSchema()
	r := s.NewRow()
	net := map[string]int{}
	final := c.Mode == operator.Final
	winCol := -1
	for i, col := range c.Columns {
		if col.Side == WindowStart {
			winCol = i
		}
	}
	drain := func() {
		got, orders := op.Drain()
		if len(orders) != 0 && len(orders) != len(got) {
			t.Fatalf("%d rows, %d orders", len(got), len(orders))
		}
		for i := 1; i < len(orders); i++ {
			a, b := orders[i-1], orders[i]
			if a.A > b.A || a.A == b.A && (a.B > b.B || a.B == b.B && a.C > b.C) {
				t.Fatalf("an advance's rows out of order: %+v before %+v", a, b)
			}
		}
		for _, g := range got {
			ws := int64(-1)
			if winCol >= 0 {
				ws = g.Values[winCol].I
			}
			lid, rid := int64(-1), int64(-1)
			if !g.Values[0].IsNull() {
				lid = g.Values[0].I
			}
			if !g.Values[1].IsNull() {
				rid = g.Values[1].I
			}
			k := fmt.Sprintf("%d|%d|%d|%d", g.WindowStart, lid, rid, ws)
			if g.Op.Retracts() {
				if final {
					t.Fatalf("mode final retracted %s", k)
				}
				net[k]--
				streamRetractions++
				if net[k] < 0 {
					t.Fatalf("retracted %s, which was not emitted", k)
				}
			} else {
				net[k]++
			}
		}
	}
	maxTS := [2]int64{NoWatermark, NoWatermark}
	var accepted []tRow
	restoreAt := rapid.IntRange(-1, len(rows)).Draw(t, "restoreAt")
	for i := range rows {
		if i == restoreAt {
			op = snapshotRestore(t, op)
		}
		x := rows[i]
		x.seq = uint64(i + 1)
		s.Shape(r)
		_ = r.Set(fields[x.side][0], row.Int(x.key))
		_ = r.Set(fields[x.side][1], row.Int(x.id))
		if x.side == L {
			_ = r.Set(fields[L][2], row.Time(x.up))
		} else {
			_ = r.Set(fields[R][2], row.Bool(x.tomb))
		}
		key := operator.AppendKey(nil, r, fields[x.side][:1])
		kg := keygroup.OfKey(key, c.KeyGroups)
		w := op.wm[x.side]
		out, err := op.Process(x.side, kg, key, x.ts, x.seq, r, fields[x.side], 0)
		if err != nil {
			t.Fatal(err)
		}
		tooLate := w != NoWatermark && x.ts+c.Lateness < w
		if c.Type == Window {
			// Too late when every window has closed at min(W_l, W_r).
			jw := min(op.wm[L], op.wm[R])
			tooLate = true
			x.open = map[int64]bool{}
			for _, win := range c.Assigner.Assign(x.ts, nil) {
				if jw == NoWatermark || jw < win.End+c.Lateness {
					tooLate = false
					x.open[win.Start] = true
				}
			}
		}
		if (out == TooLate) != tooLate {
			t.Fatalf("row %d %+v: outcome %d, too late by the rule: %v (watermarks %d, %d)", i, x, out, tooLate, op.wm[L], op.wm[R])
		}
		if out != TooLate {
			accepted = append(accepted, x)
		}
		drain()
		maxTS[x.side] = max(maxTS[x.side], x.ts)
		wl, wr := op.wm[L], op.wm[R]
		if maxTS[L] != NoWatermark {
			wl = max(wl, maxTS[L]-ooo)
		}
		if maxTS[R] != NoWatermark {
			wr = max(wr, maxTS[R]-ooo)
		}
		op.Advance(wl, wr, 0)
		drain()
		if streamCheck != nil {
			streamCheck(t, op)
		}
	}
	op.Advance(Inf, Inf, 0)
	drain()
	for k, n := range net {
		if n == 0 {
			delete(net, k)
		}
	}
	return net, accepted, op
}

// genRows draws rows in arrival order: event times mostly increasing with
// jitter, some far behind (late, or too late).
func genRows(t *rapid.T, c *Config) []tRow {
	n := rapid.IntRange(0, 60).Draw(t, "rows")
	var rows []tRow
	clock := int64(1_000_000)
	// One side may lag: its rows arrive up to skew behind the other's.
	skew := rapid.SampledFrom([]int64{0, 0, 60}).Draw(t, "skew")
	lagging := rapid.IntRange(0, 1).Draw(t, "lagging")
	for i := range n {
		clock += rapid.Int64Range(0, 30).Draw(t, "step")
		ts := clock - rapid.Int64Range(0, 40).Draw(t, "jitter")
		side := rapid.IntRange(0, 1).Draw(t, "side")
		if side == lagging && skew > 0 {
			ts -= rapid.Int64Range(0, skew).Draw(t, "lag")
		}
		if rapid.IntRange(0, 3).Draw(t, "far") == 0 {
			ts -= rapid.Int64Range(0, 150).Draw(t, "behind")
		}
		x := tRow{side: side, key: rapid.Int64Range(0, 2).Draw(t, "key"), ts: ts, id: int64(i)}
		if c.UpperCol >= 0 {
			x.up = ts + rapid.Int64Range(0, c.Upper).Draw(t, "span")
		}
		if c.Type == Temporal && x.side == R {
			x.tomb = rapid.IntRange(0, 4).Draw(t, "tomb") == 0
		}
		rows = append(rows, x)
	}
	return rows
}

func genConfig(t *rapid.T) Config {
	c := Config{UpperCol: -1, TombCol: -1, KeyGroups: 8, Groups: keygroup.Range{Lo: 0, Hi: 8},
		Keep: [2][]row.Kind{keepL, keepR}}
	c.Type = Type(rapid.IntRange(0, 2).Draw(t, "type"))
	c.Mode = operator.Mode(rapid.IntRange(0, 2).Draw(t, "mode"))
	c.Lateness = rapid.SampledFrom([]int64{0, 30, 100}).Draw(t, "lateness")
	c.Columns = []Column{{Side: L, Col: 1}, {Side: R, Col: 1}}
	switch c.Type {
	case Window:
		c.Kind = Kind(rapid.IntRange(0, 4).Draw(t, "kind"))
		size := rapid.SampledFrom([]int64{20, 50}).Draw(t, "size")
		w := spec.Window{Type: "tumbling", Size: spec.Duration(size * 1e6)}
		if rapid.Bool().Draw(t, "sliding") {
			w = spec.Window{Type: "sliding", Size: spec.Duration(size * 1e6), Slide: spec.Duration(size / 2 * 1e6)}
		}
		a, err := window.New(w)
		if err != nil {
			t.Fatal(err)
		}
		c.Assigner = a
		c.Columns = append(c.Columns, Column{Side: WindowStart})
	case Interval:
		c.Kind = Kind(rapid.IntRange(0, 2).Draw(t, "kind"))
		c.Lower = rapid.Int64Range(-30, 10).Draw(t, "lower")
		c.Upper = c.Lower + rapid.Int64Range(0, 40).Draw(t, "width")
		if rapid.IntRange(0, 3).Draw(t, "abs") == 0 {
			c.UpperCol = 2
			c.Lower = max(c.Lower, 0)
			c.Upper = c.Lower + rapid.Int64Range(1, 40).Draw(t, "span")
		}
	case Temporal:
		c.Kind = Kind(rapid.IntRange(0, 1).Draw(t, "kind"))
		c.TombCol = 2
	}
	return c
}

// TestJoinsEqualBatch: any arrival order of both sides gives, net of
// retractions, the join of the rows accepted (those not too late) as a
// batch computes it (nested loops, per-window grouping, as-of search);
// mode final never retracts; too-late rows follow the rule; nothing is
// left in the state once both watermarks are +∞.
func TestJoinsEqualBatch(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genConfig(t)
		rows := genRows(t, &c)
		ooo := rapid.SampledFrom([]int64{0, 20}).Draw(t, "ooo")
		got, accepted, op := stream(t, c, rows, ooo)
		want := batch(&c, accepted)
		if !maps.Equal(got, want) {
			t.Fatalf("streamed join differs from the batch join of %d accepted rows:\n got %s\nwant %s", len(accepted), show(got), show(want))
		}
		if n, slots := op.Live(); n != 0 || slots != 0 {
			t.Fatalf("%d rows and %d slots left at +inf", n, slots)
		}
	})
}

// TestJoinsEqualBatchDisk is TestJoinsEqualBatch with the inner interval
// joins on the disk backend, under a tier that turns every few rows.
func TestJoinsEqualBatchDisk(t *testing.T) {
	streamDisk = true
	defer func() { streamDisk = false }()
	TestJoinsEqualBatch(t)
}

// snapshotRestore writes every key group's section of op and restores
// them into a new operator (a checkpoint and a restart).
func snapshotRestore(t *rapid.T, op *Operator) *Operator {
	if op.cold != nil {
		return restartDisk(t, op, op.cold.store)
	}
	var groups []int
	var secs [][]byte
	for kg := op.cfg.Groups.Lo; kg < op.cfg.Groups.Hi; kg++ {
		var e state.Encoder
		op.SnapshotGroup(kg, &e)
		groups = append(groups, kg)
		secs = append(secs, e.Bytes())
	}
	n, err := New(op.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.RestoreGroups(groups, secs, op.Globals()); err != nil {
		t.Fatalf("restore: %v", err)
	}
	a, b := op.Live()
	c, d := n.Live()
	if a != c || b != d {
		t.Fatalf("restored %d rows, %d slots; had %d, %d", c, d, a, b)
	}
	return n
}

func show(m map[string]int) string {
	var s []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s = append(s, fmt.Sprintf("%s×%d", k, m[k]))
	}
	return strings.Join(s, " ")
}

var _ = changelog.Insert

// streamDisk makes stream run the joins that can on the disk backend
// (TestJoinsEqualBatchDisk).
var streamDisk bool

// streamCheck, when set, is called after each Advance of stream.
var streamCheck func(t *rapid.T, op *Operator)

// streamRetractions counts the retractions stream has seen (for
// TestJoinsEqualBatchExercises).
var streamRetractions int
