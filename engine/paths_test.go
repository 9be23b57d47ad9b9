package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/flock"
	"github.com/tidemark/tidemark/spec"
)

// pathsFixture is a directory with an input file data/in.jsonl, a
// contract and a reference file, and symbolic and hard links to them.
type pathsFixture struct {
	dir, data, in, contract, ref string
}

func newPathsFixture(t *testing.T) pathsFixture {
	t.Helper()
	dir := t.TempDir()
	f := pathsFixture{dir: dir, data: filepath.Join(dir, "data")}
	f.in = filepath.Join(f.data, "in.jsonl")
	f.contract = filepath.Join(dir, "orders.contract.yaml")
	f.ref = filepath.Join(dir, "stores.csv")
	must(t, os.MkdirAll(f.data, 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "out"), 0o755))
	must(t, os.WriteFile(f.in, []byte("{\"ts\":\"2026-09-01T10:00:00Z\"}\n"), 0o644))
	must(t, os.WriteFile(f.contract, []byte("x\n"), 0o644))
	must(t, os.WriteFile(f.ref, []byte("store_id,region\n"), 0o644))
	must(t, os.Symlink(f.in, filepath.Join(dir, "out", "link-to-input.jsonl")))
	must(t, os.Link(f.in, filepath.Join(dir, "out", "hard-link-to-input.jsonl")))
	must(t, os.Symlink(f.data, filepath.Join(dir, "data-link")))
	must(t, os.Symlink(filepath.Join(dir, "out"), filepath.Join(dir, "out-link")))
	must(t, os.Symlink(filepath.Join(dir, "out", "b.jsonl"), filepath.Join(dir, "out", "dangling.jsonl")))
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// p is a pipeline reading path with a jsonl result sink at out/rows.jsonl.
func (f pathsFixture) p(source string) *spec.Pipeline {
	return &spec.Pipeline{
		Name:   "p",
		Source: spec.Source{Type: "file", Path: source},
		Sinks:  []spec.Sink{{Type: "jsonl", Path: filepath.Join(f.dir, "out", "rows.jsonl")}},
	}
}

func jsonlSink(path string) *spec.Sink { return &spec.Sink{Type: "jsonl", Path: path} }

// TestOutputPathsRefused: every output is compared by identity with every
// input and every other output; each refusal is a configuration error
// naming both.
func TestOutputPathsRefused(t *testing.T) {
	f := newPathsFixture(t)
	out := func(name string) string { return filepath.Join(f.dir, "out", name) }
	for _, tc := range []struct {
		name string
		p    func() *spec.Pipeline
		want []string // substrings of the error, in order
	}{
		{"sink is a symlink to the input", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks[0].Path = out("link-to-input.jsonl")
			return p
		}, []string{"sinks[0].path: " + out("link-to-input.jsonl") + " is also an input of source.path " + f.in + ": the same file, through a symbolic or hard link"}},
		{"sink is a hard link to the input", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks[0].Path = out("hard-link-to-input.jsonl")
			return p
		}, []string{"sinks[0].path: " + out("hard-link-to-input.jsonl") + " is also an input of source.path " + f.in + ": the same file"}},
		{"conflicts.sink.path is the input", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Conflicts.Sink = jsonlSink(f.in)
			return p
		}, []string{"conflicts.sink.path: " + f.in + " is also an input of source.path " + f.in + ";"}},
		{"quarantine.sink.path is a result sink's path", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Quarantine.Sink = jsonlSink(out("rows.jsonl"))
			return p
		}, []string{"sinks[0].path: " + out("rows.jsonl") + " is also written by quarantine.sink.path (" + out("rows.jsonl") + "): two writers would overwrite each other"}},
		{"a new output in a symlinked directory, read by a directory source", func() *spec.Pipeline {
			p := f.p(f.data)
			p.Sinks[0].Path = filepath.Join(f.dir, "data-link", "new.jsonl")
			return p
		}, []string{"sinks[0].path: " + filepath.Join(f.dir, "data-link", "new.jsonl") + " is also an input of source.path " + f.data + ": a file in that directory is read as input"}},
		{"a new output in a symlinked directory, matched by a glob", func() *spec.Pipeline {
			p := f.p(filepath.Join(f.data, "*.jsonl"))
			p.Late.Sink = jsonlSink(filepath.Join(f.dir, "data-link", "late.jsonl"))
			return p
		}, []string{"late.sink.path: ", " is also an input of source.path " + filepath.Join(f.data, "*.jsonl") + ": it matches that pattern"}},
		{"two new outputs, one through a symlinked directory", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Quarantine.Sink = jsonlSink(filepath.Join(f.dir, "out-link", "rows.jsonl"))
			return p
		}, []string{"sinks[0].path: " + out("rows.jsonl") + " is also written by quarantine.sink.path (" + filepath.Join(f.dir, "out-link", "rows.jsonl") + ") (one file, through a symbolic or hard link)"}},
		{"a dangling symlink to another output", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks = append(p.Sinks, spec.Sink{Type: "jsonl", Path: out("b.jsonl")})
			p.Sinks[0].Path = out("dangling.jsonl")
			return p
		}, []string{"sinks[1].path: " + out("b.jsonl") + " is also written by sinks[0].path (" + out("dangling.jsonl") + ")"}},
		{"an output on another's staging file", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Late.Sink = jsonlSink(out("rows.jsonl.pending"))
			return p
		}, []string{"late.sink.path: " + out("rows.jsonl.pending") + " is also written by sinks[0].path (" + out("rows.jsonl") + ") (one file: sinks[0].path writes " + out("rows.jsonl.pending") + ", late.sink.path writes " + out("rows.jsonl.pending") + ")"}},
		{"an output on the contract", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Contract = f.contract
			p.Sinks[0].Path = f.contract
			return p
		}, []string{"sinks[0].path: " + f.contract + " is also an input of contract " + f.contract}},
		{"contributions on the reference file", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Reference = &spec.Reference{Path: f.ref}
			p.Contributions = &spec.Contributions{Sink: jsonlSink(f.ref)}
			return p
		}, []string{"contributions.sink.path: " + f.ref + " is also an input of reference.path " + f.ref}},
		{"a sqlite database on the input", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks[0] = spec.Sink{Type: "sqlite", Path: f.in, Table: "t"}
			return p
		}, []string{"sinks[0].path: " + f.in + " is also an input of source.path"}},
		{"a sqlite database's write-ahead log on the input", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks[0] = spec.Sink{Type: "sqlite", Path: out("w.db"), Table: "t"}
			must(t, os.Symlink(f.in, out("w.db-wal")))
			return p
		}, []string{"sinks[0].path: " + out("w.db") + " (" + out("w.db-wal") + ", which it writes beside it) is also an input of source.path " + f.in}},
		{"one sqlite table written twice", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks = []spec.Sink{{Type: "sqlite", Path: out("r.db"), Table: "revenue"}, {Type: "sqlite", Path: filepath.Join(f.dir, "out-link", "r.db"), Table: "Revenue"}}
			return p
		}, []string{"sinks[1].path: table revenue of " + filepath.Join(f.dir, "out-link", "r.db") + " is also written by sinks[0].path (" + out("r.db") + ")"}},
		{"a jsonl output on a sqlite database", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks = []spec.Sink{{Type: "sqlite", Path: out("r.db"), Table: "revenue"}, {Type: "jsonl", Path: out("r.db")}}
			return p
		}, []string{"sinks[1].path: " + out("r.db") + " is also written by sinks[0].path"}},
		{"the checkpoint directory is the source directory", func() *spec.Pipeline {
			p := f.p(f.data)
			p.Checkpoint = &spec.Checkpoint{Dir: filepath.Join(f.dir, "data-link")}
			return p
		}, []string{"checkpoint.dir: " + filepath.Join(f.dir, "data-link") + " is also an input of source.path " + f.data + ": the same directory"}},
		{"the input inside the checkpoint directory", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Checkpoint = &spec.Checkpoint{Dir: f.data}
			return p
		}, []string{"checkpoint.dir: " + f.data + " holds source.path " + f.in + ": tidemark writes, renames and deletes files in its checkpoint directory"}},
		{"an output inside the checkpoint directory", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Checkpoint = &spec.Checkpoint{Dir: filepath.Join(f.dir, "out-link")}
			return p
		}, []string{"sinks[0].path: " + out("rows.jsonl") + " is inside checkpoint.dir " + filepath.Join(f.dir, "out-link")}},
		{"an output inside a checkpoint directory not created yet", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Checkpoint = &spec.Checkpoint{Dir: out("new/ck")}
			p.Quarantine.Sink = jsonlSink(filepath.Join(f.dir, "out-link", "new", "ck", "sub", "q.jsonl"))
			return p
		}, []string{"quarantine.sink.path: " + filepath.Join(f.dir, "out-link", "new", "ck", "sub", "q.jsonl") + " is inside checkpoint.dir " + out("new/ck")}},
		{"an output on the checkpoint directory", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Checkpoint = &spec.Checkpoint{Dir: out("ck")}
			p.Late.Sink = jsonlSink(filepath.Join(f.dir, "out-link", "ck"))
			return p
		}, []string{"late.sink.path: " + filepath.Join(f.dir, "out-link", "ck") + " is also checkpoint.dir " + out("ck")}},
		{"exactly once on the null device", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks[0].Path = os.DevNull
			p.Checkpoint = &spec.Checkpoint{Dir: out("ck")}
			return p
		}, []string{"sinks[0].path: " + os.DevNull + " is a character device, not a regular file", "set delivery: at_least_once"}},
		{"two parquet sinks in one directory, one through a link", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks = []spec.Sink{{Type: "parquet", Path: out("lake")}, {Type: "parquet", Path: filepath.Join(f.dir, "out-link", "lake")}}
			return p
		}, []string{"sinks[1].path: " + filepath.Join(f.dir, "out-link", "lake") + " is also written by sinks[0].path (" + out("lake") + "): two writers of one directory"}},
		{"a late parquet output in the results' parquet directory", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks = []spec.Sink{{Type: "parquet", Path: out("lake")}}
			p.Late = spec.Late{Policy: "side_output", Sink: &spec.Sink{Type: "parquet", Path: out("lake/late")}}
			return p
		}, []string{"late.sink.path: " + out("lake/late") + " is inside sinks[0].path " + out("lake") + ": the parquet sink writes, renames and deletes files in its directory"}},
		{"a jsonl file in a parquet directory", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks = append(p.Sinks, spec.Sink{Type: "parquet", Path: out("")})
			return p
		}, []string{"sinks[0].path: " + out("rows.jsonl") + " is inside sinks[1].path " + out("")}},
		{"two iceberg sinks of one table", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks = []spec.Sink{{Type: "iceberg", Path: out("wh"), Table: "shop.revenue"}, {Type: "iceberg", Path: filepath.Join(f.dir, "out-link", "wh"), Table: "shop.revenue"}}
			return p
		}, []string{"sinks[1].path: " + filepath.Join(f.dir, "out-link", "wh", "shop", "revenue") + " is also written by sinks[0].path (" + out("wh/shop/revenue") + ")"}},
		{"an iceberg table in the default namespace written as two names", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks = []spec.Sink{{Type: "iceberg", Path: out("wh"), Table: "revenue"}, {Type: "iceberg", Path: out("wh"), Table: "default.revenue"}}
			return p
		}, []string{"sinks[1].path: " + out("wh/default/revenue") + " is also written by sinks[0].path"}},
		{"a parquet directory inside the checkpoint directory", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks = []spec.Sink{{Type: "parquet", Path: out("ck/lake")}}
			p.Checkpoint = &spec.Checkpoint{Dir: out("ck")}
			return p
		}, []string{"sinks[0].path: " + out("ck/lake") + " is inside checkpoint.dir " + out("ck")}},
		{"the checkpoint directory inside a parquet directory", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks = []spec.Sink{{Type: "parquet", Path: out("lake")}}
			p.Checkpoint = &spec.Checkpoint{Dir: out("lake/ck")}
			return p
		}, []string{"checkpoint.dir: " + out("lake/ck") + " is inside sinks[0].path " + out("lake")}},
		{"the source directory inside an iceberg table", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks = []spec.Sink{{Type: "iceberg", Path: f.dir, Table: "x.data"}}
			p.Source.Path = filepath.Join(f.dir, "x", "data", "in")
			must(t, os.MkdirAll(p.Source.Path, 0o755))
			return p
		}, []string{"sinks[0].path: " + filepath.Join(f.dir, "x", "data") + " holds source.path " + filepath.Join(f.dir, "x", "data", "in") + ": the iceberg sink writes"}},
		{"a parquet sink on the input file", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks = []spec.Sink{{Type: "parquet", Path: f.in}}
			return p
		}, []string{"sinks[0].path: " + f.in + " is not a regular file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkOutputPaths(tc.p(), true)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want a *ConfigError", err)
			}
			msg := err.Error()
			at := 0
			for _, w := range tc.want {
				i := strings.Index(msg[at:], w)
				if i < 0 {
					t.Fatalf("error\n  %s\nlacks (after byte %d)\n  %s", msg, at, w)
				}
				at += i + len(w)
			}
		})
	}
	if b, err := os.ReadFile(f.in); err != nil || len(b) == 0 {
		t.Fatalf("the input was damaged: %q, %v", b, err)
	}
}

// TestOutputPathsAllowed: what may share a file or a directory.
func TestOutputPathsAllowed(t *testing.T) {
	f := newPathsFixture(t)
	out := func(name string) string { return filepath.Join(f.dir, "out", name) }
	for _, tc := range []struct {
		name string
		p    func() *spec.Pipeline
	}{
		{"two tables of one sqlite database, one through a link", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks = []spec.Sink{{Type: "sqlite", Path: out("r.db"), Table: "revenue"}, {Type: "sqlite", Path: filepath.Join(f.dir, "out-link", "r.db"), Table: "orders"}}
			return p
		}},
		{"the null device, several times, with checkpoints at least once", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks[0] = spec.Sink{Type: "jsonl", Path: os.DevNull, Delivery: "at_least_once"}
			p.Quarantine.Sink = jsonlSink(os.DevNull)
			p.Quarantine.Sink.Delivery = "at_least_once"
			p.Checkpoint = &spec.Checkpoint{Dir: out("ck")}
			return p
		}},
		{"outputs beside the checkpoint directory and the input's directory", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks = append(p.Sinks, spec.Sink{Type: "jsonl", Path: filepath.Join(f.dir, "data-link", "sub", "x.jsonl")})
			p.Checkpoint = &spec.Checkpoint{Dir: out("ck")}
			return p
		}},
		{"a checkpoint directory inside the source directory, which reads no subdirectory", func() *spec.Pipeline {
			must(t, os.MkdirAll(filepath.Join(f.data, "ck"), 0o755))
			for _, src := range []string{f.data, filepath.Join(f.data, "*")} {
				p := f.p(src)
				p.Checkpoint = &spec.Checkpoint{Dir: filepath.Join(f.data, "ck")}
				if _, err := checkOutputPaths(p, true); err != nil {
					t.Errorf("source.path %s: %v", src, err)
				}
			}
			return f.p(f.in)
		}},
		{"a glob that does not match the output's name", func() *spec.Pipeline {
			p := f.p(filepath.Join(f.data, "*.csv"))
			p.Sinks[0].Path = filepath.Join(f.dir, "data-link", "rows.jsonl")
			return p
		}},
		{"the source given by the caller", func() *spec.Pipeline {
			p := f.p(f.in)
			p.Sinks[0].Path = out("link-to-input.jsonl")
			p.Source.Path = "" // as with Options.Source: specSource is false below
			return p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := checkOutputPaths(tc.p(), tc.name != "the source given by the caller"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestGuardOutputsLocks: a second guard on the same checkpoint directory,
// jsonl file or sqlite table (through another spelling of its path) is
// refused, naming the output and the holder; another table of the same
// database is not; after release the outputs can be taken again.
func TestGuardOutputsLocks(t *testing.T) {
	f := newPathsFixture(t)
	out := func(name string) string { return filepath.Join(f.dir, "out", name) }
	first := f.p(f.in)
	first.Sinks = append(first.Sinks, spec.Sink{Type: "sqlite", Path: out("r.db"), Table: "revenue"},
		spec.Sink{Type: "parquet", Path: out("lake")}, spec.Sink{Type: "iceberg", Path: out("wh"), Table: "shop.revenue"})
	first.Checkpoint = &spec.Checkpoint{Dir: out("ck")}
	release, err := guardOutputs(first, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ck/LOCK", "rows.jsonl.lock", "r.db.revenue.lock", "lake/_tidemark/LOCK", "wh/shop/revenue/.tidemark.lock"} {
		if _, err := os.Stat(out(name)); err != nil {
			t.Errorf("lock file %s: %v", name, err)
		}
	}
	host, _ := os.Hostname()
	holder := fmt.Sprintf("is held by pid %d on host %s, since ", os.Getpid(), host)
	for _, tc := range []struct {
		name string
		p    *spec.Pipeline
		want string
	}{
		{"checkpoint directory", &spec.Pipeline{Checkpoint: &spec.Checkpoint{Dir: filepath.Join(f.dir, "out-link", "ck")}},
			"checkpoint.dir " + filepath.Join(f.dir, "out-link", "ck") + ": another run is writing this checkpoint directory: lock " + out("ck/LOCK") + " " + holder},
		{"jsonl file", &spec.Pipeline{Sinks: []spec.Sink{{Type: "jsonl", Path: filepath.Join(f.dir, "out-link", "rows.jsonl")}}},
			"sinks[0].path " + filepath.Join(f.dir, "out-link", "rows.jsonl") + ": another run is writing this file: lock " + out("rows.jsonl.lock") + " " + holder},
		{"sqlite table", &spec.Pipeline{Sinks: []spec.Sink{{Type: "sqlite", Path: out("r.db"), Table: "REVENUE"}}},
			"sinks[0].path " + out("r.db") + " (table revenue): another run is writing this table: lock " + out("r.db.revenue.lock") + " " + holder},
		{"parquet directory", &spec.Pipeline{Sinks: []spec.Sink{{Type: "parquet", Path: filepath.Join(f.dir, "out-link", "lake")}}},
			"sinks[0].path " + filepath.Join(f.dir, "out-link", "lake") + ": another run is writing this directory: lock " + out("lake/_tidemark/LOCK") + " " + holder},
		{"iceberg table", &spec.Pipeline{Sinks: []spec.Sink{{Type: "iceberg", Path: filepath.Join(f.dir, "out-link", "wh"), Table: "shop.revenue"}}},
			"sinks[0].path " + filepath.Join(f.dir, "out-link", "wh", "shop", "revenue") + ": another run is writing this table: lock " + out("wh/shop/revenue/.tidemark.lock") + " " + holder},
	} {
		_, err := guardOutputs(tc.p, true)
		var he *flock.HeldError
		if !errors.As(err, &he) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "even after kill -9") {
			t.Errorf("%s: %v\nwant a *flock.HeldError and %q", tc.name, err, tc.want)
		}
	}
	other, err := guardOutputs(&spec.Pipeline{Sinks: []spec.Sink{{Type: "sqlite", Path: out("r.db"), Table: "orders"}}}, true)
	if err != nil {
		t.Fatalf("another table of the database: %v", err)
	}
	other()
	release()
	release() // twice is harmless
	again, err := guardOutputs(first, true)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
}
