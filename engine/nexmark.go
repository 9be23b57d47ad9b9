package engine

import (
	"errors"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/source"
)

func openNexmark(p *plan.Plan, fields format.Fields) (source.Source, error) {
	return nil, errors.New("source.type: nexmark is not available yet")
}
