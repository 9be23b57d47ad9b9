// Package source defines how records enter a pipeline: a Source fills
// batches of decoded rows, each with its partition, arrival time and source
// position. Connectors live in sub-packages (source/file) and are passive:
// the engine's runner calls Next; a source starts no goroutine of its own.
package source

import (
	"context"
	"math"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// NoArrival marks a record without a recorded arrival time; the runner then
// reads its processing-time clock.
const NoArrival = int64(math.MinInt64)

// Meta describes one record of a Batch.
type Meta struct {
	// Partition is the index of the record's partition in
	// Source.Partitions() (0 for an unpartitioned source).
	Partition int
	// Arrival is the processing time at which the record arrived (ms since
	// the epoch), when the source recorded one; NoArrival otherwise.
	Arrival int64
	// Pos locates the record in the source, for side outputs and errors.
	Pos changelog.Position
	// Raw holds the record's original bytes (a JSON line, a CSV record).
	// Valid until the next call to Next.
	Raw []byte
	// Err is non-nil when the record could not be decoded; the row is then
	// unusable and the record goes to quarantine. Err is a *DecodeError.
	Err *DecodeError
	// Redelivery is true for a copy of an earlier record delivered again by
	// a simulated at-least-once transport (file replay); it is otherwise
	// identical to the first delivery.
	Redelivery bool
}

// Resumable is implemented by sources that can resume from a checkpoint.
type Resumable interface {
	// Position returns the source's position after the last record Next
	// returned, as opaque bytes stored in the checkpoint (for a file, the
	// records delivered; for a log, an offset per partition).
	Position() []byte
	// Seek moves a source that has delivered nothing to a position that
	// Position returned, so that Next continues with the record after it.
	// Errors: pos does not parse or no longer exists in the input.
	Seek(ctx context.Context, pos []byte) error
}

// DecodeError says why a record could not be decoded.
type DecodeError struct {
	Field  string // the field at fault, "" for the whole record
	Rule   string // "decode", "type", "timestamp" or "event_time"
	Reason string // human-readable, quoting the offending text
}

// Error implements error: "field amount: ..." or the reason alone.
func (e *DecodeError) Error() string {
	if e.Field != "" {
		return "field " + e.Field + ": " + e.Reason
	}
	return e.Reason
}

// Batch is a reusable group of records. Rows[i] belongs to Meta[i]. A
// source appends to both; the runner resets them (Reset) before each Next.
type Batch struct {
	Rows []row.Row
	Meta []Meta
}

// Len returns the number of records.
func (b *Batch) Len() int { return len(b.Meta) }

// Reset empties the batch, keeping capacity.
func (b *Batch) Reset() {
	b.Rows = b.Rows[:0]
	b.Meta = b.Meta[:0]
}

// Next returns a row shaped for schema at the end of the batch, reusing
// memory from earlier batches, and its Meta to fill in.
func (b *Batch) Next(schema *row.Schema) (*row.Row, *Meta) {
	n := len(b.Rows)
	if n < cap(b.Rows) {
		b.Rows = b.Rows[:n+1]
	} else {
		b.Rows = append(b.Rows, row.Row{})
	}
	r := &b.Rows[n]
	schema.Shape(r)
	b.Meta = append(b.Meta, Meta{Arrival: NoArrival})
	return r, &b.Meta[n]
}

// Source produces records.
type Source interface {
	// Next appends up to max records to b. It returns io.EOF (possibly
	// with records in b) when a bounded source is exhausted. Rows, their
	// strings and Meta.Raw stay valid until the next call to Next.
	Next(ctx context.Context, b *Batch, max int) error
	// Partitions returns the names of the partitions seen so far; indexes
	// are stable and the list only grows.
	Partitions() []string
	// EventJSON appends the original record as a JSON object (for late
	// records): a JSON line as is, a CSV record as {"column": "text", ...}.
	EventJSON(dst []byte, m *Meta) []byte
	// Close releases the source's resources.
	Close() error
}
