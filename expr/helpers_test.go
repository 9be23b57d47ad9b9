package expr

import (
	"math"
	"testing"
	"time"

	"github.com/tidemark/tidemark/row"
)

// testSchema is the schema every table test compiles against. Fields whose
// name starts with n_ are null in testRow.
func testSchema(t testing.TB) *row.Schema {
	t.Helper()
	s := row.NewSchema()
	add := func(name string, k row.Kind) {
		if _, err := s.Add(name, k); err != nil {
			t.Fatal(err)
		}
	}
	add("event_type", row.KindString)
	add("amount", row.KindDecimal)
	add("qty", row.KindInt)
	add("price", row.KindDecimal)
	add("ts", row.KindTime)
	add("ts2", row.KindTime)
	add("ts_neg", row.KindTime)
	add("ok", row.KindBool)
	add("name", row.KindString)
	add("a", row.KindInt)
	add("b", row.KindInt)
	add("big", row.KindInt)
	add("small", row.KindInt)
	add("zero", row.KindInt)
	add("dzero", row.KindDecimal)
	add("s_num", row.KindString)
	add("s_dec", row.KindString)
	add("s_bad", row.KindString)
	add("customer.id", row.KindString)
	add("Quantity", row.KindInt)
	add("UnitPrice", row.KindDecimal)
	add("n_int", row.KindInt)
	add("n_dec", row.KindDecimal)
	add("n_str", row.KindString)
	add("n_bool", row.KindBool)
	add("n_ts", row.KindTime)
	return s
}

var testTS = time.Date(2026, 9, 1, 10, 30, 0, 0, time.UTC).UnixMilli()

// testRow fills the non-null fields of testSchema.
func testRow(t testing.TB, s *row.Schema) *row.Row {
	t.Helper()
	r := s.NewRow()
	set := func(name string, v row.Value) {
		f, ok := s.Lookup(name)
		if !ok {
			t.Fatalf("no field %s", name)
		}
		if err := r.Set(f, v); err != nil {
			t.Fatal(err)
		}
	}
	set("event_type", row.Str("REFUND"))
	set("amount", row.Dec(dec(t, "19.99")))
	set("qty", row.Int(3))
	set("price", row.Dec(dec(t, "2.50")))
	set("ts", row.Time(testTS))
	set("ts2", row.Time(testTS+1))
	set("ts_neg", row.Time(-1))
	set("ok", row.Bool(true))
	set("name", row.Str(" Alice "))
	set("a", row.Int(7))
	set("b", row.Int(2))
	set("big", row.Int(math.MaxInt64))
	set("small", row.Int(math.MinInt64))
	set("zero", row.Int(0))
	set("dzero", row.Dec(dec(t, "0.00")))
	set("s_num", row.Str("42"))
	set("s_dec", row.Str("12.345"))
	set("s_bad", row.Str("abc"))
	set("customer.id", row.Str("c-1"))
	set("Quantity", row.Int(6))
	set("UnitPrice", row.Dec(dec(t, "2.55")))
	return r
}

func dec(t testing.TB, s string) row.Decimal {
	t.Helper()
	d, err := row.ParseDecimal([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func compileT(t testing.TB, s *row.Schema, src string) *Expr {
	t.Helper()
	p, err := Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	e, err := Compile(p, s)
	if err != nil {
		t.Fatalf("Compile(%q): %v", src, err)
	}
	return e
}
