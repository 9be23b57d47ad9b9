// Package sink defines where a pipeline's outputs go. Result sinks receive
// window result rows (changelog.Row); record sinks receive side-output
// records (late, quarantine) as JSON objects. Connectors live in
// sub-packages (sink/sqlite, sink/jsonl, sink/stdout) and are passive: the
// runner calls Write and Flush.
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
