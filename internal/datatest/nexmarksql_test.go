package datatest

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFindNexmarkSQL lays out a clone whose data sets come from
// TIDEMARK_DATA, with the corpus beside that directory and none above the
// clone, and checks each rule of FindNexmarkSQL in its order.
func TestFindNexmarkSQL(t *testing.T) {
	root := t.TempDir()
	mk := func(p string) string {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	shared := mk(filepath.Join(root, "elsewhere", "shared"))
	data := mk(filepath.Join(shared, "data"))
	corpus := mk(filepath.Join(shared, "nexmark-sql"))
	if err := os.WriteFile(filepath.Join(corpus, "q0.sql"), []byte("-- q0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	clone := mk(filepath.Join(root, "clone", "sql", "planner"))
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	if got := FindNexmarkSQL(getenv, clone); got != "" {
		t.Errorf("no variable, no corpus above the clone: got %q, want none", got)
	}
	env["TIDEMARK_DATA"] = data
	if got := FindNexmarkSQL(getenv, clone); got != corpus {
		t.Errorf("beside TIDEMARK_DATA: got %q, want %q", got, corpus)
	}
	env["TIDEMARK_DATA"] = data + string(filepath.Separator) // a trailing slash
	if got := FindNexmarkSQL(getenv, clone); got != corpus {
		t.Errorf("beside TIDEMARK_DATA/: got %q, want %q", got, corpus)
	}
	// A relative TIDEMARK_DATA is taken from the working directory.
	t.Chdir(shared)
	env["TIDEMARK_DATA"] = "data"
	if got := FindNexmarkSQL(getenv, clone); got != corpus {
		t.Errorf("beside a relative TIDEMARK_DATA: got %q, want %q", got, corpus)
	}
	// A directory named nexmark-sql without q0.sql is not the corpus.
	other := mk(filepath.Join(root, "other", "data"))
	mk(filepath.Join(root, "other", "nexmark-sql"))
	env["TIDEMARK_DATA"] = other
	if got := FindNexmarkSQL(getenv, clone); got != "" {
		t.Errorf("nexmark-sql without q0.sql beside TIDEMARK_DATA: got %q, want none", got)
	}
	// shared/nexmark-sql above the working directory.
	if got := FindNexmarkSQL(getenv, filepath.Join(root, "elsewhere", "repo", "sql")); got != corpus {
		t.Errorf("shared/nexmark-sql above the working directory: got %q, want %q", got, corpus)
	}
	// TIDEMARK_NEXMARK_SQL comes first, as given.
	env["TIDEMARK_NEXMARK_SQL"] = "/given"
	env["TIDEMARK_DATA"] = data
	if got := FindNexmarkSQL(getenv, clone); got != "/given" {
		t.Errorf("TIDEMARK_NEXMARK_SQL: got %q, want /given", got)
	}
}
