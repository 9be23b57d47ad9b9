// Package nexmarkq holds the Nexmark benchmark's queries as pipeline files
// (q0.yaml … q13.yaml, each reading the Nexmark generator of
// docs/nexmark.md with Flink's 4 s watermark; the joins q3, q4, q8, q9
// read its people, auctions and bids as filtered sides of one input, and
// q13 also the bundled side_input.csv), embedded so that `tidemark bench
// q5` works outside the repository, and the tests that check each query's
// results on small seeded runs against independent batch recomputations
// over the same generated events (nested loops, a hash join per window,
// an as-of search for the joins).
package nexmarkq

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/spec"
)

//go:embed *.yaml side_input.csv
var files embed.FS

// sideInputs are the data files the queries read as inputs, by their path
// in the queries (relative to the repository's root).
var sideInputs = map[string]string{"examples/nexmark/side_input.csv": "side_input.csv"}

// Names returns the names of the bundled queries (their file names
// without .yaml) in query order: q0, q1, q2, q3, q4, q5, q7, q8, q9, q11.
func Names() []string {
	ents, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		x, errA := strconv.Atoi(strings.TrimPrefix(a, "q"))
		y, errB := strconv.Atoi(strings.TrimPrefix(b, "q"))
		if errA != nil || errB != nil || x == y {
			return strings.Compare(a, b)
		}
		return x - y
	})
	return out
}

// File returns the YAML text of the named query and its path in the
// repository (examples/nexmark/NAME.yaml), which names it in errors.
func File(name string) (data []byte, path string, err error) {
	data, err = files.ReadFile(name + ".yaml")
	if err != nil {
		return nil, "", fmt.Errorf("no Nexmark query %q (queries: %s)", name, strings.Join(Names(), ", "))
	}
	return data, "examples/nexmark/" + name + ".yaml", nil
}

// Load decodes the named query (spec.Decode: environment variables
// expanded, no defaults applied yet; tidemark.Compile applies them).
func Load(name string) (*spec.Pipeline, error) {
	data, path, err := File(name)
	if err != nil {
		return nil, err
	}
	return spec.Decode(path, data)
}

// WriteInputs writes the data files that p's inputs read from this
// package (q13's side_input.csv) into dir and points the inputs at them,
// so that a query runs from any working directory. Inputs reading other
// paths are left alone. Errors: writing a file.
func WriteInputs(p *spec.Pipeline, dir string) error {
	for i := range p.Inputs {
		src := &p.Inputs[i].Source
		name, ok := sideInputs[src.Path]
		if !ok {
			continue
		}
		data, err := files.ReadFile(name)
		if err != nil {
			return err
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("writing the side input of %s: %w", p.Name, err)
		}
		src.Path = path
	}
	return nil
}
