package examples

import (
	"context"
	"math/big"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/datatest"
	"github.com/tidemark/tidemark/internal/icebergread"
)

// TestOnlineRetailIceberg runs examples/online-retail/iceberg.yaml on the
// real data and reads its Iceberg table with the independent reader
// (internal/icebergread): one final row per hour and country, equal to
// the batch group-by over the raw CSV files, each snapshot naming its
// checkpoint.
func TestOnlineRetailIceberg(t *testing.T) {
	data := datatest.Dir(t)
	t.Setenv("TIDEMARK_DATA", data)
	p, err := tidemark.Load("online-retail/iceberg.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Contract = "online-retail/contract.yaml"
	out := t.TempDir()
	p.Sinks[0].Path = filepath.Join(out, "warehouse")
	p.Late.Sink.Path = filepath.Join(out, "late.jsonl")
	p.Quarantine.Sink.Path = filepath.Join(out, "quarantine.jsonl")
	p.Conflicts.Sink.Path = filepath.Join(out, "conflicts.jsonl")
	p.Checkpoint.Dir = filepath.Join(out, "ck")
	sum, err := tidemark.Run(context.Background(), p, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	late := map[string]bool{}
	for _, rec := range readJSONL[struct{ Source string }](t, filepath.Join(out, "late.jsonl")) {
		late[filepath.Base(rec.Source)] = true
	}
	want, _ := batchGroupBy(t, data, late)

	loc, err := icebergread.CurrentMetadata(filepath.Join(out, "warehouse", "retail", "revenue_hourly"))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := icebergread.Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	rows, nData, nDel, err := tbl.Scan()
	if err != nil {
		t.Fatal(err)
	}
	got := map[groupKey]*groupVal{}
	for _, r := range rows {
		if r["is_final"] != "true" {
			t.Fatalf("row %v is not final after the end of input", r)
		}
		ws, err := time.Parse(time.RFC3339, r["window_start"])
		if err != nil {
			t.Fatal(err)
		}
		k := groupKey{start: ws.UnixMilli(), country: r["Country"]}
		if got[k] != nil {
			t.Fatalf("two rows for %v", k)
		}
		n, ok := new(big.Rat).SetString(r["net_revenue"])
		if !ok {
			t.Fatalf("net_revenue %q", r["net_revenue"])
		}
		lines, err := strconv.ParseInt(r["lines"], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		got[k] = &groupVal{net: n, lines: lines}
	}
	compareGroups(t, got, want)
	snaps := tbl.Ancestry()
	seen := map[string]bool{}
	for _, s := range snaps {
		ck := s.Summary["tidemark.checkpoint-id"]
		if ck == "" || seen[ck] {
			t.Fatalf("snapshot %d: checkpoint %q (twice or missing)", s.ID, ck)
		}
		seen[ck] = true
	}
	if int64(len(snaps)) > int64(sum.Checkpoints.Taken) || len(snaps) == 0 {
		t.Fatalf("%d snapshots for %d checkpoints", len(snaps), sum.Checkpoints.Taken)
	}
	t.Logf("%d rows equal the batch group-by; %d snapshots, %d data and %d delete files", len(got), len(snaps), nData, nDel)
}
