package datatest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tidemark/tidemark/internal/datadir"
)

// FindNexmarkSQL returns the directory of the Nexmark SQL corpus (Flink's
// q0.sql … q23.sql with ddl_gen.sql and ddl_views.sql, kept beside the
// repository and never inside it), or "" when there is none. It looks, in
// order, at:
//
//  1. the TIDEMARK_NEXMARK_SQL environment variable (getenv), taken as
//     given;
//  2. nexmark-sql beside the TIDEMARK_DATA directory (a checkout whose data
//     sets come from TIDEMARK_DATA=/x/shared/data finds /x/shared/nexmark-sql);
//  3. shared/nexmark-sql in wd or a directory above it.
//
// A candidate of 2 or 3 counts when it holds a regular file q0.sql.
func FindNexmarkSQL(getenv func(string) string, wd string) string {
	if d := getenv("TIDEMARK_NEXMARK_SQL"); d != "" {
		return d
	}
	corpus := func(c string) bool {
		st, err := os.Stat(filepath.Join(c, "q0.sql"))
		return err == nil && st.Mode().IsRegular()
	}
	if d := getenv("TIDEMARK_DATA"); d != "" {
		if abs, err := filepath.Abs(d); err == nil {
			if c := filepath.Join(filepath.Dir(abs), "nexmark-sql"); corpus(c) {
				return c
			}
		}
	}
	return datadir.Up(wd, filepath.Join("shared", "nexmark-sql"), corpus)
}

// NexmarkSQL returns the Nexmark SQL corpus (FindNexmarkSQL from the
// working directory). Without it the test is skipped, unless
// TIDEMARK_REQUIRE_DATA is set, when it fails.
func NexmarkSQL(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if d := FindNexmarkSQL(os.Getenv, wd); d != "" {
		return d
	}
	msg := "the Nexmark SQL corpus is not found: set TIDEMARK_NEXMARK_SQL, or keep nexmark-sql beside the TIDEMARK_DATA directory, or shared/nexmark-sql above the checkout"
	if os.Getenv("TIDEMARK_REQUIRE_DATA") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
