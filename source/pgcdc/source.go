package pgcdc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/state"
)

// ErrClosed is returned by Next and Seek after Close.
var ErrClosed = errors.New("postgres_cdc source is closed")

// Stats are the source's counters. Safe to read with Source.Stats from
// any goroutine.
type Stats struct {
	SnapshotRows int64  // rows of the initial snapshot delivered
	Changes      int64  // changes of the table delivered (a key change counts two: delete and insert)
	Transactions int64  // upstream transactions seen
	Skipped      int64  // changes of other tables of the publication, skipped
	Keepalives   int64  // keepalive messages from the server
	Heartbeats   int64  // heartbeats written
	Received     uint64 // the position delivered through (an LSN)
	Confirmed    uint64 // the position last confirmed to the server (the slot's confirmed_flush_lsn)
}

// Source reads a table's rows and changes through a logical replication
// slot (package doc). It implements source.Source, source.Resumable,
// source.Transactional and source.Acknowledger. Next, Seek, Position and
// Close are called from one goroutine; Acknowledge, AtBoundary, Stats and
// EventJSON from any.
type Source struct {
	cfg        Config
	schemaName string
	tableName  string
	qualified  string // "schema.table"
	parts      []string
	ti         *tableInfo
	convs      map[string]*fieldConv // by column: the schema's column fields
	keyConvs   []*fieldConv          // per key column, its field's conv (nil when the key column is not a field)
	meta       metaSlots
	ctx        context.Context
	cancel     context.CancelFunc
	conn       *pgx.Conn      // catalog, snapshot, heartbeat
	repl       *pgconn.PgConn // replication
	opened     bool
	closed     bool
	seek       *position // set by Seek before the first Next
	phase      int
	snap       *snapshot
	consistent uint64 // the slot's consistent point (snapshot rows' commit LSN)
	snapTime   int64  // ms: the snapshot rows' commit time
	streaming  bool
	dec        Decoder
	relID      uint32
	rel        *relState
	baseTypes  map[uint32]uint32
	inTxn      bool
	txn        Begin
	received   uint64 // everything up to here is delivered; Position's LSN
	acked      atomic.Uint64
	sentWrite  uint64
	sentFlush  uint64
	nextStatus time.Time
	nextBeat   time.Time
	boundary   atomic.Bool
	keyText    [][]byte
	keyBuf     []byte
	rawBuf     []byte
	unch       []byte
	mu         sync.Mutex
	stats      Stats
}

// Phases of a source.
const (
	phaseSnapshot = iota + 1
	phaseStream
)

// metaSlots are the schema's metadata fields (ok false when absent).
type metaSlots struct {
	op, lsn, commitLSN, commitTime, xid, table, key, unchanged struct {
		f  row.Field
		ok bool
	}
}

var (
	_ source.Source        = (*Source)(nil)
	_ source.Resumable     = (*Source)(nil)
	_ source.Transactional = (*Source)(nil)
	_ source.Acknowledger  = (*Source)(nil)
)

// New checks cfg and returns a source; it does no IO (the first Next
// connects, checks the database and opens the slot). Errors name the
// setting.
func New(cfg Config) (*Source, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	schema, table, _ := splitTable(cfg.Table)
	s := &Source{cfg: cfg, schemaName: schema, tableName: table, qualified: schema + "." + table,
		convs: map[string]*fieldConv{}, baseTypes: map[uint32]uint32{}}
	s.parts = []string{s.qualified}
	sc := cfg.Fields.Schema
	for _, p := range []struct {
		name string
		dst  *struct {
			f  row.Field
			ok bool
		}
		kind row.Kind
	}{
		{record.FieldOp, &s.meta.op, row.KindString}, {record.FieldLSN, &s.meta.lsn, row.KindInt},
		{record.FieldCommitLSN, &s.meta.commitLSN, row.KindInt}, {record.FieldCommitTime, &s.meta.commitTime, row.KindTime},
		{record.FieldXid, &s.meta.xid, row.KindInt}, {record.FieldTable, &s.meta.table, row.KindString},
		{record.FieldKey, &s.meta.key, row.KindString}, {record.FieldUnchanged, &s.meta.unchanged, row.KindString},
	} {
		f, ok := sc.Lookup(p.name)
		if ok && f.Kind != p.kind {
			return nil, fmt.Errorf("source.schema.%s: the metadata field %s is %s, not %s", p.name, p.name, p.kind, f.Kind)
		}
		p.dst.f, p.dst.ok = f, ok
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Partitions returns the table, the source's one partition.
func (s *Source) Partitions() []string { return s.parts }

// Stats returns the source's counters.
func (s *Source) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Confirmed = s.sentFlush
	return st
}

func (s *Source) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// runtimeParams are the sessions' settings: the text PostgreSQL writes
// for a value depends on them, and snapshot rows (a SELECT) and changes
// (written by the walsender) must read alike.
var runtimeParams = map[string]string{
	"TimeZone":           "UTC",
	"DateStyle":          "ISO, MDY",
	"IntervalStyle":      "postgres",
	"extra_float_digits": "3",
	"application_name":   "tidemark",
}

// connect opens a regular connection, or with replication a replication
// connection (replication=database) as a pgx.Conn's PgConn.
func connect(ctx context.Context, dsn string, replication bool) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("source.dsn: %w", err)
	}
	for k, v := range runtimeParams {
		cc.RuntimeParams[k] = v
	}
	if replication {
		cc.RuntimeParams["replication"] = "database"
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("postgres_cdc source: connecting: %w", err)
	}
	return conn, nil
}

func connectRepl(ctx context.Context, dsn string) (*pgconn.PgConn, error) {
	pc, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("source.dsn: %w", err)
	}
	for k, v := range runtimeParams {
		pc.RuntimeParams[k] = v
	}
	pc.RuntimeParams["replication"] = "database"
	c, err := pgconn.ConnectConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres_cdc source: opening a replication connection: %w (pg_hba.conf must allow replication connections of this role)", err)
	}
	return c, nil
}

// open connects, checks the database, and starts the snapshot or the
// stream.
func (s *Source) open(ctx context.Context) error {
	conn, err := connect(ctx, s.cfg.DSN, false)
	if err != nil {
		return err
	}
	s.conn = conn
	ti, probs, err := inspect(ctx, conn, &s.cfg)
	if err != nil {
		return err
	}
	if len(probs) > 0 {
		return &SetupError{Table: s.qualified, Problems: probs}
	}
	s.ti = ti
	for _, c := range ti.columns {
		s.baseTypes[c.oid] = c.oid
	}
	for _, f := range s.cfg.Fields.Schema.Fields {
		if IsMetaField(f.Name) {
			continue
		}
		c, _ := ti.column(f.Name)
		fc, err := newFieldConv(f, c.oid, s.cfg.Timezone)
		if err != nil {
			return err
		}
		s.convs[f.Name] = fc
	}
	s.keyConvs = make([]*fieldConv, len(ti.key))
	for i, k := range ti.key {
		s.keyConvs[i] = s.convs[k]
	}
	s.keyText = make([][]byte, len(ti.key))
	repl, err := connectRepl(ctx, s.cfg.DSN)
	if err != nil {
		return err
	}
	s.repl = repl
	slot, err := s.slotInfo(ctx)
	if err != nil {
		return err
	}
	if slot != nil && slot.active {
		// A reader that just died (a killed run) holds the slot until
		// its server process notices; a live one keeps it.
		if slot, err = s.waitInactive(ctx, slot); err != nil {
			return err
		}
	}
	switch {
	case s.seek != nil:
		return s.resume(ctx, slot)
	case s.cfg.Snapshot == SnapshotNever:
		if slot == nil {
			res, err := pglogrepl.CreateReplicationSlot(ctx, repl, s.cfg.Slot, "pgoutput",
				pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "NOEXPORT_SNAPSHOT", Temporary: s.cfg.Temporary})
			if err != nil {
				return s.slotError(err)
			}
			lsn, err := pglogrepl.ParseLSN(res.ConsistentPoint)
			if err != nil {
				return fmt.Errorf("postgres_cdc source: slot %s: consistent point %q: %w", s.cfg.Slot, res.ConsistentPoint, err)
			}
			s.received = uint64(lsn)
		} else {
			s.received = slot.confirmed
		}
		s.acked.Store(s.received)
		s.phase = phaseStream
		s.boundary.Store(true)
		return nil
	}
	if slot != nil {
		if s.cfg.SlotGiven || slot.active {
			what := "is read by another process (pid " + strconv.Itoa(slot.pid) + ")"
			if !slot.active {
				what = "exists, but no checkpoint names it"
			}
			return &SetupError{Table: s.qualified, Problems: []Problem{{
				What: "replication slot " + s.cfg.Slot + " " + what + ": an initial snapshot needs a slot created now (the snapshot it exports)",
				Fix:  "drop it (SELECT pg_drop_replication_slot('" + s.cfg.Slot + "')) if nothing else uses it, or set source.snapshot: never to read its changes from its confirmed position",
			}}}
		}
		// A slot named after the pipeline with no checkpoint naming it:
		// left by a run stopped during its initial snapshot (its exported
		// snapshot is gone with that run's connection).
		s.logf("postgres_cdc source: dropping replication slot %s, left by a run that did not finish its initial snapshot", s.cfg.Slot)
		if err := pglogrepl.DropReplicationSlot(ctx, repl, s.cfg.Slot, pglogrepl.DropReplicationSlotOptions{}); err != nil {
			return fmt.Errorf("postgres_cdc source: dropping the leftover slot %s: %w", s.cfg.Slot, err)
		}
	}
	return s.startSnapshot(ctx)
}

// slotState is a row of pg_replication_slots.
type slotState struct {
	plugin, database string
	active           bool
	pid              int
	confirmed        uint64
	walStatus        string
}

// slotInfo reads the slot, nil when it does not exist.
func (s *Source) slotInfo(ctx context.Context) (*slotState, error) {
	var st slotState
	var confirmed *string
	var pid *int32
	var db, status *string
	err := s.conn.QueryRow(ctx, `SELECT plugin, database, active, active_pid, confirmed_flush_lsn::text, wal_status
		FROM pg_replication_slots WHERE slot_name = $1 AND slot_type = 'logical'`, s.cfg.Slot).Scan(&st.plugin, &db, &st.active, &pid, &confirmed, &status)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("postgres_cdc source: reading replication slot %s: %w", s.cfg.Slot, err)
	}
	if db != nil {
		st.database = *db
	}
	if pid != nil {
		st.pid = int(*pid)
	}
	if status != nil {
		st.walStatus = *status
	}
	if confirmed != nil {
		lsn, err := pglogrepl.ParseLSN(*confirmed)
		if err != nil {
			return nil, fmt.Errorf("postgres_cdc source: slot %s: confirmed_flush_lsn %q: %w", s.cfg.Slot, *confirmed, err)
		}
		st.confirmed = uint64(lsn)
	}
	var here string
	if err := s.conn.QueryRow(ctx, `SELECT current_database()`).Scan(&here); err != nil {
		return nil, err
	}
	if st.plugin != "pgoutput" || st.database != here {
		return nil, &SetupError{Table: s.qualified, Problems: []Problem{{
			What: fmt.Sprintf("replication slot %s belongs to plugin %s in database %s, not pgoutput in %s", s.cfg.Slot, st.plugin, st.database, here),
			Fix:  "name another slot (source.slot)",
		}}}
	}
	return &st, nil
}

// slotWait is how long open waits for the slot's previous reader to let
// it go.
const slotWait = 15 * time.Second

// waitInactive polls the slot until no process reads it, for up to
// slotWait, and returns its state then (active still when the time is up).
func (s *Source) waitInactive(ctx context.Context, slot *slotState) (*slotState, error) {
	s.logf("postgres_cdc source: replication slot %s is read by pid %d; waiting up to %s for it to let go", s.cfg.Slot, slot.pid, slotWait)
	deadline := time.Now().Add(slotWait)
	for slot != nil && slot.active && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		var err error
		if slot, err = s.slotInfo(ctx); err != nil {
			return nil, err
		}
	}
	return slot, nil
}

// slotError words a failure to create the slot.
func (s *Source) slotError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "53400" {
		return &SetupError{Table: s.qualified, Problems: []Problem{{
			What: "creating replication slot " + s.cfg.Slot + ": " + pe.Message,
			Fix:  "raise max_replication_slots (and restart), or drop slots no longer used (SELECT slot_name, active FROM pg_replication_slots)",
		}}}
	}
	return fmt.Errorf("postgres_cdc source: creating replication slot %s: %w", s.cfg.Slot, err)
}

// resume checks the slot against the position of the restored checkpoint
// and streams from it.
func (s *Source) resume(ctx context.Context, slot *slotState) error {
	p := s.seek
	lsn := FormatLSN(p.lsn)
	switch {
	case slot == nil:
		return &SetupError{Table: s.qualified, Problems: []Problem{{
			What: "replication slot " + s.cfg.Slot + " does not exist (dropped?): the checkpoint resumes at " + lsn + ", and the changes after it are gone with the slot",
			Fix:  "start over: delete the pipeline's checkpoints (and its results) so that a new slot and initial snapshot are taken",
		}}}
	case slot.walStatus == "lost":
		return &SetupError{Table: s.qualified, Problems: []Problem{{
			What: "replication slot " + s.cfg.Slot + " has lost WAL it needs (wal_status lost, max_slot_wal_keep_size): changes after " + lsn + " are gone",
			Fix:  "start over: drop the slot, delete the pipeline's checkpoints (and its results)",
		}}}
	case slot.active:
		return &SetupError{Table: s.qualified, Problems: []Problem{{
			What: "replication slot " + s.cfg.Slot + " is read by another process (pid " + strconv.Itoa(slot.pid) + ")",
			Fix:  "stop the other reader; one slot has one reader",
		}}}
	case slot.confirmed > p.lsn:
		return &SetupError{Table: s.qualified, Problems: []Problem{{
			What: "replication slot " + s.cfg.Slot + " was confirmed up to " + FormatLSN(slot.confirmed) + ", past the restored checkpoint's " + lsn + ": the server would not send the changes between (an older checkpoint was restored, or another reader advanced the slot)",
			Fix:  "restore the newest checkpoint, or start over: drop the slot, delete the pipeline's checkpoints (and its results)",
		}}}
	}
	s.received = p.lsn
	s.acked.Store(p.lsn)
	s.phase = phaseStream
	s.boundary.Store(true)
	return nil
}

// Next appends up to max records to b: rows of the initial snapshot, then
// changes; it always says source.More (the stream has no end). It waits at most Config.PollTimeoutMs for a change and returns
// nil with no record when none came. A batch ends at a transaction's
// commit unless max records came first (AtBoundary then reports false
// until the transaction's commit is delivered). Errors: ctx's error,
// ErrClosed, a *SetupError (the database lacks something), the slot
// dropped or taken by another reader, a TRUNCATE of the table, a
// malformed message (*DecodeError), a connection failure. A value that
// does not convert is not an error: its record carries Meta.Err.
func (s *Source) Next(ctx context.Context, b *source.Batch, max int) (source.Status, error) {
	return source.More, s.next(ctx, b, max)
}

func (s *Source) next(ctx context.Context, b *source.Batch, max int) error {
	if s.closed {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if max < 1 {
		max = 1
	}
	if !s.opened {
		s.opened = true
		if err := s.open(ctx); err != nil {
			return err
		}
	}
	if s.phase == phaseSnapshot {
		return s.snapshotNext(ctx, b, max)
	}
	return s.streamNext(ctx, b, max)
}

// AtBoundary implements source.Transactional: false during the initial
// snapshot and inside a transaction whose commit Next has not delivered.
func (s *Source) AtBoundary() bool { return s.boundary.Load() }

// Acknowledge implements source.Acknowledger: a checkpoint whose position
// was pos completed (its sinks committed), so the slot may confirm its
// LSN; the next standby status update (Next sends one within
// Config.PollTimeoutMs) tells the server.
func (s *Source) Acknowledge(pos []byte) {
	p, err := decodePosition(pos)
	if err != nil || !p.streaming {
		return
	}
	for {
		cur := s.acked.Load()
		if p.lsn <= cur || s.acked.CompareAndSwap(cur, p.lsn) {
			return
		}
	}
}

// Close closes the connections; the slot stays (the next run resumes
// from it). Closing twice is not an error.
func (s *Source) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	if s.snap != nil {
		s.snap.close(ctx)
	}
	if s.repl != nil {
		if s.streaming {
			// The last checkpoint's position, which no later Next sends.
			if acked := s.acked.Load(); acked > s.sentFlush {
				if err := pglogrepl.SendStandbyStatusUpdate(ctx, s.repl, pglogrepl.StandbyStatusUpdate{
					WALWritePosition: pglogrepl.LSN(max(s.received, acked)), WALFlushPosition: pglogrepl.LSN(acked),
					WALApplyPosition: pglogrepl.LSN(acked), ClientTime: s.cfg.Clock()}); err == nil {
					s.mu.Lock()
					s.sentFlush = acked
					s.mu.Unlock()
				}
			}
		}
		errs = append(errs, s.repl.Close(ctx))
	}
	if s.conn != nil {
		errs = append(errs, s.conn.Close(ctx))
	}
	return errors.Join(errs...)
}

// EventJSON appends the record as a JSON object: the change's columns
// (those the pipeline reads) with __op, __table and __lsn, as Next wrote
// it into Meta.Raw; for a meta without Raw (an entity's previous version
// kept by the engine), the position alone.
func (s *Source) EventJSON(dst []byte, m *source.Meta) []byte {
	if m.Raw != nil {
		return append(dst, m.Raw...)
	}
	dst = append(dst, `{"__table":`...)
	dst = appendJSONString(dst, []byte(m.Pos.Source))
	dst = append(dst, `,"__lsn":`...)
	dst = strconv.AppendInt(dst, m.Pos.Offset, 10)
	return append(dst, '}')
}

// position is a decoded Position.
type position struct {
	streaming bool   // the snapshot is done: lsn is a stream position
	lsn       uint64 // resume at: everything before it is delivered
	slot      string
}

// positionVersion is the version byte of Position's encoding.
const positionVersion = 1

// Position implements source.Resumable: the version byte, whether the
// initial snapshot is done, the LSN through which changes are delivered
// (a transaction boundary when AtBoundary), and the slot.
func (s *Source) Position() []byte {
	var e state.Encoder
	e.Byte(positionVersion)
	e.Bool(s.phase == phaseStream)
	e.Uint(s.received)
	e.String(s.cfg.Slot)
	return e.Bytes()
}

func decodePosition(pos []byte) (position, error) {
	d := state.NewDecoder(pos)
	if v := d.Byte(); d.Err() == nil && v != positionVersion {
		return position{}, fmt.Errorf("postgres_cdc position: version %d, want %d", v, positionVersion)
	}
	p := position{streaming: d.Bool(), lsn: d.Uint(), slot: d.String()}
	if d.Err() == nil && d.Remaining() != 0 {
		d.Fail("%d bytes after the position", d.Remaining())
	}
	if err := d.Err(); err != nil {
		return position{}, fmt.Errorf("postgres_cdc position: %w", err)
	}
	return p, nil
}

// Seek implements source.Resumable: the next Next checks the slot against
// pos and streams from pos's LSN. Errors: pos does not parse, was taken
// during the initial snapshot (a checkpoint never is), or names another
// slot than Config.Slot.
func (s *Source) Seek(ctx context.Context, pos []byte) error {
	if s.closed {
		return ErrClosed
	}
	if s.opened {
		return errors.New("postgres_cdc source: Seek after Next")
	}
	p, err := decodePosition(pos)
	if err != nil {
		return err
	}
	if !p.streaming {
		return errors.New("postgres_cdc source: the checkpoint's position is inside the initial snapshot, where no checkpoint is taken")
	}
	if p.slot != s.cfg.Slot {
		return fmt.Errorf("postgres_cdc source: the checkpoint read slot %s, source.slot is %s: a checkpoint resumes only from its own slot", p.slot, s.cfg.Slot)
	}
	s.seek = &p
	return nil
}

// newFieldConv returns the conversion of column type oid into field f.
func newFieldConv(f row.Field, oid uint32, loc *time.Location) (*fieldConv, error) {
	cv, err := convFor(f.Name, oid, f.Kind, loc)
	if err != nil {
		return nil, err
	}
	fc := &fieldConv{f: f, conv: cv, oid: oid}
	if cv == convNumber {
		fc.num = format.NewTextField(f, nil)
	}
	if cv == convTimeLoc {
		fc.loc = loc
	}
	return fc, nil
}

// recordMeta fills a record's metadata fields and its Meta.
func (s *Source) recordMeta(r *row.Row, m *source.Meta, a *source.Arena, op string, lsn, commitLSN uint64, commitMs int64, xid uint32, line int64) {
	mt := &s.meta
	if mt.op.ok {
		r.S[mt.op.f.Slot] = op
		r.SetValid(mt.op.f.Index)
	}
	if mt.lsn.ok {
		r.I[mt.lsn.f.Slot] = int64(lsn)
		r.SetValid(mt.lsn.f.Index)
	}
	if mt.commitLSN.ok {
		r.I[mt.commitLSN.f.Slot] = int64(commitLSN)
		r.SetValid(mt.commitLSN.f.Index)
	}
	if mt.commitTime.ok {
		r.I[mt.commitTime.f.Slot] = commitMs
		r.SetValid(mt.commitTime.f.Index)
	}
	if mt.xid.ok {
		r.I[mt.xid.f.Slot] = int64(xid)
		r.SetValid(mt.xid.f.Index)
	}
	if mt.table.ok {
		r.S[mt.table.f.Slot] = s.qualified
		r.SetValid(mt.table.f.Index)
	}
	m.Partition = 0
	m.Pos = changelog.Position{Source: s.qualified, Line: line, Offset: int64(lsn)}
}

// setKey stores the key texts of s.keyText into FieldKey: the one text,
// or a JSON array of several. It reports false when a key column is null
// or missing.
func (s *Source) setKey(r *row.Row, a *source.Arena) bool {
	for _, t := range s.keyText {
		if t == nil {
			return false
		}
	}
	if !s.meta.key.ok {
		return true
	}
	var k []byte
	if len(s.keyText) == 1 {
		k = s.keyText[0]
	} else {
		s.keyBuf = append(s.keyBuf[:0], '[')
		for i, t := range s.keyText {
			if i > 0 {
				s.keyBuf = append(s.keyBuf, ',')
			}
			s.keyBuf = appendJSONString(s.keyBuf, t)
		}
		k = append(s.keyBuf, ']')
		s.keyBuf = k
	}
	r.S[s.meta.key.f.Slot] = a.String(k)
	r.SetValid(s.meta.key.f.Index)
	return true
}

// keyError is the decode error of a record whose key is incomplete.
func (s *Source) keyError() *source.DecodeError {
	for i, t := range s.keyText {
		if t == nil {
			return &source.DecodeError{Field: s.ti.key[i], Rule: "key", Reason: "key column " + s.ti.key[i] + " of " + s.qualified + " is null or was not sent"}
		}
	}
	return nil
}

// beginRaw starts a record's JSON in s.rawBuf.
func (s *Source) beginRaw(op string, lsn uint64) {
	b := append(s.rawBuf[:0], `{"__op":"`...)
	b = append(b, op...)
	b = append(b, `","__table":`...)
	b = appendJSONString(b, []byte(s.qualified))
	b = append(b, `,"__lsn":`...)
	b = strconv.AppendUint(b, lsn, 10)
	s.rawBuf = b
}

// rawValue adds a column to the record's JSON (nil data: null).
func (s *Source) rawValue(name string, c *fieldConv, data []byte, null bool) {
	b := append(s.rawBuf, ',')
	b = appendJSONString(b, []byte(name))
	b = append(b, ':')
	if null {
		b = append(b, "null"...)
	} else {
		b = appendValueJSON(b, c, data)
	}
	s.rawBuf = b
}

// endRaw closes the record's JSON and copies it into the batch.
func (s *Source) endRaw(m *source.Meta, a *source.Arena) {
	s.rawBuf = append(s.rawBuf, '}')
	m.Raw = a.Bytes(s.rawBuf)
}

// pgTimeMs converts µs since 2000-01-01 to ms since 1970-01-01.
func pgTimeMs(us int64) int64 {
	const epochDiffMs = 946_684_800_000
	ms := us / 1000
	if us%1000 < 0 {
		ms--
	}
	return ms + epochDiffMs
}
