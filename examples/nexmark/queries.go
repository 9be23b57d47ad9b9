// Package nexmarkq holds the Nexmark benchmark's queries as pipeline files
// (q0.yaml … q11.yaml, each reading the Nexmark generator of
// docs/nexmark.md with Flink's 4 s watermark), embedded so that `tidemark
// bench q5` works outside the repository, and the tests that check each
// query's results on a small seeded run against an independent batch
// recomputation over the same generated events.
package nexmarkq

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/spec"
)

//go:embed *.yaml
var files embed.FS

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
