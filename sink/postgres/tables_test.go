package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// articleDDL is the first source article's dashboard table, as written
// there (the table name aside).
const articleDDL = `CREATE TABLE %s (
    window_start timestamptz NOT NULL,
    window_end timestamptz NOT NULL,
    store_id text NOT NULL,
    currency text NOT NULL,
    order_count bigint NOT NULL,
    revenue_amount numeric(18, 2) NOT NULL,
    source_event_count bigint NOT NULL,
    version bigint NOT NULL,
    is_final boolean NOT NULL,
    watermark_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (window_start, store_id, currency)
)`

// articleDesc is a pipeline writing the article's table, with the lineage
// column tidemark run adds.
var articleDesc = changelog.Desc{
	Stage: "revenue_minute",
	Key:   []changelog.Column{{Name: "store_id", Kind: row.KindString}, {Name: "currency", Kind: row.KindString}},
	Values: []changelog.Column{
		{Name: "order_count", Kind: row.KindInt},
		{Name: "revenue_amount", Kind: row.KindDecimal},
		{Name: "source_event_count", Kind: row.KindInt},
		{Name: "lineage", Kind: row.KindString},
	},
	Timezone: "Asia/Seoul",
}

// articleRow is a result row of store/KRW for the 10:00 (Seoul) minute.
func articleRow(t testing.TB, store string, version uint64, amount string, orders int64) changelog.Row {
	return changelog.Row{
		Op:          changelog.Insert,
		WindowStart: ms(t, "2026-09-01T01:00:00Z"),
		WindowEnd:   ms(t, "2026-09-01T01:01:00Z"),
		Key:         []row.Value{row.Str(store), row.Str("KRW")},
		Values:      []row.Value{row.Int(orders), dec(t, amount), row.Int(orders), row.Str("pipeline=revenue_minute;spec=x")},
		Version:     version,
		IsFinal:     true,
		WatermarkAt: ms(t, "2026-09-01T01:03:00Z"),
		UpdatedAt:   ms(t, "2026-09-01T01:03:01Z"),
	}
}

// layoutQuery prints a table's columns (name, type, NOT NULL) and
// constraints, to show it was left as it was.
func layoutQuery(table string) string {
	return `SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END, ', ' ORDER BY a.attnum)
  || ' | ' || (SELECT string_agg(pg_get_constraintdef(c.oid), ', ') FROM pg_constraint c WHERE c.conrelid = '` + table + `'::regclass)
FROM pg_attribute a WHERE a.attrelid = '` + table + `'::regclass AND a.attnum > 0 AND NOT a.attisdropped`
}

const articleLayout = "window_start timestamp with time zone NOT NULL, window_end timestamp with time zone NOT NULL, store_id text NOT NULL, currency text NOT NULL, " +
	"order_count bigint NOT NULL, revenue_amount numeric(18,2) NOT NULL, source_event_count bigint NOT NULL, version bigint NOT NULL, is_final boolean NOT NULL, " +
	"watermark_at timestamp with time zone NOT NULL, updated_at timestamp with time zone NOT NULL | PRIMARY KEY (window_start, store_id, currency)\n"

// TestArticleTableUsedAsItIs: a fresh run into the first article's table,
// created by hand with one row inserted by hand, keeps the table exactly
// as it is (numeric(18,2), the primary key, NOT NULL, no lineage column),
// keeps the hand-made row, and puts the results in the user's columns; the
// summary note says the rows were kept. (Before, the run dropped the
// table, the row with it, and created its own.)
func TestArticleTableUsedAsItIs(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue_minute"
	exec(t, dsn, fmt.Sprintf(articleDDL, table),
		"INSERT INTO "+table+" VALUES ('2026-09-01 09:00+09', '2026-09-01 09:01+09', 'S0', 'KRW', 3, 1500.50, 3, 1, true, '2026-09-01 09:03+09', '2026-09-01 09:03:01+09')")
	for run := 1; run <= 2; run++ {
		s := newSink(t, dsn, table, articleDesc, Options{Pipeline: "revenue_minute", Fresh: true, Lineage: "lineage"})
		if err := s.Recover(ctx, 0, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, []changelog.Row{articleRow(t, "S1", 1, "25000", 1), articleRow(t, "S1", 2, "20000", 2), articleRow(t, "S2", 1, "700.5", 1)}); err != nil {
			t.Fatal(err)
		}
		commit(t, s, 1)
		want := []string{"kept the 1 rows already in table " + table + ", which tidemark did not create: a row there is replaced only by a version at least as high as its own"}
		if run == 2 {
			want[0] = strings.Replace(want[0], "kept the 1 rows", "kept the 3 rows", 1)
		}
		if got := s.Notes(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("run %d: notes %q, want %q", run, got, want)
		}
		s.Close(ctx)
		check(t, dsn, layoutQuery(table), articleLayout)
		check(t, dsn, "SELECT window_start, store_id, currency, order_count, revenue_amount, source_event_count, version, is_final, watermark_at FROM "+table+" ORDER BY window_start, store_id",
			"2026-09-01 09:00:00+09 | S0 | KRW | 3 | 1500.50 | 3 | 1 | t | 2026-09-01 09:03:00+09\n"+
				"2026-09-01 10:00:00+09 | S1 | KRW | 2 | 20000.00 | 2 | 2 | t | 2026-09-01 10:03:00+09\n"+
				"2026-09-01 10:00:00+09 | S2 | KRW | 1 | 700.50 | 1 | 1 | t | 2026-09-01 10:03:00+09\n")
	}
	check(t, dsn, "SELECT count(*) FROM "+schema+".tidemark_tables", "0\n")
}

// TestValueThatDoesNotFitIsAnError: a value numeric(18,2) would round, one
// with too many digits, and a NULL in a NOT NULL column are refused when
// written, naming the row and the column; nothing reaches the table.
func TestValueThatDoesNotFitIsAnError(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue_minute"
	exec(t, dsn, fmt.Sprintf(articleDDL, table))
	s := newSink(t, dsn, table, articleDesc, Options{Pipeline: "p", Lineage: "lineage", AtLeastOnce: true})
	where := "postgres " + table + ": row window_start=2026-09-01T10:00:00+09:00 store_id=S1 currency=KRW: "
	noWatermark := articleRow(t, "S1", 1, "1", 1)
	noWatermark.WatermarkAt = changelog.WatermarkNone
	nullSum := articleRow(t, "S1", 1, "1", 1)
	nullSum.Values[1] = row.Null
	for _, c := range []struct {
		row  changelog.Row
		want string
	}{
		{articleRow(t, "S1", 1, "20000.005", 1), "column revenue_amount (numeric(18,2)): 20000.005 has 3 decimal places and numeric(18,2) keeps 2: PostgreSQL would round it"},
		{articleRow(t, "S1", 1, "12345678901234567", 1), "column revenue_amount (numeric(18,2)): 12345678901234567 has 17 digits before the decimal point and numeric(18,2) allows 16"},
		{nullSum, "column revenue_amount (numeric(18,2)): the value is NULL and the column is NOT NULL"},
		{noWatermark, "column watermark_at (timestamp with time zone): the value is NULL and the column is NOT NULL"},
	} {
		if err := s.Write(ctx, []changelog.Row{articleRow(t, "S9", 1, "1", 1), c.row}); err == nil || err.Error() != where+c.want {
			t.Errorf("got %v\nwant %s", err, where+c.want)
		}
	}
	// Trailing zeros beyond the scale lose nothing: 20000.500 is 20000.50.
	if err := s.Write(ctx, []changelog.Row{articleRow(t, "S1", 1, "20000.500", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	check(t, dsn, "SELECT store_id, revenue_amount FROM "+table, "S1 | 20000.50\n") // S9 of the refused writes is not there
}

// TestUserTableThatCannotTakeTheRows: a table of the user's with a
// missing column, a column of another type, a NOT NULL column without a
// default that the pipeline does not write, and no key is refused before
// anything is written, naming each problem — and kept as it is, even with
// replace.
func TestUserTableThatCannotTakeTheRows(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue_minute"
	exec(t, dsn, "CREATE TABLE "+table+` (window_start timestamptz NOT NULL, window_end timestamptz NOT NULL, store_id text NOT NULL, currency varchar(3) NOT NULL,
  order_count integer NOT NULL, revenue_amount text, version bigint NOT NULL, is_final boolean NOT NULL, watermark_at timestamptz, updated_at timestamptz NOT NULL,
  note text NOT NULL, id bigint GENERATED ALWAYS AS IDENTITY)`,
		"INSERT INTO "+table+" (window_start, window_end, store_id, currency, order_count, revenue_amount, version, is_final, updated_at, note) VALUES (now(), now(), 'S0', 'KRW', 1, '1', 1, true, now(), 'mine')")
	_, err := New(ctx, dsn, table, articleDesc, Options{Pipeline: "p", Lineage: "lineage", Fresh: true, ReplaceLayout: true})
	var se *SchemaError
	if !errors.As(err, &se) || se.Owned {
		t.Fatalf("got %v, want a *SchemaError of a table tidemark did not create", err)
	}
	want := `postgres ` + table + `: table "` + table + `" cannot take the pipeline's rows (tidemark did not create it, so it uses it as it is and never drops or empties it): ` +
		`missing columns source_event_count (bigint); ` +
		`column revenue_amount is text; the pipeline writes decimal values (needs numeric or numeric(p,s)); ` +
		`column note is NOT NULL without a default, and the pipeline does not write it (give it a default, or drop NOT NULL); ` +
		`no primary key or unique constraint on (window_start, store_id, currency): the upsert needs one (ALTER TABLE ` + table + ` ADD PRIMARY KEY ("window_start", "store_id", "currency"), or UNIQUE NULLS NOT DISTINCT when a key may be NULL). ` +
		`Change the table, or write to another one (tidemark creates a table that does not exist)`
	if err.Error() != want {
		t.Fatalf("got  %s\nwant %s", err, want)
	}
	check(t, dsn, "SELECT store_id, note FROM "+table, "S0 | mine\n")
}

// TestOwnedTableOfAnotherLayout: a table tidemark created whose layout no
// longer matches is refused, naming the differences and the key replace;
// replace does not act on a resumed run; at a fresh start with replace
// the table is replaced and the summary says so with the rows dropped; a
// serving view on it makes replace refuse, naming the view (not a raw
// SQLSTATE 2BP01).
func TestOwnedTableOfAnotherLayout(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue__live"
	s := newSink(t, dsn, table, revenue, Options{Pipeline: "p"})
	s.Recover(ctx, 0, nil)
	s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("a"), 1, "1", 1), res(t, changelog.Insert, row.Str("b"), 1, "2", 1)})
	commit(t, s, 1)
	s.Close(ctx)
	other := changelog.Desc{Stage: "p", Timezone: "Asia/Seoul",
		Key:    []changelog.Column{{Name: "store", Kind: row.KindString}},
		Values: []changelog.Column{{Name: "revenue", Kind: row.KindDecimal}, {Name: "refunds", Kind: row.KindDecimal}}}
	diff := "missing columns refunds; extra columns orders"
	_, err := New(ctx, dsn, table, other, Options{Pipeline: "p", Fresh: true})
	if want := `postgres ` + table + `: table "` + table + `", which tidemark created, has another layout than the pipeline writes: ` + diff +
		` (set replace: true on the sink to drop it and create it anew at a fresh start, or write to another table)`; err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	if _, err := New(ctx, dsn, table, other, Options{Pipeline: "p", ReplaceLayout: true, Resume: true}); err == nil ||
		!strings.HasSuffix(err.Error(), "; the run resumes a checkpoint, and replace: true replaces a table only at a fresh start") {
		t.Fatalf("replace on a resumed run: %v", err)
	}
	exec(t, dsn, "CREATE VIEW "+schema+".revenue AS SELECT * FROM "+table)
	_, err = New(ctx, dsn, table, other, Options{Pipeline: "p", Fresh: true, ReplaceLayout: true})
	var ve *ViewDependsError
	if !errors.As(err, &ve) || fmt.Sprint(ve.Views) != "["+schema+".revenue]" || strings.Contains(err.Error(), "2BP01") ||
		!strings.Contains(err.Error(), "table "+table+" cannot be replaced: the view "+schema+".revenue depends on it") ||
		!strings.Contains(err.Error(), "Drop the view (DROP VIEW "+schema+".revenue), run again, and promote the new table") {
		t.Fatalf("with a view: %v", err)
	}
	check(t, dsn, "SELECT count(*) FROM "+schema+".revenue", "2\n")
	exec(t, dsn, "DROP VIEW "+schema+".revenue")

	s = newSink(t, dsn, table, other, Options{Pipeline: "p", Fresh: true, ReplaceLayout: true})
	if want := "[replaced table " + table + ", which tidemark created, of another layout (" + diff + "): 2 rows dropped]"; fmt.Sprint(s.Notes()) != want {
		t.Fatalf("notes %q, want %s", s.Notes(), want)
	}
	check(t, dsn, "SELECT count(*) FROM "+table, "0\n")
	check(t, dsn, "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = '"+table+"'::regclass AND attnum > 0",
		"window_start,window_end,store,revenue,refunds,version,is_final,watermark_at,updated_at\n")
	s.Close(ctx)
	// The new table is tidemark's too: a fresh run empties it.
	s = newSink(t, dsn, table, other, Options{Pipeline: "p", Fresh: true})
	if err := s.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	if want := "[emptied table " + table + ", which tidemark created, for this fresh start: 0 rows of earlier runs removed]"; fmt.Sprint(s.Notes()) != want {
		t.Fatalf("notes %q", s.Notes())
	}
}

// TestFreshStartEmptiesOnlyItsOwnTable: a fresh run deletes the rows of a
// table tidemark created and says how many; a table of the same name that
// someone dropped and created again is not tidemark's (another oid), and
// its rows stay.
func TestFreshStartEmptiesOnlyItsOwnTable(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	fresh := func() *Results {
		s := newSink(t, dsn, table, revenue, Options{Pipeline: "p", Fresh: true})
		if err := s.Recover(ctx, 0, nil); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := fresh()
	if len(s.Notes()) != 0 {
		t.Errorf("a table just created: notes %q", s.Notes())
	}
	s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("a"), 1, "1", 1), res(t, changelog.Insert, row.Str("b"), 1, "2", 1)})
	commit(t, s, 1)
	s = fresh()
	if want := "[emptied table " + table + ", which tidemark created, for this fresh start: 2 rows of earlier runs removed]"; fmt.Sprint(s.Notes()) != want {
		t.Fatalf("notes %q, want %s", s.Notes(), want)
	}
	check(t, dsn, "SELECT count(*) FROM "+table, "0\n")
	s.Close(ctx)

	exec(t, dsn, "DROP TABLE "+table,
		"CREATE TABLE "+table+" (window_start timestamptz NOT NULL, window_end timestamptz NOT NULL, store text, revenue numeric, orders bigint, "+
			"version bigint NOT NULL, is_final boolean NOT NULL, watermark_at timestamptz, updated_at timestamptz NOT NULL, UNIQUE NULLS NOT DISTINCT (window_start, store))",
		"INSERT INTO "+table+" VALUES ('2026-09-01 09:00+09', '2026-09-01 09:01+09', 'mine', 5, 1, 1, true, NULL, now())")
	s = fresh()
	if want := "[kept the 1 rows already in table " + table + ", which tidemark did not create: a row there is replaced only by a version at least as high as its own]"; fmt.Sprint(s.Notes()) != want {
		t.Fatalf("notes %q, want %s", s.Notes(), want)
	}
	check(t, dsn, "SELECT store, revenue FROM "+table, "mine | 5\n")
}

// TestTableDroppedWhileDown: the checkpoint says rows were committed to a
// table that is gone; the restore is an error naming the table and the
// checkpoint, not a new empty table.
func TestTableDroppedWhileDown(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	s := newSink(t, dsn, table, revenue, Options{Pipeline: "p", Fresh: true})
	s.Recover(ctx, 0, nil)
	s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("a"), 1, "1", 1)})
	p := commit(t, s, 1)
	s.Close(ctx)
	exec(t, dsn, "DROP TABLE "+table)

	_, err := New(ctx, dsn, table, revenue, Options{Pipeline: "p", Resume: true})
	var me *MissingTableError
	if !errors.As(err, &me) || me.Marker != 1 {
		t.Fatalf("Resume: got %v", err)
	}
	if want := "postgres " + table + ": table " + table + " does not exist, but the run resumes from a checkpoint whose rows were committed to it (its commit marker in tidemark_commits records checkpoint 1): " +
		"it was dropped or renamed while the pipeline was down. Restore the table (or rename it back), or recompute from the start of the input with an empty checkpoint directory; tidemark does not create it anew empty"; err.Error() != want {
		t.Fatalf("got  %s\nwant %s", err, want)
	}
	check(t, dsn, "SELECT to_regclass('"+table+"') IS NULL", "t\n")

	// Without Resume the sink creates the table, and Recover of the
	// checkpoint refuses it, dropping it again.
	s = newSink(t, dsn, table, revenue, Options{Pipeline: "p"})
	err = s.Recover(ctx, 1, p)
	if !errors.As(err, &me) || me.Checkpoint != 1 || me.Marker != 1 || !strings.Contains(err.Error(), "the run resumes from checkpoint 1 whose rows were committed to it") {
		t.Fatalf("Recover: got %v", err)
	}
	check(t, dsn, "SELECT to_regclass('"+table+"') IS NULL", "t\n")
}

// TestLineageColumn: a table the sink creates has the lineage column; a
// table of the user's without one gets none (and takes the rows); with
// NoLineage neither has it.
func TestLineageColumn(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	d := revenue
	d.Values = append(append([]changelog.Column(nil), revenue.Values...), changelog.Column{Name: "lineage", Kind: row.KindString})
	lin := func(r changelog.Row) changelog.Row {
		r.Values = append(append([]row.Value(nil), r.Values...), row.Str("pipeline=p"))
		return r
	}
	cols := func(table string) string {
		return dump(t, dsn, "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = '"+table+"'::regclass AND attnum > 0")
	}
	s := newSink(t, dsn, schema+".made", d, Options{Pipeline: "p", AtLeastOnce: true, Lineage: "lineage"})
	write(t, s, lin(res(t, changelog.Insert, row.Str("a"), 1, "1", 1)))
	check(t, dsn, "SELECT store, lineage FROM "+schema+".made", "a | pipeline=p\n")
	if got := cols(schema + ".made"); got != "window_start,window_end,store,revenue,orders,lineage,version,is_final,watermark_at,updated_at\n" {
		t.Errorf("created: %s", got)
	}
	s = newSink(t, dsn, schema+".off", d, Options{Pipeline: "p", AtLeastOnce: true, Lineage: "lineage", NoLineage: true})
	write(t, s, lin(res(t, changelog.Insert, row.Str("a"), 1, "1", 1)))
	if got := cols(schema + ".off"); got != "window_start,window_end,store,revenue,orders,version,is_final,watermark_at,updated_at\n" {
		t.Errorf("NoLineage: %s", got)
	}
	exec(t, dsn, "CREATE TABLE "+schema+".mine (window_start timestamptz NOT NULL, window_end timestamptz NOT NULL, store text PRIMARY KEY, revenue numeric, orders bigint, "+
		"version bigint NOT NULL, is_final boolean NOT NULL, watermark_at timestamptz, updated_at timestamptz NOT NULL, UNIQUE (window_start, store))")
	s = newSink(t, dsn, schema+".mine", d, Options{Pipeline: "p", AtLeastOnce: true, Lineage: "lineage"})
	write(t, s, lin(res(t, changelog.Insert, row.Str("a"), 1, "1.5", 1)))
	check(t, dsn, "SELECT store, revenue FROM "+schema+".mine", "a | 1.5\n")
	s.Close(ctx)
}

// TestOwnedTableWithoutItsKey: a table tidemark created whose unique key
// someone dropped has another layout: the upsert would fail on every
// row (or, with a key of other columns, replace the wrong ones), so the
// run is refused before writing, naming the key it needs, as for a column
// that changed.
func TestOwnedTableWithoutItsKey(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	s := newSink(t, dsn, table, revenue, Options{Pipeline: "p", Fresh: true})
	s.Close(ctx)
	name := dump(t, dsn, "SELECT conname FROM pg_constraint WHERE conrelid = '"+table+"'::regclass AND contype = 'u'")
	exec(t, dsn, "ALTER TABLE "+table+" DROP CONSTRAINT "+strings.TrimSpace(name))
	_, err := New(ctx, dsn, table, revenue, Options{Pipeline: "p", Fresh: true})
	var se *SchemaError
	if want := `postgres ` + table + `: table "` + table + `", which tidemark created, has another layout than the pipeline writes: no unique key on (window_start, store)` +
		` (set replace: true on the sink to drop it and create it anew at a fresh start, or write to another table)`; !errors.As(err, &se) || !se.Owned || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}
