package datadir

import (
	"os"
	"path/filepath"
	"testing"
)

// tree lays out, under a temporary root:
//
//	root/shared/data/online-retail/by-day/      the data sets
//	root/clone/examples/online-retail/          a clone beside shared/
//	root/clone/shared/data/online-retail        a file, not a directory
//	root/nested/shared/data/online-retail/by-day/   nearer data sets
//	root/nested/deep/work/
//	root/decoy/shared/data/online-retail/by-day     a file, not a directory
func tree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{
		"shared/data/online-retail/by-day",
		"clone/examples/online-retail",
		"clone/shared/data",
		"nested/shared/data/online-retail/by-day",
		"nested/deep/work",
		"decoy/shared/data/online-retail",
	} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"clone/shared/data/online-retail", "decoy/shared/data/online-retail/by-day"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestFind(t *testing.T) {
	root := tree(t)
	data := filepath.Join(root, "shared", "data")
	for _, c := range []struct{ wd, want string }{
		{root, data},
		{filepath.Join(root, "shared"), data},
		{filepath.Join(root, "clone"), data}, // clone/shared/data lacks online-retail/by-day
		{filepath.Join(root, "clone", "examples", "online-retail"), data},
		{filepath.Join(root, "decoy"), data}, // by-day is a file there
		{filepath.Join(root, "nested", "deep", "work"), filepath.Join(root, "nested", "shared", "data")},
		{filepath.Join(root, "nested"), filepath.Join(root, "nested", "shared", "data")},
		{filepath.Join(root, "clone") + string(filepath.Separator), data},
		{"", ""},
	} {
		if got := Find(c.wd); got != c.want {
			t.Errorf("Find(%q) = %q, want %q", c.wd, got, c.want)
		}
	}
	if !Holds(data) || Holds(filepath.Join(root, "decoy", "shared", "data")) || Holds(filepath.Join(root, "clone", "shared", "data")) {
		t.Errorf("Holds: want true for %s only", data)
	}
}

func TestUp(t *testing.T) {
	root := tree(t)
	var seen []string
	got := Up(filepath.Join(root, "nested", "deep", "work"), "x", func(c string) bool {
		seen = append(seen, c)
		return c == filepath.Join(root, "nested", "x")
	})
	want := []string{
		filepath.Join(root, "nested", "deep", "work", "x"),
		filepath.Join(root, "nested", "deep", "x"),
		filepath.Join(root, "nested", "x"),
	}
	if got != want[2] || len(seen) != 3 || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
		t.Errorf("Up: got %q after %q, want %q after %q", got, seen, want[2], want)
	}
	// To the root and no further: the last candidate is /x.
	seen = seen[:0]
	if got := Up(root, "x", func(c string) bool { seen = append(seen, c); return false }); got != "" {
		t.Errorf("Up with no match = %q, want none", got)
	}
	if last := seen[len(seen)-1]; last != filepath.Join(string(filepath.Separator), "x") {
		t.Errorf("Up's last candidate = %q, want /x", last)
	}
}

func TestResolve(t *testing.T) {
	root := tree(t)
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	for _, c := range []struct {
		wd, want string
		found    bool
	}{
		{filepath.Join(root, "clone"), filepath.Join("..", "shared", "data"), true},
		{filepath.Join(root, "clone", "examples", "online-retail"), filepath.Join("..", "..", "..", "shared", "data"), true},
		{root, filepath.Join("shared", "data"), true},
		{filepath.Join(root, "shared", "data"), ".", true},
		{filepath.Join(root, "nested", "deep", "work"), filepath.Join("..", "..", "shared", "data"), true},
	} {
		if got, found := Resolve(getenv, c.wd); got != c.want || found != c.found {
			t.Errorf("Resolve(unset, %q) = %q, %v; want %q, %v", c.wd, got, found, c.want, c.found)
		}
	}
	// The variable, when set, is taken as given, even where nothing is found.
	env[Env] = "/given/data"
	if got, found := Resolve(getenv, filepath.Join(root, "clone")); got != "/given/data" || found {
		t.Errorf("Resolve(set) = %q, %v; want /given/data, false", got, found)
	}
	env[Env] = ""
	if got, found := Resolve(getenv, filepath.Join(root, "clone")); got != filepath.Join("..", "shared", "data") || !found {
		t.Errorf("Resolve(empty) = %q, %v; want ../shared/data, true", got, found)
	}
}

func TestExport(t *testing.T) {
	root := tree(t)
	t.Chdir(filepath.Join(root, "clone"))
	t.Setenv(Env, "")
	want := filepath.Join("..", "shared", "data")
	if got := Export(); got != want {
		t.Errorf("Export() = %q, want %q", got, want)
	}
	if got := os.Getenv(Env); got != want {
		t.Errorf("after Export, %s = %q, want %q", Env, got, want)
	}
	if !Holds(os.Getenv(Env)) {
		t.Errorf("%s = %q does not hold the data sets from the working directory", Env, os.Getenv(Env))
	}
	// Already set: left alone.
	t.Setenv(Env, "/given/data")
	if got := Export(); got != "" || os.Getenv(Env) != "/given/data" {
		t.Errorf("Export() with %s set = %q (now %q), want nothing set", Env, got, os.Getenv(Env))
	}
}
