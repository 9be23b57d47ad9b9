// Package datatest gives tests the shared real data sets, which live beside
// the repository and never inside it.
package datatest

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the directory holding the shared data sets: the TIDEMARK_DATA
// environment variable, or the first shared/data found walking up from the
// working directory. Without it the test is skipped, unless
// TIDEMARK_REQUIRE_DATA is set (CI sets it), when it fails. A TIDEMARK_DATA
// without online-retail/by-day fails the test.
func Dir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("TIDEMARK_DATA"); d != "" {
		if st, err := os.Stat(filepath.Join(d, "online-retail", "by-day")); err != nil || !st.IsDir() {
			t.Fatalf("TIDEMARK_DATA=%s has no online-retail/by-day: point it at the directory that holds online-retail/", d)
		}
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		cand := filepath.Join(dir, "shared", "data")
		if st, err := os.Stat(filepath.Join(cand, "online-retail", "by-day")); err == nil && st.IsDir() {
			return cand
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	msg := "data sets not found: set TIDEMARK_DATA to the directory that holds online-retail/ (its by-day/ CSV files are the UCI Online Retail data set, CC BY 4.0)"
	if os.Getenv("TIDEMARK_REQUIRE_DATA") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
