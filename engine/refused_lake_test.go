package engine_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/spec"
)

// lakeRun runs a one-minute count per (key, currency) over in into a
// Parquet directory, an Iceberg table (hadoop catalog) and a Parquet
// directory of late records under out, with checkpoints in out/ck.
func lakeRun(t *testing.T, in, out, key string) error {
	t.Helper()
	return lakeRunCk(t, in, out, key, true)
}

// lakeRunCk is lakeRun, with checkpoints or without.
func lakeRunCk(t *testing.T, in, out, key string, ck bool) error {
	t.Helper()
	p := &spec.Pipeline{
		Name:       "revenue",
		Source:     spec.Source{Type: "file", Path: in, Format: "jsonl", Schema: spec.FieldTypes{{Name: "amount", Type: "int"}}},
		EventTime:  spec.EventTime{Field: "paid_at", OutOfOrderness: spec.Duration(time.Second)},
		Key:        []string{key, "currency"},
		Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
		Aggregates: spec.NamedExprs{{Name: "n", Expr: "count()"}},
		Late:       spec.Late{Policy: "side_output", Sink: &spec.Sink{Type: "parquet", Path: filepath.Join(out, "late")}},
		Sinks: []spec.Sink{
			{Type: "parquet", Path: filepath.Join(out, "rows"), PartitionBy: []string{"day"}},
			{Type: "iceberg", Path: filepath.Join(out, "warehouse"), Table: "shop.revenue_minute"},
		},
		Checkpoint: &spec.Checkpoint{Dir: filepath.Join(out, "ck")},
	}
	if !ck {
		p.Checkpoint = nil
	}
	_, err := engine.Run(context.Background(), compiled(t, p), engine.Options{BatchSize: 100})
	return err
}

// lakeInput writes 200 order events over ten minutes and three stores.
func lakeInput(t *testing.T, dir string) string {
	t.Helper()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	for i := range 200 {
		b.WriteString(`{"paid_at":"2026-09-01T10:0` + string(rune('0'+i/20)) + `:00Z","store_id":"s` + string(rune('0'+i%3)) + `","currency":"KRW","amount":1}` + "\n")
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

// tree lists every file and directory below root, relative to it.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, rel)
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// TestRefusedStartLeavesNoLakeDirs: a run refused at its first batch (a
// key field no record has) leaves nothing it created at its Parquet and
// Iceberg outputs — no _tidemark directory with its staging and
// manifests, no table directory with its data directory and lock file —
// and the corrected pipeline then runs and publishes its files.
func TestRefusedStartLeavesNoLakeDirs(t *testing.T) {
	dir := t.TempDir()
	in := lakeInput(t, dir)
	out := filepath.Join(dir, "out")
	if err := lakeRun(t, in, out, "stor_id"); err == nil || !strings.Contains(err.Error(), `key field "stor_id" is null or missing`) {
		t.Fatalf("the misspelt run: %v", err)
	}
	if left := tree(t, out); len(left) > 0 {
		t.Fatalf("the refused run left %v", left)
	}
	if err := lakeRun(t, in, out, "store_id"); err != nil {
		t.Fatalf("the corrected pipeline: %v", err)
	}
	for _, f := range []string{"rows/_tidemark/commit", "warehouse/shop/revenue_minute/metadata/version-hint.text"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("the corrected pipeline wrote no %s: %v", f, err)
		}
	}
}

// TestRefusedStartKeepsExistingLakeDirs: a refused start removes only
// what it created: the directories and files of an earlier run stay, with
// checkpoints (the refused run would have resumed) and without (it would
// have started over, and replaced the earlier run's files only when it
// published its own).
func TestRefusedStartKeepsExistingLakeDirs(t *testing.T) {
	for _, mode := range []string{"resuming", "without checkpoints", "from the start with checkpoints"} {
		ck := mode != "without checkpoints"
		dir := t.TempDir()
		in := lakeInput(t, dir)
		out := filepath.Join(dir, "out")
		if err := lakeRunCk(t, in, out, "store_id", ck); err != nil {
			t.Fatal(err)
		}
		if mode == "from the start with checkpoints" {
			// The checkpoints removed: the next run starts over
			// (Recover(0)), and would replace the published files at its
			// first checkpoint.
			if err := os.RemoveAll(filepath.Join(out, "ck")); err != nil {
				t.Fatal(err)
			}
		}
		before := tree(t, out)
		if err := lakeRunCk(t, in, out, "stor_id", ck); err == nil {
			t.Fatal("the misspelt run was not refused")
		}
		after := tree(t, out)
		if strings.Join(before, "\n") != strings.Join(after, "\n") {
			t.Errorf("%s: the refused run changed the outputs:\nbefore %v\nafter  %v", mode, before, after)
		}
	}
}

// TestLakeOutputsThroughALink: outputs named through a symbolic link to
// their directory run: the guard's locks, taken on the resolved paths,
// are recognized as held by the sinks (Env.holds), which take none of
// their own — else a sink's own lock would meet the guard's in this
// process and the run would fail. (A second run on the same outputs is
// TestGuardOutputsLocks.)
func TestLakeOutputsThroughALink(t *testing.T) {
	dir := t.TempDir()
	in := lakeInput(t, dir)
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := lakeRun(t, in, filepath.Join(link, "out"), "store_id"); err != nil {
		t.Fatalf("through the link: %v", err)
	}
	for _, f := range []string{"rows/_tidemark/commit", "warehouse/shop/revenue_minute/metadata/version-hint.text"} {
		if _, err := os.Stat(filepath.Join(real, "out", f)); err != nil {
			t.Errorf("no %s: %v", f, err)
		}
	}
}
