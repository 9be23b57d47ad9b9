package results

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func mustDecimal(t *testing.T, s string) Decimal {
	t.Helper()
	d, err := ParseDecimal(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// changedText renders the changed rows compactly:
// "store S1: net_revenue 100.00 -> 100.004 (0.004, within)".
func changedText(r *DiffReport) string {
	var b strings.Builder
	for _, c := range r.Changed {
		for _, k := range c.Key {
			b.WriteString(k.Column + "=" + str(k.Value) + " ")
		}
		for i, col := range c.Columns {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(col.Column + " " + str(col.Old) + " -> " + str(col.New))
			if col.Difference != nil {
				b.WriteString(" (" + col.Difference.String())
				if col.WithinTolerance {
					b.WriteString(", within")
				}
				b.WriteString(")")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func str(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}

// TestDiffTolerance: numeric differences are exact; a difference of at
// most the tolerance is listed but does not make the versions differ; a
// NULL against a number always differs; 20.00 equals 20.
func TestDiffTolerance(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		b.createVersion(t, "v1", "",
			res{"2026-09-01T10:00:00+09:00", "S1", "100.00", 3},
			res{"2026-09-01T10:00:00+09:00", "S2", "20.00", 1},
			res{"2026-09-01T10:01:00+09:00", "S1", "0.1", 1})
		b.createVersion(t, "v2", "",
			res{"2026-09-01T10:00:00+09:00", "S1", "100.004", 3},
			res{"2026-09-01T10:00:00+09:00", "S2", "20", 1},
			res{"2026-09-01T10:01:00+09:00", "S1", "", 1})
		for _, c := range []struct {
			tol     string
			differs bool
			changed string
		}{
			{"0", true, "window_start=2026-09-01T10:00:00+09:00 store_id=S1 net_revenue 100.00 -> 100.004 (0.004)\n"},
			{"0.003", true, "window_start=2026-09-01T10:00:00+09:00 store_id=S1 net_revenue 100.00 -> 100.004 (0.004)\n"},
			{"0.004", false, "window_start=2026-09-01T10:00:00+09:00 store_id=S1 net_revenue 100.00 -> 100.004 (0.004, within)\n"},
			{"0.01", false, "window_start=2026-09-01T10:00:00+09:00 store_id=S1 net_revenue 100.00 -> 100.004 (0.004, within)\n"},
		} {
			// Without the NULL row: only the tolerance matters.
			r, err := b.db.Diff(ctx, b.table, "v1", "v2", DiffOptions{
				Tolerance: mustDecimal(t, c.tol), Location: seoul(t),
				To: time.Date(2026, 9, 1, 10, 1, 0, 0, seoul(t)),
			})
			if err != nil {
				t.Fatal(err)
			}
			if r.Differs != c.differs || changedText(r) != c.changed {
				t.Errorf("tolerance %s: differs %v, changed\n%s", c.tol, r.Differs, changedText(r))
			}
			if r.Counts.Same != 1 {
				t.Errorf("tolerance %s: same %d, want 1 (20.00 = 20)", c.tol, r.Counts.Same)
			}
		}
		// The NULL differs whatever the tolerance.
		r, err := b.db.Diff(ctx, b.table, "v1", "v2", DiffOptions{Tolerance: mustDecimal(t, "1000"), Location: seoul(t)})
		if err != nil {
			t.Fatal(err)
		}
		want := "window_start=2026-09-01T10:00:00+09:00 store_id=S1 net_revenue 100.00 -> 100.004 (0.004, within)\n" +
			"window_start=2026-09-01T10:01:00+09:00 store_id=S1 net_revenue 0.1 -> NULL\n"
		if !r.Differs || changedText(r) != want || r.Counts.Changed != 1 || r.Counts.WithinTolerance != 1 {
			t.Errorf("differs %v, counts %+v, changed\n%s", r.Differs, r.Counts, changedText(r))
		}
		// Totals: S1's sum moves by 0.004 − 0.1 (NULL adds nothing).
		if len(r.Totals) != 1 || str(r.Totals[0].Value) != "S1" || r.Totals[0].Sums[0].Difference.String() != "-0.096" ||
			r.Totals[0].Sums[1].Difference.String() != "0" {
			t.Errorf("totals %+v", r.Totals)
		}
		if got := r.Overall.Sums[0]; got.Old.String() != "120.10" || got.New.String() != "120.004" {
			t.Errorf("overall %+v", got)
		}
	})
}

func seoul(t *testing.T) *time.Location {
	loc, err := time.LoadLocation("Asia/Seoul")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestDiffKeys: rows only in one version, NULL keys matching NULL keys,
// and (SQLite) the same instant written with another offset is the same
// window.
func TestDiffKeys(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		b.createVersion(t, "v1", "",
			res{"2026-09-01T10:00:00+09:00", "", "5", 1},
			res{"2026-09-01T10:00:00+09:00", "S1", "10", 1},
			res{"2026-09-01T10:02:00+09:00", "S1", "30", 1})
		b.createVersion(t, "v2", "",
			res{"2026-09-01T01:00:00Z", "", "5", 1},
			res{"2026-09-01T10:00:00+09:00", "S1", "10", 1},
			res{"2026-09-01T10:01:00+09:00", "S2", "20", 2})
		r, err := b.db.Diff(context.Background(), b.table, "v1", "v2", DiffOptions{Location: seoul(t)})
		if err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(struct {
			Old, New []DiffRow
			C        DiffCounts
		}{r.OnlyInOld, r.OnlyInNew, r.Counts})
		want := `{"Old":[{"key":{"window_start":"2026-09-01T10:02:00+09:00","store_id":"S1"},"values":{"window_end":"2026-09-01T10:03:00+09:00","net_revenue":"30","orders":"1"}}],` +
			`"New":[{"key":{"window_start":"2026-09-01T10:01:00+09:00","store_id":"S2"},"values":{"window_end":"2026-09-01T10:02:00+09:00","net_revenue":"20","orders":"2"}}],` +
			`"C":{"same":2,"only_in_old":1,"only_in_new":1,"changed":0,"within_tolerance":0,"key_totals":2,"truncated":false}}`
		if string(js) != want {
			t.Errorf("got\n%s\nwant\n%s", js, want)
		}
		if !r.Differs || r.Old.Rows != 3 || r.New.Rows != 3 {
			t.Errorf("differs %v, rows %d %d", r.Differs, r.Old.Rows, r.New.Rows)
		}
		if strings.Join(r.KeyColumns, ",") != "window_start,store_id" || strings.Join(r.ValueColumns, ",") != "window_end,net_revenue,orders" ||
			strings.Join(r.IgnoredColumns, ",") != "version,is_final,watermark_at,updated_at" || strings.Join(r.NumericColumns, ",") != "net_revenue,orders" {
			t.Errorf("columns: key %v values %v ignored %v numeric %v", r.KeyColumns, r.ValueColumns, r.IgnoredColumns, r.NumericColumns)
		}
		// MaxRows bounds the lists, not the counts: the totals of three
		// key values (NULL, S1, S2) are counted, one is listed.
		r, err = b.db.Diff(context.Background(), b.table, "v1", "v2", DiffOptions{MaxRows: 1, AllTotals: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.OnlyInOld) != 1 || r.Counts.OnlyInOld != 1 || len(r.Totals) != 1 || r.Counts.KeyTotals != 3 || !r.Counts.Truncated {
			t.Errorf("max rows 1: %d only in old, %d totals, counts %+v", len(r.OnlyInOld), len(r.Totals), r.Counts)
		}
	})
}

// TestDiffErrors: a missing version lists those present; a version with an
// extra column is compared on the common ones and differs.
func TestDiffErrors(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		b.createVersion(t, "v1", "", res{"2026-09-01T10:00:00+09:00", "S1", "10", 1})
		b.createVersion(t, "v2", " refunds TEXT,", res{"2026-09-01T10:00:00+09:00", "S1", "10", 1})
		_, err := b.db.Diff(ctx, b.table, "v1", "v3", DiffOptions{})
		var nt *NoTableError
		if !errors.As(err, &nt) || !strings.HasSuffix(err.Error(), "revenue_minute__v3 (version v3); versions present: v1, v2") {
			t.Errorf("err %v", err)
		}
		r, err := b.db.Diff(ctx, b.table, "v1", "v2", DiffOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Differs || strings.Join(r.ColumnsOnlyInNew, ",") != "refunds" || r.Counts.Same != 1 {
			t.Errorf("differs %v, only in new %v, counts %+v", r.Differs, r.ColumnsOnlyInNew, r.Counts)
		}
		if vs, err := b.db.Versions(ctx, b.table); err != nil || strings.Join(vs, ",") != "v1,v2" {
			t.Errorf("Versions = %v, %v", vs, err)
		}
		if _, err := b.db.Diff(ctx, b.table, "v1", "v-2", DiffOptions{}); err == nil {
			t.Error("bad version label accepted")
		}
	})
}
