package pgcdc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/source"
)

// relState maps the table's Relation message onto the schema.
type relState struct {
	cols []relCol // per column of the relation
	// missing is the error of every change while a field's or key
	// column's column is absent (a schema change dropped it), nil when
	// none is.
	missing *source.DecodeError
}

// relCol is one column of the relation.
type relCol struct {
	name   string
	conv   *fieldConv // nil: no field reads it
	keyPos int        // index in the key, −1
	bad    *source.DecodeError
}

// buildRel maps a Relation message of the table, received at lsn.
func (s *Source) buildRel(ctx context.Context, rel *Relation, lsn uint64) (*relState, error) {
	rs := &relState{}
	at := " (a schema change, at " + FormatLSN(lsn) + ")"
	var names []string
	for _, col := range rel.Columns {
		rc := relCol{name: col.Name, keyPos: slices.Index(s.ti.key, col.Name)}
		names = append(names, col.Name)
		if fc := s.convs[col.Name]; fc != nil {
			base, err := s.baseType(ctx, col.TypeID)
			if err != nil {
				return nil, err
			}
			if base == fc.oid {
				rc.conv = fc
			} else if nfc, err := newFieldConv(fc.f, base, s.cfg.Timezone); err == nil {
				rc.conv = nfc
			} else {
				rc.bad = &source.DecodeError{Field: col.Name, Rule: "schema_change", Reason: err.Error() + at}
			}
		}
		rs.cols = append(rs.cols, rc)
	}
	for _, f := range s.cfg.Fields.Schema.Fields {
		if IsMetaField(f.Name) || slices.Contains(names, f.Name) || s.cfg.Optional[f.Name] {
			continue
		}
		if rs.missing == nil {
			rs.missing = &source.DecodeError{Field: f.Name, Rule: "schema_change",
				Reason: "column " + f.Name + " is no longer in " + s.qualified + at + "; the pipeline reads it, and the contract does not make it optional"}
		}
	}
	for _, k := range s.ti.key {
		if !slices.Contains(names, k) && rs.missing == nil {
			rs.missing = &source.DecodeError{Field: k, Rule: "schema_change", Reason: "key column " + k + " is no longer in " + s.qualified + at}
		}
	}
	return rs, nil
}

// baseType returns the base type of a type (a domain's underlying type).
func (s *Source) baseType(ctx context.Context, oid uint32) (uint32, error) {
	if b, ok := s.baseTypes[oid]; ok {
		return b, nil
	}
	var base int64
	err := s.conn.QueryRow(ctx, `SELECT (CASE WHEN typtype = 'd' THEN typbasetype ELSE oid END)::int8 FROM pg_type WHERE oid = $1`, int64(oid)).Scan(&base)
	if err != nil {
		return 0, fmt.Errorf("postgres_cdc source: reading type %d: %w", oid, err)
	}
	s.baseTypes[oid] = uint32(base)
	return uint32(base), nil
}

// startStream sends START_REPLICATION from s.received.
func (s *Source) startStream(ctx context.Context) error {
	pub := strings.ReplaceAll(`"`+strings.ReplaceAll(s.cfg.Publication, `"`, `""`)+`"`, "'", "''")
	err := pglogrepl.StartReplication(ctx, s.repl, s.cfg.Slot, pglogrepl.LSN(s.received), pglogrepl.StartReplicationOptions{
		Mode:       pglogrepl.LogicalReplication,
		PluginArgs: []string{"proto_version '1'", "publication_names '" + pub + "'", "messages 'true'"},
	})
	if err != nil {
		return s.streamError(err)
	}
	s.streaming = true
	now := s.cfg.Clock()
	s.nextStatus = now // at once: the server learns the confirmed position
	if s.cfg.HeartbeatIntervalMs > 0 {
		s.nextBeat = now
	}
	return nil
}

// streamError words a replication failure.
func (s *Source) streamError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "42704": // undefined_object
			return fmt.Errorf("postgres_cdc source: replication slot %s was dropped while tidemark read it (%s): the changes after %s are gone with it; start over (delete the checkpoints and results) to take a new snapshot", s.cfg.Slot, pe.Message, FormatLSN(s.received))
		case "55006": // object_in_use
			return fmt.Errorf("postgres_cdc source: replication slot %s is read by another process: %s", s.cfg.Slot, pe.Message)
		}
		return fmt.Errorf("postgres_cdc source: replication of slot %s: %w", s.cfg.Slot, err)
	}
	return fmt.Errorf("postgres_cdc source: replication of slot %s: %w", s.cfg.Slot, err)
}

// streamNext reads changes into b (Next's streaming half).
func (s *Source) streamNext(ctx context.Context, b *source.Batch, n int) error {
	if !s.streaming {
		if err := s.startStream(ctx); err != nil {
			return err
		}
	}
	// A key change makes two records: room for both is kept.
	limit := max(n-1, 1)
	deadline := time.Now().Add(time.Duration(s.cfg.PollTimeoutMs) * time.Millisecond)
	linger := time.Duration(s.cfg.LingerMs) * time.Millisecond
	nc := s.repl.Conn()
	defer nc.SetReadDeadline(time.Time{})
	for ctx.Err() == nil {
		if err := s.housekeeping(ctx); err != nil {
			return err
		}
		if len(b.Meta) >= limit {
			break
		}
		wait := deadline
		if len(b.Meta) > 0 && !s.inTxn {
			if t := time.Now().Add(linger); t.Before(wait) {
				wait = t
			}
		}
		if err := nc.SetReadDeadline(wait); err != nil {
			return fmt.Errorf("postgres_cdc source: %w", err)
		}
		msg, err := s.repl.ReceiveMessage(context.Background())
		if err != nil {
			if pgconn.Timeout(err) {
				break
			}
			return s.streamError(err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if len(m.Data) == 0 {
				continue
			}
			switch m.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				pkm, err := pglogrepl.ParsePrimaryKeepaliveMessage(m.Data[1:])
				if err != nil {
					return fmt.Errorf("postgres_cdc source: %w", err)
				}
				s.mu.Lock()
				s.stats.Keepalives++
				s.mu.Unlock()
				// Every transaction committed before the server's sent
				// position has been delivered: outside a transaction, the
				// position moves on to it (so an idle table does not pin
				// the WAL other tables write).
				if !s.inTxn && uint64(pkm.ServerWALEnd) > s.received {
					s.received = uint64(pkm.ServerWALEnd)
				}
				if pkm.ReplyRequested {
					s.nextStatus = time.Time{}
				}
			case pglogrepl.XLogDataByteID:
				xld, err := pglogrepl.ParseXLogData(m.Data[1:])
				if err != nil {
					return fmt.Errorf("postgres_cdc source: %w", err)
				}
				if err := s.handle(ctx, uint64(xld.WALStart), xld.WALData, b); err != nil {
					return err
				}
			}
		case *pgproto3.ErrorResponse:
			return s.streamError(pgconn.ErrorResponseToPgError(m))
		case *pgproto3.CopyDone:
			return fmt.Errorf("postgres_cdc source: the server ended the replication of slot %s", s.cfg.Slot)
		}
	}
	s.boundary.Store(!s.inTxn)
	s.mu.Lock()
	s.stats.Received = s.received
	s.mu.Unlock()
	return nil
}

// housekeeping sends a standby status update when due (or when a
// checkpoint acknowledged a newer position) and a heartbeat when due.
func (s *Source) housekeeping(ctx context.Context) error {
	now := s.cfg.Clock()
	acked := s.acked.Load()
	if !now.Before(s.nextStatus) || acked > s.sentFlush {
		// flush and apply: what checkpoints hold (the slot confirms it);
		// write: what was received.
		err := pglogrepl.SendStandbyStatusUpdate(ctx, s.repl, pglogrepl.StandbyStatusUpdate{
			WALWritePosition: pglogrepl.LSN(max(s.received, acked)),
			WALFlushPosition: pglogrepl.LSN(acked),
			WALApplyPosition: pglogrepl.LSN(acked),
			ClientTime:       now,
		})
		if err != nil {
			return fmt.Errorf("postgres_cdc source: sending a standby status update: %w", err)
		}
		s.mu.Lock()
		s.sentWrite, s.sentFlush = max(s.received, acked), acked
		s.mu.Unlock()
		s.nextStatus = now.Add(time.Duration(s.cfg.StatusIntervalMs) * time.Millisecond)
	}
	if s.cfg.HeartbeatIntervalMs > 0 && !now.Before(s.nextBeat) {
		s.nextBeat = now.Add(time.Duration(s.cfg.HeartbeatIntervalMs) * time.Millisecond)
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var err error
		if t := s.cfg.HeartbeatTable; t != "" {
			hs, hn, _ := splitTable(t)
			_, err = s.conn.Exec(hctx, `INSERT INTO `+quoteTable(hs, hn)+` (slot, at) VALUES ($1, now()) ON CONFLICT (slot) DO UPDATE SET at = excluded.at`, s.cfg.Slot)
		} else {
			_, err = s.conn.Exec(hctx, `SELECT pg_logical_emit_message(false, 'tidemark_heartbeat', $1)`, s.cfg.Slot)
		}
		if err != nil {
			return fmt.Errorf("postgres_cdc source: writing the heartbeat (source.heartbeat_interval): %w", err)
		}
		s.mu.Lock()
		s.stats.Heartbeats++
		s.mu.Unlock()
	}
	return nil
}

// handle decodes one pgoutput message at lsn.
func (s *Source) handle(ctx context.Context, lsn uint64, data []byte, b *source.Batch) error {
	m, err := s.dec.Decode(data)
	if err != nil {
		return fmt.Errorf("postgres_cdc source: at %s: %w", FormatLSN(lsn), err)
	}
	switch m.Type {
	case msgBegin:
		s.inTxn, s.txn = true, m.Begin
		s.mu.Lock()
		s.stats.Transactions++
		s.mu.Unlock()
	case msgCommit:
		s.inTxn = false
		if m.Commit.EndLSN > s.received {
			s.received = m.Commit.EndLSN
		}
	case msgRelation:
		if m.Relation.Namespace == s.schemaName && m.Relation.Name == s.tableName {
			rs, err := s.buildRel(ctx, &m.Relation, lsn)
			if err != nil {
				return err
			}
			s.relID, s.rel = m.Relation.ID, rs
		}
	case msgInsert, msgUpdate, msgDelete:
		if s.rel == nil || m.Change.Relation != s.relID {
			s.mu.Lock()
			s.stats.Skipped++
			s.mu.Unlock()
			return nil
		}
		s.change(b, lsn, &m.Change)
	case msgTruncate:
		if s.rel != nil && slices.Contains(m.Truncate.Relations, s.relID) {
			return fmt.Errorf("postgres_cdc source: TRUNCATE of %s at %s: tidemark cannot take back every row of the table one by one; publish without truncate (ALTER PUBLICATION %s SET (publish = 'insert, update, delete')), or start over with a new snapshot", s.qualified, FormatLSN(lsn), quoteIdent(s.cfg.Publication))
		}
	}
	return nil
}

// change delivers an insert, update or delete of the table. An update
// that changes the key is a delete of the old key and an insert of the
// new one.
func (s *Source) change(b *source.Batch, lsn uint64, c *Change) {
	switch c.Kind {
	case msgInsert:
		s.emit(b, record.OpCreate, lsn, &c.New, nil, false)
	case msgDelete:
		s.emit(b, record.OpDelete, lsn, &c.Old, nil, c.OldKind == 'K')
	case msgUpdate:
		if c.OldKind != 0 && s.keyChanged(c) {
			s.emit(b, record.OpDelete, lsn, &c.Old, nil, c.OldKind == 'K')
			s.emit(b, record.OpCreate, lsn, &c.New, nil, false)
			return
		}
		var old *Tuple
		if c.OldKind == 'O' {
			old = &c.Old
		}
		s.emit(b, record.OpUpdate, lsn, &c.New, old, false)
	}
}

// keyChanged reports whether an update's old and new tuples hold
// different keys.
func (s *Source) keyChanged(c *Change) bool {
	for i, rc := range s.rel.cols {
		if rc.keyPos < 0 || i >= len(c.Old.Kinds) || i >= len(c.New.Kinds) {
			continue
		}
		ok, nk := c.Old.Kinds[i], c.New.Kinds[i]
		if nk == colUnchanged {
			continue
		}
		if ok != nk || string(c.Old.Data[i]) != string(c.New.Data[i]) {
			return true
		}
	}
	return false
}

// emit appends one change record of tuple t (old, with REPLICA IDENTITY
// FULL, the old row an update's unchanged values are read from); keyOnly:
// t holds only the key's columns (a delete's 'K' tuple).
func (s *Source) emit(b *source.Batch, op string, lsn uint64, t, old *Tuple, keyOnly bool) {
	rs := s.rel
	r, m := b.Next(s.cfg.Fields.Schema)
	a := b.Arena()
	clear(s.keyText)
	s.unch = s.unch[:0]
	s.beginRaw(op, lsn)
	first := rs.missing
	note := func(e *source.DecodeError) {
		if first == nil {
			first = e
		}
	}
	if len(t.Kinds) != len(rs.cols) {
		note(&source.DecodeError{Rule: "decode", Reason: fmt.Sprintf("the change has %d columns, the relation %s %d", len(t.Kinds), s.qualified, len(rs.cols))})
	}
	for i := 0; i < len(t.Kinds) && i < len(rs.cols); i++ {
		rc := &rs.cols[i]
		if rc.conv == nil && rc.keyPos < 0 && rc.bad == nil {
			continue
		}
		if keyOnly && rc.keyPos < 0 {
			continue
		}
		kind, data := t.Kinds[i], t.Data[i]
		if kind == colUnchanged && old != nil && i < len(old.Kinds) && old.Kinds[i] == colText {
			kind, data = colText, old.Data[i]
		}
		switch kind {
		case colNull:
			if rc.conv != nil {
				s.rawValue(rc.name, rc.conv, nil, true)
			}
		case colUnchanged:
			if rc.keyPos >= 0 {
				note(&source.DecodeError{Field: rc.name, Rule: "key", Reason: "key column " + rc.name + " of " + s.qualified + " is an unchanged TOAST value the change does not carry (set REPLICA IDENTITY FULL)"})
			}
			if rc.conv != nil {
				s.unch = record.MarkUnchanged(s.unch, rc.conv.f.Index)
			}
		case colText:
			if rc.keyPos >= 0 {
				s.keyText[rc.keyPos] = data
			}
			if rc.bad != nil {
				note(rc.bad)
				continue
			}
			if rc.conv != nil {
				if e := rc.conv.set(data, r, a); e != nil {
					note(e)
				}
				s.rawValue(rc.name, rc.conv, data, false)
			}
		default:
			note(&source.DecodeError{Field: rc.name, Rule: "decode", Reason: "column " + rc.name + " is sent in binary"})
		}
	}
	s.recordMeta(r, m, a, op, lsn, s.txn.FinalLSN, pgTimeMs(s.txn.CommitTime), s.txn.Xid, 0)
	if !s.setKey(r, a) {
		note(s.keyError())
	}
	if len(s.unch) > 0 && s.meta.unchanged.ok {
		r.S[s.meta.unchanged.f.Slot] = a.String(s.unch)
		r.SetValid(s.meta.unchanged.f.Index)
	}
	m.Err = first
	s.endRaw(m, a)
	s.mu.Lock()
	s.stats.Changes++
	s.mu.Unlock()
}
