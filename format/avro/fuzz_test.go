package avro

import (
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// FuzzDecode: any bytes, against a schema with every kind of type (a
// recursive list, arrays, maps, unions, logical types): Decode never
// panics, never reads past the data, and a length or count field never
// makes it allocate (the arena holds at most the record's bytes). When
// twmb/avro (an independent decoder) reads the bytes as a whole record,
// Decode agrees on the values it reads and reports no "decode" error.
func FuzzDecode(f *testing.F) {
	const schemaText = `{"type":"record","name":"R","fields":[
	  {"name":"s","type":"string"},
	  {"name":"n","type":["null","long"]},
	  {"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":20,"scale":2}},
	  {"name":"t","type":{"type":"long","logicalType":"timestamp-micros"}},
	  {"name":"a","type":{"type":"array","items":{"type":"map","values":"int"}}},
	  {"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y"]}},
	  {"name":"list","type":["null",{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]}]}]},
	  {"name":"f","type":{"type":"fixed","name":"F","size":3}},
	  {"name":"z","type":{"type":"array","items":"null"}}
	]}`
	w := mustParse(f, schemaText)
	schema := row.NewSchema()
	fs, _ := schema.Add("s", row.KindString)
	fn, _ := schema.Add("n", row.KindInt)
	fd, _ := schema.Add("d", row.KindDecimal)
	ft, _ := schema.Add("t", row.KindTime)
	fe, _ := schema.Add("e", row.KindString)
	p, err := Compile(w, Reader{Fields: format.Fields{Schema: schema}})
	if err != nil {
		f.Fatal(err)
	}
	seed, err := w.Encode(map[string]any{
		"s": "héllo", "n": int64(-3), "d": big.NewRat(-12345, 100), "t": time.UnixMicro(1_700_000_000_123_456),
		"a": []any{map[string]any{"k": int32(1)}}, "e": "Y",
		"list": map[string]any{"v": int32(1), "next": map[string]any{"v": int32(2), "next": nil}},
		"f":    []byte("abc"), "z": []any{nil, nil},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{})
	f.Add([]byte{0x02, 'x', 0x00, 0x02, 0x01, 0x02, 0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Add([]byte{0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0xff, 0xff, 0xff, 0x0f}) // a huge array count
	f.Fuzz(func(t *testing.T, data []byte) {
		r := schema.NewRow()
		var a source.Arena
		e := p.Decode(data, 5, r, &a)
		if a.Size() > 2*source.MinArenaChunk+len(data) {
			t.Fatalf("arena grew to %d bytes for %d bytes of data", a.Size(), len(data))
		}
		var ref map[string]any
		rest, rerr := w.Decode(data, &ref)
		if rerr != nil || len(rest) != 0 {
			return
		}
		if e != nil && e.Rule == "decode" {
			t.Fatalf("twmb/avro reads the record, Decode says %v", e)
		}
		if e != nil {
			return // a field error (encoding): values may be partial
		}
		if got := r.Get(fs).S; got != ref["s"] {
			t.Fatalf("s = %q, twmb/avro %q", got, ref["s"])
		}
		if ref["n"] == nil {
			if !r.IsNull(fn.Index) {
				t.Fatalf("n not null")
			}
		} else if got := r.Get(fn).I; !reflect.DeepEqual(got, ref["n"]) {
			t.Fatalf("n = %d, twmb/avro %v", got, ref["n"])
		}
		if rat, ok := ref["d"].(*big.Rat); ok {
			want, _ := row.ParseDecimal([]byte(rat.FloatString(2)))
			if got := r.Get(fd).D; !got.Equal(want) {
				t.Fatalf("d = %s, twmb/avro %s", got, rat.FloatString(2))
			}
		}
		if tm, ok := ref["t"].(time.Time); ok {
			if got := r.Get(ft).I; got != tm.UnixMilli() && got != floorDiv(tm.UnixMicro(), 1000) {
				t.Fatalf("t = %d, twmb/avro %v", got, tm)
			}
		}
		if got := r.Get(fe).S; got != ref["e"] {
			t.Fatalf("e = %q, twmb/avro %v", got, ref["e"])
		}
	})
}
