package row

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/quagmt/udecimal"
	"pgregory.net/rapid"
)

func mustAdd(t testing.TB, s *Schema, name string, k Kind) Field {
	t.Helper()
	f, err := s.Add(name, k)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func dec(t testing.TB, s string) Decimal {
	t.Helper()
	d, err := ParseDecimal([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSchemaSlots(t *testing.T) {
	s := NewSchema()
	kinds := []Kind{KindBool, KindInt, KindDecimal, KindString, KindTime, KindInt, KindDecimal, KindString}
	want := []Field{
		{Name: "f0", Kind: KindBool, Index: 0, Slot: 0},
		{Name: "f1", Kind: KindInt, Index: 1, Slot: 1},
		{Name: "f2", Kind: KindDecimal, Index: 2, Slot: 0},
		{Name: "f3", Kind: KindString, Index: 3, Slot: 0},
		{Name: "f4", Kind: KindTime, Index: 4, Slot: 2},
		{Name: "f5", Kind: KindInt, Index: 5, Slot: 3},
		{Name: "f6", Kind: KindDecimal, Index: 6, Slot: 1},
		{Name: "f7", Kind: KindString, Index: 7, Slot: 1},
	}
	for i, k := range kinds {
		if f := mustAdd(t, s, fmt.Sprint("f", i), k); f != want[i] {
			t.Errorf("Add f%d: %+v, want %+v", i, f, want[i])
		}
	}
	for _, bad := range []struct {
		name string
		k    Kind
	}{{"", KindInt}, {"f3", KindInt}, {"n", KindNull}, {"x", Kind(42)}} {
		if f, err := s.Add(bad.name, bad.k); err == nil {
			t.Errorf("Add(%q, %v) = %+v, want an error", bad.name, bad.k, f)
		}
	}
	if s.Len() != 8 {
		t.Fatalf("Len = %d after failed Adds", s.Len())
	}
	for _, w := range want {
		if f, ok := s.Lookup(w.Name); !ok || f != w {
			t.Errorf("Lookup(%q) = %+v, %v", w.Name, f, ok)
		}
	}
	if _, ok := s.Lookup("nope"); ok {
		t.Error("Lookup of a missing field")
	}
	r := s.NewRow()
	if len(r.I) != 4 || len(r.D) != 2 || len(r.S) != 2 || len(r.null) != 1 {
		t.Fatalf("row slots I=%d D=%d S=%d null words=%d, want 4 2 2 1", len(r.I), len(r.D), len(r.S), len(r.null))
	}
	if r.NullCount() != 8 {
		t.Fatalf("new row: %d nulls, want 8", r.NullCount())
	}
	// A failed Add after a good one does not take a slot.
	f := mustAdd(t, s, "f8", KindTime)
	if f.Slot != 4 || f.Index != 8 {
		t.Fatalf("f8 = %+v", f)
	}
}

// TestRowValues: Set then Get returns the value for every kind; null
// round-trips; int is accepted for decimal fields exactly; other kind
// mismatches are errors that leave the field as it was.
func TestRowValues(t *testing.T) {
	s := NewSchema()
	fb := mustAdd(t, s, "b", KindBool)
	fi := mustAdd(t, s, "i", KindInt)
	fd := mustAdd(t, s, "d", KindDecimal)
	fs := mustAdd(t, s, "s", KindString)
	ft := mustAdd(t, s, "t", KindTime)
	r := s.NewRow()
	for _, c := range []struct {
		f Field
		v Value
	}{
		{fb, Bool(true)}, {fb, Bool(false)},
		{fi, Int(math.MinInt64)}, {fi, Int(0)}, {fi, Int(math.MaxInt64)},
		{fd, Dec(dec(t, "-19.990"))}, {fd, Dec(dec(t, "1234567890123456789012345678901234567890.5"))},
		{fs, Str("")}, {fs, Str("héllo")},
		{ft, Time(-1)}, {ft, Time(1_788_220_800_000)},
	} {
		if err := r.Set(c.f, c.v); err != nil {
			t.Fatalf("Set(%s, %v): %v", c.f.Name, c.v, err)
		}
		got := r.Get(c.f)
		if !got.Equal(c.v) || got.Kind != c.f.Kind || got.String() != c.v.String() {
			t.Errorf("Get(%s) = %v (%v), want %v", c.f.Name, got, got.Kind, c.v)
		}
		if r.IsNull(c.f.Index) {
			t.Errorf("%s null after Set", c.f.Name)
		}
		if err := r.Set(c.f, Null); err != nil || !r.IsNull(c.f.Index) || !r.Get(c.f).IsNull() {
			t.Errorf("Set(%s, null): %v, IsNull %v", c.f.Name, err, r.IsNull(c.f.Index))
		}
	}
	// int → decimal: exact, scale 0, at the ends of int64 too.
	for _, v := range []int64{math.MinInt64, -1, 0, 42, math.MaxInt64} {
		if err := r.Set(fd, Int(v)); err != nil {
			t.Fatal(err)
		}
		got := r.Get(fd)
		if got.Kind != KindDecimal || got.String() != strconv.FormatInt(v, 10) {
			t.Errorf("Set(decimal, Int(%d)) reads %v %v", v, got.Kind, got)
		}
	}
	// Mismatches.
	_ = r.Set(fi, Int(7))
	for _, c := range []struct {
		f Field
		v Value
	}{
		{fi, Dec(dec(t, "1"))}, {fi, Time(1)}, {fi, Bool(true)}, {fi, Str("1")},
		{ft, Int(1)}, {fb, Int(1)}, {fs, Int(1)}, {fd, Str("1")}, {fd, Time(1)},
	} {
		before := r.Get(c.f)
		err := r.Set(c.f, c.v)
		if err == nil {
			t.Errorf("Set(%s %v, %v %v): no error", c.f.Name, c.f.Kind, c.v.Kind, c.v)
			continue
		}
		if want := fmt.Sprintf("field %q is %s, value is %s", c.f.Name, c.f.Kind, c.v.Kind); err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
		if after := r.Get(c.f); !after.Equal(before) {
			t.Errorf("failed Set changed %s from %v to %v", c.f.Name, before, after)
		}
	}
}

// TestShape: Shape sizes the slices for the schema, reuses their
// capacity, and makes every field null, whatever the row held.
func TestShape(t *testing.T) {
	s := NewSchema()
	fi := mustAdd(t, s, "i", KindInt)
	fs := mustAdd(t, s, "s", KindString)
	r := s.NewRow()
	_ = r.Set(fi, Int(5))
	_ = r.Set(fs, Str("x"))
	if r.NullCount() != 0 {
		t.Fatalf("%d nulls", r.NullCount())
	}
	i0 := &r.I[0]
	s.Shape(r)
	if r.NullCount() != 2 || !r.IsNull(0) || !r.IsNull(1) {
		t.Fatalf("after Shape: %d nulls", r.NullCount())
	}
	if &r.I[0] != i0 {
		t.Fatal("Shape did not reuse the slice")
	}
	// Shaping a row made for a wider schema for a narrower one.
	wide := NewSchema()
	for i := 0; i < 130; i++ {
		mustAdd(t, wide, fmt.Sprint("w", i), KindInt)
	}
	w := wide.NewRow()
	for i := range 130 {
		w.SetValid(i)
	}
	s.Shape(w)
	if len(w.I) != 1 || len(w.S) != 1 || len(w.null) != 1 || w.NullCount() != 2 {
		t.Fatalf("wide row reshaped: I=%d S=%d words=%d nulls=%d", len(w.I), len(w.S), len(w.null), w.NullCount())
	}
	var zero Row // the zero Row has no fields
	NewSchema().Shape(&zero)
	if zero.NullCount() != 0 || len(zero.I)+len(zero.D)+len(zero.S)+len(zero.null) != 0 {
		t.Fatalf("empty schema: %+v", zero)
	}
}

// TestExtendFrom: a row decoded for the source schema is extended for a
// stage's schema with derived fields: the first `from` fields keep their
// values, the rest are null, and extending again (the next record, or
// another stage) clears the derived fields again.
func TestExtendFrom(t *testing.T) {
	src := NewSchema()
	ext := NewSchema()
	var srcFields []Field
	for _, s := range []*Schema{src, ext} {
		srcFields = []Field{mustAdd(t, s, "id", KindInt), mustAdd(t, s, "name", KindString), mustAdd(t, s, "amount", KindDecimal)}
	}
	dInt := mustAdd(t, ext, "doubled", KindInt)
	dStr := mustAdd(t, ext, "label", KindString)
	r := src.NewRow()
	vals := []Value{Int(7), Str("seven"), Dec(dec(t, "7.70"))}
	for i, f := range srcFields {
		_ = r.Set(f, vals[i])
	}
	ext.ExtendFrom(r, src.Len())
	if len(r.I) != 2 || len(r.S) != 2 || len(r.D) != 1 {
		t.Fatalf("extended slots I=%d S=%d D=%d", len(r.I), len(r.S), len(r.D))
	}
	for i, f := range srcFields {
		if got := r.Get(f); !got.Equal(vals[i]) {
			t.Errorf("%s = %v after ExtendFrom, want %v", f.Name, got, vals[i])
		}
	}
	if !r.IsNull(dInt.Index) || !r.IsNull(dStr.Index) || r.NullCount() != 2 {
		t.Fatalf("derived fields not null: %d nulls", r.NullCount())
	}
	_ = r.Set(dInt, Int(14))
	_ = r.Set(dStr, Str("fourteen"))
	ext.ExtendFrom(r, src.Len())
	if !r.IsNull(dInt.Index) || !r.IsNull(dStr.Index) || !r.Get(srcFields[1]).Equal(Str("seven")) {
		t.Fatal("second ExtendFrom did not clear the derived fields or lost a source field")
	}

	// Beyond 64 fields: null bits live in several words.
	wide := NewSchema()
	for i := 0; i < 130; i++ {
		mustAdd(t, wide, fmt.Sprint("c", i), []Kind{KindInt, KindString, KindDecimal}[i%3])
	}
	small := NewSchema()
	for i := 0; i < 100; i++ {
		mustAdd(t, small, fmt.Sprint("c", i), []Kind{KindInt, KindString, KindDecimal}[i%3])
	}
	r = small.NewRow()
	if len(r.null) != 2 || r.NullCount() != 100 {
		t.Fatalf("100 fields: %d words, %d nulls", len(r.null), r.NullCount())
	}
	for _, i := range []int{0, 63, 64, 99} {
		_ = r.Set(small.Fields[i], []Value{Int(int64(i)), Str(fmt.Sprint(i)), Dec(DecimalFromInt(int64(i)))}[i%3])
	}
	wide.ExtendFrom(r, 100)
	if len(r.null) != 3 || r.NullCount() != 126 {
		t.Fatalf("130 fields: %d words, %d nulls, want 3, 126", len(r.null), r.NullCount())
	}
	for i := range 130 {
		valid := i == 0 || i == 63 || i == 64 || i == 99
		if r.IsNull(i) == valid {
			t.Errorf("field %d: IsNull %v", i, r.IsNull(i))
		}
	}
	if got := r.Get(wide.Fields[99]); !got.Equal(Int(99)) {
		t.Errorf("field 99 = %v", got)
	}
	// Bits of one field never touch another's.
	for _, i := range []int{62, 65, 127, 128, 129} {
		r.SetValid(i)
		if r.IsNull(i) || r.NullCount() != 125 {
			t.Errorf("SetValid(%d): IsNull %v, %d nulls", i, r.IsNull(i), r.NullCount())
		}
		r.SetNull(i)
		if !r.IsNull(i) || r.NullCount() != 126 {
			t.Errorf("SetNull(%d): IsNull %v, %d nulls", i, r.IsNull(i), r.NullCount())
		}
	}
}

// TestExtendFromReusedRow: a row once shaped for 130 fields, reshaped for
// 10 and extended to 80 takes words back from spare capacity. They used to
// keep the old bits, so NullCount counted fields 80–129 of the old shape.
func TestExtendFromReusedRow(t *testing.T) {
	schema := func(n int) *Schema {
		s := NewSchema()
		for i := 0; i < n; i++ {
			mustAdd(t, s, fmt.Sprint("f", i), KindInt)
		}
		return s
	}
	s130, s10, s80 := schema(130), schema(10), schema(80)
	r := s130.NewRow()
	s10.Shape(r)
	_ = r.Set(s10.Fields[3], Int(3))
	s80.ExtendFrom(r, 10)
	if got := r.NullCount(); got != 79 {
		t.Fatalf("NullCount = %d, want 79", got)
	}
	if r.IsNull(3) || !r.IsNull(79) || !r.Get(s80.Fields[3]).Equal(Int(3)) {
		t.Fatal("values or null bits wrong")
	}
}

// TestCopyFrom: CopyFrom copies values and null bits, and strings out of
// the buffer they point into.
func TestCopyFrom(t *testing.T) {
	s := NewSchema()
	fi := mustAdd(t, s, "i", KindInt)
	fs := mustAdd(t, s, "s", KindString)
	fd := mustAdd(t, s, "d", KindDecimal)
	fn := mustAdd(t, s, "n", KindString)
	src := s.NewRow()
	buf := []byte("decoder buffer")
	_ = src.Set(fi, Int(1))
	_ = src.Set(fs, Str(unsafe.String(&buf[0], 7))) // "decoder", pointing into buf
	_ = src.Set(fd, Dec(dec(t, "2.50")))
	var dst Row
	dst.CopyFrom(src)
	copy(buf, "REUSED!")
	if got := src.Get(fs).S; got != "REUSED!" {
		t.Fatalf("source string %q: the test did not alias the buffer", got)
	}
	if got := dst.Get(fs).S; got != "decoder" {
		t.Fatalf("copied string %q changed with the decoder buffer", got)
	}
	src.I[fi.Slot] = 99
	src.SetValid(fn.Index)
	if got := dst.Get(fi); !got.Equal(Int(1)) || !dst.IsNull(fn.Index) || dst.IsNull(fi.Index) {
		t.Fatalf("copy shares slices with the source: %v", got)
	}
	if got := dst.Get(fd); got.String() != "2.50" {
		t.Fatalf("decimal %v", got)
	}
	// Copying into a row with larger slices shrinks them to the source.
	s2 := NewSchema()
	for i := 0; i < 70; i++ {
		mustAdd(t, s2, fmt.Sprint("x", i), KindString)
	}
	w := s2.NewRow()
	w.CopyFrom(src)
	if len(w.S) != 2 || len(w.null) != 1 || len(w.I) != 1 || w.NullCount() != src.NullCount() {
		t.Fatalf("copy into a wider row: S=%d words=%d nulls=%d", len(w.S), len(w.null), w.NullCount())
	}
}

func TestValueEqualCompare(t *testing.T) {
	// In ascending order; values in one group are equal.
	groups := [][]Value{
		{Null, {}},
		{Bool(false)},
		{Bool(true)},
		{Int(math.MinInt64)},
		{Int(-1)},
		{Int(0)},
		{Int(math.MaxInt64)},
		{Dec(dec(t, "-1e40"))},
		{Dec(dec(t, "-0.5")), Dec(dec(t, "-0.50")), Dec(dec(t, "-5e-1"))},
		{Dec(dec(t, "0")), Dec(dec(t, "0.000")), Dec(dec(t, "-0"))},
		{Dec(dec(t, "0.0000000000000000001"))},
		{Dec(dec(t, "2")), Dec(dec(t, "2.0")), Dec(dec(t, "2.00")), Dec(DecimalFromInt(2)), Dec(dec(t, "0.2e1"))},
		{Dec(dec(t, "12345678901234567890123456789012345678901"))},
		{Str("")},
		{Str("A")},
		{Str("a")},
		{Str("ab")},
		{Str("b")},
		{Str("é")},
		{Time(math.MinInt64)},
		{Time(-1)},
		{Time(0)},
	}
	for gi, g := range groups {
		for _, v := range g {
			for gj, h := range groups {
				for _, w := range h {
					want := 0
					if gi < gj {
						want = -1
					} else if gi > gj {
						want = 1
					}
					if got := v.Compare(w); got != want {
						t.Errorf("%v(%v).Compare(%v(%v)) = %d, want %d", v.Kind, v, w.Kind, w, got, want)
					}
					if got := v.Equal(w); got != (want == 0) {
						t.Errorf("%v(%v).Equal(%v(%v)) = %v", v.Kind, v, w.Kind, w, got)
					}
				}
			}
		}
	}
	// Different kinds never compare equal, whatever their numbers.
	for _, p := range [][2]Value{{Int(1), Dec(DecimalFromInt(1))}, {Int(1), Time(1)}, {Int(1), Bool(true)}, {Str("1"), Int(1)}} {
		if p[0].Equal(p[1]) || p[0].Compare(p[1]) == 0 {
			t.Errorf("%v %v equals %v %v", p[0].Kind, p[0], p[1].Kind, p[1])
		}
	}
	if Int(0).IsNull() || !Null.IsNull() || !(Value{}).IsNull() {
		t.Error("IsNull")
	}
}

// TestDecimalCompareMatchesRat: Compare and Equal of decimals agree with
// exact rational comparison.
func TestDecimalCompareMatchesRat(t *testing.T) {
	gen := rapid.StringMatching(`-?[0-9]{1,25}(\.[0-9]{1,19})?`)
	rapid.Check(t, func(rt *rapid.T) {
		a, b := gen.Draw(rt, "a"), gen.Draw(rt, "b")
		pa, erra := ParseDecimal([]byte(a))
		pb, errb := ParseDecimal([]byte(b))
		if erra != nil || errb != nil {
			rt.Fatalf("%s: %v; %s: %v", a, erra, b, errb)
		}
		da, db := Dec(pa), Dec(pb)
		ra, _ := new(big.Rat).SetString(a)
		rb, _ := new(big.Rat).SetString(b)
		if got, want := da.Compare(db), ra.Cmp(rb); got != want {
			rt.Fatalf("%s vs %s: Compare %d, want %d", a, b, got, want)
		}
		if da.Equal(db) != (ra.Cmp(rb) == 0) || da.Compare(db) != -db.Compare(da) {
			rt.Fatalf("%s vs %s: Equal/antisymmetry", a, b)
		}
	})
}

func TestParseDecimal(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"19.99", "19.99"},
		{"20.00", "20.00"}, // the literal's scale is kept
		{"-5000", "-5000"},
		{"+0.5", "0.5"},
		{"-0.50", "-0.50"},
		{"00.5", "0.5"},
		{"0.908", "0.908"},
		{"0.1234567890123456789", "0.1234567890123456789"}, // 19 digits after the point
		{"1.0000000000000000000", "1.0000000000000000000"},
		{"12345678901234567890123456789012345678901234567890", "12345678901234567890123456789012345678901234567890"},
		{"-12345678901234567890123456789012345678901234567890.125", "-12345678901234567890123456789012345678901234567890.125"},
		// Exponents: the value is exact and the scale is the literal's
		// meaning (digits after the point minus the exponent, at least 0).
		{"1.25e3", "1250"},
		{"1.25E3", "1250"},
		{"1.2345e2", "123.45"},
		{"1.50e1", "15.0"},
		{"-2.5e1", "-25"},
		{"1e+3", "1000"},
		{"1e-0", "1"},
		{"1e0", "1"},
		{"7e00", "7"},
		{"2E-2", "0.02"},
		{"-2E-2", "-0.02"},
		{"12.5e-18", "0.0000000000000000125"},
		{"1e-19", "0.0000000000000000001"},
		{"-1e-19", "-0.0000000000000000001"},
		{"123456789012345678901234567890.5e-10", "12345678901234567890.12345678905"},
		{"1e38", "1" + strings.Repeat("0", 38)},
		{"1e40", "1" + strings.Repeat("0", 40)},
		{"99999999999999999999e40", strings.Repeat("9", 20) + strings.Repeat("0", 40)},
		// Zero: udecimal keeps no scale for zero.
		{"0", "0"},
		{"0.00", "0"},
		{"-0.00", "0"},
		{"0e-5", "0"},
	} {
		d, err := ParseDecimal([]byte(c.in))
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := string(FormatDecimal(nil, d)); got != c.want {
			t.Errorf("%q = %s, want %s", c.in, got, c.want)
		}
		r1, _ := new(big.Rat).SetString(c.in)
		r2, _ := new(big.Rat).SetString(c.want)
		if r1.Cmp(r2) != 0 {
			t.Errorf("test case %q: %s is a different number", c.in, c.want)
		}
	}
	for _, in := range []string{
		"", ".5", "5.", "-.5", "1.e3", ".5e1", "1e", "e5", "1e5e5", "1e+", "1e-", "1ee5", "1e5.0",
		"1_000", "0x10", "Inf", "-Inf", "NaN", " 1", "1 ", "-", "+", "--1", "+-1", "-+1", "1,5", "1.2.3",
		"١٢", "1/2", "1e1_0",
		// udecimal took a second sign in literals longer than 41 bytes.
		"-+1000000000000000000000000000000000000000",
		"-+10000000000000000000000000000000000000.5e1",
		"++1000000000000000000000000000000000000000",
	} {
		if d, err := ParseDecimal([]byte(in)); !errors.Is(err, ErrDecimalSyntax) {
			t.Errorf("%q = %s, %v; want ErrDecimalSyntax", in, FormatDecimal(nil, d), err)
		}
	}
	// Too many digits after the point, too large an exponent, too long.
	for _, in := range []string{
		"0.12345678901234567890", "1e-20", "0.1e-19", "1.5e-19", "1e41", "1e-41",
		"1" + strings.Repeat("0", 200),
		"123456789012345678901234567890123456789012.5e-1", // mantissa beyond 128 bits with a negative exponent
	} {
		if d, err := ParseDecimal([]byte(in)); err == nil {
			t.Errorf("%q = %s, want an error", in, FormatDecimal(nil, d))
		}
	}
}

func TestFormatDecimal(t *testing.T) {
	for _, c := range []struct {
		coef  int64
		scale uint8
		want  string
	}{
		{2000, 2, "20.00"},
		{-5000, 0, "-5000"},
		{908, 3, "0.908"},
		{-5, 1, "-0.5"},
		{1, 19, "0.0000000000000000001"},
		{-1, 19, "-0.0000000000000000001"},
		{math.MaxInt64, 4, "922337203685477.5807"},
		{math.MinInt64, 0, "-9223372036854775808"},
		{10, 1, "1.0"},
	} {
		d, err := udecimal.NewFromInt64(c.coef, c.scale)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(FormatDecimal([]byte("x="), d)); got != "x="+c.want {
			t.Errorf("%d scale %d = %s, want x=%s", c.coef, c.scale, got, c.want)
		}
	}
	for _, v := range []int64{math.MinInt64, -1, 0, 1, math.MaxInt64} {
		if got := string(FormatDecimal(nil, DecimalFromInt(v))); got != strconv.FormatInt(v, 10) {
			t.Errorf("DecimalFromInt(%d) = %s", v, got)
		}
	}
	// Arithmetic keeps the larger scale: 19.99 + 0.01 = 20.00.
	if got := string(FormatDecimal(nil, dec(t, "19.99").Add(dec(t, "0.01")))); got != "20.00" {
		t.Errorf("19.99 + 0.01 = %s", got)
	}
	if got := string(FormatDecimal(nil, dec(t, "2.55").Mul(DecimalFromInt(6)))); got != "15.30" {
		t.Errorf("2.55 × 6 = %s", got)
	}
}

func TestAppendTime(t *testing.T) {
	load := func(z string) *time.Location {
		l, err := time.LoadLocation(z)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	seoul, london, ny, kolkata := load("Asia/Seoul"), load("Europe/London"), load("America/New_York"), load("Asia/Kolkata")
	const sep1 = 1_788_220_800_000 // 2026-09-01T00:00:00Z
	for _, c := range []struct {
		ms   int64
		loc  *time.Location
		want string
	}{
		{0, nil, "1970-01-01T00:00:00Z"},
		{0, time.UTC, "1970-01-01T00:00:00Z"},
		{1, nil, "1970-01-01T00:00:00.001Z"},
		{-1, nil, "1969-12-31T23:59:59.999Z"},
		{-1000, nil, "1969-12-31T23:59:59Z"},
		{-1500, nil, "1969-12-31T23:59:58.500Z"},
		{sep1 + 10*3_600_000, nil, "2026-09-01T10:00:00Z"},
		{sep1 + 10*3_600_000 + 250, nil, "2026-09-01T10:00:00.250Z"},
		{sep1 + 3_600_000, seoul, "2026-09-01T10:00:00+09:00"},
		{sep1 + 3_600_000 + 250, seoul, "2026-09-01T10:00:00.250+09:00"},
		{sep1 + 3_600_000 + 7, seoul, "2026-09-01T10:00:00.007+09:00"},
		{sep1 - 9*3_600_000, seoul, "2026-09-01T00:00:00+09:00"},
		{sep1 + 9*3_600_000, london, "2026-09-01T10:00:00+01:00"},
		{sep1 + 14*3_600_000, ny, "2026-09-01T10:00:00-04:00"},
		{sep1 + 14*3_600_000 + 999, ny, "2026-09-01T10:00:00.999-04:00"},
		{sep1 + 4*3_600_000 + 30*60_000, kolkata, "2026-09-01T10:00:00+05:30"},
		{1_296_554_400_000, london, "2011-02-01T10:00:00Z"}, // GMT is written Z
		{1_296_554_400_000, ny, "2011-02-01T05:00:00-05:00"},
		{-1, seoul, "1970-01-01T08:59:59.999+09:00"},
	} {
		if got := string(AppendTime([]byte("at "), c.ms, c.loc)); got != "at "+c.want {
			t.Errorf("AppendTime(%d, %v) = %s, want at %s", c.ms, c.loc, got, c.want)
		}
		if got := FormatTime(c.ms, c.loc); got != c.want {
			t.Errorf("FormatTime(%d, %v) = %s", c.ms, c.loc, got)
		}
		if got := string(Time(c.ms).AppendText(nil, c.loc)); got != c.want {
			t.Errorf("AppendText(%d, %v) = %s", c.ms, c.loc, got)
		}
	}
}

func TestValueText(t *testing.T) {
	for _, c := range []struct {
		v    Value
		want string
	}{
		{Null, "null"},
		{Bool(true), "true"},
		{Bool(false), "false"},
		{Int(-42), "-42"},
		{Dec(dec(t, "20.00")), "20.00"},
		{Str("a b"), "a b"},
		{Time(1_788_220_800_000), "2026-09-01T00:00:00Z"},
		{Value{Kind: Kind(42)}, ""},
	} {
		if got := c.v.String(); got != c.want {
			t.Errorf("%v: String() = %q, want %q", c.v.Kind, got, c.want)
		}
	}
}

func TestKind(t *testing.T) {
	for s, want := range map[string]Kind{
		"bool": KindBool, "boolean": KindBool,
		"int": KindInt, "integer": KindInt, "int64": KindInt, "long": KindInt,
		"decimal": KindDecimal, "number": KindDecimal, "numeric": KindDecimal,
		"string": KindString, "text": KindString,
		"timestamp": KindTime, "time": KindTime,
	} {
		if got, err := ParseKind(s); err != nil || got != want {
			t.Errorf("ParseKind(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "null", "float", "Int", "date"} {
		if k, err := ParseKind(s); err == nil || !strings.Contains(err.Error(), "want bool, int, decimal, string or timestamp") {
			t.Errorf("ParseKind(%q) = %v, %v", s, k, err)
		}
	}
	names := map[Kind]string{KindNull: "null", KindBool: "bool", KindInt: "int", KindDecimal: "decimal", KindString: "string", KindTime: "timestamp", Kind(42): "kind(42)"}
	for k, want := range names {
		if k.String() != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, k.String(), want)
		}
		if k != KindNull && k != Kind(42) {
			if back, err := ParseKind(want); err != nil || back != k {
				t.Errorf("ParseKind(%q) = %v, %v", want, back, err)
			}
		}
	}
	for k, want := range map[Kind][2]bool{
		KindNull: {false, false}, KindBool: {true, false}, KindInt: {true, true},
		KindDecimal: {false, true}, KindString: {false, false}, KindTime: {true, false},
	} {
		if k.InI() != want[0] || k.Numeric() != want[1] {
			t.Errorf("%v: InI %v Numeric %v", k, k.InI(), k.Numeric())
		}
	}
}

var decimalText = regexp.MustCompile(`^[+-]?([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$`)

// FuzzParseDecimal: ParseDecimal never panics; what it accepts is a plain
// decimal literal (sign, digits, optional fraction, optional exponent),
// with the value math/big.Rat reads from the same text and the scale of
// the literal; and it accepts every such literal of modest size.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{
		"19.99", "-5000", "+0.5", "1.25e3", "2E-2", "1e-20", "0.12345678901234567890", ".5", "5.", "1e41",
		"-+1000000000000000000000000000000000000000", "12345678901234567890123456789012345678901234567890",
		"123456789012345678901234567890.5e-10", "0.00", "-0e-3", "1e+3", "", "e", "1e", "0x1p-2", "1/2",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDecimal(b)
		m := decimalText.FindSubmatch(b)
		if err != nil {
			// Every literal of modest size must be accepted.
			if m != nil && len(m[1])+len(m[2]) <= 30 {
				exp, _ := strconv.Atoi(string(m[3]))
				if scale := len(m[2]) - exp; len(m[3]) <= 3 && exp >= -19 && exp <= 19 && scale <= MaxDecimalScale {
					t.Fatalf("%q rejected: %v", b, err)
				}
			}
			return
		}
		if m == nil {
			t.Fatalf("%q accepted as %s, but it is not a decimal literal", b, FormatDecimal(nil, d))
		}
		want, ok := new(big.Rat).SetString(string(b))
		if !ok {
			t.Fatalf("%q accepted, big.Rat rejects it", b)
		}
		text := FormatDecimal(nil, d)
		got, ok := new(big.Rat).SetString(string(text))
		if !ok || got.Cmp(want) != 0 {
			t.Fatalf("%q = %s, big.Rat reads %s", b, text, want.RatString())
		}
		exp := 0
		if len(m[3]) > 0 {
			exp, _ = strconv.Atoi(string(m[3]))
		}
		scale := max(len(m[2])-exp, 0)
		if want.Sign() == 0 {
			scale = 0 // udecimal keeps no scale for zero
		}
		if d.Prec() != scale {
			t.Fatalf("%q = %s has scale %d, want %d", b, text, d.Prec(), scale)
		}
	})
}

func BenchmarkParseDecimal(b *testing.B) {
	for _, s := range []string{"19.99", "-12345.6789", "1.25e3"} {
		in := []byte(s)
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseDecimal(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSchemaClear: Clear makes every field null and keeps the slices'
// lengths of a row shaped for the schema; a row shaped for another
// schema is shaped as Shape does.
func TestSchemaClear(t *testing.T) {
	s := NewSchema()
	a, _ := s.Add("a", KindInt)
	b, _ := s.Add("b", KindString)
	c, _ := s.Add("c", KindDecimal)
	r := s.NewRow()
	_ = r.Set(a, Int(1))
	_ = r.Set(b, Str("x"))
	_ = r.Set(c, Int(2))
	s.Clear(r)
	if n := r.NullCount(); n != 3 || !r.IsNull(0) || !r.IsNull(1) || !r.IsNull(2) {
		t.Errorf("after Clear: %d null fields, want 3", n)
	}
	if len(r.I) != 1 || len(r.S) != 1 || len(r.D) != 1 || len(r.null) != 1 {
		t.Errorf("lengths I %d S %d D %d null %d, want 1 1 1 1", len(r.I), len(r.S), len(r.D), len(r.null))
	}
	wide := NewSchema()
	for i := 0; i < 70; i++ {
		if _, err := wide.Add(fmt.Sprintf("f%d", i), KindInt); err != nil {
			t.Fatal(err)
		}
	}
	wide.Clear(r)
	if len(r.I) != 70 || len(r.S) != 0 || len(r.D) != 0 || len(r.null) != 2 || r.NullCount() != 70 {
		t.Errorf("wide: lengths I %d S %d D %d null %d, %d null; want 70 0 0 2, 70", len(r.I), len(r.S), len(r.D), len(r.null), r.NullCount())
	}
}

// TestAppendValues: AppendValues appends, after what dst holds, each
// field's value as Get returns it: a null, a decimal, a string, an int, a
// time and a bool, with every other part of the Value zero.
func TestAppendValues(t *testing.T) {
	s := NewSchema()
	n, _ := s.Add("n", KindInt)
	d, _ := s.Add("d", KindDecimal)
	str, _ := s.Add("s", KindString)
	i, _ := s.Add("i", KindInt)
	tm, _ := s.Add("t", KindTime)
	b, _ := s.Add("b", KindBool)
	r := s.NewRow()
	_ = r.Set(d, Dec(DecimalFromInt(12)))
	_ = r.Set(str, Str("abc"))
	_ = r.Set(i, Int(-4))
	_ = r.Set(tm, Time(1700))
	_ = r.Set(b, Bool(true))
	dst := []Value{Str("kept")}
	// A stale value in the spare capacity is overwritten whole.
	dst = append(dst, Str("stale"))[:1]
	got := r.AppendValues(dst, []Field{n, d, str, i, tm, b, i})
	want := []Value{Str("kept"), Null, {Kind: KindDecimal, D: DecimalFromInt(12)}, {Kind: KindString, S: "abc"},
		{Kind: KindInt, I: -4}, {Kind: KindTime, I: 1700}, {Kind: KindBool, I: 1}, {Kind: KindInt, I: -4}}
	if len(got) != len(want) {
		t.Fatalf("%d values, want %d", len(got), len(want))
	}
	for k := range want {
		if got[k] != want[k] {
			t.Errorf("value %d = %#v, want %#v", k, got[k], want[k])
		}
	}
}

// TestNewSchemaSize: a schema made with room for n fields lays out the
// same slots as NewSchema's, refuses the same names, and grows past n.
func TestNewSchemaSize(t *testing.T) {
	kinds := []Kind{KindInt, KindString, KindDecimal, KindTime, KindBool, KindString}
	for _, n := range []int{-1, 0, 2, 6, 10} {
		a, b := NewSchema(), NewSchemaSize(n)
		for i, k := range kinds {
			name := string(rune('a' + i))
			fa, errA := a.Add(name, k)
			fb, errB := b.Add(name, k)
			if fa != fb || (errA == nil) != (errB == nil) {
				t.Fatalf("n=%d: field %s: %+v, %v; want %+v, %v", n, name, fb, errB, fa, errA)
			}
		}
		if _, err := b.Add("c", KindInt); err == nil {
			t.Fatalf("n=%d: a name added twice was accepted", n)
		}
		if b.Len() != 6 || b.nI != 3 || b.nD != 1 || b.nS != 2 {
			t.Fatalf("n=%d: %d fields, slots %d/%d/%d; want 6 fields, slots 3/1/2", n, b.Len(), b.nI, b.nD, b.nS)
		}
		if f, ok := b.Lookup("f"); !ok || f.Index != 5 || f.Slot != 1 {
			t.Fatalf("n=%d: Lookup(f) = %+v, %v; want index 5, slot 1", n, f, ok)
		}
	}
}

// TestSchemaClone: a clone has its original's fields and slots, Add
// extends the clone alone, and a clone of an empty schema works.
func TestSchemaClone(t *testing.T) {
	s := NewSchema()
	s.Add("a", KindInt)
	s.Add("b", KindString)
	s.Add("c", KindDecimal)
	c := s.Clone(2)
	if c.Len() != 3 || c.Fields[2] != s.Fields[2] {
		t.Fatalf("clone: %+v; want %+v", c.Fields, s.Fields)
	}
	d, err := c.Add("d", KindInt)
	if err != nil || d.Index != 3 || d.Slot != 1 {
		t.Fatalf("Add to the clone: %+v, %v; want index 3, slot 1", d, err)
	}
	if _, err := c.Add("b", KindInt); err == nil {
		t.Fatal("the clone accepted a name of its original")
	}
	if s.Len() != 3 || s.nI != 1 {
		t.Fatalf("original after Add to its clone: %d fields, %d int slots; want 3, 1", s.Len(), s.nI)
	}
	if _, ok := s.Lookup("d"); ok {
		t.Fatal("the original knows the clone's field")
	}
	e := (&Schema{}).Clone(0)
	if f, err := e.Add("x", KindBool); err != nil || f.Index != 0 {
		t.Fatalf("Add to a clone of an empty schema: %+v, %v", f, err)
	}
}
