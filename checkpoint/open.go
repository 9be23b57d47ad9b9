package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/spec"
)

// OpenTaskStore opens the TaskStore a pipeline's checkpoint section names
// (docs/pipeline.md, checkpoint.store): a PGTaskStore of pipeline's
// objects for a postgres:// or postgresql:// URL in c.Store, else a
// DirTaskStore in c.Dir. Errors: a nil c; neither key set; another
// scheme; and the stores' own errors (OpenPGTaskStore, OpenDirTaskStore),
// each naming the key.
func OpenTaskStore(ctx context.Context, c *spec.Checkpoint, pipeline string) (TaskStore, error) {
	if c == nil {
		return nil, errors.New("checkpoint: the pipeline has no checkpoint section")
	}
	if c.Store == "" {
		if c.Dir == "" {
			return nil, errors.New("checkpoint.dir: required: the directory that holds the checkpoints")
		}
		s, err := OpenDirTaskStore(c.Dir)
		if err != nil {
			return nil, fmt.Errorf("checkpoint.dir: %w", err)
		}
		return s, nil
	}
	scheme, _, _ := strings.Cut(c.Store, "://")
	if s := strings.ToLower(scheme); s != "postgres" && s != "postgresql" {
		return nil, fmt.Errorf("checkpoint.store: %s: want a PostgreSQL URL, postgres://… or postgresql://…", RedactURL(c.Store))
	}
	s, err := OpenPGTaskStore(ctx, c.Store, pipeline)
	if err != nil {
		return nil, fmt.Errorf("checkpoint.store: %w", err)
	}
	return s, nil
}
