package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/results"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
)

// ErrAtLeastOnce is returned (wrapped) by the sink.Committer methods of a
// Results opened with Options.AtLeastOnce, which does not take part in
// checkpoints.
var ErrAtLeastOnce = errors.New("sink was opened with AtLeastOnce: it publishes on Flush and takes no part in checkpoints")

// Options adjusts a Results. Fresh … Serve are named as sink/sqlite's
// Options are and kept apart: each is its sink's public API and states
// its own database's behaviour and defaults.
type Options struct {
	// Pipeline and Sink name the sink's commit marker: the row (Pipeline,
	// Sink) of tidemark_commits records the last checkpoint committed to
	// the table. Two sinks writing to one database must differ in one of
	// them. Default Pipeline: the Desc's Stage; default Sink: the table
	// name as given. Without AtLeastOnce, Pipeline must not end up empty.
	// Pipeline is also recorded in tidemark_tables for the tables the
	// sink creates.
	Pipeline string
	Sink     string
	// Fresh says the run recomputes its results from the start (it
	// resumes no checkpoint). The rows of a table tidemark created are
	// then deleted, so that the previous run's rows do not hold the new
	// ones back by their versions: with AtLeastOnce in the transaction of
	// the first Flush, otherwise in Recover(0, nil), together with
	// forgetting the commit marker; Notes says how many rows were removed.
	// Readers see the old rows until that commit. A table tidemark did not
	// create is never emptied: rows are upserted over what it holds.
	// Default false.
	Fresh bool
	// ReplaceLayout (the sink key replace) lets a Fresh run drop and
	// create anew a table tidemark created whose layout differs from the
	// one the sink writes (other keys or aggregates), when the sink opens;
	// Notes says so. Default false: such a table is refused with a
	// *SchemaError. It never drops a table tidemark did not create, a
	// table a view depends on (*ViewDependsError), nor any table when not
	// Fresh.
	ReplaceLayout bool
	// Resume says the run resumes from a checkpoint, so the table must
	// exist: a missing table is a *MissingTableError, not a new empty
	// table. (Recover with a checkpoint id refuses a table the sink had to
	// create in any case.) Default false.
	Resume bool
	// Lineage names the Desc's lineage value column (engine.LineageColumn,
	// "lineage"): a table the sink creates has it, an existing table gets
	// its value only when it has a column of that name, and NoLineage
	// leaves it out everywhere. "" (default): every value column is an
	// ordinary column.
	Lineage   string
	NoLineage bool
	// Serve: when the sink creates the table and it is a version table of
	// the versioning convention (docs/reprocessing.md;
	// analytics.revenue__live is version live of analytics.revenue), the
	// serving view is made to read it (results.PromoteIfAbsent: promotion
	// 1) unless something of that name exists; Notes says so. Default
	// false.
	Serve bool
	// AtLeastOnce makes Flush apply the rows written since the previous
	// Flush in one transaction, like the SQLite sink, and the
	// sink.Committer methods return ErrAtLeastOnce. Default false: the
	// sink takes part in checkpoints (two-phase commit) and only Commit
	// and Recover write rows; Flush does nothing.
	AtLeastOnce bool
	// Retry bounds the retries of a transaction that failed for a
	// transient reason (see Transient). Default: DefaultRetries retries.
	Retry Retry
	// Group names the group of instances the run belongs to (a Kafka
	// consumer group sharing the table on purpose): its sinks take the
	// table's writer lock in shared mode, and a run outside the group is
	// refused (see WriterLockError). Default "": the run writes the table
	// alone.
	Group string
}

// Results keeps a stage's result rows in an upsert table in PostgreSQL,
// one row per window and key (see the package documentation). It
// implements sink.Results, sink.Committer and sink.Noter. A Results holds
// one connection and is not safe for concurrent use.
type Results struct {
	table tableName
	cols  []column
	nKey  int
	o     Options
	mark  marker
	st    statements
	x     txRunner

	loc      *time.Location
	keyNames []string
	linIdx   int // the Desc's value column left out (lineage), -1 for none
	linRow   changelog.Row
	// The table: created by this sink (it did not exist when the sink
	// opened), tidemark's (recorded in tidemark_tables), and whether its
	// unique key treats NULL keys as equal.
	created, owned, nullsEqual bool
	// made: the table did not exist when the sink opened (Abort drops
	// it while it is empty).
	made  bool
	notes []string

	stage *batch // rows written since the last Prepare (or Flush)
	prep  *batch // rows prepared and not yet committed; nil when none
	free  *batch // an empty batch to stage into after the next Prepare, or nil
	// prepID is the checkpoint prep was prepared for.
	prepID  int64
	spare   *batch // scratch for decoded prepared rows
	method  int    // applyCopy or applyValues
	perStmt int    // rows per multi-row statement (applyValues)
	replace bool   // the emptying of a Fresh run still to do
	closed  bool
	copyBuf []byte // the staging COPY's data, reused
	copySQL string
}

var (
	_ sink.Results   = (*Results)(nil)
	_ sink.Committer = (*Results)(nil)
	_ sink.Noter     = (*Results)(nil)
	_ sink.Aborter   = (*Results)(nil)
)

// New connects to the PostgreSQL database at dsn (a URL such as
// "postgres://user@host:5432/db?sslmode=disable" or key=value pairs, as
// pgx accepts), makes sure the result table for d can take the rows, and
// returns the sink. It creates the tidemark_commits and tidemark_tables
// tables beside the result table when they are absent.
//
//   - A table that does not exist is created (see the package
//     documentation) and recorded in tidemark_tables — unless
//     Options.Resume: then it is a *MissingTableError.
//   - A table tidemark created must have exactly the layout the sink
//     creates; otherwise it is a *SchemaError (Owned), or, with
//     Options.ReplaceLayout and Options.Fresh, it is dropped and created
//     anew (a *ViewDependsError when a view selects from it).
//   - Any other table is used as it is when it has the columns the sink
//     writes, with compatible types (numeric(p,s) and integer columns,
//     varchar(n), NOT NULL columns …; the rows must then fit them, which
//     Write checks), other columns nullable or with a default, and a
//     primary key or unique constraint on window_start and the key
//     columns; otherwise it is a *SchemaError naming every problem. It is
//     never dropped or emptied.
//
// table is a table name, optionally qualified by a schema ("analytics.revenue");
// the bookkeeping tables are created in the same schema. Names are quoted:
// they are case-sensitive and may hold any character but NUL.
//
// It also returns an error when d.Timezone is not a known IANA zone ("" is
// UTC), when two columns share a name, when a name is empty or longer than
// 63 bytes, when the server is older than PostgreSQL 15, or when the
// database cannot be reached (after Options.Retry). Errors name the
// table, never the DSN.
func New(ctx context.Context, dsn, table string, d changelog.Desc, o Options) (*Results, error) {
	r, err := open(ctx, dsn, table, d, o)
	if err != nil {
		return nil, fmt.Errorf("postgres %s: %w", table, err)
	}
	return r, nil
}

func open(ctx context.Context, dsn, table string, d changelog.Desc, o Options) (*Results, error) {
	t, err := parseTable(table)
	if err != nil {
		return nil, err
	}
	loc, err := time.LoadLocation(d.Timezone)
	if err != nil {
		return nil, fmt.Errorf("timezone: %w", err)
	}
	if _, err := resultColumns(&d); err != nil {
		return nil, err
	}
	if o.Pipeline == "" {
		o.Pipeline = d.Stage
	}
	if o.Sink == "" {
		o.Sink = t.String()
	}
	if o.Pipeline == "" && !o.AtLeastOnce {
		return nil, errors.New("Options.Pipeline is empty and the Desc has no Stage: the commit marker needs a pipeline name")
	}
	r := &Results{
		table: t, nKey: len(d.Key), o: o, loc: loc, linIdx: -1,
		mark:   marker{table: t.sibling(CommitsTable), pipeline: o.Pipeline, sink: o.Sink},
		method: defaultMethod,
		x:      txRunner{dsn: dsn, retry: o.Retry, app: ApplicationName(o.Pipeline)},
	}
	r.x.lock = &writerLock{tables: []tableName{t}, markers: []marker{r.mark}, group: o.Group}
	for _, k := range d.Key {
		r.keyNames = append(r.keyNames, k.Name)
	}
	err = r.x.inTx(ctx, func(tx pgx.Tx) error { return r.init(ctx, tx, d) })
	if err != nil {
		r.x.close(ctx)
		return nil, err
	}
	r.st = newStatements(t, r.cols, r.nKey)
	r.stage, r.spare = newBatch(r.cols, r.nKey), newBatch(r.cols, r.nKey)
	r.perStmt = min(defaultPerStatement, maxParams/len(r.cols))
	r.replace = o.Fresh && r.owned && !r.created
	r.x.setup = func(ctx context.Context, conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, r.st.createStage); err != nil {
			return fmt.Errorf("create staging table: %w", err)
		}
		return nil
	}
	if err := r.x.setup(ctx, r.x.conn); err != nil {
		r.x.close(ctx)
		return nil, err
	}
	if o.Serve && r.created {
		if err := r.serve(ctx, dsn); err != nil {
			r.x.close(ctx)
			return nil, err
		}
	}
	return r, nil
}

// serve makes the serving view of the version table read it, when nothing
// has the view's name (Options.Serve), and notes it.
func (r *Results) serve(ctx context.Context, dsn string) error {
	view, version, ok := results.SplitVersion(r.table.String())
	if !ok {
		return nil
	}
	db, err := results.OpenPostgres(ctx, dsn)
	if err != nil {
		return fmt.Errorf("create the serving view %s: %w", view, err)
	}
	defer db.Close()
	p, err := db.PromoteIfAbsent(ctx, view, version)
	if err != nil {
		return fmt.Errorf("create the serving view %s: %w", view, err)
	}
	if p != nil {
		r.notes = append(r.notes, fmt.Sprintf("created the serving view %s, which reads %s (promotion %d): readers query %s, and tidemark promote switches it to another version", view, r.table, p.ID, view))
	}
	return nil
}

// init decides, in one transaction, the table the sink writes: it creates
// it, replaces it, or checks it, and sets the columns written (r.cols).
// It may run again (a retried transaction): it starts from scratch.
func (r *Results) init(ctx context.Context, tx pgx.Tx, d changelog.Desc) error {
	r.created, r.owned, r.nullsEqual, r.notes, r.linIdx, r.made = false, false, true, nil, -1, false
	if err := createBookkeeping(ctx, tx, r.table); err != nil {
		return err
	}
	ti, err := inspect(ctx, tx, r.table)
	if err != nil {
		return err
	}
	// The lineage column: left out with NoLineage, and from a table of
	// the user's without one.
	lin := -1
	for i, c := range d.Values {
		if r.o.Lineage != "" && c.Name == r.o.Lineage {
			lin = i
		}
	}
	mine := ti != nil
	if mine {
		if mine, err = owned(ctx, tx, r.table, ti.oid); err != nil {
			return err
		}
	}
	if lin >= 0 && (r.o.NoLineage || ti != nil && !mine && ti.col(r.o.Lineage) == nil) {
		r.linIdx = lin
		d.Values = append(append([]changelog.Column(nil), d.Values[:lin]...), d.Values[lin+1:]...)
	}
	cols, err := resultColumns(&d)
	if err != nil {
		return err
	}
	key := resultKey(cols, r.nKey)
	create := createTableSQL(r.table, cols, uniqueKey(key))
	switch {
	case ti == nil:
		if r.o.Resume {
			return &MissingTableError{Table: r.table.String(), Marker: readMarker(ctx, tx, r.table, r.mark.pipeline, r.mark.sink)}
		}
		if err := createOwned(ctx, tx, r.table, create, r.o.Pipeline, false); err != nil {
			return err
		}
		r.created, r.owned, r.made = true, true, true
	case mine:
		r.owned = true
		err := checkExact(ti, r.table, cols, key, true)
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
			return fmt.Errorf("look up the views on %s: %w", r.table, verr)
		}
		if len(views) > 0 {
			return &ViewDependsError{Table: r.table.String(), Views: views}
		}
		n, cerr := countRows(ctx, tx, r.table, "", math.MaxInt64-1)
		if cerr != nil {
			return fmt.Errorf("count the rows of %s: %w", r.table, cerr)
		}
		if err := createOwned(ctx, tx, r.table, create, r.o.Pipeline, true); err != nil {
			return err
		}
		var se *SchemaError
		errors.As(err, &se)
		r.notes = append(r.notes, fmt.Sprintf("replaced table %s, which tidemark created, of another layout (%s): %d rows dropped", r.table, se.differences(), n))
		r.created = true // a new, empty table
	}
	if r.created {
		if ti, err = inspect(ctx, tx, r.table); err != nil {
			return err
		}
	}
	r.nullsEqual, err = bind(ti, r.table, cols, key)
	if err != nil {
		return err
	}
	if r.o.Fresh && !r.owned {
		n, err := countRows(ctx, tx, r.table, "", keptLimit)
		if err != nil {
			return fmt.Errorf("count the rows of %s: %w", r.table, err)
		}
		if n > 0 {
			r.notes = append(r.notes, fmt.Sprintf("kept the %s rows already in table %s, which tidemark did not create: a row there is replaced only by a version at least as high as its own",
				countText(n, keptLimit), r.table))
		}
	}
	r.cols = cols
	return nil
}

// keptLimit bounds the count of the rows of a table the sink did not
// create that Notes reports.
const keptLimit = 1_000_000

// countText is n, or "more than limit".
func countText(n, limit int64) string {
	if n > limit {
		return fmt.Sprintf("more than %d", limit)
	}
	return strconv.FormatInt(n, 10)
}

// Notes implements sink.Noter: what the sink did to its table besides
// writing rows (a table replaced, a table emptied at a fresh start, the
// rows of a table it did not create kept).
func (r *Results) Notes() []string { return r.notes }

// Write stages rows for the next Prepare (or, with AtLeastOnce, Flush);
// update_before rows are skipped. Nothing reaches the database. Rows of
// one window and key are collapsed as they arrive when the later row
// makes the earlier ones irrelevant (see the package documentation), so
// staging holds about one row per window and key. The lineage value is
// left out when the table has no lineage column (Options.Lineage).
//
// It stages nothing and returns an error when a row does not fit the
// table: wrong number of columns, a value of the wrong kind, a version
// above 2⁶³−1, or — in a table of the user's — a value the column cannot
// hold as it is (NULL in a NOT NULL column, more decimal places or digits
// than numeric(p,s) keeps, an integer outside integer's range, a string
// longer than varchar(n), a NULL key where the unique constraint treats
// NULLs as distinct). The error names the row (window_start and key) and
// the column. It also fails after Close (wrapping ErrClosed) and when ctx
// is done.
func (r *Results) Write(ctx context.Context, rows []changelog.Row) error {
	if r.closed {
		return fmt.Errorf("postgres %s: %w", r.table, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for i := range rows {
		if rows[i].Op == changelog.UpdateBefore {
			continue
		}
		rw := r.written(&rows[i])
		if err := r.stage.check(rw); err != nil {
			return fmt.Errorf("postgres %s: %w", r.table, err)
		}
		if err := r.fits(rw); err != nil {
			return fmt.Errorf("postgres %s: row %s: %w", r.table, describeRow(rw, r.keyNames, r.loc), err)
		}
	}
	for i := range rows {
		if rows[i].Op != changelog.UpdateBefore {
			r.stage.add(r.written(&rows[i]))
		}
	}
	return nil
}

// written returns the row as the table stores it: without the lineage
// value when the table has no lineage column (in a reused row; valid until
// the next call).
func (r *Results) written(rw *changelog.Row) *changelog.Row {
	if r.linIdx < 0 || r.linIdx >= len(rw.Values) {
		return rw
	}
	vals := append(r.linRow.Values[:0], rw.Values[:r.linIdx]...)
	r.linRow = *rw
	r.linRow.Values = append(vals, rw.Values[r.linIdx+1:]...)
	return &r.linRow
}

// fits returns an error naming the column when a value of row cannot be
// stored in the table as it is (see Write).
func (r *Results) fits(rw *changelog.Row) error {
	cols := r.cols
	check := func(c *column, v row.Value) error {
		if why := c.to.fit(v, r.loc); why != "" {
			return fmt.Errorf("column %s (%s): %s", c.name, c.to.typ, why)
		}
		return nil
	}
	for i, v := range rw.Key {
		c := &cols[2+i]
		if err := check(c, v); err != nil {
			return err
		}
		if v.Kind == row.KindNull && !r.nullsEqual {
			return fmt.Errorf("key column %s is NULL, and the unique constraint of table %s treats NULLs as distinct: every update would insert another row (make it UNIQUE NULLS NOT DISTINCT, or keep NULL keys out with a filter)", c.name, r.table)
		}
	}
	for i, v := range rw.Values {
		if err := check(&cols[2+r.nKey+i], v); err != nil {
			return err
		}
	}
	n := len(cols)
	if err := check(&cols[n-4], row.Int(int64(min(rw.Version, math.MaxInt64)))); err != nil {
		return err
	}
	if rw.WatermarkAt == changelog.WatermarkNone {
		if err := check(&cols[n-2], row.Value{}); err != nil {
			return err
		}
	}
	return nil
}

// Flush, with AtLeastOnce, applies the staged rows in one transaction and
// commits it (deleting the table's rows first on the first Flush of a
// Fresh sink whose table tidemark created). A transaction that fails for
// a transient reason is retried (Options.Retry); on another error it is
// rolled back and the rows stay staged, so a later Flush retries them (the
// version guard makes that safe).
//
// Without AtLeastOnce, Flush does nothing: staged rows wait for Prepare
// and Commit, and no reader sees them before. It returns an error wrapping
// ErrClosed after Close.
func (r *Results) Flush(ctx context.Context) error {
	if r.closed {
		return fmt.Errorf("postgres %s: %w", r.table, ErrClosed)
	}
	if !r.o.AtLeastOnce || (len(r.stage.entries) == 0 && !r.replace) {
		return nil
	}
	var emptied int64 = -1
	err := r.inTx(ctx, func(tx pgx.Tx) error {
		if r.replace {
			tag, err := tx.Exec(ctx, "DELETE FROM "+r.table.sql())
			if err != nil {
				return err
			}
			emptied = tag.RowsAffected()
		}
		return r.apply(ctx, tx, r.stage)
	})
	if err != nil {
		return fmt.Errorf("postgres %s: %w", r.table, err)
	}
	r.stage.reset()
	r.noteEmptied(emptied)
	return nil
}

// noteEmptied records that a fresh start deleted n rows (n >= 0) of the
// table, and that it is done.
func (r *Results) noteEmptied(n int64) {
	if n < 0 {
		return
	}
	r.replace = false
	r.notes = append(r.notes, fmt.Sprintf("emptied table %s, which tidemark created, for this fresh start: %d rows of earlier runs removed", r.table, n))
}

// Prepare implements sink.Committer. It moves the staged rows to the
// prepared set (joining rows prepared earlier and not yet committed) and
// returns their encoding, which Commit or Recover applies; nil when there
// is nothing to apply. It writes nothing to the database: the returned
// bytes, stored in the checkpoint, are what makes the rows durable.
//
// The encoding (state codec, see batch.encode) keeps every value exactly:
// decimals with their scale, NULLs, times to the millisecond.
func (r *Results) Prepare(ctx context.Context, id int64) ([]byte, error) {
	if err := r.committerUsable(); err != nil {
		return nil, err
	}
	if r.prep == nil {
		r.prep, r.stage, r.free = r.stage, r.free, nil
		if r.stage == nil {
			r.stage = newBatch(r.cols, r.nKey)
		}
	} else {
		r.stage.appendTo(r.prep)
		r.stage.reset()
	}
	r.prepID = id
	if len(r.prep.entries) == 0 {
		return nil, nil
	}
	return r.prep.encode(nil), nil
}

// Commit implements sink.Committer: in one transaction it locks the
// commit marker, and unless the marker records id or a later checkpoint,
// applies the prepared rows and sets the marker to id. prepared is what
// Prepare(id) returned; the rows kept since Prepare are used when they
// are the ones prepared for id. It returns an error wrapping ErrAtLeastOnce
// or ErrClosed when the sink cannot commit, an error when prepared is
// corrupt, and the database's error after rolling back (the prepared rows
// are kept for a retry or for Recover).
func (r *Results) Commit(ctx context.Context, id int64, prepared []byte) error {
	if err := r.committerUsable(); err != nil {
		return err
	}
	b := r.prep
	if b == nil || r.prepID != id {
		r.spare.reset()
		if len(prepared) > 0 {
			if err := r.spare.decode(prepared); err != nil {
				return fmt.Errorf("postgres %s: commit %d: %w", r.table, id, err)
			}
		}
		b = r.spare
	}
	if err := r.commit(ctx, id, b, false); err != nil {
		return fmt.Errorf("postgres %s: commit %d: %w", r.table, id, err)
	}
	if r.prep != nil && r.prepID <= id {
		r.releasePrep()
	}
	r.spare.reset()
	return nil
}

// Recover implements sink.Committer. It discards staged and prepared rows.
// With id 0 (a fresh start; prepared must be nil) it deletes the commit
// marker, and with Options.Fresh the rows of a table tidemark created, in
// one transaction. With a positive id it returns a *MissingTableError when
// the sink had to create the table when it opened: the checkpoint's rows
// were committed to a table that has since been dropped (the table just
// created is dropped again).
// Otherwise, in one transaction: when the marker is older than id it
// applies prepared and sets the marker to id, as Commit does (the crash
// came between the checkpoint and its Commit); when it records id, it does
// nothing; when it records a later checkpoint (that checkpoint proved
// unusable and the run falls back to id), it sets the marker back to id,
// so that the commits of the replayed checkpoints are not skipped. The
// rows of those later commits stay: the replay writes the same rows with
// the same versions again. It returns an error
// wrapping ErrAtLeastOnce or ErrClosed when the sink cannot recover, an
// error when prepared is corrupt, and the database's error.
func (r *Results) Recover(ctx context.Context, id int64, prepared []byte) error {
	if err := r.committerUsable(); err != nil {
		return err
	}
	r.stage.reset()
	r.releasePrep()
	switch {
	case id < 0:
		return fmt.Errorf("postgres %s: recover: negative checkpoint id %d", r.table, id)
	case id == 0 && len(prepared) > 0:
		return fmt.Errorf("postgres %s: recover: prepared output without a checkpoint id", r.table)
	case id == 0:
		var emptied int64 = -1
		err := r.inTx(ctx, func(tx pgx.Tx) error {
			if err := r.mark.forget(ctx, tx); err != nil {
				return err
			}
			if r.replace {
				tag, err := tx.Exec(ctx, "DELETE FROM "+r.table.sql())
				emptied = tag.RowsAffected()
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
		return r.missing(ctx, id)
	}
	r.spare.reset()
	if len(prepared) > 0 {
		if err := r.spare.decode(prepared); err != nil {
			return fmt.Errorf("postgres %s: recover %d: %w", r.table, id, err)
		}
	}
	err := r.commit(ctx, id, r.spare, true)
	r.spare.reset()
	if err != nil {
		return fmt.Errorf("postgres %s: recover %d: %w", r.table, id, err)
	}
	r.replace = false // resuming: the rows of the checkpoint's run stay
	return nil
}

// releasePrep drops the prepared rows, keeping their memory for the next
// Prepare.
func (r *Results) releasePrep() {
	if r.prep != nil {
		r.prep.reset()
		r.free, r.prep = r.prep, nil
	}
}

// committerUsable returns an error when the Committer methods cannot run.
func (r *Results) committerUsable() error {
	if r.closed {
		return fmt.Errorf("postgres %s: %w", r.table, ErrClosed)
	}
	if r.o.AtLeastOnce {
		return fmt.Errorf("postgres %s: %w", r.table, ErrAtLeastOnce)
	}
	return nil
}

// commit applies b and moves the marker to id in one transaction, unless
// the marker already records id or later. With rewind, a marker past id is
// set back to id (without applying b, which a commit of id or later has
// applied already).
func (r *Results) commit(ctx context.Context, id int64, b *batch, rewind bool) error {
	if id <= 0 {
		return fmt.Errorf("checkpoint id %d is not positive", id)
	}
	return r.inTx(ctx, func(tx pgx.Tx) error {
		cur, err := r.mark.read(ctx, tx)
		if err != nil {
			return err
		}
		if cur > id && rewind {
			return r.mark.write(ctx, tx, id, true)
		}
		if cur >= id {
			return nil
		}
		if err := r.apply(ctx, tx, b); err != nil {
			return err
		}
		return r.mark.write(ctx, tx, id, false)
	})
}

// CommittedID returns the checkpoint id the sink's commit marker records,
// 0 when there is none. It returns an error after Close (wrapping
// ErrClosed) and the database's error.
func (r *Results) CommittedID(ctx context.Context) (int64, error) {
	if r.closed {
		return 0, fmt.Errorf("postgres %s: %w", r.table, ErrClosed)
	}
	var id int64
	err := r.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		id, err = r.mark.read(ctx, tx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres %s: %w", r.table, err)
	}
	return id, nil
}

// inTx runs fn in a transaction and commits it, or rolls it back when fn
// fails; a transaction that failed for a transient reason is retried on a
// new connection (Options.Retry).
func (r *Results) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return r.x.inTx(ctx, fn)
}

// missing returns the *MissingTableError of a restore of checkpoint id into
// the table the sink created when it opened, after dropping that new,
// empty table and its record, so that the next attempt finds the same.
func (r *Results) missing(ctx context.Context, id int64) error {
	e := &MissingTableError{Table: r.table.String(), Checkpoint: id}
	err := r.inTx(ctx, func(tx pgx.Tx) error {
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

// runTx runs fn in a transaction on conn and commits it, or rolls it back
// when fn fails.
func runTx(ctx context.Context, conn *pgx.Conn, fn func(pgx.Tx) error) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	return tx.Commit(ctx)
}

// Abort implements sink.Aborter: it releases the connection without
// flushing, so that a run whose start is refused after the sink opened
// neither writes staged rows nor empties the table of a run from the
// start (Options.Fresh). Abort after Close, or twice, does nothing.
func (r *Results) Abort(ctx context.Context) error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.stage.reset()
	r.releasePrep()
	return abortConn(ctx, &r.x, r.table, r.made)
}

// Close releases the connection. With AtLeastOnce it flushes first (even
// when ctx is done, so staged rows are not lost to a cancelled run);
// otherwise rows staged or prepared and not committed are discarded: they
// belong to a checkpoint that did not complete, and a restore emits them
// again. Closing twice is not an error.
func (r *Results) Close(ctx context.Context) error {
	if r.closed {
		return nil
	}
	var err error
	if r.o.AtLeastOnce {
		err = r.Flush(context.WithoutCancel(ctx))
	}
	r.closed = true
	r.stage.reset()
	r.releasePrep()
	return closeConn(ctx, &r.x, r.table, err)
}
