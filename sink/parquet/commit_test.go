package parquet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

var countDesc = changelog.Desc{Stage: "c", Timezone: "UTC", EmitMode: "final",
	Key: []changelog.Column{{Name: "k", Kind: row.KindString}}, Values: []changelog.Column{{Name: "n", Kind: row.KindInt}}}

func countRow(k string, start, n int64) changelog.Row {
	return changelog.Row{Op: changelog.Insert, WindowStart: start, WindowEnd: start + 3_600_000, Version: 1,
		Key: []row.Value{row.Str(k)}, Values: []row.Value{row.Int(n)}}
}

// published lists the .parquet files under dir (what a reader globbing
// **/*.parquet sees) and their rows as "k n".
func published(t *testing.T, dir string) (files []string, rows []string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".parquet") {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
			_, rs := readFile(t, p)
			for _, r := range rs {
				rows = append(rows, r[3]+" "+r[4])
			}
		}
		return nil
	})
	slices.Sort(rows)
	return files, rows
}

func openCount(t *testing.T, dir string, fault func(string, int64)) *Results {
	t.Helper()
	s, err := NewResults(countDesc, Options{Dir: dir, ExactlyOnce: true, PartitionBy: []string{"day", "k"}, Fault: fault, Pipeline: "p", Sink: "s"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCommitProtocol walks the two-phase commit: staged rows are
// invisible, a commit publishes them under their partitions, a crash
// between prepare and commit is completed by Recover, a crash in the
// middle of the renames too, a fallback to an older checkpoint removes
// what later ones published, and a fresh start removes every file the
// sink published but none it did not.
func TestCommitProtocol(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	day := int64(86_400_000)
	s := openCount(t, dir, nil)
	if err := s.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Write(ctx, []changelog.Row{countRow("a", 0, 1), countRow("b/x", 0, 2), countRow("a", day, 3)}))
	if f, _ := published(t, dir); len(f) != 0 {
		t.Fatalf("visible before the checkpoint: %v", f)
	}
	p1, err := s.Prepare(ctx, 1)
	must(err)
	if f, _ := published(t, dir); len(f) != 0 {
		t.Fatalf("visible before the commit: %v", f)
	}
	must(s.Commit(ctx, 1, p1))
	files, rows := published(t, dir)
	wantFiles := []string{"window_day=1970-01-01/k=a/part-00000001-00000.parquet", "window_day=1970-01-01/k=b%2Fx/part-00000001-00000.parquet",
		"window_day=1970-01-02/k=a/part-00000001-00000.parquet"}
	if !slices.Equal(files, wantFiles) || !slices.Equal(rows, []string{"'a' 1", "'a' 3", "'b/x' 2"}) {
		t.Fatalf("after commit 1: %v %v", files, rows)
	}
	m, err := ReadManifest(filepath.Join(dir, "_tidemark/manifests/1.json"))
	must(err)
	if m.Checkpoint != 1 || len(m.Files) != 3 || m.Files[0].Rows != 1 || m.Pipeline != "p" {
		t.Fatalf("manifest %+v", m)
	}
	must(s.Commit(ctx, 1, p1)) // a repeated commit is a no-op

	// Checkpoint 2 prepared, then the process dies before the commit;
	// rows staged for checkpoint 3 die with it.
	must(s.Write(ctx, []changelog.Row{countRow("c", 0, 4)}))
	p2, err := s.Prepare(ctx, 2)
	must(err)
	must(s.Write(ctx, []changelog.Row{countRow("d", 0, 5)}))
	must(s.Abort(ctx))
	s = openCount(t, dir, nil)
	must(s.Recover(ctx, 2, p2))
	if _, rows := published(t, dir); !slices.Equal(rows, []string{"'a' 1", "'a' 3", "'b/x' 2", "'c' 4"}) {
		t.Fatalf("after recovering 2: %v", rows)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, stagingDir)); len(ents) != 0 {
		t.Fatalf("staging not emptied: %v", ents)
	}

	// Checkpoint 3 dies in the middle of its renames.
	must(s.Write(ctx, []changelog.Row{countRow("e", 0, 6), countRow("f", 0, 7)}))
	p3, err := s.Prepare(ctx, 3)
	must(err)
	must(s.Abort(ctx))
	died := false
	s = openCount(t, dir, func(point string, id int64) {
		if point == "parquet-renamed" && id == 3 && !died {
			died = true
			panic("killed")
		}
	})
	func() {
		defer func() { recover() }()
		s.Commit(ctx, 3, p3)
	}()
	if _, rows := published(t, dir); len(rows) != 5 {
		t.Fatalf("one of two files renamed: %v", rows)
	}
	s.Abort(ctx)
	s = openCount(t, dir, nil)
	must(s.Recover(ctx, 3, p3))
	if _, rows := published(t, dir); !slices.Equal(rows, []string{"'a' 1", "'a' 3", "'b/x' 2", "'c' 4", "'e' 6", "'f' 7"}) {
		t.Fatalf("after recovering 3: %v", rows)
	}

	// Checkpoint 3 turns out unusable: the run falls back to 2, and 3's
	// files go (the replay writes them again).
	must(s.Recover(ctx, 2, p2))
	if _, rows := published(t, dir); !slices.Equal(rows, []string{"'a' 1", "'a' 3", "'b/x' 2", "'c' 4"}) {
		t.Fatalf("after falling back to 2: %v", rows)
	}
	if mk, _ := s.d.marker(); mk != 2 {
		t.Fatalf("marker %d", mk)
	}

	// A fresh start removes what the sink published, not a file of the
	// user's — at its first Prepare, not at Recover(0): a start refused
	// before its first checkpoint changes nothing.
	must(os.WriteFile(filepath.Join(dir, "mine.parquet.txt"), []byte("x"), 0o644))
	must(s.Recover(ctx, 0, nil))
	if files, _ := published(t, dir); len(files) != 4 {
		t.Fatalf("after Recover(0), before the first Prepare: %v", files)
	}
	if mk, _ := s.d.marker(); mk != 2 {
		t.Fatalf("marker %d after Recover(0)", mk)
	}
	if _, err := s.Prepare(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if files, _ := published(t, dir); len(files) != 0 {
		t.Fatalf("after a fresh start's first Prepare: %v", files)
	}
	if mk, _ := s.d.marker(); mk != 0 {
		t.Fatalf("marker %d after the first Prepare", mk)
	}
	if _, err := os.Stat(filepath.Join(dir, "mine.parquet.txt")); err != nil {
		t.Fatalf("a file the sink did not write was touched: %v", err)
	}
	if n := s.Notes(); len(n) != 2 || !strings.Contains(n[1], "removed 4 files an earlier run published") {
		t.Fatalf("notes %q", n)
	}
	must(s.Close(ctx))
}

// TestSecondRunRefused: the directory's lock keeps out a second run.
func TestSecondRunRefused(t *testing.T) {
	dir := t.TempDir()
	s := openCount(t, dir, nil)
	defer s.Close(context.Background())
	if _, err := NewResults(countDesc, Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "LOCK") {
		t.Fatalf("second open: %v", err)
	}
}

// TestRollBySize: files are closed at roll_bytes; without exactly once
// they are published as they roll, and the rest at Close.
func TestRollBySize(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := NewResults(countDesc, Options{Dir: dir, RollBytes: 1, RowGroupRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.Write(ctx, []changelog.Row{countRow("k", int64(i), int64(i))}); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := published(t, dir)
	if len(files) != 3 {
		t.Fatalf("files %v", files)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if files, rows := published(t, dir); len(files) != 3 || !slices.Equal(rows, []string{"'k' 0", "'k' 1", "'k' 2"}) {
		t.Fatalf("files %v rows %v", files, rows)
	}
	// A new run from the start replaces them.
	s, err = NewResults(countDesc, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s.Write(ctx, []changelog.Row{countRow("z", 0, 9)})
	s.Close(ctx)
	if files, rows := published(t, dir); !slices.Equal(files, []string{"part-00000001-00000.parquet"}) || !slices.Equal(rows, []string{"'z' 9"}) {
		t.Fatalf("files %v rows %v", files, rows)
	}
}

// FuzzPrepared: the prepared state read back from a checkpoint never
// panics, and a path leaving the directory is refused.
func FuzzPrepared(f *testing.F) {
	f.Add(encodePending([]pendingFile{{staged: "0.parquet.inprogress", path: "a=1/part-1-0.parquet", rows: 3, bytes: 100}}))
	f.Add(encodePending([]pendingFile{{staged: "0", path: "../x", rows: 1, bytes: 1}}))
	f.Add([]byte{1, 5})
	f.Fuzz(func(t *testing.T, b []byte) {
		files, err := decodePending("d", b)
		if err != nil {
			return
		}
		for _, fl := range files {
			if !filepath.IsLocal(fl.path) || strings.Contains(fl.staged, "/") {
				t.Fatalf("accepted %+v", fl)
			}
		}
	})
}

// FuzzManifest: a manifest file never panics the reader.
func FuzzManifest(f *testing.F) {
	f.Add([]byte(`{"pipeline":"p","sink":"s","checkpoint":1,"files":[{"path":"a/b.parquet","rows":1,"bytes":2}]}`))
	f.Add([]byte(`{"files":[{"path":"/etc/passwd"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest("m.json", b)
		if err != nil {
			return
		}
		for _, fl := range m.Files {
			if !filepath.IsLocal(fl.Path) {
				t.Fatalf("accepted %q", fl.Path)
			}
		}
	})
}
