// Package record defines what an input record carries beside its typed
// row: Meta (its partition, arrival time, source position, original bytes
// and decode error), DecodeError, NoArrival, and the metadata fields of a
// change stream (change.go: the fields, the op codes, the bitmap of
// unchanged values).
//
// It sits in the core, beside row and changelog and below both the
// connectors and the pure task: package source's Batch holds a Meta per
// record (source.Meta is this type), the sources fill it, the engine's
// router reads it, and the task carries it with each item to the side
// outputs and the change streams' keyed state — so that the task and the
// plan import no connector.
package record

import (
	"math"

	"github.com/tidemark/tidemark/changelog"
)

// NoArrival marks a record without a recorded arrival time; the runner then
// reads its processing-time clock.
const NoArrival = int64(math.MinInt64)

// Meta describes one record of a source.Batch.
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
	// Valid until the record's Batch is Reset.
	Raw []byte
	// Err is non-nil when the record could not be decoded; the row is then
	// unusable and the record goes to quarantine. Err is a *DecodeError.
	Err *DecodeError
	// Redelivery is true for a copy of an earlier record delivered again by
	// a simulated at-least-once transport (file replay); it is otherwise
	// identical to the first delivery.
	Redelivery bool
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
