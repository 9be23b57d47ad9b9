package pgcdc

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// The pgoutput logical replication protocol, version 1 (PostgreSQL's
// "Logical Replication Message Formats", chapter 55.9 of the PostgreSQL 15
// manual): each XLogData payload holds one message, its first byte the
// message type.
//
// tidemark decodes the messages itself rather than with pglogrepl's
// message types: pglogrepl's TupleData.Decode indexes past the end of a
// truncated message (a panic, where tidemark must return an error naming
// the offset: TestDecodeTruncated) and allocates every column's bytes;
// this decoder checks every length and hands out slices of the message.
// pglogrepl still carries the replication protocol around the messages
// (slot creation, START_REPLICATION, XLogData, keepalives, standby status
// updates).

// Message types (the first byte of a pgoutput message).
const (
	msgBegin    = 'B'
	msgCommit   = 'C'
	msgOrigin   = 'O'
	msgRelation = 'R'
	msgType     = 'Y'
	msgInsert   = 'I'
	msgUpdate   = 'U'
	msgDelete   = 'D'
	msgTruncate = 'T'
	msgMessage  = 'M'
)

// Column kinds of a TupleData.
const (
	colNull      = 'n'
	colUnchanged = 'u' // an unchanged TOASTed value: not sent
	colText      = 't'
	colBinary    = 'b'
)

// MaxColumns bounds the columns of a relation or tuple a message may
// declare (PostgreSQL's MaxTupleAttributeNumber is 1664).
const MaxColumns = 1664

// DecodeError says where a pgoutput message is malformed.
type DecodeError struct {
	Type   byte // the message type, 0 before it is read
	Offset int  // byte offset in the message
	Reason string
}

// Error implements error: "pgoutput message 'I' at byte 9: ...".
func (e *DecodeError) Error() string {
	if e.Type == 0 {
		return fmt.Sprintf("pgoutput message at byte %d: %s", e.Offset, e.Reason)
	}
	return fmt.Sprintf("pgoutput message %q at byte %d: %s", rune(e.Type), e.Offset, e.Reason)
}

// reader reads a message's fields, remembering the first error.
type reader struct {
	b   []byte
	off int
	typ byte
	err *DecodeError
}

func (r *reader) fail(reason string) {
	if r.err == nil {
		r.err = &DecodeError{Type: r.typ, Offset: r.off, Reason: reason}
	}
}

func (r *reader) byte1(what string) byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail(what + ": message ends")
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) fixed(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b)-r.off < n {
		r.fail(what + ": message ends")
		return nil
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}

func (r *reader) u16(what string) uint16 {
	if s := r.fixed(2, what); s != nil {
		return binary.BigEndian.Uint16(s)
	}
	return 0
}

func (r *reader) u32(what string) uint32 {
	if s := r.fixed(4, what); s != nil {
		return binary.BigEndian.Uint32(s)
	}
	return 0
}

func (r *reader) u64(what string) uint64 {
	if s := r.fixed(8, what); s != nil {
		return binary.BigEndian.Uint64(s)
	}
	return 0
}

// str reads a NUL-terminated string (without the NUL).
func (r *reader) str(what string) string {
	if r.err != nil {
		return ""
	}
	for i := r.off; i < len(r.b); i++ {
		if r.b[i] == 0 {
			s := string(r.b[r.off:i])
			r.off = i + 1
			return s
		}
	}
	r.fail(what + ": no terminating NUL")
	return ""
}

// Begin is a transaction's first message.
type Begin struct {
	FinalLSN   uint64 // the LSN of the commit record
	CommitTime int64  // µs since 2000-01-01 UTC (PostgreSQL's epoch)
	Xid        uint32
}

// Commit is a transaction's last message.
type Commit struct {
	Flags      uint8
	CommitLSN  uint64 // the LSN of the commit record
	EndLSN     uint64 // the end of the commit record: where a restart resumes
	CommitTime int64  // µs since 2000-01-01 UTC
}

// Column is one column of a Relation message.
type Column struct {
	Key    bool // part of the replica identity
	Name   string
	TypeID uint32 // the type's OID
	TypMod int32
}

// Relation describes a table: sent before the first change of the table
// in a session, and again after its schema changed.
type Relation struct {
	ID        uint32
	Namespace string
	Name      string
	Identity  byte // replica identity: 'd' default, 'n' nothing, 'f' full, 'i' index
	Columns   []Column
}

// Tuple is a TupleData: per column its kind (colNull, colUnchanged,
// colText, colBinary) and, for text and binary, its bytes (slices of the
// message).
type Tuple struct {
	Kinds []byte
	Data  [][]byte
}

// Change is an Insert, Update or Delete message.
type Change struct {
	Kind     byte // msgInsert, msgUpdate or msgDelete
	Relation uint32
	// OldKind is 'K' (the replica identity's columns), 'O' (the whole old
	// row: REPLICA IDENTITY FULL) or 0 when the message has no old tuple
	// (an insert; an update that left the identity unchanged).
	OldKind byte
	Old     Tuple
	New     Tuple // the new row (insert, update); empty for a delete
}

// Truncate lists the relations a TRUNCATE emptied.
type Truncate struct {
	Options   uint8 // 1: CASCADE, 2: RESTART IDENTITY
	Relations []uint32
}

// LogicalMessage is a message written by pg_logical_emit_message (sent
// with the "messages" option).
type LogicalMessage struct {
	Transactional bool
	LSN           uint64
	Prefix        string
	Content       []byte
}

// Message is one decoded pgoutput message: Type says which field holds it.
// Its tuples and content are slices of the decoded bytes; a Message is
// reused by Decoder.Decode.
type Message struct {
	Type     byte
	Begin    Begin
	Commit   Commit
	Relation Relation
	Change   Change
	Truncate Truncate
	Logical  LogicalMessage
}

// Decoder decodes pgoutput messages into a reused Message.
type Decoder struct {
	m Message
}

// Decode decodes one pgoutput message. The returned Message and the byte
// slices in it are valid until the next call and while b is unchanged.
// Origin and Type messages are decoded only for their type. Errors are
// *DecodeError: a message cut short, a count beyond MaxColumns, an
// unknown message type or tuple kind.
func (d *Decoder) Decode(b []byte) (*Message, error) {
	m := &d.m
	r := reader{b: b}
	m.Type = r.byte1("message type")
	r.typ = m.Type
	switch m.Type {
	case msgBegin:
		m.Begin = Begin{FinalLSN: r.u64("final LSN"), CommitTime: int64(r.u64("commit time")), Xid: r.u32("xid")}
	case msgCommit:
		m.Commit = Commit{Flags: r.byte1("flags"), CommitLSN: r.u64("commit LSN"), EndLSN: r.u64("end LSN"), CommitTime: int64(r.u64("commit time"))}
	case msgOrigin, msgType:
		// Not used: an origin names where a replicated change came from,
		// a type message a user-defined type's name.
		return m, nil
	case msgRelation:
		rel := &m.Relation
		rel.ID = r.u32("relation id")
		rel.Namespace = r.str("namespace")
		rel.Name = r.str("relation name")
		rel.Identity = r.byte1("replica identity")
		n := int(r.u16("column count"))
		if n > MaxColumns {
			r.fail("column count " + strconv.Itoa(n) + " is more than " + strconv.Itoa(MaxColumns))
		}
		rel.Columns = rel.Columns[:0]
		for i := 0; i < n && r.err == nil; i++ {
			flags := r.byte1("column flags")
			name := r.str("column name")
			typ := r.u32("column type")
			mod := int32(r.u32("column type modifier"))
			rel.Columns = append(rel.Columns, Column{Key: flags&1 != 0, Name: name, TypeID: typ, TypMod: mod})
		}
	case msgInsert:
		c := &m.Change
		c.Kind, c.Relation, c.OldKind = msgInsert, r.u32("relation id"), 0
		c.Old.reset()
		if k := r.byte1("tuple type"); r.err == nil && k != 'N' {
			r.off--
			r.fail(fmt.Sprintf("tuple type %q, want 'N'", rune(k)))
		}
		r.tuple(&c.New)
	case msgUpdate:
		c := &m.Change
		c.Kind, c.Relation, c.OldKind = msgUpdate, r.u32("relation id"), 0
		c.Old.reset()
		k := r.byte1("tuple type")
		if k == 'K' || k == 'O' {
			c.OldKind = k
			r.tuple(&c.Old)
			k = r.byte1("tuple type")
		}
		if r.err == nil && k != 'N' {
			r.off--
			r.fail(fmt.Sprintf("tuple type %q, want 'K', 'O' or 'N'", rune(k)))
		}
		r.tuple(&c.New)
	case msgDelete:
		c := &m.Change
		c.Kind, c.Relation = msgDelete, r.u32("relation id")
		c.New.reset()
		k := r.byte1("tuple type")
		if r.err == nil && k != 'K' && k != 'O' {
			r.off--
			r.fail(fmt.Sprintf("tuple type %q, want 'K' or 'O'", rune(k)))
		}
		c.OldKind = k
		r.tuple(&c.Old)
	case msgTruncate:
		t := &m.Truncate
		n := int(r.u32("relation count"))
		t.Options = r.byte1("options")
		if n > len(b)/4 {
			r.fail("relation count " + strconv.Itoa(n) + " does not fit the message")
		}
		t.Relations = t.Relations[:0]
		for i := 0; i < n && r.err == nil; i++ {
			t.Relations = append(t.Relations, r.u32("relation id"))
		}
	case msgMessage:
		lm := &m.Logical
		lm.Transactional = r.byte1("flags")&1 != 0
		lm.LSN = r.u64("message LSN")
		lm.Prefix = r.str("prefix")
		n := int(r.u32("content length"))
		if n < 0 || n > len(b) {
			r.fail("content length " + strconv.Itoa(n) + " does not fit the message")
		}
		lm.Content = r.fixed(n, "content")
	default:
		if r.err == nil {
			r.off--
			r.fail("unknown message type")
		}
	}
	if r.err == nil && r.off != len(b) {
		r.fail(strconv.Itoa(len(b)-r.off) + " bytes after the message")
	}
	if r.err != nil {
		return nil, r.err
	}
	return m, nil
}

func (t *Tuple) reset() {
	t.Kinds = t.Kinds[:0]
	clear(t.Data)
	t.Data = t.Data[:0]
}

// tuple reads a TupleData into t.
func (r *reader) tuple(t *Tuple) {
	t.reset()
	n := int(r.u16("tuple column count"))
	if n > MaxColumns {
		r.fail("tuple column count " + strconv.Itoa(n) + " is more than " + strconv.Itoa(MaxColumns))
	}
	for i := 0; i < n && r.err == nil; i++ {
		k := r.byte1("column kind")
		var data []byte
		switch k {
		case colNull, colUnchanged:
		case colText, colBinary:
			l := r.u32("column length")
			if r.err == nil && uint64(l) > uint64(len(r.b)-r.off) {
				r.fail("column " + strconv.Itoa(i+1) + ": length " + strconv.FormatUint(uint64(l), 10) + " does not fit the message")
			}
			data = r.fixed(int(l), "column data")
		default:
			if r.err == nil {
				r.off--
				r.fail(fmt.Sprintf("column %d: unknown kind %q", i+1, rune(k)))
			}
		}
		t.Kinds = append(t.Kinds, k)
		t.Data = append(t.Data, data)
	}
}

// Appenders of pgoutput messages, for tests and fuzz seeds (the server
// writes the real ones).

// AppendBegin appends a Begin message.
func AppendBegin(dst []byte, b Begin) []byte {
	dst = append(dst, msgBegin)
	dst = binary.BigEndian.AppendUint64(dst, b.FinalLSN)
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.CommitTime))
	return binary.BigEndian.AppendUint32(dst, b.Xid)
}

// AppendCommit appends a Commit message.
func AppendCommit(dst []byte, c Commit) []byte {
	dst = append(dst, msgCommit, c.Flags)
	dst = binary.BigEndian.AppendUint64(dst, c.CommitLSN)
	dst = binary.BigEndian.AppendUint64(dst, c.EndLSN)
	return binary.BigEndian.AppendUint64(dst, uint64(c.CommitTime))
}

// AppendRelation appends a Relation message.
func AppendRelation(dst []byte, rel *Relation) []byte {
	dst = append(dst, msgRelation)
	dst = binary.BigEndian.AppendUint32(dst, rel.ID)
	dst = append(append(dst, rel.Namespace...), 0)
	dst = append(append(dst, rel.Name...), 0)
	dst = append(dst, rel.Identity)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(rel.Columns)))
	for _, c := range rel.Columns {
		var f byte
		if c.Key {
			f = 1
		}
		dst = append(dst, f)
		dst = append(append(dst, c.Name...), 0)
		dst = binary.BigEndian.AppendUint32(dst, c.TypeID)
		dst = binary.BigEndian.AppendUint32(dst, uint32(c.TypMod))
	}
	return dst
}

// AppendTuple appends a TupleData: kinds[i] with data[i] for text and
// binary columns.
func AppendTuple(dst []byte, t Tuple) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(t.Kinds)))
	for i, k := range t.Kinds {
		dst = append(dst, k)
		if k == colText || k == colBinary {
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(t.Data[i])))
			dst = append(dst, t.Data[i]...)
		}
	}
	return dst
}

// AppendChange appends an Insert, Update or Delete message.
func AppendChange(dst []byte, c *Change) []byte {
	dst = append(dst, c.Kind)
	dst = binary.BigEndian.AppendUint32(dst, c.Relation)
	if c.OldKind != 0 {
		dst = append(dst, c.OldKind)
		dst = AppendTuple(dst, c.Old)
	}
	if c.Kind != msgDelete {
		dst = append(dst, 'N')
		dst = AppendTuple(dst, c.New)
	}
	return dst
}

// AppendLogical appends a logical decoding message.
func AppendLogical(dst []byte, lm LogicalMessage) []byte {
	var f byte
	if lm.Transactional {
		f = 1
	}
	dst = append(dst, msgMessage, f)
	dst = binary.BigEndian.AppendUint64(dst, lm.LSN)
	dst = append(append(dst, lm.Prefix...), 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(lm.Content)))
	return append(dst, lm.Content...)
}
