package parquet

import (
	"fmt"
	"math"
	"reflect"
	"time"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/format/avro"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
)

// DefaultDecimalScale is the scale of decimal columns when the sink sets
// none (spec key decimal_scale): as the Kafka sink's Avro records.
const DefaultDecimalScale = 6

// Infinity is what a timestamp column holds for the watermark after the
// end of a bounded input (changelog.WatermarkInfinity): the largest
// int64, read as 294247-01-10T04:00:54.775807Z by engines that convert it.
const Infinity = math.MaxInt64

// Column is one column of a file: its name, tidemark kind, whether it may
// hold null, and its Parquet field id (0: none; Iceberg needs them).
type Column struct {
	Name     string
	Kind     row.Kind
	Required bool
	ID       int
}

// Slot says where a column's value comes from in a changelog.Row.
type Slot uint8

// The slots of a result row.
const (
	SlotOp Slot = iota
	SlotWindowStart
	SlotWindowEnd
	SlotKey
	SlotValue
	SlotVersion
	SlotIsFinal
	SlotWatermarkAt
	SlotUpdatedAt
)

// Layout is the columns of result rows in a Parquet file, in file order:
// op, window_start, window_end, the key columns, the aggregate columns,
// version, is_final, watermark_at, updated_at (a select stage: op,
// event_time, its values, updated_at). Timestamps are INT64 TIMESTAMP
// (MICROS, isAdjustedToUTC = true): instants, whatever the stage's zone
// (written in the file's key-value metadata "tidemark.timezone"); decimals
// are FIXED_LEN_BYTE_ARRAY(16) DECIMAL(38, Scale); strings BYTE_ARRAY
// STRING; ints INT64; bools BOOLEAN.
type Layout struct {
	Columns []Column
	Slots   []Slot
	Index   []int // per column: the index in Key or Values for SlotKey and SlotValue
	Scale   uint8
	Desc    changelog.Desc
}

// NewLayout returns the layout of d's rows with decimals at scale digits
// after the point (0 to row.MaxDecimalScale).
func NewLayout(d changelog.Desc, scale int) (*Layout, error) {
	if scale < 0 || scale > row.MaxDecimalScale {
		return nil, fmt.Errorf("decimal_scale %d: want 0 to %d", scale, row.MaxDecimalScale)
	}
	l := &Layout{Scale: uint8(scale), Desc: d}
	add := func(name string, k row.Kind, req bool, s Slot, i int) {
		l.Columns = append(l.Columns, Column{Name: name, Kind: k, Required: req})
		l.Slots = append(l.Slots, s)
		l.Index = append(l.Index, i)
	}
	add("op", row.KindString, true, SlotOp, 0)
	if d.Stateless {
		add("event_time", row.KindTime, true, SlotWindowStart, 0)
	} else {
		add("window_start", row.KindTime, true, SlotWindowStart, 0)
		add("window_end", row.KindTime, true, SlotWindowEnd, 0)
		for i, c := range d.Key {
			add(c.Name, c.Kind, false, SlotKey, i)
		}
	}
	for i, c := range d.Values {
		add(c.Name, c.Kind, false, SlotValue, i)
	}
	if !d.Stateless {
		add("version", row.KindInt, true, SlotVersion, 0)
		add("is_final", row.KindBool, true, SlotIsFinal, 0)
		add("watermark_at", row.KindTime, false, SlotWatermarkAt, 0)
	}
	add("updated_at", row.KindTime, true, SlotUpdatedAt, 0)
	for i, c := range l.Columns {
		if c.Kind == row.KindNull {
			return nil, fmt.Errorf("column %s has no type", c.Name)
		}
		for _, o := range l.Columns[:i] {
			if o.Name == c.Name {
				return nil, fmt.Errorf("two columns named %q", c.Name)
			}
		}
	}
	return l, nil
}

// Schema returns the Parquet schema of columns, in their order, with
// decimals at scale and each leaf compressed with codec.
func Schema(name string, cols []Column, scale uint8, codec compress.Codec) *pq.Schema {
	g := make(orderedGroup, len(cols))
	for i, c := range cols {
		g[i] = field{name: c.Name, Node: columnNode(c, scale, codec)}
	}
	return pq.NewSchema(name, g)
}

// columnNode is one leaf of the schema.
func columnNode(c Column, scale uint8, codec compress.Codec) pq.Node {
	var n pq.Node
	switch c.Kind {
	case row.KindBool:
		n = pq.Leaf(pq.BooleanType)
	case row.KindInt:
		n = pq.Int(64)
	case row.KindDecimal:
		n = pq.Decimal(int(scale), avro.MaxDecimalPrecision, pq.FixedLenByteArrayType(16))
	case row.KindString:
		n = pq.String()
	case row.KindTime:
		n = pq.Timestamp(pq.Microsecond)
	}
	if c.Kind == row.KindString {
		n = pq.Encoded(n, &pq.Plain)
	}
	if codec != nil {
		n = pq.Compressed(n, codec)
	}
	if c.Required {
		n = pq.Required(n)
	} else {
		n = pq.Optional(n)
	}
	if c.ID != 0 {
		n = pq.FieldID(n, c.ID)
	}
	return n
}

// Values fills vals (len(Columns)) with the values of r, a row of the
// layout's Desc, as Parquet values; dec holds the decimals' bytes (16 per
// column, reused). Errors: a decimal that does not fit DECIMAL(38, Scale)
// (avro.ErrDecimalScale, avro.ErrDecimalPrecision), naming the column.
func (l *Layout) Values(vals []pq.Value, dec []byte, r *changelog.Row) error {
	for i, s := range l.Slots {
		var v pq.Value
		switch s {
		case SlotOp:
			v = pq.ByteArrayValue(opBytes[r.Op&3])
		case SlotWindowStart:
			v = pq.Int64Value(micros(r.WindowStart))
		case SlotWindowEnd:
			v = pq.Int64Value(micros(r.WindowEnd))
		case SlotKey, SlotValue:
			x := r.Values
			if s == SlotKey {
				x = r.Key
			}
			var err error
			v, err = value(x[l.Index[i]], l.Columns[i].Kind, l.Scale, dec[16*i:16*i+16])
			if err != nil {
				return fmt.Errorf("column %s: %w", l.Columns[i].Name, err)
			}
		case SlotVersion:
			v = pq.Int64Value(int64(r.Version))
		case SlotIsFinal:
			v = pq.BooleanValue(r.IsFinal)
		case SlotWatermarkAt:
			switch r.WatermarkAt {
			case changelog.WatermarkNone:
				v = pq.NullValue()
			case changelog.WatermarkInfinity:
				v = pq.Int64Value(Infinity)
			default:
				v = pq.Int64Value(micros(r.WatermarkAt))
			}
		case SlotUpdatedAt:
			v = pq.Int64Value(micros(r.UpdatedAt))
		}
		vals[i] = level(v, l.Columns[i].Required, i)
	}
	return nil
}

var opBytes = [4][]byte{[]byte("insert"), []byte("update_before"), []byte("update_after"), []byte("delete")}

// level sets a value's definition level and column index.
func level(v pq.Value, required bool, col int) pq.Value {
	def := 0
	if !required && !v.IsNull() {
		def = 1
	}
	return v.Level(0, def, col)
}

// micros converts ms since the epoch to µs, saturating (no instant
// tidemark reads is that far from 1970).
func micros(ms int64) int64 {
	if ms > math.MaxInt64/1000 {
		return math.MaxInt64
	}
	if ms < math.MinInt64/1000 {
		return math.MinInt64
	}
	return ms * 1000
}

// value converts one tidemark value of a column of kind k.
func value(x row.Value, k row.Kind, scale uint8, dec []byte) (pq.Value, error) {
	if x.Kind == row.KindNull {
		return pq.NullValue(), nil
	}
	if x.Kind != k {
		return pq.Value{}, fmt.Errorf("a %s value in a %s column", x.Kind, k)
	}
	switch k {
	case row.KindBool:
		return pq.BooleanValue(x.I != 0), nil
	case row.KindInt:
		return pq.Int64Value(x.I), nil
	case row.KindTime:
		return pq.Int64Value(micros(x.I)), nil
	case row.KindString:
		return pq.ByteArrayValue(stringBytes(x.S)), nil
	case row.KindDecimal:
		if err := Decimal16(dec, x.D, scale); err != nil {
			return pq.Value{}, err
		}
		return pq.FixedLenByteArrayValue(dec), nil
	}
	return pq.Value{}, fmt.Errorf("kind %s", k)
}

// Decimal16 writes d's unscaled value at scale into dst[:16] as a
// big-endian two's-complement integer (Parquet's and Iceberg's
// DECIMAL(38, scale) in a fixed[16]). Errors: avro.DecimalBytes's (the
// value has more digits after the point than scale, or more than 38).
func Decimal16(dst []byte, d row.Decimal, scale uint8) error {
	var tmp [17]byte
	b, err := avro.DecimalBytes(tmp[:0], d, scale)
	if err != nil {
		return err
	}
	if len(b) > 16 {
		return fmt.Errorf("%s: %w", d, avro.ErrDecimalPrecision)
	}
	fill := byte(0)
	if b[0]&0x80 != 0 {
		fill = 0xff
	}
	n := 16 - len(b)
	for i := range n {
		dst[i] = fill
	}
	copy(dst[n:16], b)
	return nil
}

// RecordColumns are the columns of side-output records in a Parquet file:
// the fields sink.ParseRecord reads (kind, stage, event_id, event_time,
// observed_at, current_watermark, lateness_ms, reason, source) and the
// whole record as JSON text (record).
var RecordColumns = []Column{
	{Name: "kind", Kind: row.KindString, Required: true},
	{Name: "stage", Kind: row.KindString},
	{Name: "event_id", Kind: row.KindString},
	{Name: "event_time", Kind: row.KindTime},
	{Name: "observed_at", Kind: row.KindTime},
	{Name: "current_watermark", Kind: row.KindString},
	{Name: "lateness_ms", Kind: row.KindInt},
	{Name: "reason", Kind: row.KindString},
	{Name: "source", Kind: row.KindString},
	{Name: "record", Kind: row.KindString, Required: true},
}

// RecordValues fills vals (len(RecordColumns)) from a side-output record,
// a JSON object, and returns its fields. Errors: sink.ParseRecord's, and an event_time or
// observed_at that is not RFC 3339.
func RecordValues(vals []pq.Value, obj []byte) (sink.RecordFields, error) {
	f, err := sink.ParseRecord(obj)
	if err != nil {
		return f, err
	}
	str := func(p *string) pq.Value {
		if p == nil {
			return pq.NullValue()
		}
		return pq.ByteArrayValue(stringBytes(*p))
	}
	ts := func(name, s string) (pq.Value, error) {
		if s == "" {
			return pq.NullValue(), nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return pq.Value{}, fmt.Errorf("side-output record: %s %q: %w", name, s, err)
		}
		return pq.Int64Value(t.UnixMicro()), nil
	}
	et, err := ts("event_time", f.EventTime)
	if err != nil {
		return f, err
	}
	ob, err := ts("observed_at", f.ObservedAt)
	if err != nil {
		return f, err
	}
	wm := pq.NullValue()
	if f.CurrentWatermark != "" {
		wm = pq.ByteArrayValue(stringBytes(f.CurrentWatermark))
	}
	late := pq.NullValue()
	if f.LatenessMs != nil {
		late = pq.Int64Value(*f.LatenessMs)
	}
	for i, v := range []pq.Value{pq.ByteArrayValue(stringBytes(f.Kind)), str(f.Stage), str(f.EventID), et, ob, wm, late,
		str(f.Reason), str(f.Source), pq.ByteArrayValue(obj)} {
		vals[i] = level(v, RecordColumns[i].Required, i)
	}
	return f, nil
}

func stringBytes(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return []byte(s)
}

// orderedGroup is a Parquet group whose fields keep their order
// (parquet-go's Group, a map, sorts them by name): the columns of a file
// in the order of the pipeline's row.
type orderedGroup []field

type field struct {
	pq.Node
	name string
}

func (f field) Name() string { return f.name }

func (f field) Value(base reflect.Value) reflect.Value {
	return reflect.Value{} // rows are written as pq.Row, never from Go values
}

func (g orderedGroup) ID() int        { return 0 }
func (g orderedGroup) String() string { return "group" }
func (g orderedGroup) Type() pq.Type  { return pq.Group{}.Type() }
func (g orderedGroup) Optional() bool { return false }
func (g orderedGroup) Repeated() bool { return false }
func (g orderedGroup) Required() bool { return true }
func (g orderedGroup) Leaf() bool     { return false }
func (g orderedGroup) Fields() []pq.Field {
	out := make([]pq.Field, len(g))
	for i := range g {
		out[i] = g[i]
	}
	return out
}
func (g orderedGroup) Encoding() encoding.Encoding { return nil }
func (g orderedGroup) Compression() compress.Codec { return nil }
func (g orderedGroup) GoType() reflect.Type {
	fields := make([]reflect.StructField, len(g))
	for i, f := range g {
		fields[i] = reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: f.GoType(), Tag: reflect.StructTag(`parquet:"` + f.name + `"`)}
	}
	return reflect.StructOf(fields)
}
