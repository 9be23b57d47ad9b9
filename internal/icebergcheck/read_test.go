package icebergcheck

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/internal/icebergread"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink/iceberg"
)

func dec(s string) row.Value {
	d, err := row.ParseDecimal([]byte(s))
	if err != nil {
		panic(err)
	}
	return row.Dec(d)
}

const hour = int64(3_600_000)

// TestIcebergGoReadsTheTable writes a table with every column kind,
// updates, a delete, a null key, partitions and a schema change through
// the sink, then scans it with iceberg-go: the rows (equality deletes
// applied by iceberg-go) equal those worked out by hand, and those of the
// repository's own independent reader.
func TestIcebergGoReadsTheTable(t *testing.T) {
	for _, part := range [][]string{nil, {"day", "store"}} {
		t.Run(strings.Join(part, ","), func(t *testing.T) { check(t, part) })
	}
}

func check(t *testing.T, part []string) {
	ctx := context.Background()
	dir := t.TempDir()
	desc := changelog.Desc{Stage: "rev", Timezone: "Asia/Seoul", EmitMode: "update",
		Key: []changelog.Column{{Name: "store", Kind: row.KindString}},
		Values: []changelog.Column{{Name: "revenue", Kind: row.KindDecimal}, {Name: "n", Kind: row.KindInt},
			{Name: "ok", Kind: row.KindBool}, {Name: "last_at", Kind: row.KindTime}}}
	scale := 2
	o := iceberg.Options{Warehouse: dir, Namespace: "db", Table: "rev", ExactlyOnce: true, Pipeline: "p", Sink: "db.rev",
		PartitionBy: part, DecimalScale: &scale, Compression: "snappy"}
	mk := func(op changelog.Op, start int64, store, rev string, n int64, v uint64, extra ...row.Value) changelog.Row {
		k := row.Str(store)
		if store == "" {
			k = row.Null
		}
		vals := []row.Value{dec(rev), row.Int(n), row.Bool(n%2 == 0), row.Time(start + 90_000)}
		vals = append(vals, extra...)
		return changelog.Row{Op: op, WindowStart: start, WindowEnd: start + hour, Key: []row.Value{k}, Values: vals,
			Version: v, IsFinal: v == 3, WatermarkAt: start + 1, UpdatedAt: start + 2}
	}
	s, err := iceberg.NewResults(ctx, desc, o)
	must(t, err)
	must(t, s.Recover(ctx, 0, nil))
	must(t, s.Write(ctx, []changelog.Row{mk(changelog.Insert, 0, "a", "1.50", 1, 1), mk(changelog.Insert, 0, "b", "-2", 1, 1),
		mk(changelog.Insert, hour, "", "7", 1, 1)}))
	p, err := s.Prepare(ctx, 1)
	must(t, err)
	must(t, s.Commit(ctx, 1, p))
	must(t, s.Write(ctx, []changelog.Row{mk(changelog.UpdateAfter, 0, "a", "12345678901234567890.25", 2, 2), mk(changelog.Delete, 0, "b", "-2", 1, 2),
		mk(changelog.UpdateAfter, hour, "", "8", 2, 2)}))
	p, err = s.Prepare(ctx, 2)
	must(t, err)
	must(t, s.Commit(ctx, 2, p))
	must(t, s.Close(ctx))
	// A new run of a wider pipeline: a column added to the table.
	wide := desc
	wide.Values = append(slices.Clone(desc.Values), changelog.Column{Name: "note", Kind: row.KindString})
	o.Restoring = true
	s, err = iceberg.NewResults(ctx, wide, o)
	must(t, err)
	must(t, s.Recover(ctx, 2, p))
	must(t, s.Write(ctx, []changelog.Row{mk(changelog.UpdateAfter, 0, "a", "-0.01", 3, 3, row.Str("é")), mk(changelog.Insert, 2*hour, "c", "0", 4, 1, row.Null)}))
	p, err = s.Prepare(ctx, 3)
	must(t, err)
	must(t, s.Commit(ctx, 3, p))
	must(t, s.Close(ctx))

	want := []string{
		"1970-01-01T00:00:00Z a -0.01 3 false 1970-01-01T00:01:30Z 3 true update_after é",
		"1970-01-01T01:00:00Z NULL 8.00 2 true 1970-01-01T01:01:30Z 2 false update_after NULL",
		"1970-01-01T02:00:00Z c 0.00 4 true 1970-01-01T02:01:30Z 1 false insert NULL",
	}
	cols := []string{"window_start", "store", "revenue", "n", "ok", "last_at", "version", "is_final", "op", "note"}

	tableDir := filepath.Join(dir, "db", "rev")
	loc, err := icebergread.CurrentMetadata(tableDir)
	must(t, err)
	tbl, err := table.NewFromLocation(ctx, table.Identifier{"db", "rev"}, loc, icebergio.LoadFSFunc(nil, loc), nil)
	must(t, err)
	at, err := tbl.Scan().ToArrowTable(ctx)
	must(t, err)
	defer at.Release()
	got := render(t, at, cols)
	if !slices.Equal(got, want) {
		t.Fatalf("iceberg-go reads\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	own, err := icebergread.Open(loc)
	must(t, err)
	rows, _, _, err := own.Scan()
	must(t, err)
	var mine []string
	for _, l := range icebergread.Sorted(rows, cols) {
		mine = append(mine, l)
	}
	if !slices.Equal(mine, want) {
		t.Fatalf("icebergread reads\n%s\nwant\n%s", strings.Join(mine, "\n"), strings.Join(want, "\n"))
	}
	snaps := 0
	for range tbl.Metadata().Snapshots() {
		snaps++
	}
	if snaps != 3 || tbl.CurrentSnapshot().Summary.Properties["tidemark.checkpoint-id"] != "3" {
		t.Fatalf("%d snapshots, current %+v", snaps, tbl.CurrentSnapshot().Summary)
	}
}

// render prints each row of an Arrow table over cols, sorted, in
// icebergread's text forms.
func render(t *testing.T, at arrow.Table, cols []string) []string {
	idx := make([]int, len(cols))
	for i, c := range cols {
		f := at.Schema().FieldIndices(c)
		if len(f) != 1 {
			t.Fatalf("column %s: %v in %s", c, f, at.Schema())
		}
		idx[i] = f[0]
	}
	var out []string
	tr := array.NewTableReader(at, 64)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for r := 0; r < int(rec.NumRows()); r++ {
			var cells []string
			for _, ci := range idx {
				cells = append(cells, cell(rec.Column(ci), r))
			}
			out = append(out, strings.Join(cells, " "))
		}
	}
	slices.Sort(out)
	return out
}

func cell(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	switch a := a.(type) {
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(i).ToTime(unit).UTC().Format(time.RFC3339Nano)
	case *array.Decimal128:
		scale := a.DataType().(*arrow.Decimal128Type).Scale
		return a.Value(i).ToString(scale)
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Int64:
		return fmt.Sprint(a.Value(i))
	case *array.Boolean:
		return fmt.Sprint(a.Value(i))
	}
	return fmt.Sprintf("?%T:%s", a, a.ValueStr(i))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestIcebergGoReadsMergedManifests: 230 checkpoints of updates, inserts
// and deletes, so that the sink merges its manifests twice (EXISTING
// entries with their own sequence numbers); iceberg-go reads each
// window's latest version.
func TestIcebergGoReadsMergedManifests(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	desc := changelog.Desc{Stage: "rev", Timezone: "UTC", EmitMode: "update",
		Key: []changelog.Column{{Name: "store", Kind: row.KindString}}, Values: []changelog.Column{{Name: "n", Kind: row.KindInt}}}
	s, err := iceberg.NewResults(ctx, desc, iceberg.Options{Warehouse: dir, Namespace: "db", Table: "rev", ExactlyOnce: true, Pipeline: "p", Sink: "db.rev",
		PartitionBy: []string{"store"}})
	must(t, err)
	must(t, s.Recover(ctx, 0, nil))
	mk := func(op changelog.Op, start int64, store string, n int64, v uint64) changelog.Row {
		return changelog.Row{Op: op, WindowStart: start, WindowEnd: start + hour, Key: []row.Value{row.Str(store)}, Values: []row.Value{row.Int(n)}, Version: v}
	}
	const n = 230
	var want []string
	for i := 1; i <= n; i++ {
		op := changelog.UpdateAfter
		if i == 1 {
			op = changelog.Insert
		}
		rows := []changelog.Row{mk(op, 0, "a", int64(i), uint64(i)), mk(changelog.Insert, int64(i)*hour, "b", 1, 1)}
		if i%5 == 0 {
			rows = append(rows, mk(changelog.Delete, int64(i-1)*hour, "b", 1, 2))
		} else if i > 1 {
			want = append(want, fmt.Sprintf("%s b 1 1", time.UnixMilli(int64(i-1)*hour).UTC().Format(time.RFC3339)))
		}
		must(t, s.Write(ctx, rows))
		p, err := s.Prepare(ctx, int64(i))
		must(t, err)
		must(t, s.Commit(ctx, int64(i), p))
	}
	must(t, s.Close(ctx))
	want = append(want, fmt.Sprintf("1970-01-01T00:00:00Z a %d %d", n, n), fmt.Sprintf("%s b 1 1", time.UnixMilli(n*hour).UTC().Format(time.RFC3339)))
	slices.Sort(want)
	loc, err := icebergread.CurrentMetadata(filepath.Join(dir, "db", "rev"))
	must(t, err)
	tbl, err := table.NewFromLocation(ctx, table.Identifier{"db", "rev"}, loc, icebergio.LoadFSFunc(nil, loc), nil)
	must(t, err)
	at, err := tbl.Scan().ToArrowTable(ctx)
	must(t, err)
	defer at.Release()
	got := render(t, at, []string{"window_start", "store", "n", "version"})
	if !slices.Equal(got, want) {
		t.Fatalf("iceberg-go reads %d rows, want %d:\n%s", len(got), len(want), strings.Join(got[:min(len(got), 8)], "\n"))
	}
}
