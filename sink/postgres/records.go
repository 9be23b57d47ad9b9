package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
)

// The columns of a table of side-output records, in order (see
// recordColumns).
const (
	colPipeline     = "pipeline"
	colSeq          = "seq"
	colCheckpointID = "checkpoint_id"
	colRecord       = "record"
)

// recordColumns are the columns of a table of side-output records: the
// pipeline, the record's number in the output, the checkpoint that
// published it, the typed common fields (sink.RecordFields) and the record
// as JSON.
func recordColumns() []column {
	c := func(name, typ string, k row.Kind, null bool) column {
		return column{name: name, typ: typ, kind: k, null: null}
	}
	return []column{
		c(colPipeline, typText, row.KindString, false),
		c(colSeq, typInt, row.KindInt, false),
		c(colCheckpointID, typInt, row.KindInt, true),
		c("kind", typText, row.KindString, false),
		c("stage", typText, row.KindString, true),
		c("event_id", typText, row.KindString, true),
		c("event_time", typTime, row.KindTime, true),
		c("observed_at", typTime, row.KindTime, true),
		c("current_watermark", typTime, row.KindTime, true),
		c("lateness_ms", typInt, row.KindInt, true),
		c("reason", typText, row.KindString, true),
		c("source", typText, row.KindString, true),
		c(colRecord, "json", kindJSON, false),
	}
}

// RecordsOptions adjust a Records.
type RecordsOptions struct {
	// Pipeline names the records in the table (column pipeline) and, with
	// Sink, the commit marker. Required. Default Sink: the table name as
	// given.
	Pipeline, Sink string
	// Fresh: the run starts from the beginning of its input. The
	// pipeline's records are deleted from a table tidemark created (in
	// Recover(0, nil), or the first Flush with AtLeastOnce); a table it did
	// not create keeps them, and seq continues after the highest.
	Fresh bool
	// ReplaceLayout, Resume, AtLeastOnce and Retry: as in Options.
	ReplaceLayout bool
	Resume        bool
	AtLeastOnce   bool
	Retry         Retry
	// Group: as Options.Group (the writer lock's shared mode).
	Group string
}

// Records writes side-output records (late, quarantine, conflict) into a
// PostgreSQL table, one row per record with the common fields in typed
// columns and the whole record as JSON (docs/pipeline.md, "Side-output
// tables"). It implements sink.Records, sink.Committer and sink.Noter.
//
// With checkpoints (not AtLeastOnce), WriteRecord stages records in
// memory, Prepare returns them (stored in the checkpoint) and Commit(id)
// inserts them with checkpoint_id id and moves the commit marker in one
// transaction: a repeated Commit or a Recover of a committed checkpoint
// does nothing, and a Recover that falls back to an older checkpoint
// deletes the records of the later ones first, so every record is in the
// table exactly once. A Records is not safe for concurrent use.
//
// Its shape is sink/sqlite's Records' (the same sink interfaces); they
// differ in their database, its transaction and marker; the checkpoint
// bookkeeping both keep is sink.PreparedRecords.
type Records struct {
	table   tableName
	cols    []column
	o       RecordsOptions
	mark    marker
	x       txRunner
	created bool
	owned   bool
	made    bool // the table did not exist when the sink opened (Abort drops it while empty)
	replace bool // the emptying of a Fresh run still to do
	notes   []string

	pend   sink.PreparedRecords // staged, prepared and not committed
	closed bool
}

var (
	_ sink.Records   = (*Records)(nil)
	_ sink.Committer = (*Records)(nil)
	_ sink.Noter     = (*Records)(nil)
	_ sink.Aborter   = (*Records)(nil)
)

// NewRecords connects to the database at dsn and makes sure table can take
// side-output records, by the rules of New: a missing table is created
// (and recorded in tidemark_tables) unless o.Resume (*MissingTableError); a
// table tidemark created must have exactly the layout it creates (or, with
// o.ReplaceLayout and o.Fresh, is replaced); another table is used as it is
// when it has the columns with compatible types (json, jsonb or text for
// record) and every other column is nullable or has a default
// (*SchemaError otherwise). Errors name the table, never the DSN.
func NewRecords(ctx context.Context, dsn, table string, o RecordsOptions) (*Records, error) {
	r, err := openRecords(ctx, dsn, table, o)
	if err != nil {
		return nil, fmt.Errorf("postgres %s: %w", table, err)
	}
	return r, nil
}

func openRecords(ctx context.Context, dsn, table string, o RecordsOptions) (*Records, error) {
	t, err := parseTable(table)
	if err != nil {
		return nil, err
	}
	if o.Pipeline == "" {
		return nil, errors.New("RecordsOptions.Pipeline is empty: the records and the commit marker need a pipeline name")
	}
	if o.Sink == "" {
		o.Sink = t.String()
	}
	r := &Records{
		table: t, o: o, cols: recordColumns(),
		mark: marker{table: t.sibling(CommitsTable), pipeline: o.Pipeline, sink: o.Sink},
		x:    txRunner{dsn: dsn, retry: o.Retry, app: ApplicationName(o.Pipeline)},
	}
	r.x.lock = &writerLock{tables: []tableName{t}, markers: []marker{r.mark}, group: o.Group}
	if err := r.x.inTx(ctx, r.init(ctx)); err != nil {
		r.x.close(ctx)
		return nil, err
	}
	r.replace = o.Fresh && r.owned && !r.created
	return r, nil
}

// init follows the table rules sink/sqlite's init follows; the catalogs
// it reads and the transaction it runs in are PostgreSQL's.
func (r *Records) init(ctx context.Context) func(pgx.Tx) error {
	return func(tx pgx.Tx) error {
		r.created, r.owned, r.notes, r.made = false, false, nil, false
		r.cols = recordColumns()
		if err := createBookkeeping(ctx, tx, r.table); err != nil {
			return err
		}
		ti, err := inspect(ctx, tx, r.table)
		if err != nil {
			return err
		}
		create := createTableSQL(r.table, r.cols, "PRIMARY KEY ("+quote(colPipeline)+", "+quote(colSeq)+")")
		key := []string{colPipeline, colSeq}
		switch {
		case ti == nil:
			if r.o.Resume {
				return &MissingTableError{Table: r.table.String(), Marker: readMarker(ctx, tx, r.table, r.mark.pipeline, r.mark.sink)}
			}
			if err := createOwned(ctx, tx, r.table, create, r.o.Pipeline, false); err != nil {
				return err
			}
			r.created, r.owned, r.made = true, true, true
		default:
			mine, err := owned(ctx, tx, r.table, ti.oid)
			if err != nil {
				return err
			}
			if !mine {
				break
			}
			r.owned = true
			err = checkExact(ti, r.table, r.cols, key, true)
			if err == nil {
				break
			}
			if !r.o.ReplaceLayout {
				return err
			}
			if !r.o.Fresh {
				return fmt.Errorf("%w; the run resumes a checkpoint, and replace: true replaces a table only at a fresh start", err)
			}
			views, verr := dependentViews(ctx, tx, ti.oid)
			if verr != nil {
				return verr
			}
			if len(views) > 0 {
				return &ViewDependsError{Table: r.table.String(), Views: views}
			}
			n, cerr := countRows(ctx, tx, r.table, "", keptLimit)
			if cerr != nil {
				return cerr
			}
			if err := createOwned(ctx, tx, r.table, create, r.o.Pipeline, true); err != nil {
				return err
			}
			var se *SchemaError
			errors.As(err, &se)
			r.notes = append(r.notes, fmt.Sprintf("replaced table %s, which tidemark created, of another layout (%s): %s records dropped", r.table, se.differences(), countText(n, keptLimit)))
			r.created = true
		}
		if r.created {
			if ti, err = inspect(ctx, tx, r.table); err != nil {
				return err
			}
		}
		if _, err := bind(ti, r.table, r.cols, nil); err != nil {
			return err
		}
		if r.o.Fresh && !r.owned {
			n, err := countRows(ctx, tx, r.table, quote(colPipeline)+" = $1", keptLimit, r.o.Pipeline)
			if err != nil {
				return err
			}
			if n > 0 {
				r.notes = append(r.notes, fmt.Sprintf("kept the %s records of pipeline %s already in table %s, which tidemark did not create: the new ones follow them",
					countText(n, keptLimit), r.o.Pipeline, r.table))
			}
		}
		return nil
	}
}

// Notes implements sink.Noter.
func (r *Records) Notes() []string { return r.notes }

// WriteRecord stages one record (a JSON object; copied) for the next
// Prepare, or Flush with AtLeastOnce. It returns an error naming the
// record when it is not a JSON object of the side-output formats or a
// field does not fit its column, after Close (wrapping ErrClosed), or
// when ctx is done.
func (r *Records) WriteRecord(ctx context.Context, obj []byte) error {
	if r.closed {
		return fmt.Errorf("postgres %s: %w", r.table, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := r.args(obj, 0, nil, nil); err != nil {
		return fmt.Errorf("postgres %s: %w", r.table, err)
	}
	r.pend.Stage(obj)
	return nil
}

// args returns the column values of record obj numbered seq, published by
// checkpoint ck (nil: NULL), in column order, appended to dst.
func (r *Records) args(obj []byte, seq int64, ck *int64, dst []any) ([]any, error) {
	f, err := sink.ParseRecord(obj)
	if err != nil {
		return nil, err
	}
	times := [3]any{}
	for i, s := range []string{f.EventTime, f.ObservedAt, f.CurrentWatermark} {
		switch s {
		case "":
			times[i] = nil
		case "infinity":
			times[i] = pgtype.Timestamptz{Valid: true, InfinityModifier: pgtype.Infinity}
		default:
			tm, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return nil, fmt.Errorf("side-output record %.80q: column %s: %w", obj, r.cols[6+i].name, err)
			}
			times[i] = tm
		}
	}
	var ckArg, late any
	if ck != nil {
		ckArg = *ck
	}
	if f.LatenessMs != nil {
		late = *f.LatenessMs
	}
	text := func(p *string) any {
		if p == nil {
			return nil
		}
		return *p
	}
	dst = append(dst, r.o.Pipeline, seq, ckArg, f.Kind, text(f.Stage), text(f.EventID),
		times[0], times[1], times[2], late, text(f.Reason), text(f.Source), string(obj))
	// Limits of a table of the user's (varchar(n), integer).
	for i, a := range dst[len(dst)-len(r.cols):] {
		c := &r.cols[i]
		var v row.Value
		switch x := a.(type) {
		case string:
			v = row.Str(x)
		case int64:
			v = row.Int(x)
		default:
			continue
		}
		if c.kind == kindJSON || (c.name == colSeq && seq == 0) {
			continue
		}
		if why := c.to.fit(v, time.UTC); why != "" {
			return nil, fmt.Errorf("side-output record %.80q: column %s (%s): %s", obj, c.name, c.to.typ, why)
		}
	}
	return dst, nil
}

// Flush, with AtLeastOnce, inserts the staged records in one transaction
// (checkpoint_id NULL), after deleting the pipeline's records on the first
// Flush of a Fresh sink whose table tidemark created. Without AtLeastOnce
// it does nothing: records wait for their checkpoint.
func (r *Records) Flush(ctx context.Context) error {
	// As sink/sqlite's Flush, in this database's transaction (pgx.Tx).
	if r.closed {
		return fmt.Errorf("postgres %s: %w", r.table, ErrClosed)
	}
	if !r.o.AtLeastOnce || (len(r.pend.Staged) == 0 && !r.replace) {
		return nil
	}
	var emptied int64 = -1
	err := r.x.inTx(ctx, func(tx pgx.Tx) error {
		if r.replace {
			n, err := r.deleteAfter(ctx, tx, -1)
			if err != nil {
				return err
			}
			emptied = n
		}
		return r.insert(ctx, tx, r.pend.Staged, nil)
	})
	if err != nil {
		return fmt.Errorf("postgres %s: %w", r.table, err)
	}
	r.pend.Staged = r.pend.Staged[:0]
	r.noteEmptied(emptied)
	return nil
}

func (r *Records) noteEmptied(n int64) {
	if n < 0 {
		return
	}
	r.replace = false
	r.notes = append(r.notes, fmt.Sprintf("emptied table %s, which tidemark created, of pipeline %s's records for this fresh start: %d records of earlier runs removed", r.table, r.o.Pipeline, n))
}

// insert writes records recs with checkpoint_id ck, numbered after the
// pipeline's highest seq, with COPY.
func (r *Records) insert(ctx context.Context, tx pgx.Tx, recs [][]byte, ck *int64) error {
	if len(recs) == 0 {
		return nil
	}
	var last int64
	if err := tx.QueryRow(ctx, "SELECT coalesce(max("+quote(colSeq)+"), 0) FROM "+r.table.sql()+" WHERE "+quote(colPipeline)+" = $1", r.o.Pipeline).Scan(&last); err != nil {
		return err
	}
	rows := make([][]any, len(recs))
	for i, obj := range recs {
		a, err := r.args(obj, last+1+int64(i), ck, nil)
		if err != nil {
			return err
		}
		rows[i] = a
	}
	names := make([]string, len(r.cols))
	for i, c := range r.cols {
		names[i] = c.name
	}
	ident := pgx.Identifier{r.table.name}
	if r.table.schema != "" {
		ident = pgx.Identifier{r.table.schema, r.table.name}
	}
	_, err := tx.CopyFrom(ctx, ident, names, pgx.CopyFromRows(rows))
	return err
}

// deleteAfter deletes the pipeline's records published by checkpoints
// after id (all of them for id < 0), returning how many.
func (r *Records) deleteAfter(ctx context.Context, tx pgx.Tx, id int64) (int64, error) {
	q := "DELETE FROM " + r.table.sql() + " WHERE " + quote(colPipeline) + " = $1"
	args := []any{r.o.Pipeline}
	if id >= 0 {
		q += " AND " + quote(colCheckpointID) + " > $2"
		args = append(args, id)
	}
	tag, err := tx.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

// Prepare implements sink.Committer: the records staged since the last
// Prepare join those prepared and not committed, and their encoding is
// returned (nil when there are none). Nothing reaches the database.
func (r *Records) Prepare(ctx context.Context, id int64) ([]byte, error) {
	if err := r.committerUsable(); err != nil {
		return nil, err
	}
	return r.pend.Prepare(id), nil
}

// Commit implements sink.Committer: in one transaction, unless the commit
// marker records id or a later checkpoint, it inserts the records prepared
// for id (checkpoint_id id) and sets the marker to id. A transaction that
// fails for a transient reason is retried (the marker makes a commit that
// reached the database a no-op).
func (r *Records) Commit(ctx context.Context, id int64, prepared []byte) error {
	// As sink/sqlite's Commit; what differs is r.commit's transaction.
	if err := r.committerUsable(); err != nil {
		return err
	}
	recs, err := r.pend.ForCommit(id, prepared, "postgres prepared records")
	if err != nil {
		return fmt.Errorf("postgres %s: commit %d: %w", r.table, id, err)
	}
	if err := r.commit(ctx, id, recs, false); err != nil {
		return fmt.Errorf("postgres %s: commit %d: %w", r.table, id, err)
	}
	r.pend.Committed(id)
	return nil
}

func (r *Records) commit(ctx context.Context, id int64, recs [][]byte, rewind bool) error {
	if id <= 0 {
		return fmt.Errorf("checkpoint id %d is not positive", id)
	}
	return r.x.inTx(ctx, func(tx pgx.Tx) error {
		cur, err := r.mark.read(ctx, tx)
		if err != nil {
			return err
		}
		if cur > id && rewind {
			if _, err := r.deleteAfter(ctx, tx, id); err != nil {
				return err
			}
			return r.mark.write(ctx, tx, id, true)
		}
		if cur >= id {
			return nil
		}
		if err := r.insert(ctx, tx, recs, &id); err != nil {
			return err
		}
		return r.mark.write(ctx, tx, id, false)
	})
}

// Recover implements sink.Committer. It drops staged and prepared records.
// With id 0 (a fresh start) it deletes the commit marker and, for a Fresh
// sink whose table tidemark created, the pipeline's records. With a
// positive id: a *MissingTableError when the sink had to create the table
// (it is dropped again); otherwise, in one transaction, the records of
// checkpoints after id are deleted and the marker set back to id when it
// records a later checkpoint, or prepared is inserted as Commit does when
// it records an earlier one.
func (r *Records) Recover(ctx context.Context, id int64, prepared []byte) error {
	if err := r.committerUsable(); err != nil {
		return err
	}
	r.pend.Reset()
	switch {
	case id < 0:
		return fmt.Errorf("postgres %s: recover: negative checkpoint id %d", r.table, id)
	case id == 0 && len(prepared) > 0:
		return fmt.Errorf("postgres %s: recover: prepared output without a checkpoint id", r.table)
	case id == 0:
		// As sink/sqlite's: marker and emptying in one pgx transaction.
		var emptied int64 = -1
		err := r.x.inTx(ctx, func(tx pgx.Tx) error {
			if err := r.mark.forget(ctx, tx); err != nil {
				return err
			}
			if r.replace {
				n, err := r.deleteAfter(ctx, tx, -1)
				emptied = n
				return err
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("postgres %s: recover: %w", r.table, err)
		}
		r.noteEmptied(emptied)
		r.replace = false
		return nil
	case r.created:
		e := &MissingTableError{Table: r.table.String(), Checkpoint: id}
		err := r.x.inTx(ctx, func(tx pgx.Tx) error {
			e.Marker = readMarker(ctx, tx, r.table, r.mark.pipeline, r.mark.sink)
			if _, err := tx.Exec(ctx, "DROP TABLE "+r.table.sql()); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "DELETE FROM "+r.table.sibling(TablesTable).sql()+" WHERE table_name = $1", r.table.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres %s: recover %d: %w (and dropping the table created empty failed: %v)", r.table, id, e, err)
		}
		r.created = false
		return fmt.Errorf("postgres %s: recover %d: %w", r.table, id, e)
	}
	recs, err := sink.DecodePrepared(prepared, "postgres prepared records")
	if err != nil {
		return fmt.Errorf("postgres %s: recover %d: %w", r.table, id, err)
	}
	if err := r.commit(ctx, id, recs, true); err != nil {
		return fmt.Errorf("postgres %s: recover %d: %w", r.table, id, err)
	}
	r.replace = false
	return nil
}

func (r *Records) committerUsable() error {
	if r.closed {
		return fmt.Errorf("postgres %s: %w", r.table, ErrClosed)
	}
	if r.o.AtLeastOnce {
		return fmt.Errorf("postgres %s: %w", r.table, ErrAtLeastOnce)
	}
	return nil
}

// Abort implements sink.Aborter: it releases the connection without
// flushing (see Results.Abort). Abort after Close, or twice, does nothing.
func (r *Records) Abort(ctx context.Context) error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.pend.Reset()
	return abortConn(ctx, &r.x, r.table, r.made)
}

// Close releases the connection; with AtLeastOnce it flushes first (even
// when ctx is done). Records staged or prepared and not committed are
// dropped otherwise: a restore writes them again. Closing twice is not an
// error.
func (r *Records) Close(ctx context.Context) error {
	if r.closed {
		return nil
	}
	var err error
	if r.o.AtLeastOnce {
		err = r.Flush(context.WithoutCancel(ctx))
	}
	r.closed = true
	r.pend.Reset()
	return closeConn(ctx, &r.x, r.table, err)
}
