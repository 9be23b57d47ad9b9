package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
)

// recordColumns are the columns of a table of side-output records
// (docs/pipeline.md, "Side-output tables"): the pipeline, the record's
// number in the output, the checkpoint that published it, the typed
// common fields (sink.RecordFields; times as the record's RFC 3339 text)
// and the record as JSON text.
func recordColumns() []column {
	c := func(name, typ string, k row.Kind, null bool) column {
		return column{name: name, typ: typ, kind: k, null: null}
	}
	return []column{
		c("pipeline", "TEXT", row.KindString, false),
		c("seq", "INTEGER", row.KindInt, false),
		c("checkpoint_id", "INTEGER", row.KindInt, true),
		c("kind", "TEXT", row.KindString, false),
		c("stage", "TEXT", row.KindString, true),
		c("event_id", "TEXT", row.KindString, true),
		c("event_time", "TEXT", row.KindTime, true),
		c("observed_at", "TEXT", row.KindTime, true),
		c("current_watermark", "TEXT", row.KindTime, true),
		c("lateness_ms", "INTEGER", row.KindInt, true),
		c("reason", "TEXT", row.KindString, true),
		c("source", "TEXT", row.KindString, true),
		c("record", "TEXT", row.KindString, false),
	}
}

// RecordsOptions adjust a Records.
type RecordsOptions struct {
	// Pipeline names the records in the table (column pipeline) and, with
	// Sink, the commit marker. Required. Default Sink: the table name.
	Pipeline, Sink string
	// Fresh: the run starts from the beginning of its input; the
	// pipeline's records are deleted from a table tidemark created (in
	// Recover(0, nil), or the first Flush without ExactlyOnce). A table it
	// did not create keeps them; seq continues after the highest.
	Fresh bool
	// ReplaceLayout and Resume: as in Options.
	ReplaceLayout, Resume bool
	// ExactlyOnce makes the sink a sink.Committer (see Records).
	ExactlyOnce bool
}

// Records writes side-output records into a table of an SQLite database,
// one row per record (see recordColumns). It implements sink.Records,
// sink.Committer and sink.Noter. With ExactlyOnce, WriteRecord stages
// records in memory, Prepare returns them (stored in the checkpoint) and
// Commit(id) inserts them with checkpoint_id id and moves the commit
// marker in one transaction; Recover of an older checkpoint deletes the
// records of the later ones first. Not safe for concurrent use.
//
// Its shape is sink/postgres's Records' (the same sink interfaces); they
// differ in their database, its transaction and marker; the checkpoint
// bookkeeping both keep is sink.PreparedRecords.
type Records struct {
	db      *sql.DB
	path    string
	table   string
	cols    []column
	o       RecordsOptions
	created bool
	owned   bool
	replace bool
	notes   []string
	insert  string

	pend   sink.PreparedRecords // staged, prepared and not committed
	closed bool
}

var (
	_ sink.Records   = (*Records)(nil)
	_ sink.Committer = (*Records)(nil)
	_ sink.Noter     = (*Records)(nil)
	_ sink.Aborter   = (*Records)(nil)
)

// NewRecords opens or creates the database at path and makes sure table
// can take side-output records, by the rules of NewWithOptions (a missing
// table is created unless o.Resume; a table tidemark created must have
// exactly its layout or is replaced with o.ReplaceLayout and o.Fresh;
// another table must have the columns with types that keep the values,
// other columns nullable or with a default).
func NewRecords(ctx context.Context, path, table string, o RecordsOptions) (*Records, error) {
	r, err := openRecords(ctx, path, table, o)
	if err != nil {
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	return r, nil
}

func openRecords(ctx context.Context, path, table string, o RecordsOptions) (*Records, error) {
	if table == "" {
		return nil, errors.New("empty table name")
	}
	if o.Pipeline == "" {
		return nil, errors.New("RecordsOptions.Pipeline is empty: the records and the commit marker need a pipeline name")
	}
	if o.Sink == "" {
		o.Sink = table
	}
	if o.Resume {
		if err := mustExist(path, table); err != nil {
			return nil, err
		}
	}
	db, err := openDB(path)
	if err != nil {
		return nil, err
	}
	r := &Records{db: db, path: path, table: table, cols: recordColumns(), o: o}
	err = r.init(ctx)
	if err == nil {
		err = useWAL(ctx, db)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	r.replace = o.Fresh && r.owned && !r.created
	r.insert = "INSERT INTO " + quote(table) + " (" + columnList(r.cols) + ") VALUES (" + strings.TrimSuffix(strings.Repeat("?,", len(r.cols)), ",") + ")"
	return r, nil
}

// init follows the table rules sink/postgres's init follows; the catalogs
// it reads and the transaction it runs in are SQLite's.
func (r *Records) init(ctx context.Context) (err error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	for _, q := range []string{createCommitsSQL, createTablesSQL} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create the bookkeeping tables: %w", err)
		}
	}
	ti, err := inspect(ctx, tx, r.table)
	if err != nil {
		return err
	}
	pk := []string{"pipeline", "seq"}
	create := createTableWithKey(r.table, r.cols, pk)
	mine := false
	if ti != nil {
		if mine, err = isOwned(ctx, tx, r.table, ti); err != nil {
			return err
		}
	}
	switch {
	case ti == nil:
		if r.o.Resume {
			return &MissingTableError{Path: r.path, Table: r.table, Marker: readMarker(ctx, tx, r.o.Pipeline, r.o.Sink)}
		}
		if err := createOwned(ctx, tx, r.table, create, r.o.Pipeline, false); err != nil {
			return err
		}
		r.created, r.owned = true, true
	case mine:
		r.owned = true
		serr := checkExact(ti, r.table, r.cols, pk)
		if serr == nil {
			break
		}
		if !r.o.ReplaceLayout {
			return serr
		}
		if !r.o.Fresh {
			return fmt.Errorf("%w; the run resumes a checkpoint, and replace: true replaces a table only at a fresh start", serr)
		}
		views, err := dependentViews(ctx, tx, r.table)
		if err != nil {
			return err
		}
		if len(views) > 0 {
			return &ViewDependsError{Table: r.table, Views: views}
		}
		n, err := countRows(ctx, tx, r.table, "")
		if err != nil {
			return err
		}
		if err := createOwned(ctx, tx, r.table, create, r.o.Pipeline, true); err != nil {
			return err
		}
		var se *SchemaError
		errors.As(serr, &se)
		r.notes = append(r.notes, fmt.Sprintf("replaced table %s, which tidemark created, of another layout (%s): %s records dropped", r.table, se.differences(), countText(n)))
		r.created = true
	default:
		if err := bind(ti, r.table, r.cols, nil); err != nil {
			return err
		}
		if r.o.Fresh {
			n, err := countRows(ctx, tx, r.table, `"pipeline" = ?`, r.o.Pipeline)
			if err != nil {
				return err
			}
			if n > 0 {
				r.notes = append(r.notes, fmt.Sprintf("kept the %s records of pipeline %s already in table %s, which tidemark did not create: the new ones follow them",
					countText(n), r.o.Pipeline, r.table))
			}
		}
	}
	return tx.Commit()
}

// createTableWithKey is the CREATE TABLE of cols with primary key pk.
func createTableWithKey(table string, cols []column, pk []string) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS " + quote(table) + " (")
	for _, c := range cols {
		b.WriteString(quote(c.name) + " " + c.typ)
		if !c.null {
			b.WriteString(" NOT NULL")
		}
		b.WriteString(", ")
	}
	b.WriteString("PRIMARY KEY (" + strings.Join(quoteAll(pk), ", ") + "))")
	return b.String()
}

// Notes implements sink.Noter.
func (r *Records) Notes() []string { return r.notes }

// WriteRecord stages one record (a JSON object; copied). It returns an
// error naming the record when it is not a JSON object of the side-output
// formats, or a NULL would go into a column the table declares NOT NULL;
// after Close, an error wrapping sql.ErrConnDone.
func (r *Records) WriteRecord(ctx context.Context, obj []byte) error {
	if r.closed {
		return fmt.Errorf("sqlite %s: %w", r.path, sql.ErrConnDone)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := r.args(obj, 1, nil); err != nil {
		return fmt.Errorf("sqlite %s: table %q: %w", r.path, r.table, err)
	}
	r.pend.Stage(obj)
	return nil
}

// args returns record obj's column values, numbered seq, published by
// checkpoint ck (nil: NULL).
func (r *Records) args(obj []byte, seq int64, ck *int64) ([]any, error) {
	f, err := sink.ParseRecord(obj)
	if err != nil {
		return nil, err
	}
	text := func(p *string) any {
		if p == nil {
			return nil
		}
		return *p
	}
	timeText := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	var ckArg, late any
	if ck != nil {
		ckArg = *ck
	}
	if f.LatenessMs != nil {
		late = *f.LatenessMs
	}
	a := []any{r.o.Pipeline, seq, ckArg, f.Kind, text(f.Stage), text(f.EventID),
		timeText(f.EventTime), timeText(f.ObservedAt), timeText(f.CurrentWatermark), late, text(f.Reason), text(f.Source), string(obj)}
	for i, v := range a {
		if v == nil && r.cols[i].notNull && r.cols[i].name != "checkpoint_id" {
			return nil, fmt.Errorf("side-output record %.80q: column %s is NOT NULL in the table, and the record has no %s", obj, r.cols[i].name, r.cols[i].name)
		}
	}
	return a, nil
}

// insertAll inserts recs, numbered after the pipeline's highest seq, with
// checkpoint_id ck, inside tx.
func (r *Records) insertAll(ctx context.Context, tx *sql.Tx, recs [][]byte, ck *int64) error {
	if len(recs) == 0 {
		return nil
	}
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max("seq"), 0) FROM `+quote(r.table)+` WHERE "pipeline" = ?`, r.o.Pipeline).Scan(&last); err != nil {
		return err
	}
	stmt, err := tx.PrepareContext(ctx, r.insert)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i, obj := range recs {
		a, err := r.args(obj, last+1+int64(i), ck)
		if err != nil {
			return err
		}
		if _, err := stmt.ExecContext(ctx, a...); err != nil {
			return err
		}
	}
	return nil
}

// deleteAfter deletes the pipeline's records of checkpoints after id (all
// of them for id < 0), returning how many.
func (r *Records) deleteAfter(ctx context.Context, tx *sql.Tx, id int64) (int64, error) {
	q := `DELETE FROM ` + quote(r.table) + ` WHERE "pipeline" = ?`
	args := []any{r.o.Pipeline}
	if id >= 0 {
		q += ` AND "checkpoint_id" > ?`
		args = append(args, id)
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// inTx runs fn in a transaction and commits it.
func (r *Records) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Flush, without ExactlyOnce, inserts the staged records in one
// transaction (checkpoint_id NULL), after deleting the pipeline's records
// on the first Flush of a Fresh sink whose table tidemark created. With
// ExactlyOnce it does nothing.
func (r *Records) Flush(ctx context.Context) error {
	// As sink/postgres's Flush, in this database's transaction (*sql.Tx).
	if r.closed {
		return fmt.Errorf("sqlite %s: %w", r.path, sql.ErrConnDone)
	}
	if r.o.ExactlyOnce || (len(r.pend.Staged) == 0 && !r.replace) {
		return nil
	}
	emptied := int64(-1)
	err := r.inTx(ctx, func(tx *sql.Tx) error {
		if r.replace {
			n, err := r.deleteAfter(ctx, tx, -1)
			if err != nil {
				return err
			}
			emptied = n
		}
		return r.insertAll(ctx, tx, r.pend.Staged, nil)
	})
	if err != nil {
		return fmt.Errorf("sqlite %s: table %q: %w", r.path, r.table, err)
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

func (r *Records) committerUsable() error {
	if r.closed {
		return fmt.Errorf("sqlite %s: %w", r.path, sql.ErrConnDone)
	}
	if !r.o.ExactlyOnce {
		return fmt.Errorf("sqlite %s: not opened for exactly-once delivery", r.path)
	}
	return nil
}

// Prepare implements sink.Committer: the staged records join those
// prepared and not committed; their encoding is returned (nil: none).
func (r *Records) Prepare(ctx context.Context, id int64) ([]byte, error) {
	if err := r.committerUsable(); err != nil {
		return nil, err
	}
	return r.pend.Prepare(id), nil
}

// Commit implements sink.Committer: in one transaction, unless the marker
// records id or later, it inserts the records prepared for id and sets the
// marker to id.
func (r *Records) Commit(ctx context.Context, id int64, prepared []byte) error {
	// As sink/postgres's Commit; what differs is r.commit's transaction.
	if err := r.committerUsable(); err != nil {
		return err
	}
	recs, err := r.pend.ForCommit(id, prepared, "sqlite prepared records")
	if err != nil {
		return fmt.Errorf("sqlite %s: checkpoint %d: %w", r.path, id, err)
	}
	if err := r.commit(ctx, id, recs, false); err != nil {
		return fmt.Errorf("sqlite %s: table %q: checkpoint %d: %w", r.path, r.table, id, err)
	}
	r.pend.Committed(id)
	return nil
}

func (r *Records) commit(ctx context.Context, id int64, recs [][]byte, rewind bool) error {
	return r.inTx(ctx, func(tx *sql.Tx) error {
		var cur int64
		err := tx.QueryRowContext(ctx, `SELECT checkpoint_id FROM tidemark_commits WHERE pipeline = ? AND sink = ?`, r.o.Pipeline, r.o.Sink).Scan(&cur)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if cur > id && rewind {
			if _, err := r.deleteAfter(ctx, tx, id); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `UPDATE tidemark_commits SET checkpoint_id = ? WHERE pipeline = ? AND sink = ?`, id, r.o.Pipeline, r.o.Sink)
			return err
		}
		if cur >= id {
			return nil
		}
		if err := r.insertAll(ctx, tx, recs, &id); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO tidemark_commits (pipeline, sink, checkpoint_id) VALUES (?, ?, ?)
ON CONFLICT (pipeline, sink) DO UPDATE SET checkpoint_id = excluded.checkpoint_id`, r.o.Pipeline, r.o.Sink, id)
		return err
	})
}

// Recover implements sink.Committer (see Records; with id 0 it deletes the
// marker and, for a Fresh sink whose table tidemark created, the
// pipeline's records; a positive id into a table the sink had to create
// is a *MissingTableError).
func (r *Records) Recover(ctx context.Context, id int64, prepared []byte) error {
	if err := r.committerUsable(); err != nil {
		return err
	}
	r.pend.Reset()
	switch {
	case id < 0:
		return fmt.Errorf("sqlite %s: recover: negative checkpoint id %d", r.path, id)
	case id == 0:
		// As sink/postgres's: marker and emptying in one SQLite transaction.
		emptied := int64(-1)
		err := r.inTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `DELETE FROM tidemark_commits WHERE pipeline = ? AND sink = ?`, r.o.Pipeline, r.o.Sink); err != nil {
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
			return fmt.Errorf("sqlite %s: table %q: %w", r.path, r.table, err)
		}
		r.noteEmptied(emptied)
		r.replace = false
		return nil
	case r.created:
		e := &MissingTableError{Path: r.path, Table: r.table, Checkpoint: id, Marker: readMarker(ctx, r.db, r.o.Pipeline, r.o.Sink)}
		if err := r.inTx(ctx, func(tx *sql.Tx) error { return forgetOwned(ctx, tx, r.table) }); err != nil {
			return fmt.Errorf("sqlite %s: %w (and dropping the table created empty failed: %v)", r.path, e, err)
		}
		r.created = false
		return fmt.Errorf("sqlite %s: %w", r.path, e)
	}
	recs, err := sink.DecodePrepared(prepared, "sqlite prepared records")
	if err != nil {
		return fmt.Errorf("sqlite %s: checkpoint %d: %w", r.path, id, err)
	}
	if err := r.commit(ctx, id, recs, true); err != nil {
		return fmt.Errorf("sqlite %s: table %q: checkpoint %d: %w", r.path, r.table, id, err)
	}
	r.replace = false
	return nil
}

// Close flushes (without ExactlyOnce, even when ctx is done) and closes
// the database. Closing twice is not an error.
// Abort implements sink.Aborter: it closes the database without
// flushing (see Results.Abort). Abort after Close, or twice, does nothing.
func (r *Records) Abort(context.Context) error {
	if r.closed {
		return nil
	}
	r.closed = true
	if err := r.db.Close(); err != nil {
		return fmt.Errorf("sqlite %s: %w", r.path, err)
	}
	return nil
}

func (r *Records) Close(ctx context.Context) error {
	if r.closed {
		return nil
	}
	err := r.Flush(context.WithoutCancel(ctx))
	r.closed = true
	if cerr := r.db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("sqlite %s: %w", r.path, cerr)
	}
	return err
}
