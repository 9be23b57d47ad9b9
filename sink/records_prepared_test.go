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
