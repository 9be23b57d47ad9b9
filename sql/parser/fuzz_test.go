package parser

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/datatest"
)

// FuzzParse: no input makes Parse panic (an internal failure would be an
// error naming the parser, which fails the test), and a script that
// parses formats to a script that parses to the same format.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SELECT 1",
		"INSERT INTO t SELECT a, b FROM s WHERE a > 1",
		"CREATE TABLE t (a BIGINT, b AS a + 1, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'x')",
		"INSERT INTO t SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE b, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end",
		"SET 'a' = 'b'; RESET",
		"INSERT INTO t SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY b DESC) AS rn FROM s) WHERE rn <= 1",
		"INSERT INTO t SELECT CASE WHEN a THEN 1 ELSE 2 END, CAST(x AS DECIMAL(10, 2)) FROM s A JOIN r FOR SYSTEM_TIME AS OF A.ts AS B ON A.k = B.k",
		"INSERT INTO t SELECT ((SELECT 1) + 1) FROM ((SELECT 1) AS x JOIN y ON TRUE)",
		"CREATE TABLE d (p ROW<id BIGINT, `dateTime` TIMESTAMP(3)>, x AS p.id) WITH ('a' = '${X:-1}')",
		"INSERT INTO t SELECT `a``b`, 'it''s', -9223372036854775808, 1.5e3 FROM s /* c */ -- d",
	} {
		f.Add(s)
	}
	wd, _ := os.Getwd()
	if dir := datatest.FindNexmarkSQL(os.Getenv, wd); dir != "" {
		files, _ := filepath.Glob(filepath.Join(dir, "*.sql"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(string(b))
			}
		}
	}
	lookup := func(k string) (string, bool) { return "v" + k, true }
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse("fuzz.sql", []byte(src), Options{Lookup: lookup})
		if err != nil {
			if strings.Contains(err.Error(), "the SQL parser failed") {
				t.Fatalf("internal failure on %q: %v", src, err)
			}
			return
		}
		out := FormatScript(s)
		s2, err := Parse("formatted.sql", []byte(out), Options{Lookup: lookup})
		if err != nil {
			t.Fatalf("the formatted script does not parse:\n%s\nfrom %q: %v", out, src, err)
		}
		if out2 := FormatScript(s2); out2 != out {
			t.Fatalf("formatting is not stable:\n%s\n%s\nfrom %q", out, out2, src)
		}
	})
}
