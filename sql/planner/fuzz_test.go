package planner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tidemark/tidemark/internal/datatest"
	"github.com/tidemark/tidemark/sql/parser"
)

// FuzzPlan: no script that parses makes Compile panic; it plans or
// returns an error.
func FuzzPlan(f *testing.F) {
	ddl := "CREATE TABLE bids (auction BIGINT, price BIGINT, channel STRING, ts TIMESTAMP_LTZ(3), WATERMARK FOR ts AS ts - INTERVAL '4' SECOND) WITH ('connector' = 'filesystem', 'path' = 'b.jsonl');\nCREATE TABLE o (a BIGINT, b BIGINT) WITH ('connector' = 'print');\n"
	for _, q := range []string{
		"INSERT INTO o SELECT auction, price FROM bids WHERE price > 1",
		"INSERT INTO o SELECT auction, COUNT(*) FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY auction, window_start, window_end",
		"SET 'table.exec.state.ttl' = '1 s'; INSERT INTO o SELECT x.auction, y.price FROM bids x JOIN bids y ON x.auction = y.price",
		"INSERT INTO o SELECT auction, price FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rn FROM bids) WHERE rn <= 1",
		"INSERT INTO o SELECT auction, MAX(price) FILTER (WHERE channel LIKE 'a%') FROM bids GROUP BY auction HAVING COUNT(DISTINCT channel) > 2",
		"INSERT INTO o SELECT auction, price FROM bids WHERE price > 1 UNION ALL SELECT price, auction FROM bids WHERE MOD(auction, 2) = 0",
		"INSERT INTO o SELECT auction, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rn FROM bids) WHERE rn <= 3",
		"INSERT INTO o SELECT a, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY c DESC) AS rn FROM (SELECT window_start, window_end, auction AS a, COUNT(*) AS c FROM TABLE(HOP(TABLE bids, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '5' SECOND)) GROUP BY window_start, window_end, auction)) WHERE rn <= 2",
		"CREATE TABLE s (k BIGINT, v BIGINT) WITH ('connector' = 'filesystem', 'path' = 's.csv', 'format' = 'csv');\nINSERT INTO o SELECT b.auction, s.v FROM (SELECT *, PROCTIME() AS pt FROM bids) b JOIN s FOR SYSTEM_TIME AS OF b.pt ON MOD(b.auction, 10) = s.k",
	} {
		f.Add(ddl + q)
	}
	wd, _ := os.Getwd()
	if dir := datatest.FindNexmarkSQL(os.Getenv, wd); dir != "" {
		files, _ := filepath.Glob(filepath.Join(dir, "q*.sql"))
		gen, _ := os.ReadFile(filepath.Join(dir, "ddl_gen.sql"))
		views, _ := os.ReadFile(filepath.Join(dir, "ddl_views.sql"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(string(gen) + ";\n" + string(views) + ";\n" + string(b))
			}
		}
	}
	lookup := func(k string) (string, bool) {
		if k == "NEXMARK_TABLE" {
			return "datagen", true
		}
		return "1", true
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := parser.Parse("fuzz.sql", []byte(src), parser.Options{Lookup: lookup})
		if err != nil {
			return
		}
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("Compile panicked on %q: %v", src, r)
			}
		}()
		_, _ = Compile(s, Options{File: "fuzz.sql"})
	})
}
