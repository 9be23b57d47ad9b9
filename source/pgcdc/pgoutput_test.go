package pgcdc

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pglogrepl"
)

// seedMessages are one message of each type the decoder reads, written
// by the appenders.
func seedMessages() [][]byte {
	rel := &Relation{ID: 16384, Namespace: "public", Name: "orders", Identity: 'd', Columns: []Column{
		{Key: true, Name: "id", TypeID: oidInt4, TypMod: -1}, {Name: "note", TypeID: 25, TypMod: -1}}}
	return [][]byte{
		AppendBegin(nil, Begin{FinalLSN: 0x16B3748, CommitTime: 812345678901234, Xid: 741}),
		AppendCommit(nil, Commit{CommitLSN: 0x16B3748, EndLSN: 0x16B3778, CommitTime: 812345678901234}),
		AppendRelation(nil, rel),
		AppendChange(nil, &Change{Kind: msgInsert, Relation: 16384, New: Tuple{Kinds: []byte{colText, colNull}, Data: [][]byte{[]byte("1"), nil}}}),
		AppendChange(nil, &Change{Kind: msgUpdate, Relation: 16384, New: Tuple{Kinds: []byte{colText, colUnchanged}, Data: [][]byte{[]byte("1"), nil}}}),
		AppendChange(nil, &Change{Kind: msgUpdate, Relation: 16384, OldKind: 'K', Old: Tuple{Kinds: []byte{colText, colNull}, Data: [][]byte{[]byte("1"), nil}},
			New: Tuple{Kinds: []byte{colText, colText}, Data: [][]byte{[]byte("2"), []byte("x")}}}),
		AppendChange(nil, &Change{Kind: msgDelete, Relation: 16384, OldKind: 'O', Old: Tuple{Kinds: []byte{colText, colText}, Data: [][]byte{[]byte("2"), []byte("x")}}}),
		AppendLogical(nil, LogicalMessage{LSN: 0x16B3800, Prefix: "tidemark_heartbeat", Content: []byte("slot")}),
		{msgTruncate, 0, 0, 0, 1, 0, 0, 0, 0x40, 0},
	}
}

// TestDecodeRoundTrip: each appended message decodes to its fields.
func TestDecodeRoundTrip(t *testing.T) {
	var d Decoder
	seeds := seedMessages()
	m, err := d.Decode(seeds[0])
	if err != nil || m.Begin != (Begin{FinalLSN: 0x16B3748, CommitTime: 812345678901234, Xid: 741}) {
		t.Fatalf("begin: %+v %v", m, err)
	}
	m, err = d.Decode(seeds[1])
	if err != nil || m.Commit != (Commit{CommitLSN: 0x16B3748, EndLSN: 0x16B3778, CommitTime: 812345678901234}) {
		t.Fatalf("commit: %+v %v", m, err)
	}
	m, err = d.Decode(seeds[2])
	if err != nil || m.Relation.Name != "orders" || m.Relation.Namespace != "public" || len(m.Relation.Columns) != 2 ||
		!m.Relation.Columns[0].Key || m.Relation.Columns[1].Key || m.Relation.Columns[1].TypeID != 25 || m.Relation.Identity != 'd' {
		t.Fatalf("relation: %+v %v", m.Relation, err)
	}
	m, err = d.Decode(seeds[5])
	if err != nil || m.Change.Kind != msgUpdate || m.Change.OldKind != 'K' || string(m.Change.Old.Data[0]) != "1" ||
		string(m.Change.New.Data[0]) != "2" || string(m.Change.New.Data[1]) != "x" || m.Change.Old.Kinds[1] != colNull {
		t.Fatalf("update: %+v %v", m.Change, err)
	}
	m, err = d.Decode(seeds[4])
	if err != nil || m.Change.OldKind != 0 || len(m.Change.Old.Kinds) != 0 || m.Change.New.Kinds[1] != colUnchanged {
		t.Fatalf("update without old tuple: %+v %v", m.Change, err)
	}
	m, err = d.Decode(seeds[7])
	if err != nil || m.Logical.Prefix != "tidemark_heartbeat" || string(m.Logical.Content) != "slot" || m.Logical.LSN != 0x16B3800 || m.Logical.Transactional {
		t.Fatalf("message: %+v %v", m.Logical, err)
	}
	m, err = d.Decode(seeds[8])
	if err != nil || len(m.Truncate.Relations) != 1 || m.Truncate.Relations[0] != 0x4000 {
		t.Fatalf("truncate: %+v %v", m.Truncate, err)
	}
}

// TestDecodeTruncated: every prefix of every message is an error naming
// its offset, never a panic; pglogrepl's own decoder panics on some.
func TestDecodeTruncated(t *testing.T) {
	var d Decoder
	for _, msg := range seedMessages() {
		for n := 0; n < len(msg); n++ {
			_, err := d.Decode(msg[:n])
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%q[:%d]: error %v, want a *DecodeError", msg, n, err)
			}
			if de.Offset > n {
				t.Fatalf("%q[:%d]: offset %d past the end", msg, n, de.Offset)
			}
		}
		if _, err := d.Decode(append(append([]byte(nil), msg...), 0)); err == nil || !strings.Contains(err.Error(), "after the message") {
			t.Fatalf("%q with a byte more: %v", msg, err)
		}
	}
	// The reason the decoder is tidemark's own.
	ins := seedMessages()[3]
	panicked := func() (p bool) {
		defer func() { p = recover() != nil }()
		var m pglogrepl.InsertMessage
		m.Decode(ins[1 : len(ins)-1])
		return false
	}()
	if !panicked {
		t.Log("pglogrepl's InsertMessage.Decode no longer panics on a cut tuple")
	}
}

// TestDecodeBadInput names what is wrong.
func TestDecodeBadInput(t *testing.T) {
	var d Decoder
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{[]byte{'Z'}, `pgoutput message 'Z' at byte 0: unknown message type`},
		{[]byte{}, `pgoutput message at byte 0: message type: message ends`},
		{[]byte{'I', 0, 0, 0, 1, 'X'}, `pgoutput message 'I' at byte 5: tuple type 'X', want 'N'`},
		{[]byte{'I', 0, 0, 0, 1, 'N', 0, 1, 'q'}, `pgoutput message 'I' at byte 8: column 1: unknown kind 'q'`},
		{[]byte{'I', 0, 0, 0, 1, 'N', 0, 1, 't', 0xff, 0xff, 0xff, 0xff, 'a'}, `pgoutput message 'I' at byte 13: column 1: length 4294967295 does not fit the message`},
		{[]byte{'D', 0, 0, 0, 1, 'N'}, `pgoutput message 'D' at byte 5: tuple type 'N', want 'K' or 'O'`},
		{[]byte{'R', 0, 0, 0, 1, 'p', 0, 't', 0, 'd', 0xff, 0xff}, `pgoutput message 'R' at byte 12: column count 65535 is more than 1664`},
		{[]byte{'R', 0, 0, 0, 1, 'p'}, `pgoutput message 'R' at byte 5: namespace: no terminating NUL`},
	} {
		_, err := d.Decode(c.in)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %s", c.in, err, c.want)
		}
	}
}

// FuzzDecode: no input panics; a decoded change's tuples hold one kind
// per column and bytes only for text and binary columns; decoding is
// deterministic.
func FuzzDecode(f *testing.F) {
	for _, s := range seedMessages() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d, e Decoder
		m, err := d.Decode(b)
		m2, err2 := e.Decode(b)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("two decoders disagree: %v, %v", err, err2)
		}
		if err != nil {
			return
		}
		if m.Type != m2.Type {
			t.Fatal("two decoders disagree on the type")
		}
		switch m.Type {
		case msgInsert, msgUpdate, msgDelete:
			for _, tu := range []Tuple{m.Change.Old, m.Change.New} {
				if len(tu.Kinds) != len(tu.Data) {
					t.Fatalf("%d kinds, %d data", len(tu.Kinds), len(tu.Data))
				}
				for i, k := range tu.Kinds {
					if (k == colText || k == colBinary) != (tu.Data[i] != nil) && len(tu.Data[i]) > 0 {
						t.Fatalf("column %d of kind %q has data %q", i, k, tu.Data[i])
					}
				}
			}
			if got := AppendChange(nil, &m.Change); m.Type != msgDelete && string(got) != string(b) && m.Change.OldKind != 0 {
				// Re-encoding a change gives its bytes back.
				t.Fatalf("re-encoded %q, decoded from %q", got, b)
			}
		}
	})
}
