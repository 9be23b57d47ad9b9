package task

import (
	"testing"
	"unsafe"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
)

// TestPacketBytes: a packet's Bytes counts its items, its copies and its
// arena, and Reset brings it back to 0 (the capacity kept is not counted).
func TestPacketBytes(t *testing.T) {
	var p Packet
	if got := p.Bytes(); got != 0 {
		t.Fatalf("empty packet: %d bytes", got)
	}
	item := int(unsafe.Sizeof(Item{}))
	// Two items with tails of 4 and 8 bytes, one with an id of 3 bytes.
	p.add(1, []byte{0, 0, 0, 1})
	it := p.add(2, []byte{0, 0, 0, 1, 0, 0, 0, 2})
	p.setID(it, []byte("abc"), 7, 9)
	want := 2*item + 4 + 8 + 3
	if got := p.Bytes(); got != want {
		t.Fatalf("two items: %d bytes, want %d", got, want)
	}
	// A row copy with 2 ints and 1 string (no null words: none is null).
	r := row.Row{I: []int64{1, 2}, S: []string{"x"}}
	p.copyRow(&r)
	want += int(unsafe.Sizeof(row.Row{})) + 2*8 + int(unsafe.Sizeof(""))
	if got := p.Bytes(); got != want {
		t.Fatalf("with a row copy: %d bytes, want %d", got, want)
	}
	// A meta with 5 raw bytes.
	p.copyMeta(&record.Meta{Raw: []byte("hello")})
	want += int(unsafe.Sizeof(record.Meta{})) + 5
	if got := p.Bytes(); got != want {
		t.Fatalf("with a meta: %d bytes, want %d", got, want)
	}
	// An upstream row with a key of 1 value and 2 values.
	p.copyCR(&changelog.Row{Key: []row.Value{row.Int(1)}, Values: []row.Value{row.Int(2), row.Int(3)}})
	want += int(unsafe.Sizeof(changelog.Row{})) + 3*int(unsafe.Sizeof(row.Value{}))
	if got := p.Bytes(); got != want {
		t.Fatalf("with an upstream row: %d bytes, want %d", got, want)
	}
	p.Reset()
	if got := p.Bytes(); got != 0 {
		t.Fatalf("after Reset: %d bytes", got)
	}
}
