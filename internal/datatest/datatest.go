// Package datatest gives tests the shared real data sets, which live beside
// the repository and never inside it.
package datatest

import (
	"os"
	"testing"

	"github.com/tidemark/tidemark/internal/datadir"
)

// Dir returns the directory holding the shared data sets: the TIDEMARK_DATA
// environment variable, or the first shared/data found walking up from the
// working directory (package datadir, as the command line finds them).
// Without it the test is skipped, unless
// TIDEMARK_REQUIRE_DATA is set (CI sets it), when it fails. A TIDEMARK_DATA
// without online-retail/by-day fails the test.
func Dir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(datadir.Env); d != "" {
		if !datadir.Holds(d) {
			t.Fatalf("TIDEMARK_DATA=%s has no online-retail/by-day: point it at the directory that holds online-retail/", d)
		}
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if d := datadir.Find(wd); d != "" {
		return d
	}
	msg := "data sets not found: set TIDEMARK_DATA to the directory that holds online-retail/ (its by-day/ CSV files are the UCI Online Retail data set, CC BY 4.0)"
	if os.Getenv("TIDEMARK_REQUIRE_DATA") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
