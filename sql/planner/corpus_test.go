package planner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/sql/parser"
)

// corpusDir returns the Nexmark SQL corpus: TIDEMARK_NEXMARK_SQL, or
// shared/nexmark-sql above the checkout (never copied into the
// repository); the test is skipped without it.
func corpusDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("TIDEMARK_NEXMARK_SQL"); d != "" {
		return d
	}
	wd, _ := os.Getwd()
	for dir := wd; ; dir = filepath.Dir(dir) {
		c := filepath.Join(dir, "shared", "nexmark-sql")
		if _, err := os.Stat(filepath.Join(c, "q0.sql")); err == nil {
			return c
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	t.Skip("the Nexmark SQL corpus (shared/nexmark-sql, or TIDEMARK_NEXMARK_SQL) is not above the checkout")
	return ""
}

// compileScript parses and plans a script, then compiles its spec.
func compileScript(t testing.TB, name, src string, lookup func(string) (string, bool)) (*spec.Pipeline, *plan.Plan, error) {
	t.Helper()
	s, err := parser.Parse(name, []byte(src), parser.Options{Lookup: lookup})
	if err != nil {
		return nil, nil, err
	}
	p, err := Compile(s, Options{File: name})
	if err != nil {
		return nil, nil, err
	}
	p.Defaults()
	if err := p.Validate(); err != nil {
		return p, nil, err
	}
	pl, err := plan.Compile(p, nil)
	return p, pl, err
}

// corpusOK are the queries the planner accepts; the others are refused
// with a message containing corpusRefused's text (docs/sql.md lists why).
var corpusOK = map[string]bool{"q0": true, "q1": true, "q2": true, "q3": true, "q4": true, "q5": true, "q7": true, "q8": true, "q9": true, "q11": true, "q12": true, "q23": true,
	"q14": true, "q15": true, "q16": true, "q17": true, "q18": true, "q20": true, "q21": true, "q22": true}

var corpusRefused = map[string]string{
	"q6":  "ROW_NUMBER() is supported with the outer query's WHERE rownum <= N",
	"q10": "placeholder ${NEXMARK_DIR} is not set",
	"q13": "placeholder ${FLINK_HOME} is not set",
	"q19": "a Top-N of more than one row per key (rank_number <= 10) is not supported yet",
}

// TestCorpusStatus plans every query of the corpus (with the preamble of
// the runs: examples/nexmark/sql_test.go) and compiles the spec.
func TestCorpusStatus(t *testing.T) {
	dir := corpusDir(t)
	read := func(n string) string {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	env := map[string]string{"NEXMARK_TABLE": "datagen", "TPS": "10000", "EVENTS_NUM": "50000",
		"PERSON_PROPORTION": "1", "AUCTION_PROPORTION": "3", "BID_PROPORTION": "46"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for i := 0; i <= 23; i++ {
		q := "q" + itoa(i)
		src := "SET 'table.exec.state.ttl' = '10 s';\nSET 'tidemark.join.max_span' = '4 s';\n" + read("ddl_gen.sql") + ";\n" + read("ddl_views.sql") + ";\n" + read(q+".sql")
		_, _, err := compileScript(t, q+".sql", src, lookup)
		switch {
		case corpusOK[q] && err != nil:
			t.Errorf("%s: %v", q, err)
		case !corpusOK[q] && err == nil:
			t.Errorf("%s: planned, want refused with %q", q, corpusRefused[q])
		case !corpusOK[q] && !strings.Contains(err.Error(), corpusRefused[q]):
			t.Errorf("%s: %v\nwant an error with %q", q, err, corpusRefused[q])
		}
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return string(rune('0'+i/10)) + string(rune('0'+i%10))
}
