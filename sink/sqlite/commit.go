package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/state"
)

var _ sink.Committer = (*Results)(nil)

// createCommitsSQL creates the commit-marker table: one row per (pipeline,
// sink) holding the last checkpoint whose rows the sink committed.
const createCommitsSQL = `CREATE TABLE IF NOT EXISTS tidemark_commits (
  pipeline TEXT NOT NULL,
  sink TEXT NOT NULL,
  checkpoint_id INTEGER NOT NULL,
  PRIMARY KEY (pipeline, sink)
)`

// errSkip rolls a transaction back without an error.
var errSkip = errors.New("already committed")

// preparedRows are the rows of one checkpoint, kept between Prepare and
// Commit.
type preparedRows struct {
	id   int64
	ops  []pendingRow
	args []any
}

// marker returns the checkpoint id of the sink's commit marker (0 when
// there is none).
func (r *Results) marker(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int64, error) {
	var id int64
	err := q.QueryRowContext(ctx, `SELECT checkpoint_id FROM tidemark_commits WHERE pipeline = ? AND sink = ?`, r.pipeline, r.name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

// Prepare moves the rows written since the last Prepare out of staging
// and returns their encoding (stored in checkpoint id). Errors: the sink
// is not in exactly-once mode, or it is closed.
func (r *Results) Prepare(ctx context.Context, id int64) ([]byte, error) {
	if r.closed {
		return nil, fmt.Errorf("sqlite %s: %w", r.path, sql.ErrConnDone)
	}
	if !r.exactlyOnce {
		return nil, fmt.Errorf("sqlite %s: not opened for exactly-once delivery", r.path)
	}
	p := &preparedRows{id: id, ops: r.ops, args: r.args}
	r.ops, r.args = nil, nil
	r.prepared = p
	return encodeRows(p, r.nCol)
}

// Commit writes checkpoint id's rows and moves the commit marker to id, in
// one transaction; nothing happens when the marker is at id or later.
// Errors: prepared does not parse, or the database fails (the transaction
// is rolled back; a retry is safe).
func (r *Results) Commit(ctx context.Context, id int64, prepared []byte) error {
	if r.closed {
		return fmt.Errorf("sqlite %s: %w", r.path, sql.ErrConnDone)
	}
	p := r.prepared
	if p == nil || p.id != id {
		var err error
		if p, err = decodeRows(prepared, id, r.nCol); err != nil {
			return fmt.Errorf("sqlite %s: checkpoint %d: %w", r.path, id, err)
		}
	}
	err := r.applyRows(ctx, p.ops, p.args, func(tx *sql.Tx) error {
		m, err := r.marker(ctx, tx)
		if err != nil {
			return err
		}
		if m >= id {
			return errSkip
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO tidemark_commits (pipeline, sink, checkpoint_id) VALUES (?, ?, ?)
ON CONFLICT (pipeline, sink) DO UPDATE SET checkpoint_id = excluded.checkpoint_id`, r.pipeline, r.name, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite %s: table %q: checkpoint %d: %w", r.path, r.table, id, err)
	}
	r.prepared = nil
	return nil
}

// Recover brings the table to checkpoint id: it commits prepared unless
// the marker is already there, and drops staged rows. With id 0 (a fresh
// start) it deletes the marker and, with Options.Fresh, the rows of a
// table tidemark created, in one transaction. With a positive id it
// returns a *MissingTableError when the sink had to create the table when
// it opened (the checkpoint's rows were committed to a table dropped
// since); the table just created is dropped again.
func (r *Results) Recover(ctx context.Context, id int64, prepared []byte) error {
	r.ops, r.args, r.prepared = r.ops[:0], r.args[:0], nil
	if id > 0 && r.created {
		e := &MissingTableError{Path: r.path, Table: r.table, Checkpoint: id, Marker: readMarker(ctx, r.db, r.pipeline, r.name)}
		r.closeStatements()
		r.upserts, r.nullUpdate, r.nullInsert, r.del = nil, nil, nil, nil
		tx, err := r.db.BeginTx(ctx, nil)
		if err == nil {
			if err = forgetOwned(ctx, tx, r.table); err == nil {
				err = tx.Commit()
			} else {
				tx.Rollback()
			}
		}
		if err != nil {
			return fmt.Errorf("sqlite %s: %w (and dropping the table created empty failed: %v)", r.path, e, err)
		}
		r.created = false
		return fmt.Errorf("sqlite %s: %w", r.path, e)
	}
	if id > 0 {
		r.replace = false // never delete what earlier checkpoints committed
		// A marker past id means a newer checkpoint was unusable and the
		// run falls back to id: rewind the marker, so that the commits of
		// the replayed checkpoints are not skipped. The rows those later
		// commits wrote stay; the replay rewrites them with the same
		// versions, and the version guard keeps older ones from
		// overwriting them.
		err := r.applyRows(ctx, nil, nil, func(tx *sql.Tx) error {
			m, err := r.marker(ctx, tx)
			if err != nil || m <= id {
				if err == nil {
					err = errSkip
				}
				return err
			}
			_, err = tx.ExecContext(ctx, `UPDATE tidemark_commits SET checkpoint_id = ? WHERE pipeline = ? AND sink = ?`, id, r.pipeline, r.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlite %s: table %q: %w", r.path, r.table, err)
		}
		return r.Commit(ctx, id, prepared)
	}
	err := r.applyRows(ctx, nil, nil, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM tidemark_commits WHERE pipeline = ? AND sink = ?`, r.pipeline, r.name)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite %s: table %q: %w", r.path, r.table, err)
	}
	return nil
}

// Argument tags of the prepared-rows encoding.
const (
	argNull byte = iota
	argInt
	argString
)

// encodeRows encodes rows and their arguments: version byte, row count,
// then per row its op, null-key flag and nCol tagged arguments (NULL,
// int64 or text — the only kinds the encoder produces).
func encodeRows(p *preparedRows, nCol int) ([]byte, error) {
	var e state.Encoder
	e.Byte(1)
	e.Uint(uint64(len(p.ops)))
	for i, op := range p.ops {
		e.Byte(byte(op.op))
		e.Bool(op.nullKey)
		for _, a := range p.args[i*nCol : (i+1)*nCol] {
			switch v := a.(type) {
			case nil:
				e.Byte(argNull)
			case int64:
				e.Byte(argInt)
				e.Int(v)
			case string:
				e.Byte(argString)
				e.String(v)
			default:
				return nil, fmt.Errorf("prepared rows: argument of type %T", a)
			}
		}
	}
	return e.Bytes(), nil
}

func decodeRows(b []byte, id int64, nCol int) (*preparedRows, error) {
	d := state.NewDecoder(b)
	d.Section("sqlite sink", 1)
	n := d.Len(1<<31-1, 2+nCol)
	p := &preparedRows{id: id, ops: make([]pendingRow, 0, n), args: make([]any, 0, n*nCol)}
	for i := 0; i < n && d.Err() == nil; i++ {
		op := changelog.Op(d.Byte())
		if op != changelog.Insert && op != changelog.UpdateAfter && op != changelog.Delete {
			d.Fail("row %d: op %d", i, op)
		}
		p.ops = append(p.ops, pendingRow{op: op, nullKey: d.Bool()})
		for range nCol {
			switch t := d.Byte(); t {
			case argNull:
				p.args = append(p.args, nil)
			case argInt:
				p.args = append(p.args, d.Int())
			case argString:
				p.args = append(p.args, d.String())
			default:
				d.Fail("row %d: argument tag %d", i, t)
			}
		}
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	if d.Remaining() != 0 {
		return nil, fmt.Errorf("prepared rows: %d bytes after the last row", d.Remaining())
	}
	return p, nil
}
