package tidemark_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the import path of this module; the layering rules name
// packages relative to it.
const module = "github.com/tidemark/tidemark"

// The layers of the house (docs/ARCHITECTURE.md, "Layering"), from the
// top: the face (the binary, the command line, the library entry points)
// → the runners (engine; engine/group, the group runner beside it) → the task → the plan → the core; the connectors
// (sources, sinks, formats) → the core. A package may import packages of
// its own layer, of the layers below it and of no layer (spec, contract,
// the internal helpers), never a package of a layer it must not reach.
const (
	layerFace      = "face"
	layerRunner    = "runner"
	layerTask      = "task"
	layerPlan      = "plan"
	layerCore      = "core"
	layerConnector = "connector"
)

// corePackages are the pure core: time, windows, aggregates, state,
// rows, records and their changelog.
var corePackages = []string{
	"aggregate", "changelog", "dedup", "eventtime", "expr", "join", "keygroup",
	"operator", "record", "row", "state", "u64map", "watermark", "window",
}

// layerOf returns the layer of the module-relative package path p, or ""
// for a package of no layer.
func layerOf(p string) string {
	switch {
	case p == "" || p == "internal/cli" || p == "cmd" || strings.HasPrefix(p, "cmd/"):
		return layerFace
	case p == "engine" || strings.HasPrefix(p, "engine/"):
		return layerRunner
	case p == "task":
		return layerTask
	case p == "plan":
		return layerPlan
	case slices.Contains(corePackages, p):
		return layerCore
	}
	for _, c := range []string{"source", "sink", "format"} {
		if p == c || strings.HasPrefix(p, c+"/") {
			return layerConnector
		}
	}
	return ""
}

// forbidden lists, per layer, the layers its packages must not import,
// directly or through others.
var forbidden = map[string][]string{
	layerRunner:    {layerFace},
	layerTask:      {layerFace, layerRunner, layerConnector},
	layerPlan:      {layerFace, layerRunner, layerTask, layerConnector},
	layerCore:      {layerFace, layerRunner, layerTask, layerPlan, layerConnector},
	layerConnector: {layerFace, layerRunner, layerTask, layerPlan},
}

// stores are the packages that keep checkpoints and state: they import no
// sink (a helper both need lives below both, as internal/pgutil).
var stores = []string{"checkpoint", "state", "state/disk"}

func isSink(p string) bool { return p == "sink" || strings.HasPrefix(p, "sink/") }

// violations returns, sorted, every import chain of graph (package →
// the module packages its non-test files import, module-relative) that
// breaks a rule: "task → plan → source: the task imports a connector".
func violations(graph map[string][]string) []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(graph)) {
		bad := func(d string) string {
			for _, l := range forbidden[layerOf(p)] {
				if layerOf(d) == l {
					return "a " + layerOf(p) + " package imports a " + l + " package"
				}
			}
			if slices.Contains(stores, p) && isSink(d) {
				return "a store imports a sink"
			}
			return ""
		}
		// Breadth first, so that each reached package is named with a
		// shortest chain.
		from := map[string]string{p: ""}
		queue := []string{p}
		for len(queue) > 0 {
			q := queue[0]
			queue = queue[1:]
			for _, d := range graph[q] {
				if _, seen := from[d]; seen {
					continue
				}
				from[d] = q
				queue = append(queue, d)
				if why := bad(d); why != "" {
					chain := []string{d}
					for c := q; c != ""; c = from[c] {
						chain = append(chain, name(c))
					}
					slices.Reverse(chain)
					out = append(out, strings.Join(chain, " → ")+": "+why)
				}
			}
		}
	}
	return out
}

// name is a module-relative path as the messages print it ("." for the
// root package).
func name(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// moduleGraph parses the imports of every non-test Go file of the module
// at root (nested modules, testdata and hidden directories left out; build
// constraints ignored, so a file for any platform counts) and returns each
// package's imports of the module's packages, module-relative and sorted.
func moduleGraph(t *testing.T, root string) map[string][]string {
	t.Helper()
	graph := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			base := d.Name()
			if path != root && (base == "testdata" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		if pkg == "." {
			pkg = ""
		}
		deps := graph[pkg]
		for _, im := range f.Imports {
			ip, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				return err
			}
			var dep string
			switch {
			case ip == module:
				dep = ""
			case strings.HasPrefix(ip, module+"/"):
				dep = strings.TrimPrefix(ip, module+"/")
			default:
				continue
			}
			if !slices.Contains(deps, dep) {
				deps = append(deps, dep)
			}
		}
		slices.Sort(deps)
		graph[pkg] = deps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return graph
}

// TestLayering holds the layering of docs/ARCHITECTURE.md against the
// code: the task and the plan import no connector (not even for a type:
// the record metadata lives in package record, below both), the core
// imports nothing above it, a connector no runner, task or plan, a
// checkpoint or state store no sink. Every chain that breaks a rule is
// named, e.g. "task → plan → source".
func TestLayering(t *testing.T) {
	graph := moduleGraph(t, ".")
	// The walk found the module: the packages the rules are about are
	// there, with their imports.
	for _, p := range []string{"task", "plan", "engine", "source", "checkpoint", "record", "internal/cli"} {
		if _, ok := graph[p]; !ok {
			t.Fatalf("package %s not found in the module", p)
		}
	}
	if !slices.Contains(graph["task"], "record") || !slices.Contains(graph["engine"], "task") {
		t.Fatalf("imports not read: task %v, engine %v", graph["task"], graph["engine"])
	}
	for _, v := range violations(graph) {
		t.Error(v)
	}
}

// TestLayeringRules: the rules catch the imports that crossed the
// layering before (the task's source.Meta, the plan's Nexmark source, the
// checkpoint store's PostgreSQL sink) and let their replacements through.
func TestLayeringRules(t *testing.T) {
	graph := map[string][]string{
		"task":          {"plan", "record"},
		"plan":          {"nexschema", "source/nexmark"},
		"checkpoint":    {"internal/pgutil", "sink/postgres"},
		"sink/postgres": {"internal/pgutil"},
		"source/nexmark": {
			"nexschema", "record",
		},
		"engine":       {"task", "source", "internal/cli"},
		"engine/group": {"engine", "task", "internal/cli"},
		"record":       {"changelog"},
		"changelog":    {"row"},
		"operator":     {"row", "task"},
		"internal/cli": {"engine"},
	}
	want := []string{
		"checkpoint → sink/postgres: a store imports a sink",
		"engine → internal/cli: a runner package imports a face package",
		"engine/group → internal/cli: a runner package imports a face package",
		"operator → task: a core package imports a task package",
		"operator → task → plan: a core package imports a plan package",
		"operator → task → plan → source/nexmark: a core package imports a connector package",
		"plan → source/nexmark: a plan package imports a connector package",
		"task → plan → source/nexmark: a task package imports a connector package",
	}
	if got := violations(graph); !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
