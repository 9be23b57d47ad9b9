package state

import (
	"errors"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/row"
)

func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		u := rapid.Uint64().Draw(t, "u")
		i := rapid.Int64().Draw(t, "i")
		s := rapid.String().Draw(t, "s")
		b := rapid.SliceOf(rapid.Byte()).Draw(t, "b")
		f := rapid.Uint64().Draw(t, "f")
		dtext := rapid.SampledFrom([]string{"0", "20.00", "-5000", "0.908", "-0.000001", "123456789012345678.12345678"}).Draw(t, "d")
		d, err := row.ParseDecimal([]byte(dtext))
		if err != nil {
			t.Fatal(err)
		}
		vals := []row.Value{row.Null, {Kind: row.KindInt, I: i}, {Kind: row.KindString, S: s}, {Kind: row.KindDecimal, D: d}, {Kind: row.KindTime, I: -i}, {Kind: row.KindBool, I: 1}}
		var e Encoder
		e.Uint(u)
		e.Int(i)
		e.String(s)
		e.Bytes8(b)
		e.Fixed64(f)
		e.Fixed32(uint32(f))
		e.Bool(true)
		e.Decimal(d)
		for _, v := range vals {
			e.Value(v)
		}
		dec := NewDecoder(e.Bytes())
		if dec.Uint() != u || dec.Int() != i || dec.String() != s || string(dec.Bytes8()) != string(b) ||
			dec.Fixed64() != f || dec.Fixed32() != uint32(f) || !dec.Bool() {
			t.Fatal("scalar round trip differs")
		}
		if got := dec.Decimal(); row.FormatDecimal(nil, got) != nil && string(row.FormatDecimal(nil, got)) != dtext {
			t.Fatalf("decimal %s became %s", dtext, row.FormatDecimal(nil, got))
		}
		for _, v := range vals {
			got := dec.Value()
			if got.Kind != v.Kind || got.I != v.I || got.S != v.S || (v.Kind == row.KindDecimal && !got.D.Equal(v.D)) {
				t.Fatalf("value %v became %v", v, got)
			}
		}
		if dec.Err() != nil || dec.Remaining() != 0 {
			t.Fatalf("err %v, %d bytes left", dec.Err(), dec.Remaining())
		}
		// Every strict prefix fails with ErrTruncated or a clear error, never a panic.
		cut := rapid.IntRange(0, e.Len()-1).Draw(t, "cut")
		dec = NewDecoder(e.Bytes()[:cut])
		dec.Uint()
		dec.Int()
		_ = dec.String()
		dec.Bytes8()
		dec.Fixed64()
		dec.Fixed32()
		dec.Bool()
		dec.Decimal()
		for range vals {
			dec.Value()
		}
		if dec.Err() == nil {
			t.Fatalf("a %d-byte prefix of %d decoded without error", cut, e.Len())
		}
	})
}

func TestLenLimits(t *testing.T) {
	var e Encoder
	e.Uint(1 << 40)
	d := NewDecoder(e.Bytes())
	if d.Len(1000, 0); d.Err() == nil {
		t.Error("length above the limit accepted")
	}
	e = Encoder{}
	e.Uint(100)
	d = NewDecoder(e.Bytes())
	if d.Len(1000, 8); !errors.Is(d.Err(), ErrTruncated) {
		t.Errorf("100 elements of ≥ 8 bytes in 0 bytes: %v", d.Err())
	}
}

func FuzzDecoder(f *testing.F) {
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := NewDecoder(b)
		for d.Err() == nil && d.Remaining() > 0 {
			d.Value()
			d.Bytes8()
			d.Len(1<<20, 1)
		}
	})
}
