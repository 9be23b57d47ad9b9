package protobuf

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// FuzzDecode: any bytes as an InvoiceLine: Decode never panics and a
// length field never makes it allocate; when google.golang.org/protobuf
// (dynamicpb, an independent parser) reads the bytes, Decode reports no
// "decode" error and agrees on the scalar fields it reads.
func FuzzDecode(f *testing.F) {
	fd, err := Parse(context.Background(), "retail.proto", retailProto, nil)
	if err != nil {
		f.Fatal(err)
	}
	md, _ := MessageByName(fd, "InvoiceLine")
	schema := row.NewSchema()
	fq, _ := schema.Add("quantity", row.KindInt)
	fi, _ := schema.Add("invoice_no", row.KindString)
	fdl, _ := schema.Add("delta", row.KindInt)
	schema.Add("invoice_date", row.KindTime)
	schema.Add("unit_price", row.KindDecimal)
	schema.Add("customer_id", row.KindString)
	schema.Add("meta.seq", row.KindInt)
	schema.Add("channel", row.KindString)
	p, err := Compile(md, Reader{Fields: format.Fields{Schema: schema}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{0x0a, 0x02, 'A', '1', 0x20, 0x03, 0x68, 0x09})
	f.Add([]byte{0x62, 0x03, 0x10, 0x2a, 0x00, 0x2a, 0x06, 0x08, 0x01, 0x10, 0x80, 0x01})
	f.Add([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := schema.NewRow()
		var a source.Arena
		e := p.Decode(data, 0, r, &a)
		if a.Size() > 2*source.MinArenaChunk+len(data) {
			t.Fatalf("arena grew to %d bytes for %d bytes", a.Size(), len(data))
		}
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(data, m); err != nil {
			return
		}
		if e != nil && e.Rule == "decode" {
			t.Fatalf("protobuf reads the message, Decode says %v", e)
		}
		if e != nil {
			return
		}
		get := func(name string) any { return m.Get(md.Fields().ByName(protoName(name))).Interface() }
		if got, want := r.Get(fq).I, int64(get("quantity").(int32)); got != want {
			t.Fatalf("quantity = %d, protobuf %d", got, want)
		}
		if got, want := r.Get(fi).S, get("invoice_no").(string); got != want {
			t.Fatalf("invoice_no = %q, protobuf %q", got, want)
		}
		if got, want := r.Get(fdl).I, get("delta").(int64); got != want {
			t.Fatalf("delta = %d, protobuf %d", got, want)
		}
	})
}

func protoName(s string) protoreflect.Name { return protoreflect.Name(s) }
