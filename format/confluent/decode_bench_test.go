package confluent

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	tavro "github.com/twmb/avro"

	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/format/avro"
	"github.com/tidemark/tidemark/internal/datatest"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// retailAvro is the Online Retail line as an Avro producer writes it.
const retailAvro = `{"type":"record","name":"InvoiceLine","namespace":"retail","fields":[
  {"name":"InvoiceNo","type":"string"},
  {"name":"StockCode","type":"string"},
  {"name":"Description","type":["null","string"],"default":null},
  {"name":"Quantity","type":"int"},
  {"name":"InvoiceDate","type":"string"},
  {"name":"UnitPrice","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":3}},
  {"name":"CustomerID","type":["null","long"],"default":null},
  {"name":"Country","type":"string"}]}`

// retailLines reads the Online Retail days (the first 30 files) as JSON
// lines and as Avro values (the same records).
func retailLines(b *testing.B) (js, av [][]byte) {
	dir := filepath.Join(datatest.Dir(b), "online-retail", "by-day")
	files, _ := filepath.Glob(filepath.Join(dir, "*.csv"))
	if len(files) > 30 {
		files = files[:30]
	}
	s := tavro.MustParse(retailAvro)
	for _, fn := range files {
		fh, err := os.Open(fn)
		if err != nil {
			b.Fatal(err)
		}
		r := csv.NewReader(fh)
		_, _ = r.Read()
		for {
			rec, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			q, _ := strconv.Atoi(rec[3])
			price, _ := new(big.Rat).SetString(rec[5])
			var cust any
			obj := map[string]any{"InvoiceNo": rec[0], "StockCode": rec[1], "Description": rec[2], "Quantity": q,
				"InvoiceDate": rec[4], "UnitPrice": json.Number(rec[5]), "Country": rec[7]}
			if c, err := strconv.ParseFloat(rec[6], 64); err == nil {
				cust = int64(c)
				obj["CustomerID"] = int64(c)
			}
			line, _ := json.Marshal(obj)
			js = append(js, line)
			v, err := s.AppendEncode([]byte{0, 0, 0, 0, 1}, map[string]any{"InvoiceNo": rec[0], "StockCode": rec[1], "Description": rec[2],
				"Quantity": int32(q), "InvoiceDate": rec[4], "UnitPrice": price, "CustomerID": cust, "Country": rec[7]})
			if err != nil {
				b.Fatal(err)
			}
			av = append(av, v)
		}
		fh.Close()
	}
	return js, av
}

// retailFields are the fields the README's Online Retail job reads.
func retailFields(b *testing.B) format.Fields {
	s := row.NewSchema()
	for _, f := range []struct {
		n string
		k row.Kind
	}{{"InvoiceNo", row.KindString}, {"Quantity", row.KindInt}, {"UnitPrice", row.KindDecimal}, {"InvoiceDate", row.KindTime}, {"Country", row.KindString}} {
		if _, err := s.Add(f.n, f.k); err != nil {
			b.Fatal(err)
		}
	}
	london, _ := time.LoadLocation("Europe/London")
	return format.Fields{Schema: s, Time: map[int]*eventtime.Parser{3: {Format: eventtime.Layout, Layout: "2006-01-02 15:04:05", Loc: london}}}
}

// BenchmarkRetailDecode decodes the Online Retail lines as JSON (the
// format package's decoder) and as Avro in the Confluent wire format
// (format/avro's compiled program, as the Kafka source runs it after the
// schema id's lookup), into the job's fields. Run both in one process:
//
//	go test ./format/confluent -run XXX -bench RetailDecode -count 6
func BenchmarkRetailDecode(b *testing.B) {
	js, av := retailLines(b)
	var jsBytes, avBytes int
	for i := range js {
		jsBytes += len(js[i])
		avBytes += len(av[i])
	}
	run := func(b *testing.B, lines [][]byte, size int, dec func(line []byte, r *row.Row, a *source.Arena) *source.DecodeError) {
		f := retailFields(b)
		r := f.Schema.NewRow()
		var a source.Arena
		b.ReportAllocs()
		b.SetBytes(int64(size / len(lines)))
		i := 0
		for b.Loop() {
			if i%4096 == 0 {
				a.Reset()
			}
			f.Schema.Shape(r)
			if e := dec(lines[i%len(lines)], r, &a); e != nil {
				b.Fatalf("line %d: %v", i%len(lines), e)
			}
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	}
	b.Run("json", func(b *testing.B) {
		d := format.NewJSON(retailFields(b))
		run(b, js, jsBytes, d.Decode)
	})
	b.Run("avro", func(b *testing.B) {
		p, err := avro.Compile(tavro.MustParse(retailAvro), format.Projection{Fields: retailFields(b)})
		if err != nil {
			b.Fatal(err)
		}
		run(b, av, avBytes, func(v []byte, r *row.Row, a *source.Arena) *source.DecodeError {
			if e := HeaderError(v); e != nil {
				return e
			}
			return p.Decode(v[5:], 5, r, a)
		})
	})
	b.Run("twmb-avro-struct", func(b *testing.B) {
		// The library's own decoder into a Go struct (reflection), for
		// the choice written in format/avro's documentation.
		type line struct {
			InvoiceNo, StockCode string
			Description          *string
			Quantity             int32
			InvoiceDate          string
			UnitPrice            *big.Rat
			CustomerID           *int64
			Country              string
		}
		s := tavro.MustParse(retailAvro)
		var l line
		b.ReportAllocs()
		b.SetBytes(int64(avBytes / len(av)))
		i := 0
		for b.Loop() {
			if _, err := s.Decode(av[i%len(av)][5:], &l); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}
