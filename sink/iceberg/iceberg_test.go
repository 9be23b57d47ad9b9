package iceberg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/internal/icebergread"
	"github.com/tidemark/tidemark/internal/pgtest"
	"github.com/tidemark/tidemark/row"
)

var desc = changelog.Desc{Stage: "rev", Timezone: "UTC", EmitMode: "update",
	Key:    []changelog.Column{{Name: "store", Kind: row.KindString}},
	Values: []changelog.Column{{Name: "revenue", Kind: row.KindDecimal}, {Name: "n", Kind: row.KindInt}}}

func dec(s string) row.Value {
	d, err := row.ParseDecimal([]byte(s))
	if err != nil {
		panic(err)
	}
	return row.Dec(d)
}

const hour = int64(3_600_000)

func rw(op changelog.Op, start int64, store string, rev string, n int64, version uint64) changelog.Row {
	k := row.Str(store)
	if store == "" {
		k = row.Null
	}
	return changelog.Row{Op: op, WindowStart: start, WindowEnd: start + hour, Key: []row.Value{k},
		Values: []row.Value{dec(rev), row.Int(n)}, Version: version, WatermarkAt: start, UpdatedAt: start + 1}
}

type fixture struct {
	t    *testing.T
	dir  string
	opts Options
}

func newFixture(t *testing.T, o Options) *fixture {
	dir := t.TempDir()
	o.Warehouse, o.Namespace, o.Table = dir, "db", "rev"
	o.Pipeline, o.Sink, o.ExactlyOnce = "p", "db.rev", true
	o.Now = func() time.Time { return time.UnixMilli(1_700_000_000_000) }
	return &fixture{t: t, dir: dir, opts: o}
}

func (f *fixture) open(d changelog.Desc) *Results {
	f.t.Helper()
	r, err := NewResults(context.Background(), d, f.opts)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

// scan reads the table with the independent reader: rows as
// "window_start store revenue n version op", and the table.
func (f *fixture) scan() ([]string, *icebergread.Table) {
	f.t.Helper()
	loc, err := icebergread.CurrentMetadata(filepath.Join(f.dir, "db", "rev"))
	if err != nil {
		f.t.Fatal(err)
	}
	tbl, err := icebergread.Open(loc)
	if err != nil {
		f.t.Fatal(err)
	}
	rows, _, _, err := tbl.Scan()
	if err != nil {
		f.t.Fatal(err)
	}
	return icebergread.Sorted(rows, []string{"window_start", "store", "revenue", "n", "version", "op"}), tbl
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestUpsertThroughEqualityDeletes: update-mode rows over three
// checkpoints; a reader of the table sees each window's latest version,
// a deleted window disappears, one snapshot per checkpoint that wrote
// something, each holding its checkpoint id.
func TestUpsertThroughEqualityDeletes(t *testing.T) {
	for _, part := range [][]string{nil, {"day", "store"}} {
		t.Run(strings.Join(part, ","), func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, Options{PartitionBy: part})
			s := f.open(desc)
			must(t, s.Recover(ctx, 0, nil))
			must(t, s.Write(ctx, []changelog.Row{rw(changelog.Insert, 0, "a", "1.50", 1, 1), rw(changelog.Insert, 0, "b", "2", 1, 1),
				rw(changelog.Insert, 0, "", "7", 1, 1), rw(changelog.UpdateAfter, 0, "a", "3.25", 2, 2)}))
			p1, err := s.Prepare(ctx, 1)
			must(t, err)
			must(t, s.Commit(ctx, 1, p1))
			// Checkpoint 2: a's third version, b deleted, the null key
			// updated, c inserted and deleted within the checkpoint.
			must(t, s.Write(ctx, []changelog.Row{rw(changelog.UpdateAfter, 0, "a", "4", 3, 3), rw(changelog.Delete, 0, "b", "2", 1, 2),
				rw(changelog.UpdateAfter, 0, "", "8", 2, 2), rw(changelog.Insert, hour, "c", "1", 1, 1), rw(changelog.Delete, hour, "c", "1", 1, 2)}))
			p2, err := s.Prepare(ctx, 2)
			must(t, err)
			must(t, s.Commit(ctx, 2, p2))
			p3, err := s.Prepare(ctx, 3) // nothing written: no snapshot
			must(t, err)
			must(t, s.Commit(ctx, 3, p3))
			must(t, s.Close(ctx))
			got, tbl := f.scan()
			want := []string{"1970-01-01T00:00:00Z NULL 8.000000 2 2 update_after", "1970-01-01T00:00:00Z a 4.000000 3 3 update_after"}
			if !slices.Equal(got, want) {
				t.Fatalf("rows\n got %q\nwant %q", got, want)
			}
			if len(tbl.Snapshots) != 2 {
				t.Fatalf("%d snapshots, want 2", len(tbl.Snapshots))
			}
			for i, sn := range tbl.Ancestry() {
				if ck := sn.Summary[SummaryCheckpoint]; ck != []string{"2", "1"}[i] || sn.Summary[SummaryJob] != s.job || sn.Summary["operation"] == "" {
					t.Errorf("snapshot %d: summary %v", i, sn.Summary)
				}
			}
		})
	}
}

// TestRecoverCommitsOnce: a checkpoint prepared but not committed is
// committed by Recover; one committed already is not committed again; a
// fallback to an older checkpoint rolls the table back; a fresh start
// replaces the rows of the table tidemark created.
func TestRecoverCommitsOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	s := f.open(desc)
	must(t, s.Recover(ctx, 0, nil))
	must(t, s.Write(ctx, []changelog.Row{rw(changelog.Insert, 0, "a", "1", 1, 1)}))
	p1, err := s.Prepare(ctx, 1)
	must(t, err)
	must(t, s.Commit(ctx, 1, p1))
	must(t, s.Write(ctx, []changelog.Row{rw(changelog.UpdateAfter, 0, "a", "2", 2, 2)}))
	p2, err := s.Prepare(ctx, 2)
	must(t, err)
	// Killed before the commit of 2, with rows staged for 3.
	must(t, s.Write(ctx, []changelog.Row{rw(changelog.UpdateAfter, 0, "a", "3", 3, 3)}))
	must(t, s.Abort(ctx))
	s = f.open(desc)
	must(t, s.Recover(ctx, 2, p2))
	if got, tbl := f.scan(); !slices.Equal(got, []string{"1970-01-01T00:00:00Z a 2.000000 2 2 update_after"}) || len(tbl.Snapshots) != 2 {
		t.Fatalf("after recovering 2: %q, %d snapshots", got, len(tbl.Snapshots))
	}
	// Killed after the commit of 2: Recover finds its snapshot.
	must(t, s.Recover(ctx, 2, p2))
	must(t, s.Commit(ctx, 2, p2))
	if _, tbl := f.scan(); len(tbl.Snapshots) != 2 {
		t.Fatalf("a repeated commit made %d snapshots", len(tbl.Snapshots))
	}
	// Checkpoint 2 unusable: back to 1.
	must(t, s.Recover(ctx, 1, p1))
	if got, _ := f.scan(); !slices.Equal(got, []string{"1970-01-01T00:00:00Z a 1.000000 1 1 insert"}) {
		t.Fatalf("after falling back to 1: %q", got)
	}
	if n := s.Notes(); len(n) != 1 || !strings.Contains(n[0], "rolled table db.rev back to the snapshot of checkpoint 1") {
		t.Fatalf("notes %q", n)
	}
	// The replay commits 2 again, with a new snapshot.
	must(t, s.Write(ctx, []changelog.Row{rw(changelog.UpdateAfter, 0, "a", "2", 2, 2)}))
	p2, err = s.Prepare(ctx, 2)
	must(t, err)
	must(t, s.Commit(ctx, 2, p2))
	if got, _ := f.scan(); !slices.Equal(got, []string{"1970-01-01T00:00:00Z a 2.000000 2 2 update_after"}) {
		t.Fatalf("after the replay of 2: %q", got)
	}
	// A fresh start: a new job, whose first commit replaces the rows.
	must(t, s.Recover(ctx, 0, nil))
	must(t, s.Write(ctx, []changelog.Row{rw(changelog.Insert, hour, "z", "9", 1, 1)}))
	p1, err = s.Prepare(ctx, 1)
	must(t, err)
	must(t, s.Commit(ctx, 1, p1))
	got, tbl := f.scan()
	if !slices.Equal(got, []string{"1970-01-01T01:00:00Z z 9.000000 1 1 insert"}) {
		t.Fatalf("after a fresh start: %q", got)
	}
	if tbl.Ancestry()[0].Summary["operation"] != "overwrite" {
		t.Errorf("fresh commit: %v", tbl.Ancestry()[0].Summary)
	}
	must(t, s.Close(ctx))
}

// TestSchemaEvolution: a new aggregate column is added to the table's
// schema (old files read it as null); a column of another type is
// refused by name.
func TestSchemaEvolution(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	s := f.open(desc)
	must(t, s.Recover(ctx, 0, nil))
	must(t, s.Write(ctx, []changelog.Row{rw(changelog.Insert, 0, "a", "1", 1, 1)}))
	p, err := s.Prepare(ctx, 1)
	must(t, err)
	must(t, s.Commit(ctx, 1, p))
	must(t, s.Close(ctx))

	wider := desc
	wider.Values = append(slices.Clone(desc.Values), changelog.Column{Name: "biggest", Kind: row.KindInt})
	f.opts.Restoring = true
	s = f.open(wider)
	must(t, s.Recover(ctx, 1, p))
	r := rw(changelog.Insert, hour, "b", "2", 1, 1)
	r.Values = append(r.Values, row.Int(42))
	must(t, s.Write(ctx, []changelog.Row{r}))
	p2, err := s.Prepare(ctx, 2)
	must(t, err)
	must(t, s.Commit(ctx, 2, p2))
	must(t, s.Close(ctx))
	loc, _ := icebergread.CurrentMetadata(filepath.Join(f.dir, "db", "rev"))
	tbl, err := icebergread.Open(loc)
	must(t, err)
	rows, _, _, err := tbl.Scan()
	must(t, err)
	got := icebergread.Sorted(rows, []string{"store", "biggest"})
	if !slices.Equal(got, []string{"a NULL", "b 42"}) {
		t.Fatalf("rows %q", got)
	}

	other := desc
	other.Values = []changelog.Column{{Name: "revenue", Kind: row.KindString}, {Name: "n", Kind: row.KindInt}}
	_, err = NewResults(ctx, other, f.opts)
	var se *SchemaError
	if !errors.As(err, &se) || se.Column != "revenue" || !strings.Contains(err.Error(), "the table has type decimal(38, 6), the pipeline writes string") {
		t.Fatalf("error %v", err)
	}
}

// TestSQLCatalog: the same commits through a JDBC-style catalog in SQLite
// and in PostgreSQL.
func TestSQLCatalog(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		f := newFixture(t, Options{Catalog: "sql"})
		f.opts.CatalogURI = filepath.Join(f.dir, "catalog.db")
		testSQLCatalog(t, f)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn, schema := pgtest.Schema(t)
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		f := newFixture(t, Options{Catalog: "sql"})
		f.opts.CatalogURI = dsn + sep + "search_path=" + schema
		testSQLCatalog(t, f)
		n := pgtest.Dump(t, dsn, `SELECT count(*), min(table_namespace || '.' || table_name) FROM "`+schema+`".iceberg_tables WHERE previous_metadata_location LIKE '%00002-%'`)
		if strings.TrimSpace(n) != "1 | db.rev" {
			t.Fatalf("iceberg_tables: %q", n)
		}
	})
}

func testSQLCatalog(t *testing.T, f *fixture) {
	ctx := context.Background()
	s := f.open(desc)
	must(t, s.Recover(ctx, 0, nil))
	for i := range 3 {
		must(t, s.Write(ctx, []changelog.Row{rw([]changelog.Op{changelog.Insert, changelog.UpdateAfter, changelog.UpdateAfter}[i], 0, "a", "1", int64(i+1), uint64(i+1))}))
		p, err := s.Prepare(ctx, int64(i+1))
		must(t, err)
		must(t, s.Commit(ctx, int64(i+1), p))
	}
	loc, _, err := s.cat.current(ctx)
	must(t, err)
	must(t, s.Close(ctx))
	if !strings.HasPrefix(filepath.Base(loc), "00003-") {
		t.Fatalf("current metadata %s", loc)
	}
	tbl, err := icebergread.Open(loc)
	must(t, err)
	rows, _, nDel, err := tbl.Scan()
	must(t, err)
	if got := icebergread.Sorted(rows, []string{"store", "n", "version"}); !slices.Equal(got, []string{"a 3 3"}) || nDel != 2 {
		t.Fatalf("rows %q, %d delete files", got, nDel)
	}
}

// FuzzMetadata: a metadata file read back on restore never panics the
// parser, and one it accepts marshals and parses again to the same.
func FuzzMetadata(f *testing.F) {
	f.Add([]byte(`{"format-version":2,"table-uuid":"u","location":"/t","last-sequence-number":1,"last-updated-ms":1,"last-column-id":1,"current-schema-id":0,
"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"a","required":true,"type":"long"}]}],"default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],
"last-partition-id":999,"default-sort-order-id":0,"sort-orders":[],"current-snapshot-id":5,"snapshots":[{"snapshot-id":5,"sequence-number":1,"timestamp-ms":1,"manifest-list":"/l","summary":{"operation":"append"}}],
"snapshot-log":[],"metadata-log":[],"refs":{"main":{"snapshot-id":5,"type":"branch"}},"x-other":{"k":1}}`))
	f.Add([]byte(`{"format-version":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMetadata("m.json", b)
		if err != nil {
			return
		}
		out, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseMetadata("again.json", out); err != nil {
			t.Fatalf("re-reading what was written: %v\n%s", err, out)
		}
		m.Ancestry()
	})
}

// FuzzPrepared: the prepared state never panics its decoder and never
// names a file outside the data directory.
func FuzzPrepared(f *testing.F) {
	f.Add(encodePrepared(prepared{job: "j", replace: true, files: []DataFile{{Content: 2, Path: "/t/data/a=1/x.parquet", Partition: []any{int32(1), "s", nil, int64(3), true}, Records: 1, Bytes: 2, EqualityIDs: []int32{2, 4}}}}))
	f.Add(encodePrepared(prepared{job: "j", files: []DataFile{{Path: "/etc/passwd"}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePrepared("t", "/t/data", b)
		if err != nil {
			return
		}
		for _, fl := range p.files {
			if rel, err := filepath.Rel("/t/data", fl.Path); err != nil || !filepath.IsLocal(rel) {
				t.Fatalf("accepted %q", fl.Path)
			}
		}
	})
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }

// FuzzManifestList: a manifest list read back from the table (the base
// of the next commit) never panics its decoder, and one it accepts
// encodes and decodes again to the same entries.
func FuzzManifestList(f *testing.F) {
	parent := int64(7)
	b, err := encodeManifestList([]ManifestFile{{Path: "/t/metadata/1-m0.avro", Length: 100, Content: 1, SequenceNumber: 3, MinSequenceNumber: 2,
		AddedSnapshotID: 9, AddedFilesCount: 2, AddedRowsCount: 10, Partitions: []FieldSummary{{ContainsNull: true, LowerBound: []byte{1}}}}}, 9, &parent, 3)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		files, err := decodeManifestList("l.avro", bytes.NewReader(b))
		if err != nil {
			return
		}
		again, err := encodeManifestList(files, 1, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeManifestList("again.avro", bytes.NewReader(again))
		if err != nil || len(back) != len(files) {
			t.Fatalf("re-reading: %v, %d of %d entries", err, len(back), len(files))
		}
	})
}

// TestManifestsMerge: over more checkpoints than manifestMergeCount the
// manifest list stays bounded (carried manifests merged into one per
// content, their entries EXISTING with their own sequence numbers), and
// the table still reads each window's latest version: the merged
// equality deletes still apply only to older data.
func TestManifestsMerge(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{PartitionBy: []string{"store", "day"}})
	s := f.open(desc)
	must(t, s.Recover(ctx, 0, nil))
	const n = 2*manifestMergeCount + 17
	var want []string
	for i := 1; i <= n; i++ {
		op := changelog.UpdateAfter
		if i == 1 {
			op = changelog.Insert
		}
		rows := []changelog.Row{rw(op, 0, "a", fmt.Sprint(i), int64(i), uint64(i)), rw(changelog.Insert, int64(i)*hour, "b", "1", 1, 1)}
		if i%7 == 0 {
			rows = append(rows, rw(changelog.Delete, int64(i-1)*hour, "b", "1", 1, 2)) // the previous window of b goes
		} else if i > 1 {
			want = append(want, fmt.Sprintf("%s b 1.000000 1 1 insert", time.UnixMilli(int64(i-1)*hour).UTC().Format(time.RFC3339)))
		}
		must(t, s.Write(ctx, rows))
		p, err := s.Prepare(ctx, int64(i))
		must(t, err)
		must(t, s.Commit(ctx, int64(i), p))
	}
	must(t, s.Close(ctx))
	want = append(want, fmt.Sprintf("1970-01-01T00:00:00Z a %d.000000 %d %d update_after", n, n, n),
		fmt.Sprintf("%s b 1.000000 1 1 insert", time.UnixMilli(n*hour).UTC().Format(time.RFC3339)))
	slices.Sort(want)
	got, tbl := f.scan()
	if !slices.Equal(got, want) {
		t.Fatalf("%d rows, want %d; first difference at %v", len(got), len(want), firstDiff(got, want))
	}
	cur := tbl.Ancestry()[0]
	fh, err := os.Open(cur.ManifestList)
	must(t, err)
	defer fh.Close()
	list, err := decodeManifestList(cur.ManifestList, fh)
	must(t, err)
	if len(list) > manifestMergeCount+2 {
		t.Fatalf("%d manifests after %d checkpoints", len(list), n)
	}
	existing := 0
	for _, mf := range list {
		existing += int(mf.ExistingFilesCount)
	}
	if existing == 0 {
		t.Fatalf("no merged manifest in %d", len(list))
	}
}

func firstDiff(a, b []string) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return fmt.Sprintf("%d: got %q, want %q", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d, %d", len(a), len(b))
}
