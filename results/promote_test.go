package results

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/pgtest"
)

func at(t *testing.T, s string) *time.Time {
	t.Helper()
	x, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return &x
}

// TestPromoteSegments: the promoted version serves [from, cutover); before
// from the view serves what it served, from the cutover on the live
// version (the one serving the latest windows); adjacent segments of one
// version merge.
func TestPromoteSegments(t *testing.T) {
	t1, t2, t3 := at(t, "2026-09-01T00:00:00+09:00"), at(t, "2026-10-01T00:00:00+09:00"), at(t, "2026-11-01T00:00:00+09:00")
	all := []Segment{{Version: "v1"}}
	for _, c := range []struct {
		cur      []Segment
		v        string
		from, to *time.Time
		want     string
	}{
		{all, "v2", nil, t2, "v2 (window_start < 2026-10-01T00:00:00+09:00), v1 (window_start >= 2026-10-01T00:00:00+09:00)"},
		{all, "v2", t1, t2, "v1 (window_start < 2026-09-01T00:00:00+09:00), v2 (2026-09-01T00:00:00+09:00 <= window_start < 2026-10-01T00:00:00+09:00), v1 (window_start >= 2026-10-01T00:00:00+09:00)"},
		{all, "v2", t1, nil, "v1 (window_start < 2026-09-01T00:00:00+09:00), v2 (window_start >= 2026-09-01T00:00:00+09:00)"},
		{all, "v1", nil, t2, "v1 (all windows)"},
		{promoteSegments(all, "v2", nil, t2), "v3", nil, t3, "v3 (window_start < 2026-11-01T00:00:00+09:00), v1 (window_start >= 2026-11-01T00:00:00+09:00)"},
		{promoteSegments(all, "v2", nil, t2), "v3", t1, t3, "v2 (window_start < 2026-09-01T00:00:00+09:00), v3 (2026-09-01T00:00:00+09:00 <= window_start < 2026-11-01T00:00:00+09:00), v1 (window_start >= 2026-11-01T00:00:00+09:00)"},
		{promoteSegments(all, "v2", t1, t2), "v1", t1, t2, "v1 (all windows)"},
		// A cutover moved back gives the windows after it to the live version.
		{promoteSegments(all, "v2", nil, t2), "v2", nil, t1, "v2 (window_start < 2026-09-01T00:00:00+09:00), v1 (window_start >= 2026-09-01T00:00:00+09:00)"},
		{promoteSegments(all, "v2", nil, t2), "v3", nil, t1, "v3 (window_start < 2026-09-01T00:00:00+09:00), v1 (window_start >= 2026-09-01T00:00:00+09:00)"},
		// Without a cutover the version becomes the live one from "from" on.
		{promoteSegments(all, "v2", nil, t2), "v3", t3, nil, "v2 (window_start < 2026-10-01T00:00:00+09:00), v1 (2026-10-01T00:00:00+09:00 <= window_start < 2026-11-01T00:00:00+09:00), v3 (window_start >= 2026-11-01T00:00:00+09:00)"},
	} {
		if got := DescribeSegments(promoteSegments(c.cur, c.v, c.from, c.to)); got != c.want {
			t.Errorf("promoteSegments(%s, %s) =\n%s\nwant\n%s", DescribeSegments(c.cur), c.v, got, c.want)
		}
	}
}

// TestPromoteCutover: with a cutover T, windows starting before T come
// from the promoted version and windows starting at or after T from the
// live one. A window straddling T (10:00–10:01 with T 10:00:30) belongs
// wholly to the side of its start; a window starting at T to the live
// side. No window is served twice or missed.
func TestPromoteCutover(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		// live (v1) and a recomputation (v2) that differs in every value.
		b.createVersion(t, "v1", "",
			res{"2026-09-01T09:59:00+09:00", "S1", "1", 1},
			res{"2026-09-01T10:00:00+09:00", "S1", "2", 1},
			res{"2026-09-01T10:00:30+09:00", "S2", "3", 1},
			res{"2026-09-01T10:01:00+09:00", "S1", "4", 1})
		b.createVersion(t, "v2", "",
			res{"2026-09-01T09:59:00+09:00", "S1", "10", 2},
			res{"2026-09-01T10:00:00+09:00", "S1", "20", 2},
			res{"2026-09-01T10:00:30+09:00", "S2", "30", 2},
			res{"2026-09-01T10:01:00+09:00", "S1", "40", 2})
		p, err := b.db.Promote(ctx, b.table, "v1", PromoteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.ID != 1 || p.PreviousDefinition != "" || DescribeSegments(p.Segments) != "v1 (all windows)" {
			t.Errorf("first promotion %+v", p)
		}
		p, err = b.db.Promote(ctx, b.table, "v2", PromoteOptions{Cutover: *at(t, "2026-09-01T10:00:30+09:00")})
		if err != nil {
			t.Fatal(err)
		}
		if DescribeSegments(p.Segments) != "v2 (window_start < 2026-09-01T10:00:30+09:00), v1 (window_start >= 2026-09-01T10:00:30+09:00)" || p.PreviousID != 1 {
			t.Errorf("segments %s, previous %d", DescribeSegments(p.Segments), p.PreviousID)
		}
		want := `2026-09-01 09:59:00 | S1 | 10 | 2
2026-09-01 10:00:00 | S1 | 20 | 2
2026-09-01 10:00:30 | S2 | 3 | 1
2026-09-01 10:01:00 | S1 | 4 | 1
`
		if got := b.rows(t); got != want {
			t.Errorf("served\n%s\nwant\n%s", got, want)
		}
		// The cutover in another offset is the same instant.
		p, err = b.db.Promote(ctx, b.table, "v2", PromoteOptions{Cutover: *at(t, "2026-09-01T01:00:30Z")})
		if err != nil || !p.Unchanged {
			t.Errorf("same cutover in UTC: %+v, %v", p, err)
		}
		// A range [from, cutover) over the current view.
		_, err = b.db.Promote(ctx, b.table, "v2", PromoteOptions{From: *at(t, "2026-09-01T10:01:00+09:00"), Cutover: *at(t, "2026-09-01T10:02:00+09:00")})
		if err != nil {
			t.Fatal(err)
		}
		want = `2026-09-01 09:59:00 | S1 | 10 | 2
2026-09-01 10:00:00 | S1 | 20 | 2
2026-09-01 10:00:30 | S2 | 3 | 1
2026-09-01 10:01:00 | S1 | 40 | 2
`
		if got := b.rows(t); got != want {
			t.Errorf("served\n%s\nwant\n%s", got, want)
		}
		// Roll back twice: the cutover view, then v1 alone; a third time
		// there is nothing before v1.
		rb, err := b.db.Rollback(ctx, b.table, "")
		if err != nil {
			t.Fatal(err)
		}
		if rb.Undone.ID != 3 || rb.Serving == nil || rb.Serving.ID != 2 {
			t.Errorf("rollback: undone %d, serving %+v", rb.Undone.ID, rb.Serving)
		}
		if _, err := b.db.Rollback(ctx, b.table, "v1"); err == nil || !strings.Contains(err.Error(), "the promotion in effect is of v2 (promotion 2), not v1") {
			t.Errorf("rollback naming the wrong version: %v", err)
		}
		if _, err := b.db.Rollback(ctx, b.table, "v2"); err != nil {
			t.Fatal(err)
		}
		want = `2026-09-01 09:59:00 | S1 | 1 | 1
2026-09-01 10:00:00 | S1 | 2 | 1
2026-09-01 10:00:30 | S2 | 3 | 1
2026-09-01 10:01:00 | S1 | 4 | 1
`
		if got := b.rows(t); got != want {
			t.Errorf("after two rollbacks\n%s\nwant\n%s", got, want)
		}
		if _, err := b.db.Rollback(ctx, b.table, ""); !errors.Is(err, ErrNoPromotion) {
			t.Errorf("rollback of the first promotion: %v", err)
		}
		s, err := b.db.Serving(ctx, b.table)
		if err != nil || s == nil || s.ID != 1 {
			t.Errorf("Serving = %+v, %v", s, err)
		}
		h, err := b.db.History(ctx, b.table)
		if err != nil || len(h) != 3 || h[0].RolledBackAt != nil || h[1].RolledBackAt == nil || h[2].RolledBackAt == nil {
			t.Errorf("History = %+v, %v", h, err)
		}
		if h[1].Cutover == nil || !h[1].Cutover.Equal(*at(t, "2026-09-01T10:00:30+09:00")) || h[2].From == nil {
			t.Errorf("history cutover %v, from %v", h[1].Cutover, h[2].From)
		}
	})
}

// TestPromoteGuards: nothing changes when a version is missing, has other
// columns, or the serving name is a table; a cutover needs a view to
// keep serving the rest.
func TestPromoteGuards(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		b.createVersion(t, "v1", "", res{"2026-09-01T10:00:00+09:00", "S1", "1", 1})
		b.createVersion(t, "v2", " refunds TEXT,", res{"2026-09-01T10:00:00+09:00", "S1", "1", 1})
		b.createVersion(t, "v3", "", res{"2026-09-01T10:00:00+09:00", "S1", "1", 1})
		if _, err := b.db.Promote(ctx, b.table, "v1", PromoteOptions{Cutover: *at(t, "2026-09-01T10:00:00+09:00")}); err == nil ||
			!strings.Contains(err.Error(), "serves nothing yet") {
			t.Errorf("cutover without a view: %v", err)
		}
		if _, err := b.db.Promote(ctx, b.table, "v1", PromoteOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := b.db.Promote(ctx, b.table, "v9", PromoteOptions{})
		var nt *NoTableError
		if !errors.As(err, &nt) || !strings.Contains(err.Error(), "versions present: v1, v2, v3") {
			t.Errorf("missing version: %v", err)
		}
		_, err = b.db.Promote(ctx, b.table, "v2", PromoteOptions{})
		var ce *ColumnsError
		if !errors.As(err, &ce) || !strings.HasSuffix(err.Error(), "revenue_minute__v2 has other columns than the serving view "+b.table+": extra columns refunds") {
			t.Errorf("extra column: %v", err)
		}
		// A live table with another column type.
		if b.name == "sqlite" {
			b.exec(t, `CREATE TABLE "revenue_minute__v4" (window_start TEXT NOT NULL, window_end TEXT NOT NULL, store_id TEXT,
  net_revenue REAL, orders INTEGER, version INTEGER NOT NULL, is_final INTEGER NOT NULL,
  watermark_at TEXT, updated_at TEXT NOT NULL, PRIMARY KEY (window_start, store_id))`)
		} else {
			b.exec(t, "CREATE TABLE "+b.qual("revenue_minute__v4")+" (LIKE "+b.qual("revenue_minute__v1")+")",
				"ALTER TABLE "+b.qual("revenue_minute__v4")+" ALTER COLUMN net_revenue TYPE double precision")
		}
		_, err = b.db.Promote(ctx, b.table, "v3", PromoteOptions{Cutover: *at(t, "2026-09-01T10:00:00+09:00")})
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.db.Promote(ctx, b.table, "v4", PromoteOptions{})
		wantType := "net_revenue: table has REAL, reference has TEXT"
		if b.name == "postgres" {
			wantType = "net_revenue: table has double precision, reference has numeric"
		}
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "column types differ ("+wantType+")") {
			t.Errorf("type differs: %v", err)
		}
		// A serving name that is a table.
		b.exec(t, "CREATE TABLE "+b.qual("orders")+" (window_start TEXT)")
		b.exec(t, "CREATE TABLE "+b.qual("orders__v1")+" (window_start TEXT)")
		table := strings.Replace(b.table, "revenue_minute", "orders", 1)
		if _, err := b.db.Promote(ctx, table, "v1", PromoteOptions{}); err == nil || !strings.Contains(err.Error(), "is a table, not a view") {
			t.Errorf("serving name is a table: %v", err)
		}
		// Nothing of the refused promotions was recorded.
		h, err := b.db.History(ctx, b.table)
		if err != nil || len(h) != 2 || h[1].Version != "v3" {
			t.Errorf("history %+v, %v", h, err)
		}
	})
}

// TestPromotePostgresSearchPath: with unqualified names (the schema on the
// search_path), the definition kept for rollback names the schema, so a
// rollback from a session with another search_path restores the same
// tables.
func TestPromotePostgresSearchPath(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	ctx := context.Background()
	open := func(path string) *DB {
		db, err := Open(ctx, dsn+"&search_path="+path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	db := open(schema)
	b := &backend{name: "postgres", db: db, table: "revenue_minute",
		exec: func(t *testing.T, stmts ...string) { t.Helper(); pgtest.Exec(t, dsn, stmts...) },
		dump: func(t *testing.T, query string) string { t.Helper(); return pgtest.Dump(t, dsn, query) },
		qual: func(name string) string { return quote(schema) + "." + quote(name) },
	}
	b.createVersion(t, "live", "", res{"2026-09-01T10:00:00+09:00", "S1", "1", 1})
	b.createVersion(t, "v2", "", res{"2026-09-01T10:00:00+09:00", "S1", "2", 1})
	for _, v := range []string{"live", "v2"} {
		if _, err := db.Promote(ctx, "revenue_minute", v, PromoteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := db.History(ctx, "revenue_minute")
	if err != nil || len(h) != 2 || !strings.Contains(h[1].PreviousDefinition, schema+".revenue_minute__live") {
		t.Fatalf("history %+v, %v", h, err)
	}
	// The other session names the schema; its search_path does not hold it.
	if _, err := open("public").Rollback(ctx, schema+".revenue_minute", "v2"); err != nil {
		t.Fatal(err)
	}
	if got := b.rows(t); got != "2026-09-01 10:00:00 | S1 | 1 | 1\n" {
		t.Errorf("after rollback: %s", got)
	}
}

// TestPromoteIfAbsent: without anything of the serving name, the view is
// made as promotion 1 of the version for every window; when a view (or a
// table) has the name, nothing changes and nothing is recorded.
func TestPromoteIfAbsent(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		b.createVersion(t, "live", "", res{"2026-09-01T10:00:00+09:00", "S1", "1", 1})
		b.createVersion(t, "v2", "", res{"2026-09-01T10:00:00+09:00", "S1", "2", 1})
		p, err := b.db.PromoteIfAbsent(ctx, b.table, "live")
		if err != nil || p == nil || p.ID != 1 || DescribeSegments(p.Segments) != "live (all windows)" {
			t.Fatalf("got %+v, %v", p, err)
		}
		if got := b.rows(t); got != "2026-09-01 10:00:00 | S1 | 1 | 1\n" {
			t.Fatalf("view rows %q", got)
		}
		if _, err := b.db.Promote(ctx, b.table, "v2", PromoteOptions{}); err != nil {
			t.Fatal(err)
		}
		if p, err := b.db.PromoteIfAbsent(ctx, b.table, "live"); p != nil || err != nil {
			t.Fatalf("a view exists: got %+v, %v", p, err)
		}
		if got := b.rows(t); got != "2026-09-01 10:00:00 | S1 | 2 | 1\n" {
			t.Fatalf("the view changed: %q", got)
		}
		if h, err := b.db.History(ctx, b.table); err != nil || len(h) != 2 {
			t.Fatalf("history %+v, %v", h, err)
		}
		b.exec(t, "CREATE TABLE "+b.qual("orders")+" (window_start TEXT)")
		table := strings.Replace(b.table, "revenue_minute", "orders", 1)
		if p, err := b.db.PromoteIfAbsent(ctx, table, "live"); p != nil || err != nil {
			t.Fatalf("a table of the name: got %+v, %v", p, err)
		}
	})
}
