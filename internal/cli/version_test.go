package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// lineagePipeline writes, in dir, a one-record pipeline whose single row
// goes to rows.jsonl, and returns the pipeline's path and the output's.
func lineagePipeline(t *testing.T, dir string) (pipeline, out string) {
	t.Helper()
	in := filepath.Join(dir, "in.jsonl")
	out = filepath.Join(dir, "rows.jsonl")
	pipeline = filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(in, []byte(`{"ts":"2026-09-01T10:02:00Z","amount":7}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pipeline, []byte(`
name: demo
source: {type: file, path: `+in+`, schema: {amount: int}}
event_time: {field: ts}
window: {type: tumbling, size: 10m}
aggregates: {total: sum(amount)}
emit: {mode: final}
sinks: [{type: jsonl, path: `+out+`}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return pipeline, out
}

// rowBuild returns the tidemark= part of the lineage of the only row in
// the JSONL file at path.
func rowBuild(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 1 {
		t.Fatalf("%s: %d rows, want 1:\n%s", path, len(lines), data)
	}
	var row struct{ Lineage string }
	if err := json.Unmarshal([]byte(lines[0]), &row); err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(row.Lineage, ";") {
		if v, ok := strings.CutPrefix(kv, "tidemark="); ok {
			return v
		}
	}
	t.Fatalf("lineage %q has no tidemark=", row.Lineage)
	return ""
}

// versionLine is what tidemark version prints for the build b.
func versionLine(b string) string {
	return "tidemark " + b + " (" + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
}

// TestVersionIsLineage: tidemark version names the build exactly as the
// lineage column of a row the same process writes. A test binary is a
// build from a source tree with no revision recorded: "devel".
func TestVersionIsLineage(t *testing.T) {
	p, rows := lineagePipeline(t, t.TempDir())
	if code, _, errOut := run(t, "run", p); code != 0 {
		t.Fatalf("run: code %d: %s", code, errOut)
	}
	b := rowBuild(t, rows)
	code, out, _ := run(t, "version")
	if code != 0 || out != versionLine(b) {
		t.Fatalf("version: code %d, %q; want %q (the lineage's build)", code, out, versionLine(b))
	}
	if b != "devel" && !strings.HasPrefix(b, "devel+") {
		t.Errorf("a test binary's build = %q, want devel", b)
	}
}

// TestVersionOfBinary builds the binary with its repository revision
// recorded (-buildvcs=true: the revision is there when the source is a
// git checkout the go command recognizes), and checks that its version
// and its rows' lineage both say the build that go version -m reads from
// the binary: the module version ("devel" for "(devel)") and, with a
// revision, "+" its first 12 hex digits and "+dirty" for a modified tree.
func TestVersionOfBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "tidemark")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "github.com/tidemark/tidemark/cmd/tidemark").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	info, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var mod, rev string
	dirty := false
	for _, l := range strings.Split(string(info), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && f[0] == "mod" && f[1] == "github.com/tidemark/tidemark":
			mod = f[2]
		case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision="):
			rev = strings.TrimPrefix(f[1], "vcs.revision=")
		case len(f) == 2 && f[0] == "build" && f[1] == "vcs.modified=true":
			dirty = true
		}
	}
	if mod == "" {
		t.Fatalf("go version -m names no main module:\n%s", info)
	}
	// The go command stamps a clone's build with a pseudo-version that
	// ends in the revision (and "+dirty" when modified): the revision
	// is then not repeated, and "+dirty" stays last.
	want, modDirty := strings.CutSuffix(mod, "+dirty")
	dirty = dirty || modDirty
	if want == "(devel)" {
		want = "devel"
	}
	if rev != "" {
		if !strings.HasSuffix(want, "-"+rev[:12]) {
			want += "+" + rev[:12]
		}
		if dirty {
			want += "+dirty"
		}
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || string(out) != versionLine(want) {
		t.Fatalf("tidemark version: %v, %q; want %q", err, out, versionLine(want))
	}
	p, rows := lineagePipeline(t, dir)
	if out, err := exec.Command(bin, "run", p).CombinedOutput(); err != nil {
		t.Fatalf("tidemark run: %v\n%s", err, out)
	}
	if b := rowBuild(t, rows); b != want {
		t.Errorf("the row's lineage says tidemark=%s, want %s", b, want)
	}
}
