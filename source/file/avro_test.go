package file

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tavro "github.com/twmb/avro"
	"github.com/twmb/avro/ocf"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/format/avro"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// orderSchema is the writer's schema of the test files: a string, a
// decimal, a timestamp, a nullable string, an int, an enum and a nested
// record.
const orderSchema = `{"type":"record","name":"Order","namespace":"shop","fields":[
  {"name":"id","type":"string"},
  {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
  {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
  {"name":"store","type":["null","string"],"default":null},
  {"name":"qty","type":"int"},
  {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["SALE","REFUND"]}},
  {"name":"meta","type":{"type":"record","name":"Meta","fields":[{"name":"seq","type":"long"}]}}]}`

var ocfBase = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// order is record i of the test files, as twmb/avro encodes it.
func order(i int) map[string]any {
	var store any
	if i%4 != 3 {
		store = fmt.Sprintf("S%d", i%3)
	}
	kind := "SALE"
	if i%5 == 4 {
		kind = "REFUND"
	}
	return map[string]any{"id": fmt.Sprintf("o%d", i), "amount": big.NewRat(int64(1000*i+7), 100),
		"ts": ocfBase.Add(time.Duration(i) * time.Second), "store": store, "qty": int32(i - 5), "kind": kind,
		"meta": map[string]any{"seq": int64(i) * 1_000_000_007}}
}

// wantOrder renders record i as the source must read it into
// orderFields.
func wantOrder(i int) string {
	store := "null"
	if i%4 != 3 {
		store = fmt.Sprintf("S%d", i%3)
	}
	kind := "SALE"
	if i%5 == 4 {
		kind = "REFUND"
	}
	amount := new(big.Rat).SetFrac64(int64(1000*i+7), 100).FloatString(2)
	return fmt.Sprintf("o%d %s %s %s %d %s %d", i, amount, ocfBase.Add(time.Duration(i)*time.Second).Format(time.RFC3339), store, i-5, kind, int64(i)*1_000_000_007)
}

var orderFields = []string{"id:string", "amount:decimal", "ts:timestamp", "store:string", "qty:int", "kind:string", "meta.seq:int"}

// writeOCF writes n orders to path with twmb/avro's container-file
// writer (an independent implementation), blocks of perBlock records.
func writeOCF(t testing.TB, path string, n, perBlock int, codec ocf.Codec) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := []ocf.WriterOpt{ocf.WithBlockCount(perBlock)}
	if codec != nil {
		opts = append(opts, ocf.WithCodec(codec))
	}
	w, err := ocf.NewWriter(f, tavro.MustParse(orderSchema), opts...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := w.Encode(order(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// readAvro reads every record of an Avro source, rendered as wantOrder
// does, with its position, and the first fatal error.
func readAvro(t testing.TB, s *Source, max int) (rows []string, pos []string, err error) {
	t.Helper()
	var b source.Batch
	for {
		b.Reset()
		st, err := s.Next(context.Background(), &b, max)
		for i := range b.Meta {
			r := &b.Rows[i]
			var parts []string
			for _, f := range s.schema.Fields {
				parts = append(parts, r.Get(f).String())
			}
			m := &b.Meta[i]
			if m.Err != nil {
				parts = append(parts, "ERR "+m.Err.Rule+": "+m.Err.Reason)
			}
			rows = append(rows, strings.Join(parts, " "))
			pos = append(pos, fmt.Sprintf("%s:%d@%d", filepath.Base(m.Pos.Source), m.Pos.Line, m.Pos.Offset))
		}
		if st == source.End {
			return rows, pos, nil
		}
		if err != nil {
			return rows, pos, err
		}
	}
}

func newAvroSource(t testing.TB, path string, proj AvroProjection) (*Source, error) {
	return New(Config{Spec: spec.Source{Path: path}, Fields: testFields(t, orderFields...), AvroProjection: proj})
}

// TestAvroFilesEveryCodec: files twmb/avro wrote with each codec, in
// blocks of 7 records, read back as the records written, numbered in
// the file, each at its block's offset.
func TestAvroFilesEveryCodec(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		codec ocf.Codec
	}{{"null", nil}, {"deflate", ocf.DeflateCodec(-1)}, {"snappy", ocf.SnappyCodec()}, {"zstandard", ocf.MustZstdCodec(nil, nil)}} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".avro")
			writeOCF(t, path, 30, 7, c.codec)
			s, err := newAvroSource(t, path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			rows, pos, err := readAvro(t, s, 4)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 30 {
				t.Fatalf("%d records, want 30", len(rows))
			}
			blocks := map[string]bool{}
			for i := range rows {
				if rows[i] != wantOrder(i) {
					t.Errorf("record %d: %s, want %s", i, rows[i], wantOrder(i))
				}
				if !strings.HasPrefix(pos[i], fmt.Sprintf("%s.avro:%d@", c.name, i+1)) {
					t.Errorf("record %d at %s", i, pos[i])
				}
				blocks[pos[i][strings.IndexByte(pos[i], '@'):]] = true
			}
			if len(blocks) != 5 { // 7+7+7+7+2
				t.Errorf("records in %d blocks, want 5: %v", len(blocks), blocks)
			}
		})
	}
}

// TestAvroFileResume: a position taken after any record, inside a block
// or at its end, resumes a new source at the next record.
func TestAvroFileResume(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.avro"), filepath.Join(dir, "b.avro")
	writeOCF(t, a, 12, 5, ocf.SnappyCodec())
	writeOCF(t, b, 4, 3, nil)
	glob := filepath.Join(dir, "*.avro")
	full, _ := newAvroSource(t, glob, nil)
	want, wantPos, err := readAvro(t, full, 1)
	if err != nil || len(want) != 16 {
		t.Fatalf("%d records, %v", len(want), err)
	}
	for k := 1; k < len(want); k++ {
		s, _ := newAvroSource(t, glob, nil)
		var bt source.Batch
		for got := 0; got < k; {
			bt.Reset()
			if _, err := s.Next(context.Background(), &bt, k-got); err != nil {
				t.Fatal(err)
			}
			got += len(bt.Meta)
		}
		p := s.Position()
		s.Close()
		r, _ := newAvroSource(t, glob, nil)
		if err := r.Seek(context.Background(), p); err != nil {
			t.Fatalf("after %d: %v", k, err)
		}
		rest, restPos, err := readAvro(t, r, 3)
		if err != nil {
			t.Fatalf("after %d: %v", k, err)
		}
		if strings.Join(rest, "\n") != strings.Join(want[k:], "\n") || strings.Join(restPos, " ") != strings.Join(wantPos[k:], " ") {
			t.Errorf("resumed after %d:\n%q %q\nwant\n%q %q", k, rest, restPos, want[k:], wantPos[k:])
		}
		r.Close()
	}
}

// TestAvroFileDamage: a file cut short or with a damaged block is an
// error naming the file, the block and its offset; the records of the
// blocks before it are delivered first.
func TestAvroFileDamage(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.avro")
	writeOCF(t, good, 10, 4, nil)
	data, _ := os.ReadFile(good)
	s, _ := newAvroSource(t, good, nil)
	_, pos, _ := readAvro(t, s, 100)
	s.Close()
	var second, third int64 // block offsets
	fmt.Sscanf(pos[4][strings.IndexByte(pos[4], '@')+1:], "%d", &second)
	fmt.Sscanf(pos[8][strings.IndexByte(pos[8], '@')+1:], "%d", &third)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name  string
		data  []byte
		rows  int
		block int64
		off   int64
		why   string
	}{
		{"cut-in-data", data[:third+6], 8, 3, third, "truncated: its size says"},
		{"cut-in-sync", data[:len(data)-3], 8, 3, third, "truncated: the file ends inside its sync marker"},
		{"bad-sync", flip(data, int(third)-2), 4, 2, second, "the sync marker after its data differs from the header's"},
		{"bad-union", setByte(data, unionIndexAt(t, data, second), 0x09), 4, 2, second, "record 1 of 4 (byte 0 of the block's data): Avro: union branch"},
	} {
		p := write(c.name+".avro", c.data)
		s, err := newAvroSource(t, p, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		rows, _, err := readAvro(t, s, 3)
		s.Close()
		var fe *AvroFileError
		if !errors.As(err, &fe) || fe.Path != p || fe.Block != c.block || fe.Offset != c.off || !strings.Contains(fe.Reason, c.why) {
			t.Errorf("%s: %v (%+v)\nwant block %d at byte %d: …%s…", c.name, err, fe, c.block, c.off, c.why)
		}
		if len(rows) != c.rows {
			t.Errorf("%s: %d records before the error, want %d", c.name, len(rows), c.rows)
		}
	}
	// The whole message, once.
	p := write("cut.avro", data[:third+6])
	s, _ = newAvroSource(t, p, nil)
	_, _, err := readAvro(t, s, 3)
	want := fmt.Sprintf("%s: Avro object container file, block 3 at byte %d: truncated: its size says %d bytes, the file holds 4 more", p, third, blockSize(t, data, third))
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	// Headers: refused when the source opens.
	for _, c := range []struct {
		name string
		data []byte
		why  string
	}{
		{"empty", nil, "truncated: the file ends inside the magic bytes (at byte 0)"},
		{"json", []byte(`{"id":"o1"}`), `magic bytes 7b 22 69 64, want "Obj" 0x01: not an Avro object container file (at byte 4)`},
		{"cut-header", data[:40], "truncated: the file ends inside"},
		{"bzip2", headerOnly(orderSchema, "bzip2"), `codec "bzip2" is not supported (null, deflate, snappy, zstandard)`},
		{"no-schema", headerOnly("", "null"), "no avro.schema in the metadata"},
		{"bad-schema", headerOnly(`{"type":"record","name":"X","fields":[{"name":"a","type":"nosuch"}]}`, "null"), "the writer schema does not parse"},
	} {
		p := write(c.name+".avro", c.data)
		_, err := newAvroSource(t, p, nil)
		if err == nil || !strings.HasPrefix(err.Error(), p+": Avro object container file header: ") || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v\nwant …%s", c.name, err, c.why)
		}
	}
}

func flip(b []byte, i int) []byte {
	out := bytes.Clone(b)
	out[i] ^= 0xff
	return out
}

func setByte(b []byte, i int, v byte) []byte {
	out := bytes.Clone(b)
	out[i] = v
	return out
}

// blockSize reads the size of the block at off.
func blockSize(t *testing.T, data []byte, off int64) int64 {
	b := ocfBytes{br: bufioReader(data[off:])}
	if _, err := b.long(); err != nil {
		t.Fatal(err)
	}
	n, err := b.long()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// unionIndexAt returns the offset of the first record's store union
// index in the (uncompressed) block at off.
func unionIndexAt(t *testing.T, data []byte, off int64) int {
	b := ocfBytes{br: bufioReader(data[off:])}
	b.long()
	b.long()
	start := int(off + b.off)
	// id (string "o4"), amount (bytes), ts (long): skip them.
	r := ocfBytes{br: bufioReader(data[start:])}
	for _, lenPrefixed := range []bool{true, true, false} {
		n, _ := r.long()
		if lenPrefixed {
			r.full(make([]byte, n))
		}
	}
	return start + int(r.off)
}

// headerOnly is the header of a container file with the given schema
// (none when "") and codec, and no block.
func headerOnly(schema, codec string) []byte {
	out := []byte("Obj\x01")
	n := 1
	if schema != "" {
		n = 2
	}
	out = avro.AppendLong(out, int64(n))
	for _, kv := range [][2]string{{"avro.codec", codec}, {"avro.schema", schema}}[:n] {
		for _, x := range kv {
			out = avro.AppendString(out, x)
		}
	}
	out = append(out, 0)
	return append(out, "0123456789abcdef"...)
}

// TestAvroFileFieldErrors: a value its field cannot hold quarantines the
// record, and the next records are read; EventJSON renders the record's
// fields.
func TestAvroFileFieldErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "o.avro")
	writeOCF(t, p, 6, 4, nil)
	// kind is an enum: into an int field its symbols are not numbers.
	s, err := New(Config{Spec: spec.Source{Path: p}, Fields: testFields(t, "id:string", "kind:int")})
	if err != nil {
		t.Fatal(err)
	}
	var b source.Batch
	if _, err := s.Next(context.Background(), &b, 10); err != nil {
		t.Fatal(err)
	}
	if len(b.Meta) != 6 {
		t.Fatalf("%d records", len(b.Meta))
	}
	for i := range b.Meta {
		m := &b.Meta[i]
		if m.Err == nil || m.Err.Rule != "type" || m.Err.Error() != fmt.Sprintf("field kind: want int, got Avro enum %q (not an integer)", map[bool]string{true: "REFUND", false: "SALE"}[i%5 == 4]) {
			t.Errorf("record %d: %v", i, m.Err)
		}
	}
	js := s.EventJSON(nil, &b.Meta[4])
	want := `{"amount":40.07,"id":"o4","kind":"REFUND","meta":{"seq":4000000028},"qty":-1,"store":"S1","ts":"2026-03-01T09:00:04Z"}`
	if string(js) != want || !json.Valid(js) {
		t.Errorf("EventJSON:\n got %s\nwant %s", js, want)
	}
}

// TestAvroFileVersions: an AvroProjection reads each file with its
// version's renames and defaults, and quarantines every record of a
// version it rejects.
func TestAvroFileVersions(t *testing.T) {
	dir := t.TempDir()
	writeOCF(t, filepath.Join(dir, "a.avro"), 3, 2, nil)
	writeOCF(t, filepath.Join(dir, "b.avro"), 2, 2, nil)
	fields := testFields(t, "id:string", "total:decimal", "currency:string")
	proj := func(path, text string, w *tavro.Schema) (format.Projection, *source.DecodeError, error) {
		if !strings.Contains(text, `"name":"Order"`) || w == nil {
			t.Errorf("schema text %q", text)
		}
		if filepath.Base(path) == "b.avro" {
			return format.Projection{Fields: fields}, &source.DecodeError{Rule: "schema_version", Reason: "version 3 is not accepted"}, nil
		}
		return format.Projection{Fields: fields, Rename: map[string]string{"total": "amount"}, Defaults: map[string]row.Value{"currency": row.Str("GBP")}}, nil, nil
	}
	s, err := New(Config{Spec: spec.Source{Path: filepath.Join(dir, "*.avro")}, Fields: fields, AvroProjection: proj})
	if err != nil {
		t.Fatal(err)
	}
	rows, _, err := readAvro(t, s, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"o0 0.07 GBP", "o1 10.07 GBP", "o2 20.07 GBP",
		"o0 null null ERR schema_version: version 3 is not accepted", "o1 null null ERR schema_version: version 3 is not accepted"}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
