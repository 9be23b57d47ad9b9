// Package source defines how records enter a pipeline: a Source fills
// batches of decoded rows, each with its partition, arrival time and source
// position. Connectors live in sub-packages (source/file) and are passive:
// the engine's runner calls Next; a source starts no goroutine of its own.
package source

import (
	"context"
	"time"

	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
)

// NoArrival marks a record without a recorded arrival time; the runner then
// reads its processing-time clock. It is record.NoArrival.
const NoArrival = record.NoArrival

// Meta describes one record of a Batch: partition, arrival time (ms),
// position, raw bytes, decode error. It is record.Meta, defined below the
// sources and the task so that the task imports no connector.
type Meta = record.Meta

// DecodeError says why a record could not be decoded; it is
// record.DecodeError.
type DecodeError = record.DecodeError

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

// PartialResumable is implemented by Resumable sources whose reads after
// a Seek may cut their records into batches differently than the first
// time: a log of several partitions, whose batches hold the records of
// whichever partitions' fetches came back (a Kafka topic). For those,
// "the position before a batch and the number of its records used" does
// not name a point of the input, since a read from that position may
// return other records first; a position inside the batch does.
type PartialResumable interface {
	Resumable
	// PositionAt returns the position after the first n records of b
	// (0 ≤ n ≤ b.Len()) and before the others, b being the batch that the
	// latest call to Next filled: the records b's first n leave out, and
	// the records after b, are those that Next delivers after a Seek to
	// it (in an order of its own). PositionAt(b, b.Len()) is Position().
	// Like Position it does not change what Next delivers.
	PositionAt(b *Batch, n int) []byte
}

// Batch is a reusable group of records. Rows[i] belongs to Meta[i]. A
// source appends to both, and copies the bytes of the rows' strings and
// of Meta.Raw into the batch's Arena; the runner resets the batch (Reset)
// before passing it to Next again.
//
// A batch owns its records: rows, their strings and Meta.Raw stay valid
// until the batch is Reset, whatever the source does meanwhile, so
// several batches filled by successive calls to Next (on one source) may
// be in use at once, for example handed to other goroutines while the
// source fills the next. The zero Batch is empty and ready to use.
type Batch struct {
	Rows []row.Row
	Meta []Meta
	// Spans is a splitting source's description of a batch it claimed
	// without listing its records (Splitter.Claim), which its Decode
	// turns into Rows and Meta; empty otherwise. Reset empties it.
	Spans []Span

	arena Arena
}

// Span is one part of a claimed batch that a splitting source describes
// instead of listing its records (Batch.Spans): a range [Lo, Hi) of the
// source's record numbers and a value At whose meaning is the source's
// (the Nexmark generator: event ids, and the delivery time in ms of a
// delayed event or a mark that the range's on-time events follow).
type Span struct {
	Lo, Hi, At int64
}

// Len returns the number of records.
func (b *Batch) Len() int { return len(b.Meta) }

// Arena returns the memory that holds the batch's strings and raw bytes:
// sources copy into it (Arena.String, Arena.Bytes) what they put in the
// batch. It is emptied by Reset.
func (b *Batch) Arena() *Arena { return &b.arena }

// Reset empties the batch, keeping the capacity of its rows, metas and
// arena. Strings and raw bytes of its records must not be used
// afterwards.
func (b *Batch) Reset() {
	b.Rows = b.Rows[:0]
	b.Meta = b.Meta[:0]
	b.Spans = b.Spans[:0]
	b.arena.Reset()
}

// Next returns a row shaped for schema at the end of the batch, reusing
// the slices of rows from before the last Reset, and its Meta to fill in.
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

// Append returns the row at the end of the batch as it was before the
// last Reset (reusing its slices; contents unspecified: the caller must
// make it a row of its schema, with row.Row.CopyShallow or
// row.Schema.Shape), and its Meta to fill in.
func (b *Batch) Append() (*row.Row, *Meta) {
	n := len(b.Rows)
	if n < cap(b.Rows) {
		b.Rows = b.Rows[:n+1]
	} else {
		b.Rows = append(b.Rows, row.Row{})
	}
	b.Meta = append(b.Meta, Meta{Arrival: NoArrival})
	return &b.Rows[n], &b.Meta[n]
}

// Status is what a call to Source.Next says about the input after the
// records it appended.
type Status uint8

const (
	// More: the input goes on (records may follow; an unbounded source
	// always says More).
	More Status = iota
	// End: the records appended are the input's last. A source says End
	// only for its own end (docs/checkpoints.md, "What ends an input"),
	// never because a read failed, and keeps saying it on later calls.
	End
)

// String returns "more" or "end".
func (s Status) String() string {
	if s == End {
		return "end"
	}
	return "more"
}

// Source produces records.
//
// Next, Partitions, Close and the Resumable methods are called from one
// goroutine at a time (the runner's). EventJSON may be called from any
// number of other goroutines at the same time, concurrently with Next.
type Source interface {
	// Next appends up to max records to b. It returns End (with a nil
	// error, possibly with records in b) when a bounded source has given
	// its last record, More otherwise. End is the source's own statement
	// about its input — the files read to their end, the end offsets of
	// a bounded read reached, a generator's count given — and nothing
	// else ends an input: an error, whatever it wraps (io.EOF from a
	// closed connection, for one), is a failure, and its Status is
	// meaningless. The records' rows, their strings and Meta.Raw live in
	// b (its rows and its Arena) and stay valid until b is Reset: later
	// calls to Next, with other batches, do not touch them.
	Next(ctx context.Context, b *Batch, max int) (Status, error)
	// Partitions returns the names of the partitions seen so far; indexes
	// are stable and the list only grows.
	Partitions() []string
	// EventJSON appends the original record as a JSON object (for late
	// records, quarantine records and dedup payloads): a JSON line as is,
	// a CSV record as {"column": "text", ...}. m must belong to a batch
	// that has not been Reset since Next filled it.
	//
	// EventJSON is safe for concurrent use, also while Next runs on
	// another goroutine: it reads only m, the memory of m's batch and
	// source state that never changes after the source was built (or
	// that it reaches through m).
	EventJSON(dst []byte, m *Meta) []byte
	// Close releases the source's resources.
	Close() error
}

// Splitter is implemented by sources whose records can be decoded apart
// from reading them, so that a runner decodes several batches at once on
// other goroutines while it reads the next ones (the engine's decoders,
// docs/parallelism.md). For every batch, Claim then Decode leave it as
// Next would have, and the source's Position, Partitions and Progress
// after Claim are those after Next: whatever depends on the records
// before (the order of delivery, positions, partitions found in the
// data) is Claim's, and Decode only makes each record's row from what
// Claim left in its meta.
type Splitter interface {
	Source
	// Splits reports whether this source, as configured, splits its
	// reads: false when a record's meta depends on the decoded rows of
	// the records before it (a file's partition_field, ordinal,
	// arrival_time_field or replay), and Claim and Decode must not be
	// used.
	Splits() bool
	// Claim appends up to max records to b, as Next does but with their
	// rows left for Decode (unshaped: Batch.Append), and returns what
	// Next would (End after the input's last record). Each record's meta is complete (partition, arrival
	// time, position, raw bytes) but for Meta.Err of a record Decode
	// cannot decode. A source may instead describe the records it
	// claimed in b.Spans and leave b's rows and metas to Decode (the
	// Nexmark generator: ranges of event ids), so that claiming costs
	// less than a record's meta per record; b.Len() then counts them
	// only once Decode has returned. Claim is called from the goroutine that calls the
	// other methods, never interleaved with Next on one source.
	Claim(ctx context.Context, b *Batch, max int) (Status, error)
	// Decode makes the rows of b, which Claim filled (or described in
	// b.Spans: then Decode appends the records and their metas), and sets
	// Meta.Err of each record that does not decode. It is safe for concurrent
	// use: on different batches, from several goroutines, while Claim
	// runs (it reads only b and state fixed when the source was built).
	Decode(b *Batch)
}

// Finisher is implemented by a Splitter whose records' metas depend on
// decoded fields of the records before them — a file's partitions named
// by a decoded field, arrival times read from one, ordinals counted per
// decoded value — so that it can split its reads nonetheless: Claim
// leaves those metas and fields undone, Decode decodes the rows on any
// goroutine, and Finish completes them in claim order on the claiming
// goroutine, from the decoded rows. Claim then Decode then Finish leave
// a batch as Next would have; Partitions after a batch's Finish, and
// FinishedPosition(ClaimPosition() taken right after its Claim), are
// what Partitions and Position would be after Next delivered it, though
// later batches have been claimed meanwhile.
type Finisher interface {
	Splitter
	// Finish completes the records of b, decoded (Decode returned), in
	// claim order: every batch Claim filled goes through Finish once,
	// in the order of the claims. It is called from Claim's goroutine.
	Finish(b *Batch)
	// ClaimPosition returns what the source's position holds of where
	// reading stopped, right after a Claim (Resumable sources; nil
	// otherwise).
	ClaimPosition() []byte
	// FinishedPosition returns the position after the batch last
	// finished, given the ClaimPosition taken right after that batch's
	// Claim: what Position would have returned after Next delivered it.
	FinishedPosition(claimed []byte) []byte
}

// RowFinisher is a Finisher that tells whether its Finish writes into
// the records' rows (a file's ordinal field) or only into their metas
// (partitions, arrival times): a runner may then evaluate what depends
// on the rows alone (engine/prefront.go) right after Decode, before
// Finish. A Finisher that is not a RowFinisher is taken to write rows.
type RowFinisher interface {
	Finisher
	// FinishesRows reports whether Finish changes a row's fields.
	FinishesRows() bool
}

// Reorderer is a Finisher whose deliveries are not its input's records
// in their order — a file's replay, which holds records back, delays,
// copies and reorders them as a transport would — so that the runner
// decodes its input on other goroutines all the same: the input is
// claimed and decoded in batches as for any Splitter (Finish does
// nothing), and handed in claim order to Feed; Deliver makes the
// deliveries from it, asking for the next input batch when it has used
// up the one fed. The deliveries, their batch cuts, Partitions and
// Position after each call of Deliver are those of Next: Position
// names the input record the deliveries have reached (inside the
// batch fed), not how far the claims ran ahead.
type Reorderer interface {
	Finisher
	// Reorders reports whether this source, as configured, reorders
	// its input (has a replay): only then are Feed and Deliver used, in
	// place of Next.
	Reorders() bool
	// Deliver appends up to max deliveries to b, as Next does, taking
	// the input records it needs from the batch fed last. hungry is true
	// when it has used up that batch and needs the next (Feed) before
	// it can deliver more; the records appended stay, and the next call
	// appends after them. st is meaningful only when hungry is false.
	Deliver(b *Batch, max int) (st Status, hungry bool)
	// Feed hands over the next input batch (claimed, decoded and
	// finished, in claim order): the source reads it until Deliver
	// asks for another, and keeps nothing of it afterwards (the batch
	// is the caller's again once Deliver says hungry). end says that
	// its claim returned End: the input's last records.
	Feed(in *Batch, end bool)
}

// Wait is a service a source's records wait on: one it needs to decode
// them (a schema registry) and cannot reach. The records are neither
// delivered nor skipped meanwhile: the source's position stays before
// them, and Next returns without them until the service answers, or
// fails naming it once the wait outlasts its bound.
type Wait struct {
	// Service names what the records wait on, as messages say it:
	// "schema registry http://127.0.0.1:8081".
	Service string
	// Since is when the wait began (wall clock): the first request that
	// failed, or the start of one not answered yet.
	Since time.Time
	// Attempts counts the requests that failed since Since (0 while the
	// first one is not answered).
	Attempts int
	// Err is the last failure ("" while the first request is not
	// answered).
	Err string
	// Records says which records wait ("orders/0 from offset 7").
	Records string
	// Limit is how long the source waits before it fails (its
	// configuration key's value).
	Limit time.Duration
}

// Waiter is implemented by sources whose records can wait on a service
// (Wait). Waiting returns the waits under way, none when the records
// flow; it is safe for concurrent use, also while Next runs (a request
// that hangs inside Next shows here).
type Waiter interface {
	Waiting() []Wait
}
