package cli

import (
	"fmt"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// compilePipeline loads the pipeline file at path, lets prepare change it
// (may be nil; e.g. backfill.Apply), and compiles it. A contract path, when
// not empty, replaces the pipeline's contract key. Errors are exit status 2
// (configuration), naming the file.
func compilePipeline(path, contract string, prepare func(*spec.Pipeline) error) (*spec.Pipeline, *plan.Plan, error) {
	p, err := tidemark.Load(path)
	if err != nil {
		return nil, nil, &exitError{code: 2, err: err}
	}
	if contract != "" {
		p.Contract = contract
	}
	if prepare != nil {
		if err := prepare(p); err != nil {
			return nil, nil, &exitError{code: 2, err: err}
		}
	}
	pl, err := tidemark.Compile(p)
	if err != nil {
		return nil, nil, &exitError{code: 2, err: fmt.Errorf("%s: %w", path, err)}
	}
	return p, pl, nil
}
