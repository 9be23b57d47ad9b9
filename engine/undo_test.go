package engine

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/internal/flock"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/sink/sqlite"
	"github.com/tidemark/tidemark/spec"
)

// tree lists every file (with a hash of its contents) and directory
// under dir, lock files by name only (they record their holder).
func tree(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.IsDir():
			lines = append(lines, rel+"/")
		case strings.HasSuffix(p, ".lock") || filepath.Base(p) == "LOCK":
			lines = append(lines, rel)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			lines = append(lines, rel+" "+hex.EncodeToString(h[:4]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestRefusedStartLeavesOutputs: a run whose start is refused — a
// resumed run whose SQLite database was deleted, a checkpoint taken under
// another spec, a sink refusing its table at a fresh start, an output
// another run holds — leaves the file system as it found it: no new empty
// database, JSONL, staging or lock file, no new directory, and the
// previous run's JSONL output not truncated.
func TestRefusedStartLeavesOutputs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	for i := range 50 {
		b.WriteString(`{"ts":"` + base.Add(time.Duration(i)*10*time.Second).Format(time.RFC3339) + `","k":"k` + string(rune('a'+i%3)) + `","v":1}` + "\n")
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := func(p string) string { return filepath.Join(dir, p) }
	pipeline := func(size time.Duration, db string) *spec.Pipeline {
		p := &spec.Pipeline{
			Name: "undo", Source: spec.Source{Type: "file", Path: in, Format: "jsonl", Schema: spec.FieldTypes{{Name: "v", Type: "int"}}},
			EventTime: spec.EventTime{Field: "ts"}, Key: []string{"k"},
			Window:     spec.Window{Type: "tumbling", Size: spec.Duration(size)},
			Aggregates: spec.NamedExprs{{Name: "s", Expr: "sum(v)"}},
			Sinks: []spec.Sink{
				{Type: "jsonl", Path: out("rows/r.jsonl"), Delivery: "at_least_once"},
				{Type: "jsonl", Path: out("rows/eo.jsonl")},
				{Type: "sqlite", Path: out(db), Table: "revenue"},
			},
			Quarantine: spec.Quarantine{Sink: &spec.Sink{Type: "jsonl", Path: out("q/quarantine.jsonl")}},
			Checkpoint: &spec.Checkpoint{Dir: out("ck"), Interval: spec.Duration(time.Millisecond)},
		}
		p.Defaults()
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(p *spec.Pipeline) error {
		t.Helper()
		pl, err := plan.Compile(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(ctx, pl, Options{Parallelism: 2})
		return err
	}
	if err := run(pipeline(time.Minute, "db/r.db")); err != nil {
		t.Fatal(err)
	}
	rows, _ := os.ReadFile(out("rows/r.jsonl"))
	if len(rows) == 0 {
		t.Fatal("the first run wrote no rows")
	}

	// 1. A checkpoint of another spec, with the JSONL outputs gone.
	os.RemoveAll(out("rows"))
	os.RemoveAll(out("q"))
	before := tree(t, dir)
	err := run(pipeline(2*time.Minute, "db/r.db"))
	if err == nil || !strings.Contains(err.Error(), "was taken under another pipeline spec: window.size") {
		t.Fatalf("changed spec: %v", err)
	}
	if got := tree(t, dir); got != before {
		t.Fatalf("changed spec: the refusal changed the outputs:\n%s\nwant\n%s", got, before)
	}

	// 2. The database deleted while the pipeline was down.
	os.RemoveAll(out("db"))
	before = tree(t, dir)
	err = run(pipeline(time.Minute, "db/r.db"))
	var me *sqlite.MissingTableError
	if !errors.As(err, &me) || !me.NoFile {
		t.Fatalf("deleted database: %v", err)
	}
	if got := tree(t, dir); got != before {
		t.Fatalf("deleted database: the refusal changed the outputs:\n%s\nwant\n%s", got, before)
	}

	// 3. A fresh start (no checkpoints) whose SQLite sink refuses the
	// table it finds (not tidemark's, without the columns): the previous
	// run's JSONL rows stay, the checkpoint directory is not created.
	os.RemoveAll(out("ck"))
	os.MkdirAll(out("rows"), 0o755)
	os.WriteFile(out("rows/r.jsonl"), rows, 0o644)
	os.MkdirAll(out("db"), 0o755)
	execUserSQL(t, out("db/user.db"), `CREATE TABLE revenue (x TEXT)`)
	before = tree(t, dir)
	err = run(pipeline(time.Minute, "db/user.db"))
	var se *sqlite.SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("refused table: %v", err)
	}
	if got := tree(t, dir); got != before {
		t.Fatalf("refused table: the refusal changed the outputs:\n%s\nwant\n%s", got, before)
	}

	// 4. An output another run holds (the SQLite table's lock): the locks
	// and directories taken before it are given back and removed.
	l, err := flock.Acquire(out("db/r.db.revenue.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	before = tree(t, dir)
	err = run(pipeline(time.Minute, "db/r.db"))
	var he *flock.HeldError
	if !errors.As(err, &he) {
		t.Fatalf("held output: %v", err)
	}
	if got := tree(t, dir); got != before {
		t.Fatalf("held output: the refusal changed the outputs:\n%s\nwant\n%s", got, before)
	}
}

// execUserSQL runs stmt on the SQLite database at path, as a user would.
func execUserSQL(t *testing.T, path, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
}

// TestStartInterrupted: a run whose context is cancelled while it opens
// its sinks (a signal during a slow connect) returns a
// *StartInterruptedError naming the step and the checkpoint the next run
// resumes from, and leaves no file it created.
func TestStartInterrupted(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(`{"ts":"2026-09-01T10:00:00Z","k":"a","v":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &spec.Pipeline{
		Name: "slow", Source: spec.Source{Type: "file", Path: in, Format: "jsonl", Schema: spec.FieldTypes{{Name: "v", Type: "int"}}},
		EventTime: spec.EventTime{Field: "ts"}, Key: []string{"k"},
		Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
		Aggregates: spec.NamedExprs{{Name: "s", Expr: "sum(v)"}},
		Sinks:      []spec.Sink{{Type: "jsonl", Path: filepath.Join(dir, "out", "r.jsonl")}, {Type: "slow", Delivery: "at_least_once"}},
		Checkpoint: &spec.Checkpoint{Dir: filepath.Join(dir, "ck"), Interval: spec.Duration(time.Millisecond)},
	}
	p.Defaults()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Compile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ck   int64
		want string
	}{
		{"no checkpoint", 0, "interrupted while opening the source and the sinks: stopped before reading any record, no row or record of this run was written; run again to start from the beginning of the input"},
		{"checkpoint 1", 1, "interrupted while opening the source and the sinks: stopped before reading any record, no row or record of this run was written; checkpoint 1 in " + p.Checkpoint.Dir + " holds the position: run again to resume from it"},
	} {
		if tc.ck > 0 {
			// A complete run first, whose sink is quick.
			reg := DefaultRegistry()
			reg.Results["slow"] = reg.Results["stdout"]
			if _, err := Run(context.Background(), pl, Options{Registry: reg, Stdout: io.Discard}); err != nil {
				t.Fatal(err)
			}
			os.RemoveAll(filepath.Join(dir, "out"))
		}
		before := tree(t, dir)
		ctx, cancel := context.WithCancel(context.Background())
		reg := DefaultRegistry()
		reg.Results["slow"] = func(ctx context.Context, _ spec.Sink, _ changelog.Desc, _ *Env) (sink.Results, error) {
			cancel() // the signal arrives while the sink connects
			<-ctx.Done()
			return nil, ctx.Err()
		}
		_, err := Run(ctx, pl, Options{Registry: reg})
		var si *StartInterruptedError
		if !errors.As(err, &si) || si.Checkpoint != tc.ck || err.Error() != tc.want || !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: %v\nwant %s", tc.name, err, tc.want)
		}
		if got := tree(t, dir); got != before {
			t.Fatalf("%s: the interrupted start changed the outputs:\n%s\nwant\n%s", tc.name, got, before)
		}
	}
}

// TestRefusedFreshStartKeepsTables: a run from the start (no checkpoints)
// empties the tables tidemark created at its first flush; when its start
// is refused after such a sink opened (a later sink refuses its table),
// the sink is aborted, not flushed, so the previous run's rows stay.
func TestRefusedFreshStartKeepsTables(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(`{"ts":"2026-09-01T10:00:00Z","k":"a","v":1}`+"\n"+`{"ts":"2026-09-01T10:01:00Z","k":"b","v":2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pipeline := func(sinks ...spec.Sink) *plan.Plan {
		p := &spec.Pipeline{
			Name: "fresh", Source: spec.Source{Type: "file", Path: in, Format: "jsonl", Schema: spec.FieldTypes{{Name: "v", Type: "int"}}},
			EventTime: spec.EventTime{Field: "ts"}, Key: []string{"k"},
			Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
			Aggregates: spec.NamedExprs{{Name: "s", Expr: "sum(v)"}},
			Sinks:      sinks,
		}
		p.Defaults()
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		pl, err := plan.Compile(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	own := spec.Sink{Type: "sqlite", Path: filepath.Join(dir, "r.db"), Table: "revenue"}
	if _, err := Run(ctx, pipeline(own), Options{}); err != nil {
		t.Fatal(err)
	}
	execUserSQL(t, filepath.Join(dir, "user.db"), `CREATE TABLE revenue (x TEXT)`)
	before := tree(t, dir)
	_, err := Run(ctx, pipeline(own, spec.Sink{Type: "sqlite", Path: filepath.Join(dir, "user.db"), Table: "revenue"}), Options{})
	var se *sqlite.SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("refused table: %v", err)
	}
	if got := tree(t, dir); got != before {
		t.Fatalf("the refused fresh start changed the outputs:\n%s\nwant\n%s", got, before)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM revenue`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("revenue holds %d rows (%v), want the previous run's 2", n, err)
	}
}
