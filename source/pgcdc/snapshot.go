package pgcdc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tidemark/tidemark/source"
)

// snapshot is the initial snapshot being read: one SELECT in a REPEATABLE
// READ transaction that imported the snapshot the slot exported when it
// was created, so that its rows and the slot's changes meet exactly.
type snapshot struct {
	rr     *pgconn.ResultReader
	cols   []*fieldConv // per selected column; nil for a key column that is not a field
	names  []string
	keyPos []int // per selected column: its index in the key, or −1
	rows   int64
}

func (sn *snapshot) close(ctx context.Context) {
	if sn.rr != nil {
		sn.rr.Close()
		sn.rr = nil
	}
}

// startSnapshot creates the slot with an exported snapshot, imports it
// into a transaction of the regular connection and starts the SELECT.
func (s *Source) startSnapshot(ctx context.Context) error {
	res, err := pglogrepl.CreateReplicationSlot(ctx, s.repl, s.cfg.Slot, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "EXPORT_SNAPSHOT", Temporary: s.cfg.Temporary})
	if err != nil {
		return s.slotError(err)
	}
	lsn, err := pglogrepl.ParseLSN(res.ConsistentPoint)
	if err != nil {
		return fmt.Errorf("postgres_cdc source: slot %s: consistent point %q: %w", s.cfg.Slot, res.ConsistentPoint, err)
	}
	s.consistent = uint64(lsn)
	s.received = s.consistent
	s.acked.Store(s.consistent)
	// The exported snapshot lives until the replication connection runs
	// its next command; it is imported before START_REPLICATION.
	if _, err := s.conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
		return fmt.Errorf("postgres_cdc source: starting the snapshot transaction: %w", err)
	}
	if _, err := s.conn.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+strings.ReplaceAll(res.SnapshotName, "'", "''")+"'"); err != nil {
		return fmt.Errorf("postgres_cdc source: importing snapshot %s: %w", res.SnapshotName, err)
	}
	if err := s.conn.QueryRow(ctx, "SELECT (extract(epoch FROM now()) * 1000)::int8").Scan(&s.snapTime); err != nil {
		return fmt.Errorf("postgres_cdc source: reading the snapshot's time: %w", err)
	}
	sn := &snapshot{}
	var sel []string
	for _, f := range s.cfg.Fields.Schema.Fields {
		if IsMetaField(f.Name) {
			continue
		}
		sn.cols = append(sn.cols, s.convs[f.Name])
		sn.names = append(sn.names, f.Name)
		sn.keyPos = append(sn.keyPos, slices.Index(s.ti.key, f.Name))
		sel = append(sel, quoteIdent(f.Name))
	}
	for i, k := range s.ti.key {
		if !slices.Contains(sn.names, k) {
			sn.cols = append(sn.cols, nil)
			sn.names = append(sn.names, k)
			sn.keyPos = append(sn.keyPos, i)
			sel = append(sel, quoteIdent(k))
		}
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM ONLY " + quoteTable(s.schemaName, s.tableName)
	sn.rr = s.conn.PgConn().ExecParams(s.ctx, q, nil, nil, nil, nil)
	s.snap = sn
	s.phase = phaseSnapshot
	s.boundary.Store(false)
	return nil
}

// snapshotNext delivers up to max rows of the snapshot; after its last
// row it commits the snapshot transaction and the source moves to the
// stream (at the slot's consistent point).
func (s *Source) snapshotNext(ctx context.Context, b *source.Batch, max int) error {
	sn := s.snap
	sc := s.cfg.Fields.Schema
	a := b.Arena()
	done := false
	for len(b.Meta) < max {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !sn.rr.NextRow() {
			done = true
			break
		}
		vals := sn.rr.Values()
		sn.rows++
		r, m := b.Next(sc)
		clear(s.keyText)
		s.beginRaw("r", 0)
		var first *source.DecodeError
		for i, v := range vals {
			if kp := sn.keyPos[i]; kp >= 0 {
				s.keyText[kp] = v
			}
			c := sn.cols[i]
			if c == nil {
				continue
			}
			if v == nil {
				s.rawValue(sn.names[i], c, nil, true)
				continue
			}
			if e := c.set(v, r, a); e != nil && first == nil {
				first = e
			}
			s.rawValue(sn.names[i], c, v, false)
		}
		s.recordMeta(r, m, a, "r", 0, s.consistent, s.snapTime, 0, sn.rows)
		if !s.setKey(r, a) && first == nil {
			first = s.keyError()
		}
		m.Err = first
		s.endRaw(m, a)
	}
	s.mu.Lock()
	s.stats.SnapshotRows = sn.rows
	s.stats.Received = s.received
	s.mu.Unlock()
	if !done {
		return nil
	}
	_, err := sn.rr.Close()
	sn.rr = nil
	s.snap = nil
	if err != nil {
		return fmt.Errorf("postgres_cdc source: reading the initial snapshot of %s: %w", s.qualified, err)
	}
	if _, err := s.conn.Exec(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("postgres_cdc source: ending the snapshot transaction: %w", err)
	}
	s.logf("postgres_cdc source: initial snapshot of %s: %d rows; streaming from %s", s.qualified, sn.rows, FormatLSN(s.consistent))
	s.phase = phaseStream
	s.boundary.Store(true)
	return nil
}
