package kafka

import (
	"context"
	"fmt"
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// retailDesc is the Online Retail job's stage: hourly net revenue and
// line count per country, emit update.
var retailDesc = changelog.Desc{
	Stage:    "revenue_hourly",
	Key:      []changelog.Column{{Name: "Country", Kind: row.KindString}},
	Values:   []changelog.Column{{Name: "net_revenue", Kind: row.KindDecimal}, {Name: "lines", Kind: row.KindInt}},
	Timezone: "Europe/London",
	EmitMode: "update",
}

// BenchmarkRowEncode encodes the Online Retail job's result rows as
// record keys and values: JSON (the package's default), Avro and
// Protobuf in the Confluent wire format, side by side. Each op is one
// row: its key and value.
func BenchmarkRowEncode(b *testing.B) {
	countries := []string{"United Kingdom", "France", "Germany", "EIRE", "Spain", "Netherlands"}
	rows := make([]changelog.Row, 256)
	for i := range rows {
		rows[i] = changelog.Row{Op: changelog.UpdateAfter, WindowStart: t0 + int64(i/6)*3_600_000, WindowEnd: t0 + int64(i/6+1)*3_600_000,
			Key:     []row.Value{row.Str(countries[i%len(countries)])},
			Values:  []row.Value{row.Dec(dec(fmt.Sprintf("%d.%02d", 1000+i*37, i%100))), row.Int(int64(10 + i))},
			Version: uint64(1 + i%4), IsFinal: i%4 == 3, WatermarkAt: t0 + int64(i)*60_000, UpdatedAt: t0 + int64(i)*60_000 + 500}
	}
	reg, _ := testRegistry(b)
	for _, f := range []string{FormatJSON, FormatAvro, FormatProtobuf} {
		b.Run(f, func(b *testing.B) {
			e, err := NewRowEncoderWith(context.Background(), retailDesc, RowOptions{Topic: "revenue-" + f, Encoding: encoding(reg, f, 2)})
			if err != nil {
				b.Fatal(err)
			}
			var n int
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				k, v, _, err := e.Encode(&rows[i%len(rows)])
				if err != nil {
					b.Fatal(err)
				}
				n += len(k) + len(v)
			}
			b.ReportMetric(float64(n)/float64(b.N), "bytes/record")
		})
	}
}
