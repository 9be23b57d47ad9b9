package file

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/avro/ocf"

	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// FuzzAvroFile reads arbitrary bytes as an Avro object container file
// (seeded with files of every codec) and checks that the source never
// panics, that every failure is an *AvroFileError naming the file, that
// record numbers grow and block offsets never go back, and that
// EventJSON is always valid JSON. Blocks are bounded to 1 MiB, so a size
// field cannot make it allocate more.
func FuzzAvroFile(f *testing.F) {
	dir := f.TempDir()
	for i, c := range []ocf.Codec{nil, ocf.DeflateCodec(-1), ocf.SnappyCodec(), ocf.MustZstdCodec(nil, nil)} {
		p := filepath.Join(dir, "seed.avro")
		writeOCF(f, p, 6+i, 4, c)
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)-5])
	}
	f.Add(headerOnly(orderSchema, "null"))
	f.Add([]byte("Obj\x01\x00"))
	saved := maxAvroBlock
	maxAvroBlock = 1 << 20
	f.Cleanup(func() { maxAvroBlock = saved })
	fields := testFields(f, "id:string", "amount:decimal", "ts:timestamp", "store:string", "meta.seq:int", "kind:string")
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "in.avro")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{Spec: spec.Source{Path: p}, Fields: fields})
		var fe *AvroFileError
		if err != nil {
			if !errors.As(err, &fe) || fe.Path != p {
				t.Fatalf("New: %v is not an AvroFileError of %s", err, p)
			}
			return
		}
		defer s.Close()
		var b source.Batch
		var line, off int64
		for range 100000 {
			b.Reset()
			st, err := s.Next(context.Background(), &b, 5)
			for i := range b.Meta {
				m := &b.Meta[i]
				if m.Pos.Line != line+1 || m.Pos.Offset < off || m.Pos.Offset >= int64(len(data)) {
					t.Fatalf("position %v after record %d at %d", m.Pos, line, off)
				}
				line, off = m.Pos.Line, m.Pos.Offset
				if js := s.EventJSON(nil, m); !json.Valid(js) {
					t.Fatalf("EventJSON of % x is not JSON: %q", m.Raw, js)
				}
			}
			if st == source.End {
				return
			}
			if err != nil {
				if !errors.As(err, &fe) || fe.Path != p || fe.Block < 1 {
					t.Fatalf("Next: %v is not an AvroFileError of a block of %s", err, p)
				}
				return
			}
		}
	})
}
