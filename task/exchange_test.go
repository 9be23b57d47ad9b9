package task

import (
	"fmt"
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// TestCopyCRChunks copies more upstream rows than one chunk of values
// holds: every copy keeps its own key and values (no copy overwrites an
// earlier one when the chunks fill), the chunks in use are just enough,
// and a reset packet reuses them, zeroed.
func TestCopyCRChunks(t *testing.T) {
	var p Packet
	const n = 3000 // 3 values a row: 9,000 values, 3 chunks of 4,096
	var got []*changelog.Row
	for i := range n {
		r := changelog.Row{Op: changelog.Insert, Key: []row.Value{row.Int(int64(i))}, Values: []row.Value{row.Int(int64(2 * i)), row.Str("s")}}
		c := p.copyCR(&r)
		r.Key[0], r.Values[0] = row.Int(-1), row.Int(-1) // the source's buffers are reused
		got = append(got, c)
	}
	for i, c := range got {
		if len(c.Key) != 1 || cap(c.Key) != 1 || c.Key[0].I != int64(i) || len(c.Values) != 2 || cap(c.Values) != 2 || c.Values[0].I != int64(2*i) || c.Values[1].S != "s" {
			t.Fatalf("row %d: key %v values %v (caps %d, %d)", i, c.Key, c.Values, cap(c.Key), cap(c.Values))
		}
	}
	if len(p.vals.c) != 3 || p.vals.cur != 2 || p.vals.n != 9000-2*4095 {
		t.Fatalf("chunks %d, cur %d, used %d; want 3, 2, %d", len(p.vals.c), p.vals.cur, p.vals.n, 9000-2*4095)
	}
	p.Reset()
	for i, ch := range p.vals.c {
		for j := range ch {
			if ch[j] != (row.Value{}) {
				t.Fatalf("chunk %d value %d not cleared: %v", i, j, ch[j])
			}
		}
	}
	c := p.copyCR(&changelog.Row{Key: []row.Value{row.Int(7)}})
	if len(p.vals.c) != 3 || &c.Key[0] != &p.vals.c[0][0] {
		t.Fatal("a reset packet does not reuse its first chunk")
	}
}

// TestPutCRRoundTrip encodes upstream rows into a packet and takes them
// back: every field equal (nulls, negative ints, decimals, time, bool
// values), each row's own bytes, and a row holding a string copied
// instead (decoding would make the string anew).
func TestPutCRRoundTrip(t *testing.T) {
	d, err := row.ParseDecimal([]byte("-12.340"))
	if err != nil {
		t.Fatal(err)
	}
	rows := []changelog.Row{
		{Op: changelog.Insert, WindowStart: -8000, WindowEnd: 2000, Key: []row.Value{row.Int(1001)}, Values: []row.Value{row.Int(7)}, Version: 1, IsFinal: true, WatermarkAt: 1999, UpdatedAt: 5},
		{Op: changelog.Delete, WindowStart: 0, WindowEnd: 10, Key: []row.Value{row.Null, row.Int(-3)}, Values: []row.Value{row.Dec(d), row.Null}, Version: 9, WatermarkAt: -1, UpdatedAt: -2},
		{Op: changelog.UpdateAfter, Key: nil, Values: []row.Value{{Kind: row.KindBool, I: 1}, {Kind: row.KindTime, I: 1700000000000}}},
	}
	var p Packet
	var e state.Encoder
	items := make([]Item, len(rows))
	for i := range rows {
		if !p.putCR(&items[i], &rows[i], &e) {
			t.Fatalf("row %d not encoded", i)
		}
	}
	var sc crScratch
	for i := range rows {
		it := &items[i]
		if err := sc.takeCR(&p, it); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		got, want := *it.CR, rows[i]
		if fmt.Sprint(got.Key) != fmt.Sprint(want.Key) || fmt.Sprint(got.Values) != fmt.Sprint(want.Values) ||
			len(got.Key) != len(want.Key) || len(got.Values) != len(want.Values) {
			t.Fatalf("row %d: key %v values %v, want %v %v", i, got.Key, got.Values, want.Key, want.Values)
		}
		got.Key, got.Values, want.Key, want.Values = nil, nil, nil, nil
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Fatalf("row %d: %+v, want %+v", i, got, want)
		}
	}
	s := changelog.Row{Key: []row.Value{row.Str("a")}}
	var it Item
	if p.putCR(&it, &s, &e) || it.crLen != 0 {
		t.Fatal("a row with a string was encoded")
	}
}

// TestWireEncodeLeavesPacketItems: encoding a packet's encoded upstream
// rows for the repartition topic leaves the items as they were, so an
// item encoded again, after another, gives the same bytes.
func TestWireEncodeLeavesPacketItems(t *testing.T) {
	rows := []changelog.Row{
		{Op: changelog.Insert, WindowStart: 0, WindowEnd: 10, Key: []row.Value{row.Int(1)}, Values: []row.Value{row.Int(7)}, Version: 1},
		{Op: changelog.Insert, WindowStart: 10, WindowEnd: 20, Key: []row.Value{row.Int(2)}, Values: []row.Value{row.Int(8)}, Version: 2},
	}
	var p Packet
	var e state.Encoder
	items := make([]Item, len(rows))
	for i := range rows {
		if !p.putCR(&items[i], &rows[i], &e) {
			t.Fatalf("row %d not encoded", i)
		}
	}
	var w WireEncoder
	first := string(w.Encode(nil, 0, &p, &items[0]))
	_ = w.Encode(nil, 0, &p, &items[1])
	if items[0].CR != nil || items[1].CR != nil {
		t.Fatal("Encode pointed a packet's item at its scratch")
	}
	if again := string(w.Encode(nil, 0, &p, &items[0])); again != first {
		t.Fatalf("item 0 encoded again: %x, first %x", again, first)
	}
}
