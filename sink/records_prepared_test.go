package sink

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tidemark/tidemark/state"
)

// TestPreparedRecords: the layout kept in checkpoints, byte for byte
// (version 1, uvarint count, each record length-prefixed), read back to
// copies; empty input is no records; other versions, short input and
// trailing bytes fail.
func TestPreparedRecords(t *testing.T) {
	recs := [][]byte{[]byte(`{"a":1}`), {}, []byte("x")}
	got := EncodePrepared(recs)
	want := []byte{1, 3, 7, '{', '"', 'a', '"', ':', '1', '}', 0, 1, 'x'}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding % x, want % x", got, want)
	}
	back, err := DecodePrepared(got, "test prepared records")
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 3 || string(back[0]) != `{"a":1}` || len(back[1]) != 0 || string(back[2]) != "x" {
		t.Fatalf("decoded %q", back)
	}
	got[3] = '['
	if string(back[0]) != `{"a":1}` {
		t.Fatal("decoded records share the input's bytes")
	}
	if back, err := DecodePrepared(nil, "t"); back != nil || err != nil {
		t.Fatalf("empty input: %q, %v", back, err)
	}
	for _, bad := range [][]byte{{2, 0}, want[:5], append(append([]byte(nil), want...), 0)} {
		if _, err := DecodePrepared(bad, "t"); err == nil {
			t.Errorf("% x: no error", bad)
		}
	}
	if _, err := DecodePrepared(want[:5], "t"); !errors.Is(err, state.ErrTruncated) {
		t.Errorf("short input: %v, want state.ErrTruncated", err)
	}
}

// TestPreparedRecordsBookkeeping: Prepare moves the staged records (kept
// as copies) to the prepared ones and encodes them all; a Commit of the
// checkpoint last prepared takes them from memory, of another decodes the
// bytes it is given; Committed forgets them only when its checkpoint
// covers theirs; Reset drops everything.
func TestPreparedRecordsBookkeeping(t *testing.T) {
	var p PreparedRecords
	if b := p.Prepare(1); b != nil {
		t.Fatalf("Prepare of nothing = % x, want nil", b)
	}
	rec := []byte("a")
	p.Stage(rec)
	rec[0] = 'z' // the staged copy keeps "a"
	p.Stage([]byte("b"))
	b2 := p.Prepare(2)
	if !bytes.Equal(b2, EncodePrepared([][]byte{[]byte("a"), []byte("b")})) || p.Staged != nil {
		t.Fatalf("Prepare(2) = % x, staged %q", b2, p.Staged)
	}
	p.Stage([]byte("c"))
	b3 := p.Prepare(3) // checkpoint 2 not committed: its records stay prepared
	if !bytes.Equal(b3, EncodePrepared([][]byte{[]byte("a"), []byte("b"), []byte("c")})) {
		t.Fatalf("Prepare(3) = % x", b3)
	}
	got, err := p.ForCommit(3, nil, "t")
	if err != nil || len(got) != 3 || string(got[0]) != "a" || string(got[2]) != "c" {
		t.Fatalf("ForCommit(3) from memory = %q, %v", got, err)
	}
	// Checkpoint 2's bytes, as a restart would pass them: decoded.
	got, err = p.ForCommit(2, b2, "t")
	if err != nil || len(got) != 2 || string(got[1]) != "b" {
		t.Fatalf("ForCommit(2) decoded = %q, %v", got, err)
	}
	if _, err := p.ForCommit(2, []byte{9}, "t"); err == nil {
		t.Error("ForCommit of damaged bytes: no error")
	}
	p.Committed(2) // prepared for 3: kept
	if got, _ := p.ForCommit(3, nil, "t"); len(got) != 3 {
		t.Fatalf("after Committed(2), ForCommit(3) = %q, want the 3 prepared", got)
	}
	p.Committed(3)
	if got, err := p.ForCommit(3, nil, "t"); got != nil || err != nil {
		t.Fatalf("after Committed(3), ForCommit(3, nil) = %q, %v; want nothing", got, err)
	}
	p.Stage([]byte("d"))
	p.Prepare(4)
	p.Stage([]byte("e"))
	p.Reset()
	if p.Staged != nil || p.Prepare(5) != nil {
		t.Fatal("Reset left records")
	}
}
