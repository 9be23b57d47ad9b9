package postgres

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// FuzzAppendDecimal: the allocation-free text of a decimal is
// row.FormatDecimal's (exact scale, sign, leading zero).
func FuzzAppendDecimal(f *testing.F) {
	for _, s := range []string{"0", "20.00", "-0.0000000000000000001", "141.09", "12345678901234567890123456789012345678", "-1e30", "9999999999999999999.9999999999999999999", "1.5e-10", "-5000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := row.ParseDecimal([]byte(s))
		if err != nil {
			return
		}
		if got, want := string(appendDecimal(nil, d)), string(row.FormatDecimal(nil, d)); got != want {
			t.Fatalf("%q: %s, want %s", s, got, want)
		}
	})
}

// TestBinaryCopyMatchesValues: the binary COPY the sink writes itself and
// pgx's multi-row INSERT … VALUES (which boxes and encodes each value
// through pgx) leave the same rows, for random rows of every kind:
// strings with tabs, newlines, backslashes, quotes and non-ASCII text,
// decimals of every scale and beyond 64 bits, NULLs, bigints at their
// limits, times before 1970 and after 2100, and both special watermarks.
func TestBinaryCopyMatchesValues(t *testing.T) {
	dsn, schema := testSchema(t)
	d := changelog.Desc{
		Stage: "kinds",
		Key:   []changelog.Column{{Name: "store", Kind: row.KindString}, {Name: "day", Kind: row.KindTime}, {Name: "region", Kind: row.KindInt}},
		Values: []changelog.Column{{Name: "amount", Kind: row.KindDecimal}, {Name: "n", Kind: row.KindInt}, {Name: "ok", Kind: row.KindBool},
			{Name: "note", Kind: row.KindString}, {Name: "last_seen", Kind: row.KindTime}},
		Timezone: "Asia/Seoul",
	}
	strs := []string{"", "store-7", "tab\there", "new\nline", `back\slash`, `"q" 'q'`, "한글 é 😀", "\\N", "a,b;c|d"}
	decs := []string{"0", "20.00", "-0.0000000000000000001", "141.095", "-5000", "12345678901234567890123456789.5", "9999999999999999999.9999999999999999999"}
	tables := [2]string{schema + ".copy", schema + ".values"}
	var sinks [2]*Results
	for k, m := range []int{applyCopy, applyValues} {
		sinks[k] = newSink(t, dsn, tables[k], d, Options{AtLeastOnce: true})
		sinks[k].method = m
	}
	check := int64(0)
	rapid.Check(t, func(rt *rapid.T) {
		check++ // each check writes its own windows
		ms := rapid.SampledFrom([]int64{0, -1, -86_400_000 * 365 * 100, 946_684_800_000, 1_782_270_000_123, 4_102_444_800_000, 253_402_300_799_999})
		var rows []changelog.Row
		for i := range rapid.IntRange(1, 30).Draw(rt, "rows") {
			val := func(kind row.Kind, label string) row.Value {
				if rapid.IntRange(0, 5).Draw(rt, label+" null") == 0 {
					return row.Null
				}
				switch kind {
				case row.KindString:
					return row.Str(rapid.SampledFrom(strs).Draw(rt, label))
				case row.KindTime:
					return row.Time(ms.Draw(rt, label))
				case row.KindInt:
					return row.Int(rapid.SampledFrom([]int64{0, 1, -7, math.MaxInt64, math.MinInt64 + 1}).Draw(rt, label))
				case row.KindBool:
					return row.Bool(rapid.Bool().Draw(rt, label))
				}
				if rapid.Bool().Draw(rt, label+" int") {
					return row.Int(rapid.Int64Range(-1e12, 1e12).Draw(rt, label))
				}
				v, err := row.ParseDecimal([]byte(rapid.SampledFrom(decs).Draw(rt, label)))
				if err != nil {
					rt.Fatal(err)
				}
				return row.Dec(v)
			}
			wm := ms.Draw(rt, "watermark")
			switch rapid.IntRange(0, 3).Draw(rt, "special watermark") {
			case 0:
				wm = changelog.WatermarkInfinity
			case 1:
				wm = changelog.WatermarkNone
			}
			start := (check*1000 + int64(i)) * 60_000
			rows = append(rows, changelog.Row{
				Op: changelog.Insert, WindowStart: start, WindowEnd: start + 60_000,
				Key:     []row.Value{row.Str(fmt.Sprintf("k%d-%s", i, rapid.SampledFrom(strs).Draw(rt, "key"))), val(row.KindTime, "day"), val(row.KindInt, "region")},
				Values:  []row.Value{val(row.KindDecimal, "amount"), val(row.KindInt, "n"), val(row.KindBool, "ok"), val(row.KindString, "note"), val(row.KindTime, "last_seen")},
				Version: uint64(rapid.IntRange(1, 5).Draw(rt, "version")), IsFinal: rapid.Bool().Draw(rt, "final"),
				WatermarkAt: wm, UpdatedAt: ms.Draw(rt, "updated"),
			})
		}
		var got [2]string
		for k, s := range sinks {
			if err := s.Write(context.Background(), rows); err != nil {
				rt.Fatal(err)
			}
			if err := s.Flush(context.Background()); err != nil {
				rt.Fatal(err)
			}
			got[k] = dump(t, dsn, fmt.Sprintf("SELECT * FROM %s WHERE window_start >= to_timestamp(%d) ORDER BY window_start", tables[k], check*1000*60))
		}
		if got[0] != got[1] {
			rt.Fatalf("binary COPY:\n%s\nVALUES:\n%s", got[0], got[1])
		}
		if n := strings.Count(dump(t, dsn, fmt.Sprintf("SELECT window_start FROM %s WHERE window_start >= to_timestamp(%d)", tables[0], check*1000*60)), "\n"); n != len(rows) {
			rt.Fatalf("%d rows, want %d:\n%s", n, len(rows), got[0])
		}
	})
}

// TestBinaryCopyDoesNotAllocate: encoding a batch's rows for COPY into a
// grown buffer allocates nothing per row.
func TestBinaryCopyDoesNotAllocate(t *testing.T) {
	cols, err := resultColumns(&revenue)
	if err != nil {
		t.Fatal(err)
	}
	b := newBatch(cols, 1)
	for _, r := range benchRows(1)[:5000] {
		b.add(&r)
	}
	buf := appendCopyRows(nil, cols, b)
	if n := testing.AllocsPerRun(10, func() { buf = appendCopyRows(buf[:0], cols, b) }); n != 0 {
		t.Errorf("%v allocations for 5,000 rows, want 0", n)
	}
}

// TestPreparedDecimalEncoding: the prepared rows write a decimal as
// state.Encoder.Value does, byte for byte.
func TestPreparedDecimalEncoding(t *testing.T) {
	for _, s := range []string{"0", "20.00", "-0.0000000000000000001", "141.09", "12345678901234567890123456789012345678", "-5000"} {
		d, err := row.ParseDecimal([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		var a, b state.Encoder
		a.Value(row.Dec(d))
		var scratch []byte
		appendValue(&b, row.Dec(d), &scratch)
		if string(a.Bytes()) != string(b.Bytes()) {
			t.Errorf("%s: %x, want %x", s, b.Bytes(), a.Bytes())
		}
	}
}
