package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // zones in tests do not depend on the machine

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

var revenue = changelog.Desc{
	Stage:    "revenue",
	Key:      []changelog.Column{{Name: "store", Kind: row.KindString}},
	Values:   []changelog.Column{{Name: "revenue", Kind: row.KindDecimal}, {Name: "orders", Kind: row.KindInt}},
	Timezone: "Asia/Seoul",
}

func ms(t testing.TB, s string) int64 {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMilli()
}

func dec(t testing.TB, s string) row.Value {
	t.Helper()
	d, err := row.ParseDecimal([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return row.Dec(d)
}

// res builds a revenue row for the 10:00 (Seoul) window.
func res(t testing.TB, op changelog.Op, store row.Value, version uint64, amount string, orders int64) changelog.Row {
	return changelog.Row{
		Op:          op,
		WindowStart: ms(t, "2026-09-01T01:00:00Z"),
		WindowEnd:   ms(t, "2026-09-01T01:01:00Z"),
		Key:         []row.Value{store},
		Values:      []row.Value{dec(t, amount), row.Int(orders)},
		Version:     version,
		WatermarkAt: ms(t, "2026-09-01T01:01:30Z"),
		UpdatedAt:   ms(t, "2026-09-01T01:01:31Z"),
	}
}

// newSink opens a sink closed when the test ends.
func newSink(t testing.TB, dsn, table string, d changelog.Desc, o Options) *Results {
	t.Helper()
	var s *Results
	if o.Group == "" {
		succeed(table, func() { s.x.crash() }) // a new run: the previous one is gone
	}
	s, err := New(context.Background(), dsn, table, d, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// write writes rows and flushes them (an AtLeastOnce sink).
func write(t testing.TB, s *Results, rows ...changelog.Row) {
	t.Helper()
	ctx := context.Background()
	if err := s.Write(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// bothMethods runs f once per way of applying rows.
func bothMethods(t *testing.T, f func(t *testing.T, method int)) {
	for _, m := range []struct {
		name   string
		method int
	}{{"copy", applyCopy}, {"values", applyValues}} {
		t.Run(m.name, func(t *testing.T) { f(t, m.method) })
	}
}

// TestRoundTripAllKinds writes every column kind, NULL keys and values,
// decimals of several scales, an int into a decimal column, millisecond
// times and both special watermarks, and reads them back exactly, both as
// PostgreSQL prints them and through the prepared encoding.
func TestRoundTripAllKinds(t *testing.T) {
	bothMethods(t, func(t *testing.T, method int) {
		dsn, schema := testSchema(t)
		d := changelog.Desc{
			Stage: "kinds",
			Key: []changelog.Column{
				{Name: "store", Kind: row.KindString}, {Name: "day", Kind: row.KindTime},
				{Name: "vip", Kind: row.KindBool}, {Name: "region", Kind: row.KindInt},
				{Name: "rate", Kind: row.KindDecimal},
			},
			Values: []changelog.Column{
				{Name: "amount", Kind: row.KindDecimal}, {Name: "n", Kind: row.KindInt},
				{Name: "ok", Kind: row.KindBool}, {Name: "note", Kind: row.KindString},
				{Name: "last_seen", Kind: row.KindTime},
			},
			Timezone: "Asia/Seoul",
		}
		table := schema + ".kinds"
		s := newSink(t, dsn, table, d, Options{})
		s.method = method
		base := changelog.Row{
			Op: changelog.Insert, WindowStart: ms(t, "2026-09-01T01:00:00Z"), WindowEnd: ms(t, "2026-09-01T01:00:00.500Z"),
			Version: 1, UpdatedAt: ms(t, "2026-09-01T01:00:00Z"),
		}
		r1, r2, r3 := base, base, base
		r1.Key = []row.Value{row.Str("s-1"), row.Time(ms(t, "2026-08-31T15:00:00Z")), row.Bool(true), row.Int(-7), dec(t, "0.50")}
		r1.Values = []row.Value{dec(t, "20.00"), row.Int(9007199254740993), row.Bool(false), row.Str("héllo, 'quoted' \"x\""), row.Time(ms(t, "2026-09-01T01:00:59.999Z"))}
		r1.WatermarkAt, r1.IsFinal = changelog.WatermarkInfinity, true
		r2.Key = []row.Value{row.Null, row.Null, row.Null, row.Null, row.Null}
		r2.Values = []row.Value{row.Int(7), row.Null, row.Null, row.Null, row.Null}
		r2.WatermarkAt = changelog.WatermarkNone
		r3.Key = []row.Value{row.Str(""), row.Null, row.Bool(false), row.Int(0), dec(t, "-1.250")}
		r3.Values = []row.Value{dec(t, "-0.0000000000000000001"), row.Int(-1), row.Bool(true), row.Str(""), row.Time(0)}
		r3.WatermarkAt = ms(t, "2026-09-01T01:00:30.001Z")
		rows := []changelog.Row{r1, r2, r3}

		ctx := context.Background()
		if err := s.Write(ctx, rows); err != nil {
			t.Fatal(err)
		}
		p, err := s.Prepare(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		// The prepared encoding decodes to the same rows.
		b := newBatch(s.cols, s.nKey)
		if err := b.decode(p); err != nil {
			t.Fatal(err)
		}
		if got, want := batchText(b), rowsText(rows); got != want {
			t.Fatalf("decoded\n%s\nwant\n%s", got, want)
		}
		if err := s.Commit(ctx, 1, p); err != nil {
			t.Fatal(err)
		}
		check(t, dsn, "SELECT * FROM "+table+" ORDER BY store NULLS FIRST",
			"2026-09-01 10:00:00+09 | 2026-09-01 10:00:00.5+09 | NULL | NULL | NULL | NULL | NULL | 7 | NULL | NULL | NULL | NULL | 1 | f | NULL | 2026-09-01 10:00:00+09\n"+
				"2026-09-01 10:00:00+09 | 2026-09-01 10:00:00.5+09 |  | NULL | f | 0 | -1.250 | -0.0000000000000000001 | -1 | t |  | 1970-01-01 09:00:00+09 | 1 | f | 2026-09-01 10:00:30.001+09 | 2026-09-01 10:00:00+09\n"+
				"2026-09-01 10:00:00+09 | 2026-09-01 10:00:00.5+09 | s-1 | 2026-09-01 00:00:00+09 | t | -7 | 0.50 | 20.00 | 9007199254740993 | f | héllo, 'quoted' \"x\" | 2026-09-01 10:00:59.999+09 | 1 | t | infinity | 2026-09-01 10:00:00+09\n")
		check(t, dsn, `SELECT column_name, data_type, is_nullable FROM information_schema.columns
			WHERE table_schema = '`+schema+`' AND table_name = 'kinds' ORDER BY ordinal_position`,
			"window_start | timestamp with time zone | NO\nwindow_end | timestamp with time zone | NO\n"+
				"store | text | YES\nday | timestamp with time zone | YES\nvip | boolean | YES\nregion | bigint | YES\nrate | numeric | YES\n"+
				"amount | numeric | YES\nn | bigint | YES\nok | boolean | YES\nnote | text | YES\nlast_seen | timestamp with time zone | YES\n"+
				"version | bigint | NO\nis_final | boolean | NO\nwatermark_at | timestamp with time zone | YES\nupdated_at | timestamp with time zone | NO\n")
		// The NULL key is one key: a newer version of it updates the row.
		r2.Version, r2.Values = 2, []row.Value{dec(t, "8.10"), row.Int(1), row.Null, row.Null, row.Null}
		if err := s.Write(ctx, []changelog.Row{r2}); err != nil {
			t.Fatal(err)
		}
		commit(t, s, 2)
		check(t, dsn, "SELECT count(*), count(*) FILTER (WHERE store IS NULL), max(amount) FILTER (WHERE store IS NULL) FROM "+table, "3 | 1 | 8.10\n")
	})
}

// commit prepares and commits checkpoint id.
func commit(t testing.TB, s *Results, id int64) []byte {
	t.Helper()
	ctx := context.Background()
	p, err := s.Prepare(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, id, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// rowsText renders rows as batchText does.
func rowsText(rows []changelog.Row) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%s %d %d %v %d %v %d %d\n", r.Op, r.WindowStart, r.WindowEnd, valuesText(append(append([]row.Value{}, r.Key...), r.Values...)),
			r.Version, r.IsFinal, r.WatermarkAt, r.UpdatedAt)
	}
	return b.String()
}

// batchText renders a batch's entries, values with their kinds and exact
// text (decimals with their scale).
func batchText(bt *batch) string {
	var b strings.Builder
	for i, e := range bt.entries {
		fmt.Fprintf(&b, "%s %d %d %v %d %v %d %d\n", e.op, e.ws, e.we, valuesText(bt.values(i)), e.version, e.final, e.wm, e.upd)
	}
	return b.String()
}

func valuesText(vs []row.Value) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.Kind.String() + ":" + v.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

const selectRevenue = "SELECT store, revenue, orders, version, is_final, watermark_at FROM %s ORDER BY window_start, store"

// TestVersionGuard: an older version does not overwrite a row; an equal
// one rewrites it identically; a newer one replaces it.
func TestVersionGuard(t *testing.T) {
	bothMethods(t, func(t *testing.T, method int) {
		dsn, schema := testSchema(t)
		table := schema + ".revenue"
		s := newSink(t, dsn, table, revenue, Options{AtLeastOnce: true})
		s.method = method
		q := fmt.Sprintf(selectRevenue, table)
		a := row.Str("s-1")

		write(t, s, res(t, changelog.Insert, a, 2, "20.00", 1))
		want := "s-1 | 20.00 | 1 | 2 | f | 2026-09-01 10:01:30+09\n"
		check(t, dsn, q, want)
		write(t, s, res(t, changelog.UpdateAfter, a, 1, "99.99", 9)) // older
		check(t, dsn, q, want)
		write(t, s, res(t, changelog.UpdateAfter, a, 2, "20.00", 1)) // equal, same row
		check(t, dsn, q, want)
		up := res(t, changelog.UpdateAfter, a, 3, "35.50", 2)
		up.IsFinal, up.WatermarkAt = true, changelog.WatermarkInfinity
		write(t, s, res(t, changelog.UpdateBefore, a, 9, "0", 0), up) // update_before is skipped
		want = "s-1 | 35.50 | 2 | 3 | t | infinity\n"
		check(t, dsn, q, want)
		write(t, s, res(t, changelog.Insert, a, 1, "20.00", 1), res(t, changelog.UpdateAfter, a, 2, "99.99", 9))
		check(t, dsn, q, want)
	})
}

// TestSameKeyInOneBatch: several rows of one key in one transaction apply
// in order, including an older version after a newer one (a second round)
// and insert, delete, insert again.
func TestSameKeyInOneBatch(t *testing.T) {
	bothMethods(t, func(t *testing.T, method int) {
		dsn, schema := testSchema(t)
		table := schema + ".revenue"
		s := newSink(t, dsn, table, revenue, Options{AtLeastOnce: true})
		s.method = method
		a, b, c := row.Str("a"), row.Str("b"), row.Str("c")
		rows := []changelog.Row{
			res(t, changelog.Insert, a, 1, "1.0", 1),
			res(t, changelog.Insert, b, 1, "2.0", 1),
			res(t, changelog.UpdateAfter, a, 2, "1.5", 2),
			res(t, changelog.UpdateAfter, b, 3, "2.5", 3), // b: a lower version after a higher one
			res(t, changelog.UpdateAfter, b, 2, "2.2", 2),
			res(t, changelog.Insert, c, 4, "7.00", 1),
			res(t, changelog.Delete, c, 4, "7.00", 1), // not above 4: c stays (second round)
			res(t, changelog.Delete, c, 5, "7.00", 1),
			res(t, changelog.Insert, c, 6, "8.00", 2),
		}
		if err := s.Write(context.Background(), rows); err != nil {
			t.Fatal(err)
		}
		if s.stage.rounds != 2 {
			t.Errorf("rounds = %d, want 2", s.stage.rounds)
		}
		if err := s.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		check(t, dsn, "SELECT store, revenue, version FROM "+table+" ORDER BY store",
			"a | 1.5 | 2\nb | 2.5 | 3\nc | 8.00 | 6\n")
	})
}

// TestDeleteAndNullKeys: a delete removes a row of a lower version, NULL
// keys match NULL keys.
func TestDeleteAndNullKeys(t *testing.T) {
	bothMethods(t, func(t *testing.T, method int) {
		dsn, schema := testSchema(t)
		d := changelog.Desc{
			Stage:  "t",
			Key:    []changelog.Column{{Name: "store", Kind: row.KindString}, {Name: "region", Kind: row.KindInt}},
			Values: []changelog.Column{{Name: "n", Kind: row.KindInt}},
		}
		table := schema + ".t"
		s := newSink(t, dsn, table, d, Options{AtLeastOnce: true})
		s.method = method
		r := func(op changelog.Op, store, region row.Value, version uint64, n int64) changelog.Row {
			return changelog.Row{Op: op, WindowStart: 0, WindowEnd: 60000, Key: []row.Value{store, region},
				Values: []row.Value{row.Int(n)}, Version: version, WatermarkAt: changelog.WatermarkNone}
		}
		null, a, one := row.Null, row.Str("a"), row.Int(1)
		write(t, s,
			r(changelog.Insert, null, null, 1, 10),
			r(changelog.Insert, null, one, 1, 20),
			r(changelog.Insert, a, null, 1, 30),
			r(changelog.UpdateAfter, null, null, 2, 11),
		)
		q := "SELECT store, region, n, version, watermark_at FROM " + table + " ORDER BY store NULLS FIRST, region NULLS FIRST"
		check(t, dsn, q, "NULL | NULL | 11 | 2 | NULL\nNULL | 1 | 20 | 1 | NULL\na | NULL | 30 | 1 | NULL\n")
		write(t, s,
			r(changelog.Insert, null, null, 1, 99),
			r(changelog.UpdateAfter, null, one, 2, 21),
			r(changelog.Delete, a, null, 2, 0),
			r(changelog.Delete, null, null, 2, 0), // stale: version 2 is not < 2
		)
		check(t, dsn, q, "NULL | NULL | 11 | 2 | NULL\nNULL | 1 | 21 | 2 | NULL\n")
		write(t, s, r(changelog.Delete, null, null, 3, 0))
		check(t, dsn, q, "NULL | 1 | 21 | 2 | NULL\n")
	})
}

// TestCommitIsIdempotent: Commit(5) twice applies once; Commit(4) after 5
// changes nothing; the marker records 5.
func TestCommitIsIdempotent(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	s := newSink(t, dsn, table, revenue, Options{Pipeline: "p", Sink: "revenue"})
	q := fmt.Sprintf(selectRevenue, table)
	if err := s.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("a"), 1, "25000", 1)}); err != nil {
		t.Fatal(err)
	}
	p4, err := s.Prepare(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	check(t, dsn, q, "") // prepared, not published
	if err := s.Write(ctx, []changelog.Row{res(t, changelog.UpdateAfter, row.Str("a"), 2, "20000.00", 2)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil { // does nothing visible
		t.Fatal(err)
	}
	check(t, dsn, q, "")
	p5, err := s.Prepare(ctx, 5) // joins the rows prepared for 4
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 5, p5); err != nil {
		t.Fatal(err)
	}
	want := "a | 20000.00 | 2 | 2 | f | 2026-09-01 10:01:30+09\n"
	check(t, dsn, q, want)
	check(t, dsn, "SELECT pipeline, sink, checkpoint_id FROM "+schema+".tidemark_commits", "p | revenue | 5\n")

	// Remove the row behind the sink's back: a repeated Commit(5) would
	// bring it back, a no-op does not.
	exec(t, dsn, "DELETE FROM "+table)
	if err := s.Commit(ctx, 5, p5); err != nil {
		t.Fatal(err)
	}
	check(t, dsn, q, "")
	if err := s.Commit(ctx, 4, p4); err != nil {
		t.Fatal(err)
	}
	check(t, dsn, q, "")
	if id, err := s.CommittedID(ctx); err != nil || id != 5 {
		t.Fatalf("CommittedID = %d, %v; want 5", id, err)
	}
	check(t, dsn, "SELECT pipeline, sink, checkpoint_id FROM "+schema+".tidemark_commits", "p | revenue | 5\n")
}

// TestRecoverAfterCrashBetweenPrepareAndCommit: checkpoint 2 is written
// (Prepare returned p2) and the process dies before Commit(2). A new sink
// recovering with (2, p2) publishes the rows exactly once: recovering
// again (a crash during the restore) changes nothing.
func TestRecoverAfterCrashBetweenPrepareAndCommit(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	q := fmt.Sprintf(selectRevenue, table)
	o := Options{Pipeline: "p", Sink: "s"}

	s, err := New(ctx, dsn, table, revenue, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("a"), 1, "25000", 1)}); err != nil {
		t.Fatal(err)
	}
	commit(t, s, 1)
	if err := s.Write(ctx, []changelog.Row{
		res(t, changelog.UpdateAfter, row.Str("a"), 2, "20000", 2),
		res(t, changelog.Insert, row.Str("b"), 1, "7.50", 1),
	}); err != nil {
		t.Fatal(err)
	}
	p2, err := s.Prepare(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	// Rows after the checkpoint, lost in the crash.
	if err := s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("c"), 1, "1", 1)}); err != nil {
		t.Fatal(err)
	}
	s.Close(ctx) // the crash: no Commit(2)
	check(t, dsn, q, "a | 25000 | 1 | 1 | f | 2026-09-01 10:01:30+09\n")

	want := "a | 20000 | 2 | 2 | f | 2026-09-01 10:01:30+09\nb | 7.50 | 1 | 1 | f | 2026-09-01 10:01:30+09\n"
	s2 := newSink(t, dsn, table, revenue, o)
	if err := s2.Recover(ctx, 2, p2); err != nil {
		t.Fatal(err)
	}
	check(t, dsn, q, want)
	exec(t, dsn, "DELETE FROM "+table+" WHERE store = 'b'")
	s3 := newSink(t, dsn, table, revenue, o)
	if err := s3.Recover(ctx, 2, p2); err != nil {
		t.Fatal(err)
	}
	check(t, dsn, q, "a | 20000 | 2 | 2 | f | 2026-09-01 10:01:30+09\n") // not published twice
	check(t, dsn, "SELECT checkpoint_id FROM "+schema+".tidemark_commits", "2\n")

	// Staged rows are discarded by Recover; the next checkpoint carries on.
	if err := s3.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("z"), 1, "1", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := s3.Recover(ctx, 2, p2); err != nil {
		t.Fatal(err)
	}
	if err := s3.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("c"), 1, "3.0", 1)}); err != nil {
		t.Fatal(err)
	}
	commit(t, s3, 3)
	check(t, dsn, "SELECT store, revenue FROM "+table+" ORDER BY store", "a | 20000\nc | 3.0\n")
	check(t, dsn, "SELECT checkpoint_id FROM "+schema+".tidemark_commits", "3\n")
}

// TestRecoverFreshStart: Recover(0, nil) forgets the marker, and with
// Fresh the rows of earlier runs (in a table tidemark created); without
// Fresh the rows stay.
func TestRecoverFreshStart(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	markers := "SELECT pipeline, sink, checkpoint_id FROM " + schema + ".tidemark_commits ORDER BY sink"
	run := func(o Options, id int64) *Results {
		s := newSink(t, dsn, table, revenue, o)
		if err := s.Recover(ctx, 0, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str(o.Sink), 1, "1", 1)}); err != nil {
			t.Fatal(err)
		}
		commit(t, s, id)
		return s
	}
	run(Options{Pipeline: "p", Sink: "a"}, 7)
	run(Options{Pipeline: "p", Sink: "b"}, 9)
	check(t, dsn, markers, "p | a | 7\np | b | 9\n")

	s := newSink(t, dsn, table, revenue, Options{Pipeline: "p", Sink: "a"})
	if err := s.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	check(t, dsn, markers, "p | b | 9\n")
	check(t, dsn, "SELECT store FROM "+table+" ORDER BY store", "a\nb\n")
	commit(t, s, 1) // a fresh run starts again at checkpoint 1
	check(t, dsn, markers, "p | a | 1\np | b | 9\n")

	s = newSink(t, dsn, table, revenue, Options{Pipeline: "p", Sink: "b", Fresh: true})
	if err := s.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	check(t, dsn, markers, "p | a | 1\n")
	check(t, dsn, "SELECT count(*) FROM "+table, "0\n")

	if err := s.Recover(ctx, 0, []byte{1}); err == nil {
		t.Fatal("Recover(0, prepared): no error")
	}
}

// TestAtLeastOnce: Flush publishes, Fresh deletes the old rows in the
// first Flush, and the Committer methods refuse.
func TestAtLeastOnce(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	q := "SELECT store, revenue FROM " + table + " ORDER BY store"
	s := newSink(t, dsn, table, revenue, Options{AtLeastOnce: true})
	write(t, s, res(t, changelog.Insert, row.Str("a"), 5, "1.00", 1))
	if _, err := s.Prepare(ctx, 1); !errors.Is(err, ErrAtLeastOnce) {
		t.Fatalf("Prepare: %v", err)
	}
	if err := s.Commit(ctx, 1, nil); !errors.Is(err, ErrAtLeastOnce) {
		t.Fatalf("Commit: %v", err)
	}
	if err := s.Recover(ctx, 0, nil); !errors.Is(err, ErrAtLeastOnce) {
		t.Fatalf("Recover: %v", err)
	}
	if err := s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("b"), 1, "2", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil { // Close flushes
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Write(ctx, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	check(t, dsn, q, "a | 1.00\nb | 2\n")

	s = newSink(t, dsn, table, revenue, Options{AtLeastOnce: true, Fresh: true})
	write(t, s, res(t, changelog.Insert, row.Str("a"), 1, "3.00", 1)) // version 1 < 5: kept only thanks to Fresh
	check(t, dsn, q, "a | 3.00\n")
	write(t, s, res(t, changelog.Insert, row.Str("c"), 1, "4", 1)) // Fresh empties once
	check(t, dsn, q, "a | 3.00\nc | 4\n")
}

// TestSchemaMismatch: an existing table with other columns or another key
// is reported with every difference.
func TestSchemaMismatch(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	newSink(t, dsn, table, revenue, Options{}).Close(ctx)

	other := changelog.Desc{
		Stage:  "revenue",
		Key:    []changelog.Column{{Name: "store", Kind: row.KindString}, {Name: "region", Kind: row.KindString}},
		Values: []changelog.Column{{Name: "revenue", Kind: row.KindInt}, {Name: "refunds", Kind: row.KindDecimal}},
	}
	_, err := New(ctx, dsn, table, other, Options{})
	var se *SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want a *SchemaError", err)
	}
	if got := fmt.Sprint(se.Missing, se.Extra, se.Types, se.Key, se.WantKey); got !=
		"[region refunds] [orders] [revenue: table has numeric, sink needs bigint] true [window_start store region]" {
		t.Fatalf("got %s", got)
	}
	for _, part := range []string{`table "` + table + `"`, "missing columns region, refunds", "extra columns orders", "no unique key on (window_start, store, region)"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q lacks %q", err, part)
		}
	}
	// A table of the user's whose unique key treats NULLs as distinct is
	// used, but a row with a NULL key is refused, naming the row: it would
	// be inserted again at every update.
	exec(t, dsn, "CREATE TABLE "+schema+".plain (window_start timestamptz NOT NULL, window_end timestamptz NOT NULL, store text, revenue numeric, orders bigint, "+
		"version bigint NOT NULL, is_final boolean NOT NULL, watermark_at timestamptz, updated_at timestamptz NOT NULL, UNIQUE (window_start, store))")
	s := newSink(t, dsn, schema+".plain", revenue, Options{AtLeastOnce: true})
	err = s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Null, 1, "1", 1)})
	if want := "postgres " + schema + ".plain: row window_start=2026-09-01T10:00:00+09:00 store=NULL: key column store is NULL, and the unique constraint of table " + schema + ".plain treats NULLs as distinct"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("NULL key: %v\nwant %s…", err, want)
	}
	write(t, s, res(t, changelog.Insert, row.Str("a"), 1, "1", 1))
	check(t, dsn, "SELECT store, revenue FROM "+schema+".plain", "a | 1\n")
}

// TestNamesAndErrors: quoted names with odd characters work; bad names,
// zones and rows are refused.
func TestNamesAndErrors(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	d := changelog.Desc{
		Stage:  "q",
		Key:    []changelog.Column{{Name: `store "id"`, Kind: row.KindString}},
		Values: []changelog.Column{{Name: "select", Kind: row.KindInt}, {Name: "N", Kind: row.KindInt}, {Name: "n", Kind: row.KindInt}},
	}
	table := schema + `.my "table".x`
	s := newSink(t, dsn, table, d, Options{})
	if err := s.Write(ctx, []changelog.Row{{Op: changelog.Insert, Key: []row.Value{row.Str("x")}, Values: []row.Value{row.Int(1), row.Int(2), row.Int(3)}, Version: 1}}); err != nil {
		t.Fatal(err)
	}
	commit(t, s, 1)
	check(t, dsn, `SELECT "store ""id""", "select", "N", n FROM `+quote(schema)+`."my ""table"".x"`, "x | 1 | 2 | 3\n")

	for _, c := range []struct {
		table string
		d     changelog.Desc
		want  string
	}{
		{schema + ".t", changelog.Desc{Stage: "s", Values: []changelog.Column{{Name: "version", Kind: row.KindInt}}}, `column "version" appears twice`},
		{schema + ".t", changelog.Desc{Stage: "s", Timezone: "Not/AZone"}, "timezone"},
		{schema + "." + strings.Repeat("x", 64), changelog.Desc{Stage: "s"}, "longer than 63 bytes"},
		{"", changelog.Desc{Stage: "s"}, "empty table name"},
		{schema + ".t", changelog.Desc{}, "Options.Pipeline is empty"},
	} {
		if _, err := New(ctx, dsn, c.table, c.d, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%q, %+v): %v, want an error containing %q", c.table, c.d, err, c.want)
		}
	}

	r := newSink(t, dsn, schema+".revenue", revenue, Options{})
	good := res(t, changelog.Insert, row.Str("a"), 1, "1", 1)
	bad := res(t, changelog.Insert, row.Int(5), 1, "1", 1)
	if err := r.Write(ctx, []changelog.Row{good, bad}); err == nil || !strings.Contains(err.Error(), `column "store" is string, value is int`) {
		t.Fatalf("got %v", err)
	}
	short := good
	short.Values = short.Values[:1]
	if err := r.Write(ctx, []changelog.Row{short}); err == nil || !strings.Contains(err.Error(), "1 value columns") {
		t.Fatalf("got %v", err)
	}
	huge := good
	huge.Version = 1 << 63
	if err := r.Write(ctx, []changelog.Row{huge}); err == nil || !strings.Contains(err.Error(), "bigint range") {
		t.Fatalf("got %v", err)
	}
	if p, err := r.Prepare(ctx, 1); err != nil || p != nil {
		t.Fatalf("Prepare after failed writes: %v, %d bytes; want nothing staged", err, len(p))
	}
	if err := r.Commit(ctx, 2, []byte{9, 9}); err == nil || !strings.Contains(err.Error(), "section version 9") {
		t.Fatalf("corrupt prepared: %v", err)
	}
}

// TestPreparedEncodingRejectsOtherColumns: prepared rows of another table
// shape are refused, and truncated ones are reported.
func TestPreparedEncodingRejectsOtherColumns(t *testing.T) {
	cols, err := resultColumns(&revenue)
	if err != nil {
		t.Fatal(err)
	}
	b := newBatch(cols, 1)
	r := res(t, changelog.Insert, row.Str("a"), 1, "1.50", 1)
	b.add(&r)
	p := b.encode(nil)

	other := changelog.Desc{Key: revenue.Key, Values: revenue.Values[:1]}
	ocols, _ := resultColumns(&other)
	if err := newBatch(ocols, 1).decode(p); err == nil || !strings.Contains(err.Error(), "1 key and 2 value columns, table has 1 and 1") {
		t.Fatalf("got %v", err)
	}
	for n := 0; n < len(p); n++ {
		if err := newBatch(cols, 1).decode(p[:n]); err == nil {
			t.Fatalf("decode of %d of %d bytes: no error", n, len(p))
		}
	}
	if err := newBatch(cols, 1).decode(append(p, 0)); err == nil {
		t.Fatal("trailing byte: no error")
	}
}

// TestReconnectsAfterConnectionLoss: when the server ends the sink's
// connection (pg_terminate_backend) between Prepare and Commit, Commit
// reconnects (recreating the staging table) and commits: a dropped
// connection is retried, not a failed run.
func TestReconnectsAfterConnectionLoss(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	s := newSink(t, dsn, table, revenue, Options{})
	var waits []time.Duration
	s.x.fast(&waits)
	if err := s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("a"), 1, "1.10", 1)}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Prepare(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, dsn, fmt.Sprintf("SELECT pg_terminate_backend(%d)", s.x.pid()))
	if err := s.Commit(ctx, 1, p); err != nil {
		t.Fatalf("Commit on a terminated connection: %v", err)
	}
	if fmt.Sprint(waits) != "[250ms]" {
		t.Errorf("waits %v, want one retry after 250ms", waits)
	}
	check(t, dsn, "SELECT store, revenue FROM "+table, "a | 1.10\n")
	check(t, dsn, "SELECT checkpoint_id FROM "+schema+".tidemark_commits", "1\n")
}

// TestRecoverRewindsANewerMarker: the marker records checkpoint 3, but
// checkpoint 3 proved unusable and the run restores 2: Recover(2) sets the
// marker back to 2 (keeping the rows), so that the replayed checkpoint 3
// commits instead of being skipped.
func TestRecoverRewindsANewerMarker(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	marker := "SELECT checkpoint_id FROM " + schema + ".tidemark_commits"
	q := "SELECT store, revenue, version FROM " + table + " ORDER BY store"
	o := Options{Pipeline: "p"}
	s := newSink(t, dsn, table, revenue, o)
	if err := s.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	var p2 []byte
	for id := int64(1); id <= 3; id++ {
		if err := s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str(fmt.Sprint("s", id)), 1, "1", 1)}); err != nil {
			t.Fatal(err)
		}
		p := commit(t, s, id)
		if id == 2 {
			p2 = p
		}
	}
	check(t, dsn, marker, "3\n")
	s2 := newSink(t, dsn, table, revenue, o)
	if err := s2.Recover(ctx, 2, p2); err != nil {
		t.Fatal(err)
	}
	check(t, dsn, marker, "2\n")
	check(t, dsn, q, "s1 | 1 | 1\ns2 | 1 | 1\ns3 | 1 | 1\n")
	// The replayed checkpoint 3 differs (processing time from the wall
	// clock, say): it is committed.
	if err := s2.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("s3"), 1, "3.5", 1)}); err != nil {
		t.Fatal(err)
	}
	commit(t, s2, 3)
	check(t, dsn, marker, "3\n")
	check(t, dsn, q, "s1 | 1 | 1\ns2 | 1 | 1\ns3 | 3.5 | 1\n")
}

// TestConcurrentCreate: sinks that several processes open at once on a
// fresh schema (the tasks of a group's instances, each with its own
// commit marker) all open: the tables are created once, one after the
// other. Concurrent CREATE TABLE IF NOT EXISTS failed one of them with
// "duplicate key value violates unique constraint
// pg_type_typname_nsp_index".
func TestConcurrentCreate(t *testing.T) {
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	const n = 8
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := New(context.Background(), dsn, table, revenue, Options{Sink: fmt.Sprintf("revenue@task-%d", i)})
			if err == nil {
				s.Close(context.Background())
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestAbortKeepsTheTable: an at-least-once sink of a run from the start
// (Fresh) that is aborted — the run's start was refused after it opened —
// neither empties the table nor writes its buffered rows; closed, it
// would have done both. A table the aborted sink created, still empty, is
// dropped.
func TestAbortKeepsTheTable(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	q := `SELECT store, revenue FROM ` + table + ` ORDER BY store`
	s := newSink(t, dsn, table, revenue, Options{AtLeastOnce: true, Fresh: true})
	write(t, s, res(t, changelog.Insert, row.Str("a"), 1, "1", 1))
	s.Close(ctx)
	check(t, dsn, q, "a | 1\n")

	s = newSink(t, dsn, table, revenue, Options{AtLeastOnce: true, Fresh: true})
	if err := s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("b"), 1, "2", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort(ctx); err != nil {
		t.Fatalf("second Abort: %v", err)
	}
	check(t, dsn, q, "a | 1\n")

	r := newRecords(t, dsn, schema+".late", RecordsOptions{Pipeline: "p", AtLeastOnce: true, Fresh: true})
	if err := r.WriteRecord(ctx, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := r.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	// The records table did not exist: its sink created it, and the
	// aborted start leaves none (nor its record in tidemark_tables), so
	// that a corrected pipeline finds no table of a layout it would be
	// refused.
	check(t, dsn, `SELECT to_regclass('`+schema+`.late') IS NULL, (SELECT count(*) FROM `+schema+`.tidemark_tables WHERE table_name = 'late')`, "t | 0\n")
	s = newSink(t, dsn, schema+".fresh", revenue, Options{Pipeline: "p"})
	if err := s.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	check(t, dsn, `SELECT to_regclass('`+schema+`.fresh') IS NULL, (SELECT count(*) FROM `+schema+`.tidemark_tables WHERE table_name = 'fresh')`, "t | 0\n")
	// One that holds rows stays, also when this sink created it.
	s = newSink(t, dsn, schema+".kept", revenue, Options{Pipeline: "p", AtLeastOnce: true})
	write(t, s, res(t, changelog.Insert, row.Str("c"), 1, "3", 1))
	if err := s.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	check(t, dsn, `SELECT store, revenue FROM `+schema+`.kept`, "c | 3\n")
}
