// Package article holds the first source article's pipeline
// (pipeline.yaml: revenue per store and currency per minute over order
// events, with a contract, dedup by event_id, update emission and a late
// side output) and its data contract (contract.yaml), embedded so that
// `tidemark bench article` works outside the repository, and the test
// that checks the pipeline's rows against a batch recomputation over the
// events of internal/articlegen.
package article

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tidemark/tidemark/spec"
)

//go:embed pipeline.yaml postgres.yaml contract.yaml
var files embed.FS

// Paths of the bundled files in the repository (they name them in
// errors).
const (
	PipelinePath = "examples/article/pipeline.yaml"
	PostgresPath = "examples/article/postgres.yaml"
	ContractPath = "examples/article/contract.yaml"
)

// File returns the text of a bundled file: "pipeline.yaml",
// "postgres.yaml" or "contract.yaml".
func File(name string) ([]byte, error) { return files.ReadFile(name) }

// Load decodes the bundled pipeline (spec.Decode: no defaults applied
// yet) reading the JSON lines at events, with its contract written into
// dir (as contract.yaml) and named by its path there.
func Load(dir, events string) (*spec.Pipeline, error) { return load("pipeline.yaml", dir, events) }

// LoadPostgres is Load for postgres.yaml: the same pipeline with its
// results in a PostgreSQL table and a checkpoint every second.
func LoadPostgres(dir, events string) (*spec.Pipeline, error) {
	return load("postgres.yaml", dir, events)
}

func load(name, dir, events string) (*spec.Pipeline, error) {
	data, err := files.ReadFile(name)
	if err != nil {
		return nil, err
	}
	c, err := files.ReadFile("contract.yaml")
	if err != nil {
		return nil, err
	}
	cpath := filepath.Join(dir, "contract.yaml")
	if err := os.WriteFile(cpath, c, 0o644); err != nil {
		return nil, fmt.Errorf("article: %w", err)
	}
	p, err := spec.Decode("examples/article/"+name, data)
	if err != nil {
		return nil, err
	}
	p.Contract = cpath
	p.Source.Path = events
	return p, nil
}
