package parquet

import (
	"context"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/format/avro"
	"github.com/tidemark/tidemark/row"
)

func dec(t *testing.T, s string) row.Value {
	t.Helper()
	d, err := row.ParseDecimal([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return row.Dec(d)
}

var typesDesc = changelog.Desc{Stage: "types", Timezone: "Asia/Seoul", EmitMode: "update",
	Key: []changelog.Column{{Name: "store", Kind: row.KindString}, {Name: "n", Kind: row.KindInt}},
	Values: []changelog.Column{{Name: "amount", Kind: row.KindDecimal}, {Name: "ok", Kind: row.KindBool},
		{Name: "at", Kind: row.KindTime}, {Name: "label", Kind: row.KindString}}}

// readFile reads every row of a Parquet file with parquet-go's reader,
// through the file's own schema (not the sink's Layout), as text per
// column: what a reader that knows only the file sees.
func readFile(t *testing.T, path string) (*pq.File, [][]string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := pq.OpenFile(strings.NewReader(string(b)), int64(len(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	leaves := f.Schema().Columns()
	var out [][]string
	r := pq.NewReader(strings.NewReader(string(b)))
	rows := make([]pq.Row, 16)
	for {
		n, err := r.ReadRows(rows)
		for _, rw := range rows[:n] {
			cells := make([]string, len(leaves))
			for _, v := range rw {
				col := v.Column()
				leaf, _ := f.Schema().Lookup(leaves[col]...)
				cells[col] = render(leaf.Node, v)
			}
			out = append(out, cells)
		}
		if err != nil {
			break
		}
	}
	return f, out
}

// render prints a value by its column's logical type, independently of
// the writer: decimals from their unscaled two's-complement bytes with
// math/big, timestamps as µs.
func render(n pq.Node, v pq.Value) string {
	if v.IsNull() {
		return "NULL"
	}
	var lv format.LogicalTypeValue
	if lt := n.Type().LogicalType(); lt != nil {
		lv = lt.Value
	}
	switch lt := lv.(type) {
	case *format.DecimalType:
		b := v.ByteArray()
		x := new(big.Int).SetBytes(b)
		if len(b) > 0 && b[0]&0x80 != 0 {
			x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
		r := new(big.Rat).SetFrac(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(lt.Scale)), nil))
		return r.FloatString(int(lt.Scale))
	case *format.TimestampType:
		return big.NewInt(v.Int64()).String() + "us"
	case *format.StringType:
		return "'" + string(v.ByteArray()) + "'"
	}
	return v.String()
}

// TestTypesRoundTrip: every column kind, null and extreme values, read
// back through the file's own schema.
func TestTypesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	scale := 3
	s, err := NewResults(typesDesc, Options{Dir: dir, DecimalScale: &scale, Compression: "snappy"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rows := []changelog.Row{
		{Op: changelog.Insert, WindowStart: 1_700_000_000_000, WindowEnd: 1_700_000_060_000, Version: 1, WatermarkAt: changelog.WatermarkNone, UpdatedAt: 5,
			Key:    []row.Value{row.Str("s1"), row.Int(-9223372036854775808)},
			Values: []row.Value{dec(t, "-12.5"), row.Bool(true), row.Time(-1), row.Str("é\x00x")}},
		{Op: changelog.UpdateAfter, WindowStart: 0, WindowEnd: 60_000, Version: 7, IsFinal: true, WatermarkAt: changelog.WatermarkInfinity, UpdatedAt: 6,
			Key:    []row.Value{row.Null, row.Int(9223372036854775807)},
			Values: []row.Value{dec(t, "99999999999999999999999999999999999.999"), row.Bool(false), row.Null, row.Str("")}},
		{Op: changelog.Delete, WindowStart: 60_000, WindowEnd: 120_000, Version: 2, WatermarkAt: 59_999, UpdatedAt: 7,
			Key:    []row.Value{row.Str("s2"), row.Null},
			Values: []row.Value{row.Null, row.Null, row.Time(1_700_000_000_123), row.Null}},
	}
	if err := s.Write(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f, got := readFile(t, filepath.Join(dir, "part-00000001-00000.parquet"))
	want := [][]string{
		{"'insert'", "1700000000000000us", "1700000060000000us", "'s1'", "-9223372036854775808", "-12.500", "true", "-1000us", "'é\x00x'", "1", "false", "NULL", "5000us"},
		{"'update_after'", "0us", "60000000us", "NULL", "9223372036854775807", "99999999999999999999999999999999999.999", "false", "NULL", "''", "7", "true", "9223372036854775807us", "6000us"},
		{"'delete'", "60000000us", "120000000us", "'s2'", "NULL", "NULL", "NULL", "1700000000123000us", "NULL", "2", "false", "59999000us", "7000us"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("rows\n got %q\nwant %q", got, want)
	}
	var names []string
	for _, c := range f.Schema().Fields() {
		names = append(names, c.Name())
	}
	if w := "op window_start window_end store n amount ok at label version is_final watermark_at updated_at"; strings.Join(names, " ") != w {
		t.Errorf("columns %q, want %q", names, w)
	}
	// The physical and logical types as the footer states them.
	md := f.Metadata()
	byName := map[string]format.SchemaElement{}
	for _, e := range md.Schema[1:] {
		byName[e.Name] = e
	}
	amount := byName["amount"]
	typ, _ := amount.Type.Get()
	tl, _ := amount.TypeLength.Get()
	if d, ok := amount.LogicalType.Value.(*format.DecimalType); typ != format.FixedLenByteArray || tl != 16 || !ok || d.Precision != 38 || d.Scale != 3 {
		t.Errorf("amount: %+v", amount)
	}
	ws := byName["window_start"]
	rep, _ := ws.RepetitionType.Get()
	if ts, ok := ws.LogicalType.Value.(*format.TimestampType); !ok || !ts.IsAdjustedToUTC || ts.Unit.Value.String() != "MICROS" || rep != format.Required {
		t.Errorf("window_start: %+v", ws)
	}
	st := byName["store"]
	rep, _ = st.RepetitionType.Get()
	if _, ok := st.LogicalType.Value.(*format.StringType); !ok || rep != format.Optional {
		t.Errorf("store: %+v", st)
	}
	if c := md.RowGroups[0].Columns[0].MetaData.Codec; c != format.Snappy {
		t.Errorf("codec %v, want snappy", c)
	}
	kv := map[string]string{}
	for _, e := range md.KeyValueMetadata {
		kv[e.Key] = e.Value
	}
	if kv["tidemark.timezone"] != "Asia/Seoul" || kv["tidemark.emit_mode"] != "update" {
		t.Errorf("key-value metadata %v", kv)
	}
}

// TestDecimalOutOfScale: a value with more digits than the scale fails
// the write, naming the column; nothing is rounded.
func TestDecimalOutOfScale(t *testing.T) {
	scale := 1
	s, err := NewResults(typesDesc, Options{Dir: t.TempDir(), DecimalScale: &scale})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort(context.Background())
	r := changelog.Row{Key: []row.Value{row.Str("a"), row.Int(1)}, Values: []row.Value{dec(t, "1.25"), row.Null, row.Null, row.Null}}
	err = s.Write(context.Background(), []changelog.Row{r})
	if !errors.Is(err, avro.ErrDecimalScale) || !strings.Contains(err.Error(), "column amount") {
		t.Fatalf("error %v", err)
	}
}

// TestDecimal16 checks the fixed[16] encoding against math/big.
func TestDecimal16(t *testing.T) {
	for _, c := range []struct {
		s     string
		scale uint8
	}{{"0", 0}, {"-1", 0}, {"1", 2}, {"-0.01", 2}, {"12345678901234567890.123456789", 9}, {"-99999999999999999999999999999999999999", 0}, {"127", 0}, {"-128", 0}, {"128", 0}} {
		var b [16]byte
		d, _ := row.ParseDecimal([]byte(c.s))
		if err := Decimal16(b[:], d, c.scale); err != nil {
			t.Fatalf("%s: %v", c.s, err)
		}
		x := new(big.Int).SetBytes(b[:])
		if b[0]&0x80 != 0 {
			x.Sub(x, new(big.Int).Lsh(big.NewInt(1), 128))
		}
		r, _ := new(big.Rat).SetString(c.s)
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.scale)), nil)))
		if !r.IsInt() || r.Num().Cmp(x) != 0 {
			t.Errorf("%s at scale %d: %s", c.s, c.scale, x)
		}
	}
	var b [16]byte
	d, _ := row.ParseDecimal([]byte("100000000000000000000000000000000000000"))
	if err := Decimal16(b[:], d, 0); !errors.Is(err, avro.ErrDecimalPrecision) {
		t.Errorf("39 digits: %v", err)
	}
}
