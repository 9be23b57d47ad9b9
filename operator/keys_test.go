package operator

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/row"
)

// refKey encodes vals as the key encoding's doc (AppendKey) states it,
// written out byte by byte: null 0x00; an int, bool or time 0x01 and eight
// bytes big endian; a string 0x02, its length as a uvarint (seven bits a
// byte, low first, high bit set on all but the last) and its bytes; a
// decimal 0x03, the length and its text.
func refKey(vals []row.Value) []byte {
	var b []byte
	uvarint := func(n int) {
		for n >= 0x80 {
			b = append(b, byte(n)|0x80)
			n >>= 7
		}
		b = append(b, byte(n))
	}
	for _, v := range vals {
		switch {
		case v.IsNull():
			b = append(b, 0)
		case v.Kind == row.KindString:
			b = append(b, 2)
			uvarint(len(v.S))
			b = append(b, v.S...)
		case v.Kind == row.KindDecimal:
			s := v.D.String()
			b = append(b, 3)
			uvarint(len(s))
			b = append(b, s...)
		default:
			u := uint64(v.I)
			b = append(b, 1)
			for sh := 56; sh >= 0; sh -= 8 {
				b = append(b, byte(u>>sh))
			}
		}
	}
	return b
}

// TestAppendKeyMatchesEncoding checks AppendKey against refKey over keys of
// one to nine fields of every kind, with nulls, negative ints, empty
// strings and strings longer than 127 bytes (a two-byte length), appended
// after a prefix; and that decodeKey gives the values back.
func TestAppendKeyMatchesEncoding(t *testing.T) {
	kinds := []row.Kind{row.KindInt, row.KindBool, row.KindTime, row.KindString, row.KindDecimal}
	rng := rand.New(rand.NewPCG(7, 8))
	decs := []string{"0", "2.50", "-17.125", "123456789.01"}
	for it := 0; it < 2000; it++ {
		s := row.NewSchema()
		var fields []row.Field
		for j := range 1 + rng.IntN(9) {
			f, err := s.Add(string(rune('a'+j)), kinds[rng.IntN(len(kinds))])
			if err != nil {
				t.Fatal(err)
			}
			fields = append(fields, f)
		}
		var r row.Row
		s.Shape(&r)
		vals := make([]row.Value, len(fields))
		for j, f := range fields {
			var v row.Value
			switch {
			case rng.IntN(6) == 0:
				v = row.Null
			case f.Kind == row.KindString:
				v = row.Str(strings.Repeat("x", []int{0, 1, 127, 128, 300}[rng.IntN(5)]))
			case f.Kind == row.KindDecimal:
				d, err := row.ParseDecimal([]byte(decs[rng.IntN(len(decs))]))
				if err != nil {
					t.Fatal(err)
				}
				v = row.Dec(d)
			case f.Kind == row.KindBool:
				v = row.Bool(rng.IntN(2) == 0)
			case f.Kind == row.KindTime:
				v = row.Time(rng.Int64N(1 << 42))
			default:
				v = row.Int(rng.Int64() - 1<<62)
			}
			if err := r.Set(f, v); err != nil {
				t.Fatal(err)
			}
			vals[j] = v
		}
		want := append([]byte("pre"), refKey(vals)...)
		got := AppendKey([]byte("pre"), &r, fields)
		if !bytes.Equal(got, want) {
			t.Fatalf("fields %v values %v:\n got  %x\n want %x", fields, vals, got, want)
		}
		for j, v := range decodeKey(string(got[3:]), fields) {
			if w := vals[j]; v.IsNull() != w.IsNull() || !v.IsNull() && (v.I != w.I || v.S != w.S || v.D.String() != w.D.String()) {
				t.Fatalf("field %d decodes to %v, want %v", j, v, w)
			}
		}
	}
}
