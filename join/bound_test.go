package join

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/row"
)

// TestStateBoundedByWatermarks: after every watermark advance, the state
// holds no row that no row still acceptable could match (the class of
// Flink's FLINK-21833, temporal-join state that was never freed). The
// rule is stated from the join's semantics, not from the operator's
// timers: a row of side s with event time t is acceptable while
// t + allowed lateness ≥ W_s, so
//
//   - interval join: a left row whose last possible match (l.ts + upper,
//     or its own upper-bound column when that is earlier) is below
//     W_right − lateness is expired, and a right row whose r.ts − lower is
//     below W_left − lateness;
//   - window join: a window whose end + lateness ≤ min(W_left, W_right)
//     is closed;
//   - temporal join: a probe with ts + lateness < W_right is final;
//     versions at or below min(W_left, W_right) − lateness and the key's
//     oldest probe: only the newest of them (the anchor) can still be
//     taken.
func TestStateBoundedByWatermarks(t *testing.T) {
	defer func() { streamCheck = nil }()
	streamCheck = checkBounded
	rapid.Check(t, func(t *rapid.T) {
		c := genConfig(t)
		rows := genRows(t, &c)
		ooo := rapid.SampledFrom([]int64{0, 20}).Draw(t, "ooo")
		stream(t, c, rows, ooo)
	})
}

func checkBounded(t *rapid.T, o *Operator) {
	c := &o.cfg
	wl, wr := o.wm[L], o.wm[R]
	late := c.Lateness
	for _, g := range o.groups {
		for i := range g.ks {
			k := &g.ks[i]
			if !k.live {
				if len(k.rows[L])+len(k.rows[R]) > 0 {
					t.Fatalf("a freed key holds %d rows", len(k.rows[L])+len(k.rows[R]))
				}
				continue
			}
			switch c.Type {
			case Interval:
				for _, x := range k.rows[L] {
					last := add(x.ts, c.Upper)
					if c.UpperCol >= 0 {
						if up, ok := g.store[L].getInt(x.slot, c.UpperCol); ok {
							last = min(last, up)
						}
					}
					if wr != NoWatermark && last < sub(wr, late) {
						t.Fatalf("left row at %d (last match %d) kept at W_right %d, lateness %d", x.ts, last, wr, late)
					}
				}
				for _, x := range k.rows[R] {
					if last := add(x.ts, -c.Lower); wl != NoWatermark && last < sub(wl, late) {
						t.Fatalf("right row at %d (last match %d) kept at W_left %d, lateness %d", x.ts, last, wl, late)
					}
				}
			case Temporal:
				oldest := Inf
				for _, p := range k.rows[L] {
					oldest = min(oldest, p.ts)
					if wr != NoWatermark && add(p.ts, late) < wr {
						t.Fatalf("probe at %d kept at W_right %d, lateness %d", p.ts, wr, late)
					}
				}
				h := min(wl, wr)
				if h == NoWatermark {
					continue
				}
				h = min(sub(h, late), oldest)
				below := 0
				for _, v := range k.rows[R] {
					if v.ts <= h {
						below++
					}
				}
				if below > 1 {
					t.Fatalf("%d versions at or below %d kept (watermarks %d, %d, lateness %d): only the anchor can be taken", below, h, wl, wr, late)
				}
			}
		}
		if c.Type == Window {
			w := min(wl, wr)
			for _, p := range g.panes {
				if w != NoWatermark && add(p.win.End, late) <= w {
					t.Fatalf("window [%d, %d) kept at watermark %d, lateness %d", p.win.Start, p.win.End, w, late)
				}
			}
		}
	}
}

// TestKeyTableShrinks: once no key of a group holds rows, the group's key
// table is given back (a Go map never shrinks), and the operator goes on
// joining: 1,000 keys buffered and expired leave no key slots, and a
// later pair of key 5 still pairs up.
func TestKeyTableShrinks(t *testing.T) {
	s := row.NewSchema()
	k, _ := s.Add("k", row.KindInt)
	v, _ := s.Add("v", row.KindInt)
	c := Config{Type: Interval, Kind: Inner, Lower: 0, Upper: 10, UpperCol: -1, TombCol: -1,
		Keep: [2][]row.Kind{{row.KindInt}, {row.KindInt}}, Columns: []Column{{Side: L, Col: 0}, {Side: R, Col: 0}},
		KeyGroups: 1, Groups: keygroup.Range{Lo: 0, Hi: 1}}
	op, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var r row.Row
	put := func(side int, key, val, ts int64, seq uint64) {
		s.Shape(&r)
		_ = r.Set(k, row.Int(key))
		_ = r.Set(v, row.Int(val))
		enc := operator.AppendKey(nil, &r, []row.Field{k})
		if _, err := op.Process(side, 0, enc, ts, seq, &r, []row.Field{v}, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range int64(1000) {
		put(L, i, i, 100, uint64(i+1))
	}
	if g := op.groups[0]; len(g.ks) != 1000 {
		t.Fatalf("%d key slots for 1,000 keys", len(g.ks))
	}
	op.Advance(200, 200, 0) // past 100 + upper 10: every left row expired
	if g := op.groups[0]; len(g.ks) != 0 || g.keys.len() != 0 || len(g.heaps[clockR]) != 0 {
		t.Fatalf("after expiry: %d key slots, %d keys, %d timers", len(g.ks), g.keys.len(), len(g.heaps[clockR]))
	}
	put(L, 5, 50, 300, 2000)
	put(R, 5, 51, 305, 2001)
	rows, _ := op.Drain()
	if len(rows) != 1 || rows[0].Values[0].I != 50 || rows[0].Values[1].I != 51 || rows[0].WindowStart != 305 {
		t.Fatalf("rows %+v, want one pair (50, 51) at 305", rows)
	}
	op.Advance(Inf, Inf, 0)
	if n, slots := op.Live(); n != 0 || slots != 0 {
		t.Fatalf("%d rows, %d slots left", n, slots)
	}
}
