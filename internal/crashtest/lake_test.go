package crashtest

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/internal/icebergread"
)

// lakeYAML writes one stage's rows to the SQLite sink (the reference),
// a Parquet directory and an Iceberg table (hadoop catalog, partitioned
// by store), and its late records to Parquet.
const lakeYAML = `name: lake
source:
  type: file
  path: {{DIR}}/events.jsonl
  schema: {amount: decimal}
  replay: {seed: 11, delay: 20s, straggler_fraction: 0.05, max_delay: 10m, redeliver_fraction: 0.05, partitions: 3, partition_by: store_id}
event_time: {field: paid_at, out_of_orderness: 30s, idle_timeout: 1m}
dedup: {key: event_id, ttl: 2h}
stages:
  - name: revenue
    fields: {delta: 'event_type == "REFUND" ? -amount : amount'}
    key: [store_id]
    window: {type: tumbling, size: 1m, timezone: Asia/Seoul}
    allowed_lateness: 2m
    aggregates: {orders: count(), revenue: sum(delta), biggest: max(amount)}
    emit: {mode: update}
    late: {policy: side_output, sink: {type: parquet, path: {{OUT}}/late, partition_by: [kind]}}
    sinks:
      - {type: sqlite, path: {{OUT}}/tidemark.db, table: revenue}
      - {type: parquet, path: {{OUT}}/revenue, partition_by: [store_id], row_group_rows: 64}
      - {type: iceberg, path: {{OUT}}/warehouse, table: shop.revenue, partition_by: [store_id], decimal_scale: 2}
checkpoint: {dir: {{CK}}, interval: 1ms, retain: 2}
`

type lakeJob struct{ out, ck, yaml string }

func newLakeJob(t *testing.T, dir, name string) lakeJob {
	j := lakeJob{out: filepath.Join(dir, name, "out"), ck: filepath.Join(dir, name, "ck"), yaml: filepath.Join(dir, name, "pipeline.yaml")}
	y := strings.NewReplacer("{{DIR}}", dir, "{{OUT}}", j.out, "{{CK}}", j.ck).Replace(lakeYAML)
	os.MkdirAll(filepath.Dir(j.yaml), 0o755)
	if err := os.WriteFile(j.yaml, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return j
}

func (j lakeJob) start(t *testing.T, fault string, par int) (*exec.Cmd, *bytes.Buffer) {
	return job{yaml: j.yaml}.startAt(t, fault, par)
}

// canonTime renders an RFC 3339 time in UTC, so that the SQLite sink's
// local times and the readers' UTC ones compare.
func canonTime(t *testing.T, s string) string {
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return tm.UTC().Format(time.RFC3339Nano)
}

// canonDec renders a decimal without trailing zeros.
func canonDec(t *testing.T, s string) string {
	if s == "NULL" || s == "" {
		return "NULL"
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("decimal %q", s)
	}
	return r.RatString()
}

// sqliteRows are the SQLite sink's rows: window_start store_id orders
// revenue biggest version is_final, canonical.
func (j lakeJob) sqliteRows(t *testing.T) []string {
	db, err := sql.Open("sqlite", filepath.Join(j.out, "tidemark.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT window_start, store_id, orders, revenue, biggest, version, is_final FROM revenue`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var ws, store, rev, big string
		var orders, version, final int64
		if err := rows.Scan(&ws, &store, &orders, &rev, &big, &version, &final); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s %d %s %s %d %t", canonTime(t, ws), store, orders, canonDec(t, rev), canonDec(t, big), version, final != 0))
	}
	slices.Sort(out)
	return out
}

// icebergRows scans the Iceberg table with the independent reader, and
// checks that no checkpoint of a job has two snapshots in the history.
func (j lakeJob) icebergRows(t *testing.T) ([]string, *icebergread.Table) {
	loc, err := icebergread.CurrentMetadata(filepath.Join(j.out, "warehouse", "shop", "revenue"))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := icebergread.Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	rows, _, _, err := tbl.Scan()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s %s %s %s %s %s %s", canonTime(t, r["window_start"]), r["store_id"], r["orders"],
			canonDec(t, r["revenue"]), canonDec(t, r["biggest"]), r["version"], r["is_final"]))
	}
	slices.Sort(out)
	seen := map[string]int64{}
	for _, s := range tbl.Ancestry() {
		k := s.Summary["tidemark.job-id"] + "/" + s.Summary["tidemark.checkpoint-id"]
		if prev, ok := seen[k]; ok {
			t.Errorf("checkpoint %s has two snapshots in the table's history: %d and %d", k, prev, s.ID)
		}
		seen[k] = s.ID
	}
	return out, tbl
}

// parquetRows reads every published result file: all rows as
// "window_start store_id version op …" (the changelog, to compare as a
// multiset), and the latest version per window and key as the table.
func (j lakeJob) parquetRows(t *testing.T) (all, latest []string) {
	type cur struct {
		version int64
		line    string
		deleted bool
	}
	top := map[string]cur{}
	eachParquetRow(t, filepath.Join(j.out, "revenue"), func(v func(string) pq.Value) {
		ws := time.UnixMicro(v("window_start").Int64()).UTC().Format(time.RFC3339Nano)
		key := ws + " " + string(v("store_id").ByteArray())
		version := v("version").Int64()
		op := string(v("op").ByteArray())
		rev := "NULL"
		if !v("revenue").IsNull() {
			rev = decText(v("revenue").ByteArray(), 6)
		}
		line := fmt.Sprintf("%s %d %s %d %t", key, v("orders").Int64(), rev, version, v("is_final").Boolean())
		all = append(all, op+" "+line)
		if op == "update_before" {
			return
		}
		if c, ok := top[key]; !ok || version > c.version {
			top[key] = cur{version: version, line: line, deleted: op == "delete"}
		}
	})
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if !top[k].deleted {
			latest = append(latest, top[k].line)
		}
	}
	slices.Sort(all)
	return all, latest
}

// lateRecords reads the record column of every published late file,
// sorted.
func (j lakeJob) lateRecords(t *testing.T) []string {
	var out []string
	eachParquetRow(t, filepath.Join(j.out, "late"), func(v func(string) pq.Value) {
		out = append(out, string(v("record").ByteArray()))
	})
	slices.Sort(out)
	return out
}

// eachParquetRow calls fn for every row of every .parquet file below
// dir, with the row's value of a column by name.
func eachParquetRow(t *testing.T, dir string, fn func(v func(col string) pq.Value)) {
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		st, _ := f.Stat()
		pf, err := pq.OpenFile(f, st.Size())
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		col := map[string]int{}
		for i, path := range pf.Schema().Columns() {
			col[path[0]] = i
		}
		r := pq.NewReader(f, pf.Schema())
		defer r.Close()
		buf := make([]pq.Row, 32)
		for {
			n, rerr := r.ReadRows(buf)
			for _, row := range buf[:n] {
				fn(func(name string) pq.Value { return row[col[name]] })
			}
			if errors.Is(rerr, io.EOF) {
				return nil
			}
			if rerr != nil {
				t.Fatalf("%s: %v", p, rerr)
			}
		}
	})
}

// decText renders a DECIMAL(38, scale) value (its 16 big-endian
// two's-complement bytes) exactly.
func decText(b []byte, scale int) string {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return new(big.Rat).SetFrac(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)).RatString()
}

// sqliteLatest is the SQLite table in parquetRows' latest form.
func sqliteLatest(rows []string) []string {
	var out []string
	for _, r := range rows {
		f := strings.Fields(r) // ws store orders revenue biggest version final
		out = append(out, strings.Join([]string{f[0], f[1], f[2], f[3], f[5], f[6]}, " "))
	}
	slices.Sort(out)
	return out
}

// TestLakeCrash: SIGKILLs at random instants and at every commit phase of
// the Parquet and Iceberg sinks — files written (prepared,
// iceberg-files), Parquet files renamed, manifests written
// (parquet-manifest, iceberg-manifest), the metadata file written and
// the catalog swapped (iceberg-metadata, iceberg-committed), the
// checkpoint written and each sink's commit — at least 24 (100 with
// -long), each followed by a restart at parallelism 1 or 2. Then: the
// Iceberg table read by an independent reader equals the SQLite sink's
// table of the same run, row for row, with at most one snapshot per
// checkpoint; the Parquet files hold every row of an uncrashed run's
// exactly once, and their latest versions equal the SQLite table.
func TestLakeCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tidemark dozens of times")
	}
	dir := t.TempDir()
	writeEvents(t, filepath.Join(dir, "events.jsonl"), 1500, 3)
	ref := newLakeJob(t, dir, "ref")
	cmd, stderr := ref.start(t, "", 1)
	start := time.Now()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, stderr)
	}
	took := time.Since(start)
	want := ref.sqliteRows(t)
	if len(want) < 200 {
		t.Fatalf("the reference run has %d rows", len(want))
	}
	ice, _ := ref.icebergRows(t)
	if !slices.Equal(ice, want) {
		t.Fatalf("uncrashed run: the Iceberg table (%d rows) differs from the SQLite table (%d rows):\n%s", len(ice), len(want), diffText(ice, want))
	}
	refAll, refLatest := ref.parquetRows(t)
	if !slices.Equal(refLatest, sqliteLatest(want)) {
		t.Fatalf("uncrashed run: the Parquet files' latest versions differ from the SQLite table:\n%s", diffText(refLatest, sqliteLatest(want)))
	}

	crash := newLakeJob(t, dir, "crash")
	goal := 24
	if *long {
		goal = 100
	}
	points := []string{"prepared", "written", "parquet-renamed", "parquet-manifest", "iceberg-files", "iceberg-manifest",
		"iceberg-metadata", "iceberg-committed", "committed:revenue: sinks[1]", "committed:revenue: sinks[2]", "committed:revenue: late.sink"}
	r := rand.New(rand.NewPCG(5, 5))
	kills, runs := 0, 0
	byPoint := map[string]int{}
	for {
		runs++
		if runs > 20*goal {
			t.Fatalf("no end after %d runs (%d kills)", runs, kills)
		}
		fault := ""
		var timer *time.Timer
		par := 1 + r.IntN(2)
		if kills < goal && kills%2 == 1 {
			latest, _ := checkpoint.List(crash.ck)
			next := int64(1)
			if len(latest) > 0 {
				next = latest[0] + 1
			}
			p := points[(kills/2)%len(points)] // every point, in turn
			fault = fmt.Sprintf("%s:%d", p, next+int64(r.IntN(3)))
			byPoint[p]++
		}
		cmd, stderr := crash.start(t, fault, par)
		if kills < goal && fault == "" {
			delay := time.Duration(r.Int64N(int64(took)))
			timer = time.AfterFunc(delay, func() { cmd.Process.Signal(syscall.SIGKILL) })
		}
		err := cmd.Wait()
		if timer != nil {
			timer.Stop()
		}
		if killed(err) {
			kills++
			continue
		}
		if err != nil {
			t.Fatalf("run %d: %v\n%s", runs, err, stderr)
		}
		if kills >= goal {
			break
		}
		// Finished before the kill: start over for more kills (the
		// sinks' fresh start replaces what they published).
		os.RemoveAll(crash.ck)
	}
	t.Logf("%d runs, %d kills (named points: %v)", runs, kills, byPoint)
	got := crash.sqliteRows(t)
	if !slices.Equal(got, want) {
		t.Fatalf("the SQLite table differs from the uncrashed run's:\n%s", diffText(got, want))
	}
	ice, tbl := crash.icebergRows(t)
	if !slices.Equal(ice, got) {
		t.Fatalf("the Iceberg table (%d rows) differs from the SQLite table (%d rows):\n%s", len(ice), len(got), diffText(ice, got))
	}
	all, latest := crash.parquetRows(t)
	if !slices.Equal(all, refAll) {
		t.Fatalf("the Parquet files (%d rows) differ from an uncrashed run's (%d rows): a row lost or written twice:\n%s", len(all), len(refAll), diffText(all, refAll))
	}
	if !slices.Equal(latest, sqliteLatest(got)) {
		t.Fatalf("the Parquet files' latest versions differ from the SQLite table:\n%s", diffText(latest, sqliteLatest(got)))
	}
	if late, refLate := crash.lateRecords(t), ref.lateRecords(t); !slices.Equal(late, refLate) || len(late) == 0 {
		t.Fatalf("the late records in Parquet (%d) differ from an uncrashed run's (%d):\n%s", len(late), len(refLate), diffText(late, refLate))
	}
	t.Logf("%d rows; %d snapshots in the table's history, %d in the current ancestry", len(got), len(tbl.Snapshots), len(tbl.Ancestry()))
}

// diffText is firstDiff's lines of two sorted row lists.
func diffText(got, want []string) string { return strings.Join(firstDiff(got, want), "\n") }
