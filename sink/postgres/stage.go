package postgres

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// batch holds result rows waiting to be applied, collapsed per window and
// key, and split into rounds that set-based statements can apply.
//
// The rules of the table (an upsert applies when its version is >= the
// stored one, a delete when the stored version is lower than its own)
// make a run of operations on one key equivalent to its last operation
// alone whenever that last one dominates the others: an upsert whose
// version is >= every earlier one, or a delete whose version is > every
// earlier one. (If the stored version is above the last operation's, none
// of the run applies, nor does the last alone; otherwise the stored row
// or any earlier result is overwritten or removed by the last.) So a new
// operation on a key that dominates the key's latest entry replaces it;
// one that does not (an older version arriving after a newer) opens a new
// entry for the key in the next round. One INSERT … ON CONFLICT DO UPDATE
// cannot touch a row twice, and within a round every key appears once;
// rounds are applied in order, so each key's entries apply in their
// emission order. A changelog's versions increase per key, so a batch
// normally has one round.
type batch struct {
	nKey, width int // key columns; key + value columns
	kinds       []row.Kind
	names       []string
	entries     []entry
	vals        []row.Value      // width values per entry
	last        map[string]int32 // encoded (window_start, key) → latest entry
	rounds      int32            // rounds in use: 1 + the highest entry round (0 when empty)
	deletes     int              // entries that are deletes
	keyBuf      []byte
	// text holds the bytes of the batch's strings (its values' and its
	// keys in last), in chunks: a staged row's strings are copied in
	// here, not allocated one by one. Nothing outside the batch keeps
	// them (appendTo and COPY read them before the batch is reset), so
	// reset reuses the memory.
	text   []byte
	chunks [][]byte // the full chunks before text, kept until reset
}

// textChunk is the size of a batch's string chunks.
const textChunk = 64 << 10

// own returns a copy of b held in the batch's text (valid until reset).
func (b *batch) own(s []byte) string {
	if len(s) == 0 {
		return ""
	}
	if cap(b.text)-len(b.text) < len(s) {
		if len(b.text) > 0 {
			b.chunks = append(b.chunks, b.text)
		}
		b.text = make([]byte, 0, max(textChunk, len(s)))
	}
	n := len(b.text)
	b.text = append(b.text, s...)
	return unsafe.String(&b.text[n], len(s))
}

// entry is one staged operation (the last of a run on one key).
type entry struct {
	op      changelog.Op // Insert, UpdateAfter or Delete
	round   int32
	final   bool
	maxVer  uint64 // highest version of the operations merged into the entry
	version uint64
	ws, we  int64
	wm, upd int64
}

func newBatch(cols []column, nKey int) *batch {
	user := cols[2 : len(cols)-4]
	b := &batch{nKey: nKey, width: len(user), last: map[string]int32{}}
	for _, c := range user {
		b.kinds = append(b.kinds, c.kind)
		b.names = append(b.names, c.name)
	}
	return b
}

// reset empties the batch, keeping its memory.
func (b *batch) reset() {
	b.entries = b.entries[:0]
	clear(b.vals) // drop references to strings
	b.vals = b.vals[:0]
	clear(b.last)
	b.rounds, b.deletes = 0, 0
	b.text = b.text[:0]
	clear(b.chunks)
	b.chunks = b.chunks[:0]
}

// check returns an error when r does not fit the table: a wrong number of
// columns, a value of the wrong kind (an int is accepted for a decimal),
// an unknown op or a version above the bigint range.
func (b *batch) check(r *changelog.Row) error {
	if r.Op > changelog.Delete {
		return fmt.Errorf("unknown op %s", r.Op)
	}
	if len(r.Key) != b.nKey || len(r.Values) != b.width-b.nKey {
		return fmt.Errorf("row has %d key and %d value columns, table has %d and %d",
			len(r.Key), len(r.Values), b.nKey, b.width-b.nKey)
	}
	if r.Version > math.MaxInt64 {
		return fmt.Errorf("version %d is above the bigint range", r.Version)
	}
	for i, v := range r.Key {
		if err := checkKind(b.names[i], b.kinds[i], v); err != nil {
			return err
		}
	}
	for i, v := range r.Values {
		if err := checkKind(b.names[b.nKey+i], b.kinds[b.nKey+i], v); err != nil {
			return err
		}
	}
	return nil
}

// checkKind returns an error unless v is null, of kind k, or an int for a
// decimal column.
func checkKind(name string, k row.Kind, v row.Value) error {
	if v.Kind == row.KindNull || v.Kind == k || (v.Kind == row.KindInt && k == row.KindDecimal) {
		return nil
	}
	return fmt.Errorf("column %q is %s, value is %s", name, k, v.Kind)
}

// add stages r (checked, not update_before), copying its values.
func (b *batch) add(r *changelog.Row) {
	e := entry{
		op: r.Op, final: r.IsFinal, maxVer: r.Version, version: r.Version,
		ws: r.WindowStart, we: r.WindowEnd, wm: r.WatermarkAt, upd: r.UpdatedAt,
	}
	k := b.encodeKey(r)
	i, ok := b.last[string(k)]
	if ok {
		old := &b.entries[i]
		dominates := r.Version > old.maxVer || (r.Version == old.maxVer && r.Op != changelog.Delete)
		if dominates {
			if old.op == changelog.Delete {
				b.deletes--
			}
			if r.Op == changelog.Delete {
				b.deletes++
			}
			e.round = old.round
			*old = e
			b.setValues(int(i), r)
			return
		}
		e.round = old.round + 1
	}
	b.entries = append(b.entries, e)
	b.vals = append(b.vals, make([]row.Value, b.width)...)
	n := int32(len(b.entries) - 1)
	b.setValues(int(n), r)
	b.last[b.own(k)] = n
	if r.Op == changelog.Delete {
		b.deletes++
	}
	b.rounds = max(b.rounds, e.round+1)
}

// setValues copies r's key and values into entry i's slots.
func (b *batch) setValues(i int, r *changelog.Row) {
	dst := b.vals[i*b.width : (i+1)*b.width]
	for j, v := range r.Key {
		if v.Kind == row.KindString {
			v.S = b.own(bytesOf(v.S)) // the row's strings may be reused after Write
		}
		dst[j] = v
	}
	for j, v := range r.Values {
		if v.Kind == row.KindString {
			v.S = b.own(bytesOf(v.S))
		}
		dst[b.nKey+j] = v
	}
}

// bytesOf views s's bytes (own copies them).
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// values returns entry i's key and value columns.
func (b *batch) values(i int) []row.Value { return b.vals[i*b.width : (i+1)*b.width] }

// encodeKey encodes r's window_start and key as the table's unique index
// compares them: decimals by value (2.0 and 2.00 are one key), NULLs equal.
func (b *batch) encodeKey(r *changelog.Row) []byte {
	k := binary.AppendVarint(b.keyBuf[:0], r.WindowStart)
	for _, v := range r.Key {
		k = append(k, byte(v.Kind))
		switch v.Kind {
		case row.KindNull:
		case row.KindString:
			k = binary.AppendUvarint(k, uint64(len(v.S)))
			k = append(k, v.S...)
		case row.KindDecimal:
			s := v.D.String() // trailing zeros removed
			k = binary.AppendUvarint(k, uint64(len(s)))
			k = append(k, s...)
		default:
			k = binary.AppendVarint(k, v.I)
		}
	}
	b.keyBuf = k
	return k
}

// preparedVersion is the first byte of what Prepare returns.
const preparedVersion = 1

// maxPreparedRows bounds the row count a prepared encoding may claim.
const maxPreparedRows = 1 << 30

// encode appends the batch's entries in order, in the state codec:
//
//	version byte (1), key columns, value columns, entry count, then per
//	entry: op byte, window_start, window_end, version, is_final,
//	watermark_at, updated_at, then its key and value columns (state
//	Encoder.Value: kind byte and payload; decimals as exact text).
//
// Decoding and adding the entries again rebuilds an equivalent batch.
func (b *batch) encode(dst []byte) []byte {
	e := state.NewEncoder(dst)
	e.Byte(preparedVersion)
	e.Uint(uint64(b.nKey))
	e.Uint(uint64(b.width - b.nKey))
	e.Uint(uint64(len(b.entries)))
	for i := range b.entries {
		x := &b.entries[i]
		e.Byte(byte(x.op))
		e.Int(x.ws)
		e.Int(x.we)
		e.Uint(x.version)
		e.Bool(x.final)
		e.Int(x.wm)
		e.Int(x.upd)
		for _, v := range b.values(i) {
			appendValue(e, v, &b.keyBuf)
		}
	}
	return e.Bytes()
}

// appendValue is e.Value(v), a decimal's text written without allocating
// (appendDecimal; the bytes are the same: the kind byte, then the text as
// Bytes8). scratch is reused.
func appendValue(e *state.Encoder, v row.Value, scratch *[]byte) {
	if v.Kind != row.KindDecimal {
		e.Value(v)
		return
	}
	e.Byte(byte(row.KindDecimal))
	*scratch = appendDecimal((*scratch)[:0], v.D)
	e.Bytes8(*scratch)
}

// decode adds the rows encoded in p (see encode) to the batch. It returns
// an error, leaving the batch in an unspecified state, when p is corrupt
// or was prepared for other columns.
func (b *batch) decode(p []byte) error {
	d := state.NewDecoder(p)
	d.Section("postgres prepared rows", preparedVersion)
	nKey, nVal := d.Uint(), d.Uint()
	if d.Err() == nil && (nKey != uint64(b.nKey) || nVal != uint64(b.width-b.nKey)) {
		return fmt.Errorf("prepared rows have %d key and %d value columns, table has %d and %d",
			nKey, nVal, b.nKey, b.width-b.nKey)
	}
	n := d.Len(maxPreparedRows, 7)
	r := changelog.Row{Key: make([]row.Value, b.nKey), Values: make([]row.Value, b.width-b.nKey)}
	for i := 0; i < n && d.Err() == nil; i++ {
		r.Op = changelog.Op(d.Byte())
		r.WindowStart = d.Int()
		r.WindowEnd = d.Int()
		r.Version = d.Uint()
		r.IsFinal = d.Bool()
		r.WatermarkAt = d.Int()
		r.UpdatedAt = d.Int()
		for j := range r.Key {
			r.Key[j] = d.Value()
		}
		for j := range r.Values {
			r.Values[j] = d.Value()
		}
		if d.Err() != nil {
			break
		}
		if r.Op == changelog.UpdateBefore {
			d.Fail("entry %d: op update_before", i)
			break
		}
		if err := b.check(&r); err != nil {
			d.Fail("entry %d: %v", i, err)
			break
		}
		b.add(&r)
	}
	if d.Err() == nil && d.Remaining() > 0 {
		d.Fail("%d bytes after the last entry", d.Remaining())
	}
	if err := d.Err(); err != nil {
		return fmt.Errorf("prepared rows: %w", err)
	}
	return nil
}

// appendTo adds b's entries, in order, to dst.
func (b *batch) appendTo(dst *batch) {
	for i := range b.entries {
		x := &b.entries[i]
		v := b.values(i)
		r := changelog.Row{Op: x.op, WindowStart: x.ws, WindowEnd: x.we, Key: v[:b.nKey], Values: v[b.nKey:],
			Version: x.version, IsFinal: x.final, WatermarkAt: x.wm, UpdatedAt: x.upd}
		dst.add(&r)
	}
}
