package task

import (
	"testing"

	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
)

// TestFrontFilter checks a stage filter run as a direct test (front's
// IntTest) against the same filter written so that evaluate runs it
// (a + 0 …) and with a derived field beside it (the test runs on the
// input, then evaluate computes the field of the rows it keeps): for a
// = 0, 1, 2, 3, null and 7, the filter a > 1 keeps 2, 3 and 7 (three
// rows, counted In 6, Filtered 3), a != 3 keeps 0, 1, 2 and 7 (four, the
// null one filtered). The same six records sent again as retractions
// (weight −1) count as Retractions only: a retraction the filter drops is
// not Filtered (that counts inserts), however the filter runs, and one it
// keeps is emitted as a delete of its row.
func TestFrontFilter(t *testing.T) {
	vals := []row.Value{row.Int(0), row.Int(1), row.Int(2), row.Int(3), row.Null, row.Int(7)}
	for _, tc := range []struct {
		filter, fields string
		test           bool
		rows           int
		last           int64 // the last emitted row's b (= 10·a)
	}{
		{"a > 1", "", true, 3, 70},
		{"a + 0 > 1", "", false, 3, 70},
		{"a > 1", "fields: {c: a + 1}\n", true, 3, 70},
		{"1 < a", "", true, 3, 70},
		{"a != 3", "", true, 4, 70},
		{"3 != a + 0", "", false, 4, 70},
		{"a >= 3", "", true, 2, 70},
		{"a <= 2", "", true, 3, 20},
		{"a < 1", "", true, 1, 0},
		{"a == 3", "", true, 1, 30},
	} {
		y := "name: sel\nsource: {type: file, path: in.jsonl, schema: {a: int, b: int, ts: timestamp}}\n" +
			"event_time: {field: ts}\nfilter: " + tc.filter + "\n" + tc.fields + "select: [b, a" + map[bool]string{true: ", c"}[tc.fields != ""] + "]\n"
		sp, err := spec.Parse("p.yaml", []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.Compile(sp, nil)
		if err != nil {
			t.Fatal(err)
		}
		g, err := NewGraph(p, 1)
		if err != nil {
			t.Fatal(err)
		}
		g.HasSinks[0] = true
		w := &countWriter{}
		cnt := NewCounters(len(p.Stages))
		s := NewSender(g, &Log{W: w}, &cnt)
		s.SetDirect(func(int, *Packet, *Item) error { return nil })
		if f, eval := s.fronts[0], !tc.test || tc.fields != ""; f.hasTest != tc.test || f.eval != eval {
			t.Errorf("%s %s: front hasTest %v, eval %v; want %v, %v", tc.filter, tc.fields, f.hasTest, f.eval, tc.test, eval)
		}
		sc := p.SourceSchema
		fa, _ := sc.Lookup("a")
		fb, _ := sc.Lookup("b")
		fts, _ := sc.Lookup("ts")
		m := &record.Meta{}
		for i, v := range vals {
			r := sc.NewRow()
			_ = r.Set(fa, v)
			_ = r.Set(fb, row.Int(10*v.I))
			_ = r.Set(fts, row.Time(1000))
			s.ToRoots(uint64(i+1), nil, 5, r, m, 1000, 1, &ID{}, true)
		}
		c := cnt.Stages[0]
		if w.rows != tc.rows || c.In != 6 || c.Filtered != int64(6-tc.rows) || c.RowsEmitted != int64(tc.rows) || c.Quarantined != 0 {
			t.Errorf("%s %s: rows %d, In %d, Filtered %d, RowsEmitted %d, Quarantined %d; want %d rows of 6",
				tc.filter, tc.fields, w.rows, c.In, c.Filtered, c.RowsEmitted, c.Quarantined, tc.rows)
		}
		if len(w.last) == 0 || w.last[0].I != tc.last {
			t.Errorf("%s %s: last row %v; want b = %d", tc.filter, tc.fields, w.last, tc.last)
		}
		if tc.fields != "" && (len(w.last) != 3 || w.last[2].I != tc.last/10+1) {
			t.Errorf("%s %s: last row %v; want c = %d", tc.filter, tc.fields, w.last, tc.last/10+1)
		}
		for i, v := range vals {
			r := sc.NewRow()
			_ = r.Set(fa, v)
			_ = r.Set(fb, row.Int(10*v.I))
			_ = r.Set(fts, row.Time(1000))
			s.ToRoots(uint64(len(vals)+i+1), nil, 5, r, m, 1000, -1, &ID{}, true)
		}
		if c := cnt.Stages[0]; c.In != 6 || c.Retractions != 6 || c.Filtered != int64(6-tc.rows) || c.Quarantined != 0 ||
			c.OnTime != int64(tc.rows) || c.RowsEmitted != int64(2*tc.rows) || c.FinalRows != int64(tc.rows) {
			t.Errorf("%s %s: after 6 retractions: In %d, Retractions %d, Filtered %d, Quarantined %d, OnTime %d, RowsEmitted %d, FinalRows %d; want 6, 6, %d, 0, %d, %d, %d",
				tc.filter, tc.fields, c.In, c.Retractions, c.Filtered, c.Quarantined, c.OnTime, c.RowsEmitted, c.FinalRows, 6-tc.rows, tc.rows, 2*tc.rows, tc.rows)
		}
		// A retraction the filter keeps retracts the row its insert
		// emitted: a delete of the same values, never a second insert.
		if w.rows != 2*tc.rows || w.deletes != tc.rows || len(w.last) == 0 || w.last[0].I != tc.last {
			t.Errorf("%s %s: after 6 retractions: %d rows, %d deletes, last %v; want %d rows, %d deletes, last b = %d",
				tc.filter, tc.fields, w.rows, w.deletes, w.last, 2*tc.rows, tc.rows, tc.last)
		}
	}
}
