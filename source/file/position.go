package file

import (
	"context"
	"fmt"
	"hash/crc32"
	"math"
	"os"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/perturb"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/state"
)

// Position formats. Version 2 holds where reading stopped (file, byte
// offset, line) and the state derived from the records before it, so Seek
// continues there directly. Version 1 held only the number of records
// delivered: Seek still reads it, by reading the input again up to there.
//
// Version 3 is version 2 taken by a replay fed by Claim
// (source.Reorderer): where reading stood when the claim of the batch
// the replay is taking records from began, and after the derived state
// the number of that batch's records it has taken, which Seek reads
// again without delivering them.
const (
	positionV1 = 1
	positionV2 = 2
	positionV3 = 3
)

// fingerprintBytes is how many bytes before a position's offset the
// position checksums, to tell that the file still holds what was read.
const fingerprintBytes = 4 << 10

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Position implements source.Resumable. The position holds:
//
//   - the records delivered so far (replayed copies included);
//   - the files opened so far and, for the open one, its path, its size
//     when it was opened, the byte offset after the last record read, the
//     lines read, its line breaks (CR or LF), where CSV resynchronising
//     ends, and a CRC-32C of the (up to) 4 KiB before the offset;
//   - the derived state: ordinal counters of the open file, partition
//     names, the previous record's partition and arrival time;
//   - with replay: the scheduler's state (generators, records scheduled),
//     the queue's horizon and every delivery it holds (row values, raw
//     bytes, position, partition, decode error, kind), since reading runs
//     ahead of delivery.
//
// Seek continues from it without reading anything before the offset.
func (s *Source) Position() []byte {
	if s.feed.on && s.feed.in != nil {
		return s.feedPosition()
	}
	e := s.readState(positionV2)
	s.d.appendState(&e)
	e.Bool(s.rp != nil)
	if s.rp != nil {
		s.rp.appendState(&e)
	}
	return e.Bytes()
}

// ClaimPosition implements source.Finisher: the part of Position that
// says where reading stopped (the records claimed, the files, the open
// file's offset), which Claim moves.
func (s *Source) ClaimPosition() []byte {
	e := s.readState(positionV2)
	return e.Bytes()
}

// FinishedPosition implements source.Finisher: claimed (ClaimPosition
// after a batch's Claim) followed by the derived state after the
// batch's Finish — Position after Next delivered that batch. A source
// that splits has no replay.
func (s *Source) FinishedPosition(claimed []byte) []byte {
	var e state.Encoder
	s.d.appendState(&e)
	e.Bool(false)
	return append(append(make([]byte, 0, len(claimed)+e.Len()), claimed...), e.Bytes()...)
}

// readState encodes Position's first part, of version v: where reading
// stopped.
func (s *Source) readState(v byte) state.Encoder {
	var e state.Encoder
	e.Byte(v)
	e.Uint(uint64(s.delivered))
	e.Uint(uint64(s.next))
	e.Bool(s.eof)
	if s.next > 0 {
		e.String(s.files[s.next-1])
	}
	e.Bool(s.cur != nil)
	if s.cur != nil {
		at := s.cur.at()
		f := s.cur.file()
		e.Uint(uint64(s.cur.size()))
		e.Uint(uint64(at.off))
		e.Uint(uint64(at.line))
		e.Byte(byte(at.mode))
		e.Uint(uint64(at.single))
		n, sum := fingerprint(f, at.off)
		e.Uint(uint64(n))
		e.Fixed32(sum)
	}
	return e
}

// fingerprint returns the number of bytes before off that it hashed (up
// to fingerprintBytes; 0 when they cannot be read) and their CRC-32C.
func fingerprint(f *os.File, off int64) (int, uint32) {
	n := int(min(off, fingerprintBytes))
	if f == nil || n == 0 {
		return 0, 0
	}
	buf := make([]byte, n)
	if k, err := f.ReadAt(buf, off-int64(n)); k != n {
		_ = err
		return 0, 0
	}
	return n, crc32.Checksum(buf, castagnoli)
}

// Seek implements source.Resumable on a source that has delivered
// nothing: it continues at pos. A version 2 position opens the file it
// names at its byte offset; nothing before it is read again. It checks
// that the input still holds what was read: the file is at the same place
// in the list of files, is at least as long as the offset, and holds the
// same bytes before it. A version 1 position (records delivered) is
// reached by reading the input again from the start.
//
// Errors: pos does not parse (or is of another version), the source
// already delivered records, or the input changed since the position was
// taken (an error naming the file, with its size now and the size and
// offset the position recorded).
func (s *Source) Seek(ctx context.Context, pos []byte) error {
	err := s.seek(ctx, pos)
	// Finish counts records as Claim does, from the position on.
	s.finished = s.delivered
	return err
}

// seek is Seek.
func (s *Source) seek(ctx context.Context, pos []byte) error {
	if s.delivered != 0 {
		return fmt.Errorf("file source: seek after %d records were delivered", s.delivered)
	}
	d := state.NewDecoder(pos)
	v := d.Section("file source position", positionV1, positionV2, positionV3)
	if v == positionV1 {
		return s.seekByCount(ctx, int64(d.Uint()), d)
	}
	delivered := int64(d.Uint())
	next := d.Len(math.MaxInt32, 0)
	eof := d.Bool()
	var path string
	if next > 0 {
		path = d.String()
	}
	var at readerAt
	var size int64
	var fpLen int
	var fpSum uint32
	open := d.Bool()
	if open {
		size = int64(d.Uint())
		at.off = int64(d.Uint())
		at.line = int64(d.Uint())
		at.mode = lineMode(d.Byte())
		at.single = int64(d.Uint())
		fpLen = d.Len(fingerprintBytes, 0)
		fpSum = d.Fixed32()
		if at.mode > modeCR {
			d.Fail("line mode %d", at.mode)
		}
	}
	s.d.readState(d)
	var skip int64
	if v == positionV3 {
		skip = int64(d.Uint())
	}
	if hasReplay := d.Bool(); hasReplay != (s.rp != nil) {
		d.Fail("the position was taken with replay %v, the source has replay %v", hasReplay, s.rp != nil)
	}
	var held []perturb.Held[*entry]
	var rs replayState
	if s.rp != nil {
		held, rs = s.rp.readState(d, s)
	}
	if d.Remaining() != 0 && d.Err() == nil {
		d.Fail("%d bytes after the position", d.Remaining())
	}
	if err := d.Err(); err != nil {
		return fmt.Errorf("file source: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if next > len(s.files) {
		return fmt.Errorf("file source: the input changed since the checkpoint: it had opened %d files (the last %s), the input now lists %d", next, path, len(s.files))
	}
	if next > 0 && s.files[next-1] != path {
		return fmt.Errorf("file source: the input changed since the checkpoint: file %d of the input was %s, it is now %s", next, path, s.files[next-1])
	}
	if s.rp != nil {
		if err := s.rp.sch.SetState(rs.sched); err != nil {
			return fmt.Errorf("file source: replay: %w", err)
		}
	}
	if open {
		if err := checkUnchanged(path, size, at.off, fpLen, fpSum); err != nil {
			return err
		}
		if err := s.open(path, at); err != nil {
			return err
		}
	}
	s.next, s.eof, s.delivered = next, eof, delivered
	if skip > 0 {
		// The records of a claimed batch a fed replay had taken: their
		// numbering is in the derived state read above.
		var m source.Meta
		var a source.Arena
		for range skip {
			a.Reset()
			m = source.Meta{}
			end, err := s.nextRecord(nil, &m, &a, true)
			if err != nil {
				return err
			}
			if end {
				return fmt.Errorf("file source: the input changed since the checkpoint: it ends before the %d records the checkpoint had read past %s", skip, path)
			}
			s.delivered++
		}
		s.starts = nil
	}
	if s.rp != nil {
		s.rp.inputDone = rs.inputDone
		s.rp.q.Restore(held, rs.horizon, rs.known, rs.closed)
	}
	return nil
}

// checkUnchanged checks that the file at path still holds what a position
// read: at least off bytes, and the same fpLen bytes before off.
func checkUnchanged(path string, size, off int64, fpLen int, fpSum uint32) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("file source: the checkpoint was reading %s: %w", path, err)
	}
	if st.Size() < off {
		return fmt.Errorf("file source: %s changed since the checkpoint: it holds %d bytes now; the checkpoint had read %d bytes of it (of %d then)", path, st.Size(), off, size)
	}
	if fpLen == 0 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("file source: %w", err)
	}
	defer f.Close()
	if n, sum := fingerprint(f, off); n != fpLen || sum != fpSum {
		return fmt.Errorf("file source: %s changed since the checkpoint: the %d bytes before offset %d differ from those read (it holds %d bytes now, %d then)", path, fpLen, off, st.Size(), size)
	}
	return nil
}

// seekByCount continues after the first want records (a version 1
// position) by reading them again: the replay's order, the ordinals and
// the partitions derive from everything before a record.
func (s *Source) seekByCount(ctx context.Context, want int64, d *state.Decoder) error {
	if err := d.Err(); err != nil {
		return fmt.Errorf("file source: %w", err)
	}
	var b source.Batch
	for s.delivered < want {
		b.Reset()
		st, err := s.Next(ctx, &b, int(min(want-s.delivered, 1024)))
		if err != nil {
			return err
		}
		if st == source.End && s.delivered < want {
			return fmt.Errorf("file source: the checkpoint is at record %d, the input holds %d: it changed since", want, s.delivered)
		}
	}
	return nil
}

// appendState writes the derived state (see Position).
func (d *derive) appendState(e *state.Encoder) {
	e.Bool(d.hasOrd)
	if d.hasOrd {
		e.Uint(uint64(d.n))
		e.Uint(uint64(d.nullN))
		e.Bool(d.prevNull)
		e.Bytes8(d.prev)
		keys := make([]string, len(d.counts))
		for k, i := range d.group {
			keys[i] = k
		}
		e.Uint(uint64(len(d.counts)))
		for i, c := range d.counts {
			e.String(keys[i])
			e.Uint(uint64(c))
		}
	}
	e.Bool(d.hasPart)
	if d.hasPart {
		e.Uint(uint64(len(d.names)))
		for _, n := range d.names {
			e.String(n)
		}
		e.Uint(uint64(d.lastPart))
	}
	e.Bool(d.hasArr)
	if d.hasArr {
		e.Int(d.lastArrival)
	}
}

// readState restores what appendState wrote.
func (d *derive) readState(dec *state.Decoder) {
	if dec.Bool() != d.hasOrd {
		dec.Fail("the position was taken with another ordinal setting")
		return
	}
	if d.hasOrd {
		d.n = int64(dec.Uint())
		d.nullN = int64(dec.Uint())
		d.prevNull = dec.Bool()
		d.prev = append(d.prev[:0], dec.Bytes8()...)
		n := dec.Len(math.MaxInt32, 2)
		d.counts = d.counts[:0]
		d.group = make(map[string]int, n)
		for i := range n {
			d.group[dec.String()] = i
			d.counts = append(d.counts, int64(dec.Uint()))
		}
		if len(d.group) != len(d.counts) {
			dec.Fail("ordinal values repeat")
		}
	}
	if dec.Bool() != d.hasPart {
		dec.Fail("the position was taken with another partition_field setting")
		return
	}
	if d.hasPart {
		n := dec.Len(math.MaxInt32, 1)
		d.names = d.names[:0]
		clear(d.index)
		for i := range n {
			name := dec.String()
			d.names = append(d.names, name)
			d.index[name] = i
		}
		d.lastPart = int(dec.Uint())
		if len(d.index) != len(d.names) || (d.lastPart != 0 && d.lastPart >= len(d.names)) {
			dec.Fail("partition names")
		}
	}
	if dec.Bool() != d.hasArr {
		dec.Fail("the position was taken with another arrival_time_field setting")
		return
	}
	if d.hasArr {
		d.lastArrival = dec.Int()
	}
}

// replayState is the replayer's state besides the held deliveries.
type replayState struct {
	inputDone     bool
	horizon       int64
	known, closed bool
	sched         []byte
}

// appendState writes the replayer's state (see Position).
func (rp *replayer) appendState(e *state.Encoder) {
	e.Bool(rp.inputDone)
	e.Bytes8(rp.sch.AppendState(nil))
	held, horizon, known, closed := rp.q.Snapshot()
	e.Int(horizon)
	e.Bool(known)
	e.Bool(closed)
	// Held entries name their file: a table of the paths.
	paths := map[string]int{}
	var list []string
	for _, h := range held {
		if _, ok := paths[h.V.meta.Pos.Source]; !ok {
			paths[h.V.meta.Pos.Source] = len(list)
			list = append(list, h.V.meta.Pos.Source)
		}
	}
	e.Uint(uint64(len(list)))
	for _, p := range list {
		e.String(p)
	}
	e.Uint(uint64(len(rp.schema.Fields)))
	e.Uint(uint64(len(held)))
	for _, h := range held {
		e.Int(h.Arrival)
		e.Int(h.Seq)
		e.Byte(byte(h.Kind))
		e.Bool(h.Pending)
		m := &h.V.meta
		e.Uint(uint64(m.Partition))
		e.Bool(m.Redelivery)
		e.Uint(uint64(paths[m.Pos.Source]))
		e.Int(m.Pos.Line)
		e.Int(m.Pos.Offset)
		e.Bytes8(h.V.raw)
		e.Bool(m.Err != nil)
		if m.Err != nil {
			e.String(m.Err.Field)
			e.String(m.Err.Rule)
			e.String(m.Err.Reason)
		}
		appendRow(e, rp.schema, &h.V.row)
	}
}

// appendRow writes every field of r: null, or its value.
func appendRow(e *state.Encoder, sc *row.Schema, r *row.Row) {
	for _, f := range sc.Fields {
		if r.IsNull(f.Index) {
			e.Bool(false)
			continue
		}
		e.Bool(true)
		switch f.Kind {
		case row.KindString:
			e.String(r.S[f.Slot])
		case row.KindDecimal:
			e.Decimal(r.D[f.Slot])
		default:
			e.Int(r.I[f.Slot])
		}
	}
}

// readState reads what appendState wrote: the held deliveries, in
// entries of their own, and the rest.
func (rp *replayer) readState(d *state.Decoder, s *Source) ([]perturb.Held[*entry], replayState) {
	var st replayState
	st.inputDone = d.Bool()
	st.sched = d.Bytes8()
	st.horizon = d.Int()
	st.known = d.Bool()
	st.closed = d.Bool()
	np := d.Len(math.MaxInt32, 1)
	paths := make([]string, 0, np)
	for range np {
		paths = append(paths, d.String())
	}
	if nf := int(d.Uint()); d.Err() == nil && nf != len(rp.schema.Fields) {
		d.Fail("the held records have %d fields, the source schema %d", nf, len(rp.schema.Fields))
	}
	n := d.Len(math.MaxInt32, 8)
	held := make([]perturb.Held[*entry], 0, n)
	var a source.Arena
	var r row.Row
	for range n {
		var h perturb.Held[*entry]
		h.Arrival = d.Int()
		h.Seq = d.Int()
		h.Kind = perturb.Kind(d.Byte())
		h.Pending = d.Bool()
		var m source.Meta
		m.Partition = int(d.Uint())
		m.Redelivery = d.Bool()
		pi := int(d.Uint())
		m.Pos.Line = d.Int()
		m.Pos.Offset = d.Int()
		raw := d.Bytes8()
		if d.Bool() {
			m.Err = &source.DecodeError{Field: d.String(), Rule: d.String(), Reason: d.String()}
		}
		a.Reset()
		rp.schema.Shape(&r)
		readRow(d, rp.schema, &r, &a)
		if d.Err() != nil {
			break
		}
		if pi >= len(paths) || m.Partition >= len(rp.names) || h.Kind > perturb.Conflict {
			d.Fail("held record %d: path %d, partition %d, kind %d", len(held), pi, m.Partition, h.Kind)
			break
		}
		m.Pos = changelog.Position{Source: paths[pi], Partition: rp.names[m.Partition], Line: m.Pos.Line, Offset: m.Pos.Offset}
		m.Raw = raw
		h.V = rp.hold(&r, &m, m.Partition)
		held = append(held, h)
	}
	return held, st
}

// readRow reads what appendRow wrote into r (shaped, all null), its
// strings into a.
func readRow(d *state.Decoder, sc *row.Schema, r *row.Row, a *source.Arena) {
	for _, f := range sc.Fields {
		if !d.Bool() {
			continue
		}
		switch f.Kind {
		case row.KindString:
			r.S[f.Slot] = a.String(d.Bytes8())
		case row.KindDecimal:
			r.D[f.Slot] = d.Decimal()
		default:
			r.I[f.Slot] = d.Int()
		}
		r.SetValid(f.Index)
	}
}
