// Package datadir finds the shared real data sets (the UCI Online Retail
// CSV files and the others beside them), which live beside the repository
// and never inside it. The command line (cmd/tidemark) and the tests
// (internal/datatest) look for them the same way as .ci/run: the
// TIDEMARK_DATA environment variable when it is set, else the first
// shared/data holding online-retail/by-day in the working directory or a
// directory above it.
//
// It sits at the face of the data flow, beside internal/cli: nothing in
// the runner or below reads it; a pipeline sees the data only through the
// ${TIDEMARK_DATA} placeholder of its file.
package datadir

import (
	"os"
	"path/filepath"
)

// Env is the environment variable that names the data directory (the
// directory holding online-retail/).
const Env = "TIDEMARK_DATA"

// marker is what a directory must hold, as a directory, to count as the
// data sets (.ci/run looks for the same).
var marker = filepath.Join("online-retail", "by-day")

// Holds reports whether dir holds the data sets: dir/online-retail/by-day
// is a directory.
func Holds(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, marker))
	return err == nil && st.IsDir()
}

// Up returns dir/rel for the first dir, starting at wd and going up one
// directory at a time to the root, for which ok(dir/rel) is true; "" when
// none is. The result is as absolute as wd.
func Up(wd, rel string, ok func(string) bool) string {
	if wd == "" {
		return ""
	}
	for dir := filepath.Clean(wd); ; dir = filepath.Dir(dir) {
		if c := filepath.Join(dir, rel); ok(c) {
			return c
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}

// Find returns the first shared/data that Holds the data sets in wd or a
// directory above it (Up), or "" when there is none.
func Find(wd string) string {
	return Up(wd, filepath.Join("shared", "data"), Holds)
}

// Resolve returns the data directory the command line runs with:
// getenv(Env) when it is not empty, taken as given; else Find(wd) written
// relative to wd when it can be (a clone beside shared/, run from its root,
// gets ../shared/data, the default the example pipelines name), else
// absolute; else "" (no data sets found: the pipeline's own default
// applies). found says the result came from Find.
func Resolve(getenv func(string) string, wd string) (dir string, found bool) {
	if d := getenv(Env); d != "" {
		return d, false
	}
	d := Find(wd)
	if d == "" {
		return "", false
	}
	if rel, err := filepath.Rel(wd, d); err == nil {
		return rel, true
	}
	return d, true
}

// Export sets Env for this process, when it is unset or empty, to the data
// sets found above the working directory (Resolve), so that the
// ${TIDEMARK_DATA} placeholders of pipeline and contract files name them.
// It returns the directory set, or "" when it set nothing (Env already set,
// or no data sets found). Call it once, at the start of the program, before
// any goroutine reads the environment.
func Export() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	d, found := Resolve(os.Getenv, wd)
	if !found {
		return ""
	}
	if err := os.Setenv(Env, d); err != nil {
		return ""
	}
	return d
}
