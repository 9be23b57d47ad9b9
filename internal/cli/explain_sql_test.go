package cli

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fingerprintOf returns the fingerprint line of explain's output.
func fingerprintOf(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^fingerprint (sha256:[0-9a-f]{16})$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no fingerprint in:\n%s", out)
	}
	return m[1]
}

// TestExplainSQLEqualsYAML: explain prints the same plan and fingerprint
// for the main job's YAML and SQL forms.
func TestExplainSQLEqualsYAML(t *testing.T) {
	t.Chdir("../..")
	t.Setenv("TIDEMARK_DATA", "/data")
	cy, y, ey := run(t, "explain", "examples/online-retail/pipeline.yaml")
	cs, s, es := run(t, "explain", "examples/online-retail/pipeline.sql")
	if cy != 0 || cs != 0 {
		t.Fatalf("explain: %d %s / %d %s", cy, ey, cs, es)
	}
	if y != s {
		t.Fatalf("the plans differ:\nYAML\n%s\nSQL\n%s", y, s)
	}
	for _, want := range []string{"stage revenue_hourly: aggregation, reads source", "window      tumbling 1h0m0s in Europe/London",
		"aggregates  net_revenue = sum(net_amount); lines = count()", "sink        sqlite out/tidemark.db table revenue_hourly__live"} {
		if !strings.Contains(s, want) {
			t.Errorf("the plan lacks %q:\n%s", want, s)
		}
	}
}

// TestSQLEditsKeepState: edits that leave the plan as it is keep the
// fingerprint, and check --previous says every stage keeps its state —
// the script reformatted (one line per statement, keywords in lower case),
// an alias renamed, a compatible key SET; an edit of the window or filter
// changes it and check names the state it discards, by stage, with exit
// status 1.
func TestSQLEditsKeepState(t *testing.T) {
	t.Chdir("../..")
	t.Setenv("TIDEMARK_DATA", "/data")
	b, err := os.ReadFile("examples/online-retail/pipeline.sql")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Reformatted: comments dropped, lines joined, keywords lower case.
	var lines []string
	for _, l := range strings.Split(src, "\n") {
		if i := strings.Index(l, "--"); i >= 0 && !strings.Contains(l[:i], "'") {
			l = l[:i]
		}
		lines = append(lines, strings.TrimSpace(l))
	}
	flat := strings.Join(lines, " ")
	for _, kw := range []string{"SELECT", "FROM", "GROUP BY", "INSERT INTO", "CREATE TABLE", "CREATE VIEW", "WITH", "AS", "SET", "TABLE", "DESCRIPTOR", "INTERVAL", "HOUR", "MINUTE", "BEGIN", "END"} {
		flat = strings.ReplaceAll(flat, kw+" ", strings.ToLower(kw)+" ")
	}
	aliased := strings.ReplaceAll(src, "FROM TABLE(TUMBLE(TABLE lines, DESCRIPTOR(ts), INTERVAL '1' HOUR))\n  GROUP BY window_start, window_end, Country;",
		"FROM TABLE(TUMBLE(TABLE lines, DESCRIPTOR(ts), INTERVAL '1' HOUR)) AS hourly\n  GROUP BY hourly.window_start, hourly.window_end, hourly.Country;")
	if aliased == src {
		t.Fatal("the alias edit changed nothing")
	}
	compatible := "SET 'parallelism.default' = '2';\nSET 'execution.checkpointing.interval' = '30 s';\nSET 'state.checkpoints.dir' = 'file:///var/lib/tidemark/revenue';\n" + src
	_, base, _ := run(t, "explain", "examples/online-retail/pipeline.sql")
	want := fingerprintOf(t, base)
	for name, text := range map[string]string{"reformatted.sql": flat, "aliased.sql": aliased, "compatible.sql": compatible} {
		p := write(name, text)
		code, out, errOut := run(t, "explain", p)
		if code != 0 {
			t.Fatalf("%s: %d %s", name, code, errOut)
		}
		if got := fingerprintOf(t, out); got != want {
			t.Errorf("%s: fingerprint %s, want %s", name, got, want)
		}
		code, out, errOut = run(t, "check", "--previous", "examples/online-retail/pipeline.yaml", p)
		if code != 0 || !strings.Contains(out, "every stage keeps its state") {
			t.Errorf("%s: check --previous: %d\n%s%s", name, code, out, errOut)
		}
	}
	edited := strings.Replace(src, "FROM invoice_lines;", "FROM invoice_lines WHERE Country <> 'EIRE';", 1)
	edited = strings.ReplaceAll(edited, "INTERVAL '1' HOUR", "INTERVAL '2' HOUR")
	p := write("edited.sql", edited)
	code, out, errOut := run(t, "check", "--previous", "examples/online-retail/pipeline.sql", p)
	if code != 1 {
		t.Fatalf("check of a discarding edit: exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, w := range []string{
		`discards stage revenue_hourly: filter (unset → "Country != \"EIRE\""): the windows hold the events the old filter kept`,
		`discards stage revenue_hourly: window.size ("1h0m0s" → "2h0m0s"): the open windows hold state of the old windows`,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("check lacks %q:\n%s", w, out)
		}
	}
	_, eo, _ := run(t, "explain", p)
	if fingerprintOf(t, eo) == want {
		t.Error("the discarding edit kept the fingerprint")
	}
}

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/explain/*.golden from explain's output")

// TestExplainSQLGolden: `tidemark explain` of each script in
// testdata/explain prints exactly its .golden file — the plan of SESSION
// and CUMULATE windows, an interval join of two views, dedup with the
// conflict output and a Top-1 (the stages, keys, windows, joins, state,
// sinks and the fingerprint). Rewrite with -update-golden after checking
// the difference by hand.
func TestExplainSQLGolden(t *testing.T) {
	scripts, err := filepath.Glob("testdata/explain/*.sql")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, sc := range scripts {
		t.Run(filepath.Base(sc), func(t *testing.T) {
			code, out, errOut := run(t, "explain", sc)
			if code != 0 {
				t.Fatalf("explain %s: exit %d\n%s", sc, code, errOut)
			}
			golden := strings.TrimSuffix(sc, ".sql") + ".golden"
			if *updateGolden {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if out != string(want) {
				t.Errorf("explain %s differs from %s:\ngot\n%s\nwant\n%s", sc, golden, out, want)
			}
		})
	}
}
