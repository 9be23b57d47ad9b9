package changelog

import (
	"encoding/json"
	"testing"

	"github.com/tidemark/tidemark/row"
)

// BenchmarkAppendRowJSON writes the revenue row of json_test.go in Seoul
// time into a warm buffer.
func BenchmarkAppendRowJSON(b *testing.B) {
	r := revenueRow(b)
	loc := mustLoc(b, "Asia/Seoul")
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendRowJSON(buf[:0], &r, &revenueDesc, loc)
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkAppendRowJSONBaseline is the hand-written baseline: the same
// object through encoding/json from a struct of pre-rendered fields (times
// and decimals formatted per row, as a straightforward sink would).
func BenchmarkAppendRowJSONBaseline(b *testing.B) {
	r := revenueRow(b)
	loc := mustLoc(b, "Asia/Seoul")
	type out struct {
		Op          string      `json:"op"`
		WindowStart string      `json:"window_start"`
		WindowEnd   string      `json:"window_end"`
		Store       string      `json:"store"`
		Open        bool        `json:"open"`
		Revenue     json.Number `json:"revenue"`
		Orders      int64       `json:"orders"`
		LastAt      string      `json:"last_at"`
		Version     uint64      `json:"version"`
		IsFinal     bool        `json:"is_final"`
		WatermarkAt string      `json:"watermark_at"`
		UpdatedAt   string      `json:"updated_at"`
	}
	var n int
	b.ReportAllocs()
	for b.Loop() {
		o := out{
			Op:          r.Op.String(),
			WindowStart: row.FormatTime(r.WindowStart, loc),
			WindowEnd:   row.FormatTime(r.WindowEnd, loc),
			Store:       r.Key[0].S,
			Open:        r.Key[1].I != 0,
			Revenue:     json.Number(row.FormatDecimal(nil, r.Values[0].D)),
			Orders:      r.Values[1].I,
			LastAt:      row.FormatTime(r.Values[2].I, loc),
			Version:     r.Version,
			IsFinal:     r.IsFinal,
			WatermarkAt: row.FormatTime(r.WatermarkAt, loc),
			UpdatedAt:   row.FormatTime(r.UpdatedAt, loc),
		}
		buf, err := json.Marshal(&o)
		if err != nil {
			b.Fatal(err)
		}
		n = len(buf)
	}
	b.SetBytes(int64(n))
}

// BenchmarkDecodeRowJSON parses the line BenchmarkAppendRowJSON writes.
func BenchmarkDecodeRowJSON(b *testing.B) {
	r := revenueRow(b)
	line := AppendRowJSON(nil, &r, &revenueDesc, mustLoc(b, "Asia/Seoul"))
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, err := DecodeRowJSON(line, &revenueDesc); err != nil {
			b.Fatal(err)
		}
	}
}
