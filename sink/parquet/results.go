package parquet

import (
	"context"
	"fmt"

	pq "github.com/parquet-go/parquet-go"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/sink"
)

var (
	_ sink.Results   = (*Results)(nil)
	_ sink.Committer = (*Results)(nil)
	_ sink.Aborter   = (*Results)(nil)
	_ sink.Noter     = (*Results)(nil)
	_ sink.Records   = (*Records)(nil)
	_ sink.Committer = (*Records)(nil)
	_ sink.Aborter   = (*Records)(nil)
	_ sink.Noter     = (*Records)(nil)
)

// Results writes a stage's result rows into Parquet files in a directory
// (docs/connectors/parquet.md): every row as it was emitted, with its op,
// version and is_final (a file is append-only: a reader takes the row of
// the highest version per window_start and key, and drops it when that
// row's op is delete), partitioned by Options.PartitionBy, a file per
// partition rolled at every checkpoint and by size.
type Results struct {
	d      *dir
	layout *Layout
	parts  *partitioner
	vals   []pq.Value
	dec    []byte
	byPart map[string][]pq.Row
	order  []string
}

// NewResults opens a result sink for rows of d. Errors: a bad option
// (compression, decimal scale, partition term) or the directory cannot be
// created or locked (another run writes it: *flock.HeldError).
func NewResults(d changelog.Desc, o Options) (*Results, error) {
	scale := DefaultDecimalScale
	if o.DecimalScale != nil {
		scale = *o.DecimalScale
	}
	l, err := NewLayout(d, scale)
	if err != nil {
		return nil, fmt.Errorf("parquet %s: %w", o.Dir, err)
	}
	codec, err := Codec(o.Compression)
	if err != nil {
		return nil, fmt.Errorf("parquet %s: %w", o.Dir, err)
	}
	p, err := newPartitioner(o.PartitionBy, d)
	if err != nil {
		return nil, fmt.Errorf("parquet %s: %w", o.Dir, err)
	}
	meta := map[string]string{"tidemark.stage": d.Stage, "tidemark.emit_mode": d.EmitMode, "tidemark.timezone": d.Timezone}
	dd, err := openDir(o, Schema(d.Stage, l.Columns, l.Scale, codec), meta)
	if err != nil {
		return nil, err
	}
	return &Results{d: dd, layout: l, parts: p, byPart: map[string][]pq.Row{}}, nil
}

// Write appends rows to their partitions' files. Errors: a decimal that
// does not fit its column (naming the row's window and the column), or
// the file system's.
func (r *Results) Write(ctx context.Context, rows []changelog.Row) error {
	if err := r.d.check(ctx); err != nil {
		return err
	}
	n := len(r.layout.Columns)
	if need := len(rows) * n; cap(r.vals) < need {
		r.vals = make([]pq.Value, need)
		r.dec = make([]byte, need*16)
	}
	for _, k := range r.order {
		r.byPart[k] = r.byPart[k][:0]
	}
	r.order = r.order[:0]
	for i := range rows {
		vals, dec := r.vals[i*n:(i+1)*n:(i+1)*n], r.dec[i*n*16:(i+1)*n*16]
		if err := r.layout.Values(vals, dec, &rows[i]); err != nil {
			return fmt.Errorf("parquet %s: row of window %d, version %d: %w", r.d.o.Dir, rows[i].WindowStart, rows[i].Version, err)
		}
		part := r.parts.dir(&rows[i])
		b, ok := r.byPart[part]
		if !ok || len(b) == 0 {
			r.order = append(r.order, part)
		}
		r.byPart[part] = append(b, vals)
	}
	for _, part := range r.order {
		if err := r.d.write(part, r.byPart[part]); err != nil {
			return err
		}
	}
	return nil
}

// Flush publishes the open files when the sink is at least once in a
// pipeline with checkpoints (Options.PublishOnFlush); otherwise it does
// nothing (files are published when rolled, at checkpoints or at Close).
func (r *Results) Flush(ctx context.Context) error { return r.d.flush(ctx) }

// Close publishes the open files (not exactly once) and releases the
// directory.
func (r *Results) Close(ctx context.Context) error { return r.d.close() }

// Abort implements sink.Aborter.
func (r *Results) Abort(ctx context.Context) error { return r.d.abort() }

// Prepare closes the files written since the last checkpoint (they stay
// in DIR/_tidemark/staging) and returns their names.
func (r *Results) Prepare(ctx context.Context, id int64) ([]byte, error) { return r.d.prepare(ctx, id) }

// Commit renames checkpoint id's files into place, writes its manifest
// and moves the commit marker, unless the marker is at id or later.
func (r *Results) Commit(ctx context.Context, id int64, prepared []byte) error {
	return r.d.commit(ctx, id, prepared)
}

// Recover completes checkpoint id's publication when the marker is before
// it, removes what later checkpoints published, and empties the staging
// directory; id 0 removes every file earlier runs published.
func (r *Results) Recover(ctx context.Context, id int64, prepared []byte) error {
	return r.d.recover(ctx, id, prepared)
}

// Notes implements sink.Noter: the files removed at the start.
func (r *Results) Notes() []string { return r.d.notes }

// Records writes side-output records into Parquet files of
// RecordColumns, partitioned by kind or day.
type Records struct {
	d     *dir
	parts *recordPartitioner
	vals  []pq.Value
}

// NewRecords opens a side-output sink. Errors: NewResults's.
func NewRecords(o Options) (*Records, error) {
	codec, err := Codec(o.Compression)
	if err != nil {
		return nil, fmt.Errorf("parquet %s: %w", o.Dir, err)
	}
	p, err := newRecordPartitioner(o.PartitionBy)
	if err != nil {
		return nil, fmt.Errorf("parquet %s: %w", o.Dir, err)
	}
	dd, err := openDir(o, Schema("records", RecordColumns, 0, codec), nil)
	if err != nil {
		return nil, err
	}
	return &Records{d: dd, parts: p, vals: make([]pq.Value, len(RecordColumns))}, nil
}

// WriteRecord appends one record. Errors: a record that is not a JSON
// object of the side-output formats, or the file system's.
func (r *Records) WriteRecord(ctx context.Context, obj []byte) error {
	if err := r.d.check(ctx); err != nil {
		return err
	}
	f, err := RecordValues(r.vals, obj)
	if err != nil {
		return fmt.Errorf("parquet %s: %w", r.d.o.Dir, err)
	}
	return r.d.write(r.parts.dir(f.Kind, f.ObservedAt, f.EventTime), []pq.Row{r.vals})
}

// Flush is Results.Flush.
func (r *Records) Flush(ctx context.Context) error { return r.d.flush(ctx) }

// Close is Results.Close.
func (r *Records) Close(ctx context.Context) error { return r.d.close() }

// Abort implements sink.Aborter.
func (r *Records) Abort(ctx context.Context) error { return r.d.abort() }

// Prepare is Results.Prepare.
func (r *Records) Prepare(ctx context.Context, id int64) ([]byte, error) { return r.d.prepare(ctx, id) }

// Commit is Results.Commit.
func (r *Records) Commit(ctx context.Context, id int64, prepared []byte) error {
	return r.d.commit(ctx, id, prepared)
}

// Recover is Results.Recover.
func (r *Records) Recover(ctx context.Context, id int64, prepared []byte) error {
	return r.d.recover(ctx, id, prepared)
}

// Notes is Results.Notes.
func (r *Records) Notes() []string { return r.d.notes }
