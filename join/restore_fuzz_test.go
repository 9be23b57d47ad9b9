package join

import (
	"testing"

	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/window"
)

// fuzzConfigs are the joins FuzzRestoreGroup restores into: an interval
// left join, a tumbling window full join, a temporal left join (one key
// group each, the test's kept columns).
func fuzzConfigs(t testing.TB) []Config {
	base := func(typ Type, kind Kind) Config {
		return Config{Type: typ, Kind: kind, UpperCol: -1, TombCol: -1, KeyGroups: 1, Groups: keygroup.Range{Lo: 0, Hi: 1},
			Keep: [2][]row.Kind{keepL, keepR}, Mode: operator.Retract, Lateness: 30,
			Columns: []Column{{Side: L, Col: 1}, {Side: R, Col: 1}}}
	}
	iv := base(Interval, Left)
	iv.Lower, iv.Upper = -10, 20
	wj := base(Window, Full)
	a, err := window.New(spec.Window{Type: "tumbling", Size: spec.Duration(50 * 1e6)})
	if err != nil {
		t.Fatal(err)
	}
	wj.Assigner = a
	wj.Columns = append(wj.Columns, Column{Side: WindowStart})
	tj := base(Temporal, Left)
	tj.TombCol = 2
	return []Config{iv, wj, tj}
}

// FuzzRestoreGroup: a key group's section, damaged anyhow, is refused
// with an error or restored into a state that runs to the end of its
// inputs (both watermarks +∞) without a panic. Seeds: each join's section
// after rows of a few keys, several of one event time.
func FuzzRestoreGroup(f *testing.F) {
	cfgs := fuzzConfigs(f)
	s, fields := testSchema()
	for ci, c := range cfgs {
		op, err := New(c)
		if err != nil {
			f.Fatal(err)
		}
		r := s.NewRow()
		for i := range 40 {
			side := i % 2
			s.Shape(r)
			_ = r.Set(fields[side][0], row.Int(int64(i%3)))
			_ = r.Set(fields[side][1], row.Int(int64(i)))
			if side == L {
				_ = r.Set(fields[L][2], row.Time(int64(1000+i)))
			} else {
				_ = r.Set(fields[R][2], row.Bool(i%7 == 0))
			}
			key := operator.AppendKey(nil, r, fields[side][:1])
			ts := int64(1000 + 10*(i/6))
			if _, err := op.Process(side, 0, key, ts, uint64(i+1), r, fields[side], 0); err != nil {
				f.Fatal(err)
			}
			op.Advance(ts-25, ts-25, 0)
			op.Drain()
		}
		var e state.Encoder
		op.SnapshotGroup(0, &e)
		f.Add(uint8(ci), append([]byte(nil), e.Bytes()...))
	}
	f.Fuzz(func(t *testing.T, ci uint8, sec []byte) {
		c := cfgs[int(ci)%len(cfgs)]
		op, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		gl := Globals{Watermarks: [2]int64{1000, 1000}, Now: 0}
		if err := op.RestoreGroups([]int{0}, [][]byte{sec}, gl); err != nil {
			return
		}
		op.Stats()
		op.Advance(2000, 1500, 0)
		op.Drain()
		op.Advance(Inf, Inf, 0)
		op.Drain()
		if n, slots := op.Live(); n != 0 || slots != 0 {
			t.Fatalf("%d rows and %d slots left at +inf", n, slots)
		}
	})
}
