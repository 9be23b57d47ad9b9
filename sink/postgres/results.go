package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/sink"
)

// ErrAtLeastOnce is returned (wrapped) by the sink.Committer methods of a
// Results opened with Options.AtLeastOnce, which does not take part in
// checkpoints.
var ErrAtLeastOnce = errors.New("sink was opened with AtLeastOnce: it publishes on Flush and takes no part in checkpoints")

// Options adjusts a Results.
type Options struct {
	// Pipeline and Sink name the sink's commit marker: the row (Pipeline,
	// Sink) of tidemark_commits records the last checkpoint committed to
	// the table. Two sinks writing to one database must differ in one of
	// them. Default Pipeline: the Desc's Stage; default Sink: the table
	// name as given. Without AtLeastOnce, Pipeline must not end up empty.
	Pipeline string
	Sink     string
	// Replace deletes the table's existing rows, so that a run recomputing
	// the result from the start replaces the previous run's rows instead
	// of being held back by their versions: with AtLeastOnce in the
	// transaction of the first Flush, otherwise in Recover(0, nil) (a
	// fresh start), together with forgetting the commit marker. Readers
	// see the old rows until that commit. Default false: rows are upserted
	// over whatever the table holds.
	Replace bool
	// AtLeastOnce makes Flush apply the rows written since the previous
	// Flush in one transaction, like the SQLite sink, and the
	// sink.Committer methods return ErrAtLeastOnce. Default false: the
	// sink takes part in checkpoints (two-phase commit) and only Commit
	// and Recover write rows; Flush does nothing.
	AtLeastOnce bool
}

// Results keeps a stage's result rows in an upsert table in PostgreSQL,
// one row per window and key (see the package documentation). It
// implements sink.Results and sink.Committer. A Results holds one
// connection and is not safe for concurrent use.
type Results struct {
	dsn   string
	table tableName
	cols  []column
	nKey  int
	o     Options
	mark  marker
	st    statements

	conn  *pgx.Conn
	stage *batch // rows written since the last Prepare (or Flush)
	prep  *batch // rows prepared and not yet committed; nil when none
	free  *batch // an empty batch to stage into after the next Prepare, or nil
	// prepID is the checkpoint prep was prepared for.
	prepID  int64
	spare   *batch // scratch for decoded prepared rows
	method  int    // applyCopy or applyValues
	perStmt int    // rows per multi-row statement (applyValues)
	replace bool   // Replace still to do
	closed  bool
}

var (
	_ sink.Results   = (*Results)(nil)
	_ sink.Committer = (*Results)(nil)
)

// New connects to the PostgreSQL database at dsn (a URL such as
// "postgres://user@host:5432/db?sslmode=disable" or key=value pairs, as
// pgx accepts), creates the result table for d and the tidemark_commits
// table if they are absent, and returns the sink.
//
// table is a table name, optionally qualified by a schema ("analytics.revenue");
// the commit marker table is created in the same schema. Names are quoted:
// they are case-sensitive and may hold any character but NUL.
//
// It returns a *SchemaError when the table exists with other columns, and
// an error when d.Timezone is not a known IANA zone ("" is UTC), when two
// columns share a name, when a name is empty or longer than 63 bytes,
// when the server is older than PostgreSQL 15, or when the database
// cannot be reached. Errors name the table, never the DSN.
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
	if _, err := time.LoadLocation(d.Timezone); err != nil {
		return nil, fmt.Errorf("timezone: %w", err)
	}
	cols, err := resultColumns(&d)
	if err != nil {
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
		dsn: dsn, table: t, cols: cols, nKey: len(d.Key), o: o,
		mark:    marker{table: t.sibling(CommitsTable), pipeline: o.Pipeline, sink: o.Sink},
		st:      newStatements(t, cols, len(d.Key)),
		stage:   newBatch(cols, len(d.Key)),
		spare:   newBatch(cols, len(d.Key)),
		method:  defaultMethod,
		perStmt: min(defaultPerStatement, maxParams/len(cols)),
		replace: o.Replace,
	}
	if err := r.ensureConn(ctx); err != nil {
		return nil, err
	}
	if err := r.init(ctx); err != nil {
		r.conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return r, nil
}

// init creates or checks the tables.
func (r *Results) init(ctx context.Context) error {
	if _, err := r.conn.Exec(ctx, createTableSQL(r.table, r.cols, uniqueKey(resultKey(r.cols, r.nKey)))); err != nil {
		return fmt.Errorf("create table: %w", err)
	}
	if err := checkTable(ctx, r.conn, r.table, r.cols, resultKey(r.cols, r.nKey)); err != nil {
		var se *SchemaError
		if !r.replace || !errors.As(err, &se) {
			return err
		}
		// A run that replaces the table's rows replaces a table of another
		// layout too (an older tidemark, changed aggregates).
		if _, err := r.conn.Exec(ctx, "DROP TABLE "+r.table.sql()); err != nil {
			return fmt.Errorf("drop table: %w", err)
		}
		if _, err := r.conn.Exec(ctx, createTableSQL(r.table, r.cols, uniqueKey(resultKey(r.cols, r.nKey)))); err != nil {
			return fmt.Errorf("create table: %w", err)
		}
	}
	if _, err := r.conn.Exec(ctx, createCommitsSQL(r.mark.table)); err != nil {
		return fmt.Errorf("create table %s: %w", r.mark.table, err)
	}
	return nil
}

// ensureConn (re)connects when the sink has no open connection, and
// creates the connection's staging table.
func (r *Results) ensureConn(ctx context.Context) error {
	if r.conn != nil && !r.conn.IsClosed() {
		return nil
	}
	conn, err := connect(ctx, r.dsn)
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, r.st.createStage); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return fmt.Errorf("create staging table: %w", err)
	}
	r.conn = conn
	return nil
}

// Write stages rows for the next Prepare (or, with AtLeastOnce, Flush);
// update_before rows are skipped. Nothing reaches the database. Rows of
// one window and key are collapsed as they arrive when the later row
// makes the earlier ones irrelevant (see the package documentation), so
// staging holds about one row per window and key.
//
// It stages nothing and returns an error when a row does not fit the
// table (wrong number of columns, a value of the wrong kind, a version
// above 2⁶³−1), after Close (wrapping ErrClosed), or when ctx is done.
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
		if err := r.stage.check(&rows[i]); err != nil {
			return fmt.Errorf("postgres %s: %w", r.table, err)
		}
	}
	for i := range rows {
		if rows[i].Op != changelog.UpdateBefore {
			r.stage.add(&rows[i])
		}
	}
	return nil
}

// Flush, with AtLeastOnce, applies the staged rows in one transaction and
// commits it (deleting the table's rows first on the first Flush of a
// sink opened with Replace). On error the transaction is rolled back and
// the rows stay staged, so a later Flush retries them (the version guard
// makes that safe).
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
	err := r.inTx(ctx, func(tx pgx.Tx) error {
		if r.replace {
			if _, err := tx.Exec(ctx, "DELETE FROM "+r.table.sql()); err != nil {
				return err
			}
		}
		return r.apply(ctx, tx, r.stage)
	})
	if err != nil {
		return fmt.Errorf("postgres %s: %w", r.table, err)
	}
	r.stage.reset()
	r.replace = false
	return nil
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
// marker, and with Options.Replace the table's rows, in one transaction.
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
		err := r.inTx(ctx, func(tx pgx.Tx) error {
			if err := r.mark.forget(ctx, tx); err != nil {
				return err
			}
			if r.replace {
				_, err := tx.Exec(ctx, "DELETE FROM "+r.table.sql())
				return err
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("postgres %s: recover: %w", r.table, err)
		}
		r.replace = false
		return nil
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
// fails. A broken connection is dropped, and the next call reconnects.
func (r *Results) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	if err := r.ensureConn(ctx); err != nil {
		return err
	}
	return runTx(ctx, r.conn, fn)
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
	if r.conn != nil {
		if cerr := r.conn.Close(context.WithoutCancel(ctx)); err == nil && cerr != nil {
			err = fmt.Errorf("postgres %s: %w", r.table, cerr)
		}
	}
	return err
}
