package planner

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tidemark/tidemark/internal/datatest"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/sql/parser"
)

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
var corpusOK = map[string]bool{"q0": true, "q10": true, "q1": true, "q2": true, "q3": true, "q4": true, "q5": true, "q7": true, "q8": true, "q9": true, "q11": true, "q12": true, "q13": true, "q23": true,
	"q14": true, "q15": true, "q16": true, "q17": true, "q18": true, "q19": true, "q20": true, "q21": true, "q22": true}

var corpusRefused = map[string]string{
	"q6": "ROW_NUMBER() is supported with the outer query's WHERE rownum <= N",
}

// corpusScript returns query q of the corpus with the preamble of the
// runs (examples/nexmark/sql_test.go) and the lookup of its placeholders
// (the directories q10 and q13 name are dir; q10 writes Parquet).
func corpusScript(t testing.TB, q, dir string) (string, func(string) (string, bool)) {
	t.Helper()
	corpus := datatest.NexmarkSQL(t)
	read := func(n string) string {
		b, err := os.ReadFile(filepath.Join(corpus, n))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	env := map[string]string{"NEXMARK_TABLE": "datagen", "TPS": "10000", "EVENTS_NUM": "50000",
		"PERSON_PROPORTION": "1", "AUCTION_PROPORTION": "3", "BID_PROPORTION": "46",
		"NEXMARK_DIR": dir, "FLINK_HOME": dir, "SUBMIT_TIME": "run"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	src := "SET 'table.exec.state.ttl' = '10 s';\nSET 'tidemark.join.max_span' = '4 s';\n" + read("ddl_gen.sql") + ";\n" + read("ddl_views.sql") + ";\n" + read(q+".sql")
	if q == "q10" { // the runs' substitution: Parquet for CSV (docs/sql.md)
		src = strings.Replace(src, "'format' = 'csv'", "'format' = 'parquet'", 1)
	}
	return src, lookup
}

// TestCorpusStatus plans every query of the corpus and compiles the spec.
func TestCorpusStatus(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i <= 23; i++ {
		q := "q" + itoa(i)
		src, lookup := corpusScript(t, q, dir)
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

// BenchmarkParsePlan times the front end on each query the planner
// accepts: parse (the preamble and both DDL files too), plan onto the
// spec, defaults and validation, plan.Compile — what `tidemark run q.sql`
// does before it starts. The budget is 1 ms a query (docs/sql.md);
// cpu-ns/op is the process's CPU time an operation (the GC's included),
// the figure to read on a shared machine, where ns/op counts the waits
// for a core.
func BenchmarkParsePlan(b *testing.B) {
	dir := b.TempDir()
	for i := 0; i <= 23; i++ {
		q := "q" + itoa(i)
		if !corpusOK[q] {
			continue
		}
		src, lookup := corpusScript(b, q, dir)
		b.Run(q, func(b *testing.B) {
			b.ReportAllocs()
			cpu0, n := cpuNanos(), 0
			for b.Loop() {
				if _, _, err := compileScript(b, q+".sql", src, lookup); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(cpuNanos()-cpu0)/float64(n), "cpu-ns/op")
		})
	}
}

// cpuNanos is the process's CPU time so far (user + system), in ns.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return string(rune('0'+i/10)) + string(rune('0'+i%10))
}
