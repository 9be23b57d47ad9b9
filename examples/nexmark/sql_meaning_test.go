package nexmarkq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/spec"
)

// The pipeline files testdata/qN-sql.yaml (q4, q5, q7, q9) state the
// meaning of the corpus's qN.sql where ../qN.yaml chose another (windows
// on the auctions' expiry, arg_max's ties column by column; each file's
// header says how). Each is the plan the SQL front end compiles qN.sql
// onto, written as a pipeline file: the same spec key for key, the same
// plan fingerprint, and the same changelog — every row with its op,
// window, key, values, version and is_final — at parallelism 1 and 2.

// sqlMeaningSpec decodes testdata/q-sql.yaml with run r's generator.
func sqlMeaningSpec(t *testing.T, q string, r sqlRun) *spec.Pipeline {
	t.Helper()
	path := filepath.Join("testdata", q+"-sql.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := spec.Decode(path, data)
	if err != nil {
		t.Fatal(err)
	}
	p.Source.Events, p.Source.Rate, p.Source.Seed = r.events, r.rate, r.seed
	return p
}

// changelogOf runs p at the given parallelism and returns every row the
// stage writing its stdout sink emitted, each rendered with its op,
// window, key and value columns by name, version and is_final, sorted
// (the order rows of different keys reach a sink is not part of the
// result; a key's rows are told apart by their versions).
func changelogOf(t *testing.T, p *spec.Pipeline, tasks int) []string {
	t.Helper()
	var mu sync.Mutex
	var out []string
	reg := engine.DefaultRegistry()
	reg.Results["stdout"] = func(_ context.Context, _ spec.Sink, d changelog.Desc, _ *engine.Env) (sink.Results, error) {
		return &changelogCapture{mu: &mu, desc: d, out: &out}, nil
	}
	pl, err := tidemark.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Run(context.Background(), pl, engine.Options{Registry: reg, Parallelism: tasks}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// changelogCapture renders each row a sink receives (changelogOf).
type changelogCapture struct {
	mu   *sync.Mutex
	desc changelog.Desc
	out  *[]string
}

func (c *changelogCapture) Write(_ context.Context, rows []changelog.Row) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range rows {
		r := &rows[i]
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s [%d,%d) v%d final=%t", c.desc.Stage, r.Op, r.WindowStart, r.WindowEnd, r.Version, r.IsFinal)
		for j, k := range c.desc.Key {
			fmt.Fprintf(&b, " %s=%s", k.Name, value(r.Key[j]))
		}
		for j, v := range c.desc.Values {
			fmt.Fprintf(&b, " %s=%s", v.Name, value(r.Values[j]))
		}
		*c.out = append(*c.out, b.String())
	}
	return nil
}
func (c *changelogCapture) Flush(context.Context) error { return nil }
func (c *changelogCapture) Close(context.Context) error { return nil }

// TestSQLEqualsSQLMeaningFiles: q4.sql, q5.sql, q7.sql and q9.sql and
// their pipeline files of the same meaning (testdata/qN-sql.yaml) compile
// to the same spec and plan fingerprint and write the same changelog at
// parallelism 1 and 2, on both runs of sqlRuns (which TestSQLQ4, TestSQLQ5,
// TestSQLQ7 and TestSQLQ9 check against recomputations).
func TestSQLEqualsSQLMeaningFiles(t *testing.T) {
	for _, q := range []string{"q4", "q5", "q7", "q9"} {
		t.Run(q, func(t *testing.T) {
			for _, r := range sqlRuns {
				s, y := sqlSpec(t, q, r.run), sqlMeaningSpec(t, q, r.run)

				sn, yn := *s, *y // the specs after defaults, key for key
				sn.Defaults()
				yn.Defaults()
				a, _ := json.MarshalIndent(&yn, "", " ")
				b, _ := json.MarshalIndent(&sn, "", " ")
				if string(a) != string(b) {
					t.Fatalf("%s: testdata/%s-sql.yaml's spec differs from %s.sql's:\nYAML\n%s\nSQL\n%s", r.name, q, q, a, b)
				}
				fs, err := engine.PlanFingerprint(s)
				if err != nil {
					t.Fatal(err)
				}
				fy, err := engine.PlanFingerprint(y)
				if err != nil {
					t.Fatal(err)
				}
				if fs != fy {
					t.Errorf("%s: plan fingerprints differ: SQL %s, YAML %s", r.name, fs, fy)
				}

				base := changelogOf(t, sqlSpec(t, q, r.run), 1)
				if len(base) == 0 {
					t.Fatalf("%s: %s.sql wrote no rows", r.name, q)
				}
				for _, run := range []struct {
					form  string
					tasks int
				}{{"YAML", 1}, {"SQL", 2}, {"YAML", 2}} {
					p := sqlMeaningSpec(t, q, r.run)
					if run.form == "SQL" {
						p = sqlSpec(t, q, r.run)
					}
					got := changelogOf(t, p, run.tasks)
					what := fmt.Sprintf("%s %s at parallelism %d against the SQL at 1", r.name, run.form, run.tasks)
					if len(got) != len(base) {
						t.Errorf("%s: %d rows, want %d", what, len(got), len(base))
					}
					for i := range min(len(got), len(base)) {
						if got[i] != base[i] {
							t.Errorf("%s: first difference at sorted row %d:\n got %s\nwant %s", what, i, got[i], base[i])
							break
						}
					}
				}
			}
		})
	}
}
