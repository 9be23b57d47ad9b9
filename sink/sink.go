// Package sink defines where a pipeline's outputs go. Result sinks receive
// window result rows (changelog.Row); record sinks receive side-output
// records (late, quarantine, conflict) as JSON objects. Connectors live in
// sub-packages (sink/sqlite, sink/postgres, sink/kafka, sink/jsonl,
// sink/stdout) and are passive: the runner calls Write and Flush.
package sink

import (
	"context"

	"github.com/tidemark/tidemark/changelog"
)

// Results receives a stage's result rows.
type Results interface {
	// Write hands rows to the sink, in emission order. The rows' Key and
	// Values slices are only valid during the call: copy what you keep.
	Write(ctx context.Context, rows []changelog.Row) error
	// Flush makes every row written so far durable and visible to readers
	// (commits a transaction, flushes a file).
	Flush(ctx context.Context) error
	// Close flushes and releases resources.
	Close(ctx context.Context) error
}

// Records receives side-output records, one JSON object each.
type Records interface {
	// WriteRecord appends one record, a JSON object without a trailing
	// newline. The slice is only valid during the call.
	WriteRecord(ctx context.Context, obj []byte) error
	// Flush makes every record written so far durable and visible.
	Flush(ctx context.Context) error
	// Close flushes and releases resources.
	Close(ctx context.Context) error
}

// Aborter is implemented by sinks whose opening defers a change to their
// output until the run is under way (a JSONL file truncated for a run
// from the start): Abort releases the sink's resources without writing,
// flushing or truncating anything, for a run whose start is refused after
// the sink opened (another sink refused its table, the checkpoint could
// not be restored). The runner calls Abort instead of Close then; a sink
// without it is closed.
type Aborter interface {
	Abort(ctx context.Context) error
}

// Committer is implemented by sinks that take part in checkpoints
// (docs/checkpoints.md), a two-phase commit in the manner of Flink's
// TwoPhaseCommitSinkFunction. Between two checkpoints, Write and
// WriteRecord stage output that no reader sees yet (Flush does not publish
// it). When the engine takes checkpoint id it calls Prepare on every sink,
// writes the checkpoint (which stores what Prepare returned), and only
// then calls Commit. After a crash, the engine restores the latest
// complete checkpoint and calls Recover with what that checkpoint stored,
// before any write.
//
// The calls are made from one goroutine, in the order Prepare(id),
// Commit(id), Prepare(id+1)…; ids increase but need not be consecutive.
type Committer interface {
	// Prepare makes the output staged since the previous Prepare durable
	// but unpublished, and returns what Commit or Recover needs to publish
	// it (stored in the checkpoint; nil when nothing is needed). Staging
	// restarts empty.
	Prepare(ctx context.Context, id int64) ([]byte, error)
	// Commit publishes the output prepared for checkpoint id, together
	// with the sink's commit marker (pipeline, sink, id), atomically. It
	// is a no-op when the marker already records id or a later one.
	Commit(ctx context.Context, id int64, prepared []byte) error
	// Recover brings the sink to the state of checkpoint id: it publishes
	// prepared (as Commit) unless the marker already records id, and
	// discards any output staged or prepared after it. id 0 with nil
	// prepared means no checkpoint, a fresh start: the sink forgets its
	// commit marker (and, for a result table, the rows of earlier runs).
	Recover(ctx context.Context, id int64, prepared []byte) error
}

// Noter is implemented by sinks that did something to the outside world
// that the run's summary must say, because it is not writing output: a SQL
// sink that emptied or replaced a table it had created, or that kept the
// rows of a table it did not create. The engine prints each note, prefixed
// by the sink's place in the pipeline ("revenue: sinks[0]").
type Noter interface {
	// Notes returns one sentence per such action, in the order done,
	// without a trailing period; nil when there is none. It may be called
	// at any time, also after Close.
	Notes() []string
}
