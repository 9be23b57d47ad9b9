package aggregate

import (
	"testing"
	"unsafe"

	"github.com/tidemark/tidemark/row"
)

func decRow(t *testing.T, s *row.Schema, f row.Field, text string) *row.Row {
	t.Helper()
	r := s.NewRow()
	if text != "" {
		d, err := row.ParseDecimal([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		r.Set(f, row.Dec(d))
	}
	return r
}

// TestMoneyIsExact: 19.99 + 0.01 = 20.00, scale kept, retraction exact.
func TestMoneyIsExact(t *testing.T) {
	s := row.NewSchema()
	f, _ := s.Add("amount", row.KindDecimal)
	sum, err := New(Spec{Name: "total", Func: "sum", Arg: f, HasArg: true, Retract: true})
	if err != nil {
		t.Fatal(err)
	}
	avg, _ := New(Spec{Name: "mean", Func: "avg", Arg: f, HasArg: true, Retract: true})
	for _, c := range []Column{sum, avg} {
		c.Grow(1)
	}
	add := func(text string) {
		for _, c := range []Column{sum, avg} {
			if err := c.Add(0, decRow(t, s, f, text)); err != nil {
				t.Fatal(err)
			}
		}
	}
	add("19.99")
	add("0.01")
	if got := sum.Result(0).String(); got != "20.00" {
		t.Fatalf("sum = %s, want 20.00", got)
	}
	if got := avg.Result(0).String(); got != "10.000000" {
		t.Fatalf("avg = %s, want 10.000000", got)
	}
	add("")
	if got := sum.Result(0).String(); got != "20.00" {
		t.Fatalf("null changed the sum: %s", got)
	}
	for _, c := range []Column{sum, avg} {
		c.Retract(0, decRow(t, s, f, "19.99"))
		c.Retract(0, decRow(t, s, f, "0.01"))
	}
	if got := sum.Result(0); !got.IsNull() {
		t.Fatalf("sum of nothing = %s, want null", got)
	}
	add("25000")
	add("-25000.00")
	// The decimal type normalizes zero to scale 0 (udecimal's newDecimal),
	// so a sum that cancels out is written 0.
	if got := sum.Result(0).String(); got != "0" {
		t.Fatalf("cancelled sum = %s, want 0", got)
	}
}

// TestMinMaxRetract: retracting the current extreme yields the next one.
func TestMinMaxRetract(t *testing.T) {
	s := row.NewSchema()
	f, _ := s.Add("price", row.KindInt)
	mx, _ := New(Spec{Name: "hi", Func: "max", Arg: f, HasArg: true, Retract: true})
	mn, _ := New(Spec{Name: "lo", Func: "min", Arg: f, HasArg: true, Retract: true})
	cd, _ := New(Spec{Name: "d", Func: "count_distinct", Arg: f, HasArg: true, Retract: true})
	cols := []Column{mx, mn, cd}
	for _, c := range cols {
		c.Grow(1)
	}
	r := func(v int64) *row.Row { x := s.NewRow(); x.Set(f, row.Int(v)); return x }
	for _, v := range []int64{5, 9, 9, 1, 7} {
		for _, c := range cols {
			c.Add(0, r(v))
		}
	}
	check := func(hi, lo, d string) {
		t.Helper()
		if got := [3]string{mx.Result(0).String(), mn.Result(0).String(), cd.Result(0).String()}; got != [3]string{hi, lo, d} {
			t.Fatalf("max, min, distinct = %v, want [%s %s %s]", got, hi, lo, d)
		}
	}
	check("9", "1", "4")
	for _, c := range cols {
		c.Retract(0, r(9))
	}
	check("9", "1", "4") // one 9 left
	for _, c := range cols {
		c.Retract(0, r(9))
		c.Retract(0, r(1))
	}
	check("7", "5", "2")
	for _, c := range cols {
		c.Retract(0, r(7))
		c.Retract(0, r(5))
	}
	check("null", "null", "0")
}

func TestSumIntOverflowIsAnError(t *testing.T) {
	s := row.NewSchema()
	f, _ := s.Add("n", row.KindInt)
	c, _ := New(Spec{Name: "total", Func: "sum", Arg: f, HasArg: true})
	c.Grow(1)
	r := s.NewRow()
	r.Set(f, row.Int(1<<62))
	if err := c.Add(0, r); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(0, r); err == nil {
		t.Fatal("2^63 did not overflow")
	}
	if got := c.Result(0).String(); got != "4611686018427387904" {
		t.Fatalf("sum changed by the failed add: %s", got)
	}
}

func TestUnknownAndBadArguments(t *testing.T) {
	s := row.NewSchema()
	str, _ := s.Add("name", row.KindString)
	for _, sp := range []Spec{
		{Name: "x", Func: "median", Arg: str, HasArg: true},
		{Name: "x", Func: "sum", Arg: str, HasArg: true},
		{Name: "x", Func: "avg", Arg: str, HasArg: true},
		{Name: "x", Func: "sum"},
	} {
		if _, err := New(sp); err == nil {
			t.Errorf("%+v: no error", sp)
		}
	}
}

// TestBorrowedStringsStayOwned: row strings point into decoder buffers that
// are reused. Aggregates that keep strings (count_distinct, min/max) must
// own copies even when a value is added again: here the buffer behind the
// row's string is overwritten after each add, as the next batch would.
func TestBorrowedStringsStayOwned(t *testing.T) {
	s := row.NewSchema()
	f, _ := s.Add("c", row.KindString)
	cd, _ := New(Spec{Name: "d", Func: "count_distinct", Arg: f, HasArg: true, Retract: true})
	mx, _ := New(Spec{Name: "m", Func: "max", Arg: f, HasArg: true, Retract: true})
	cols := []Column{cd, mx}
	for _, c := range cols {
		c.Grow(1)
	}
	buf := []byte("x")
	r := s.NewRow()
	addBorrowed := func(b byte) {
		buf[0] = b
		r.Set(f, row.Str(unsafe.String(&buf[0], 1)))
		for _, c := range cols {
			if err := c.Add(0, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	addBorrowed('x')
	addBorrowed('x') // an existing value added again
	addBorrowed('y') // the buffer now says y
	addBorrowed('a')
	// x again, from a string of its own: it must be found, not counted anew.
	x := s.NewRow()
	x.Set(f, row.Str("x"))
	for _, c := range cols {
		c.Add(0, x)
	}
	if got := cd.Result(0).String(); got != "3" {
		t.Fatalf("count_distinct = %s, want 3 (x, y, a)", got)
	}
	buf[0] = 'z' // must not change what the aggregates hold
	if got := mx.Result(0).String(); got != "y" {
		t.Fatalf("max = %s, want y", got)
	}
	retract := func(v string) {
		x := s.NewRow()
		x.Set(f, row.Str(v))
		for _, c := range cols {
			c.Retract(0, x)
		}
	}
	retract("y")
	if got := mx.Result(0).String(); got != "x" {
		t.Fatalf("max after retracting y = %s, want x", got)
	}
	retract("x")
	if got := [2]string{cd.Result(0).String(), mx.Result(0).String()}; got != [2]string{"2", "x"} {
		t.Fatalf("after one of three x retracted: %v, want [2 x]", got)
	}
}

// TestAvgRoundsHalfAwayFromZero at every scale, including 19 digits after
// the point (expected values worked out by hand).
func TestAvgRoundsHalfAwayFromZero(t *testing.T) {
	s := row.NewSchema()
	f, _ := s.Add("x", row.KindDecimal)
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"0.0000000000000000001", "0"}, "0.0000000000000000001"},
		{[]string{"-5", "0.0000000000000000001"}, "-2.5000000000000000000"},
		{[]string{"1", "2"}, "1.500000"},
		{[]string{"1", "1", "2"}, "1.333333"},
		{[]string{"2", "2", "1"}, "1.666667"},
		{[]string{"-2", "-2", "-1"}, "-1.666667"},
		{[]string{"0.0000005", "0"}, "0.0000003"},
		{[]string{"-0.0000005", "0"}, "-0.0000003"},
		{[]string{"19.99", "0.01", "0.01"}, "6.670000"},
	} {
		c, _ := New(Spec{Name: "a", Func: "avg", Arg: f, HasArg: true})
		c.Grow(1)
		for _, x := range tc.in {
			c.Add(0, decRow(t, s, f, x))
		}
		if got := c.Result(0).String(); got != tc.want {
			t.Errorf("avg%v = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestMinMaxRetractAcrossScales: retracting a value equal to the extreme
// in another scale (2 against a maximum of 2.00) removes the extreme.
func TestMinMaxRetractAcrossScales(t *testing.T) {
	s := row.NewSchema()
	f, _ := s.Add("x", row.KindDecimal)
	c, _ := New(Spec{Name: "m", Func: "max", Arg: f, HasArg: true, Retract: true})
	c.Grow(1)
	for _, v := range []string{"2.00", "2", "1"} {
		c.Add(0, decRow(t, s, f, v))
	}
	if got := c.Result(0).String(); got != "2.00" {
		t.Fatalf("max = %s, want 2.00", got)
	}
	c.Retract(0, decRow(t, s, f, "2.00"))
	if got := c.Result(0).String(); got != "2.00" {
		t.Fatalf("after retracting one of the two: %s, want 2.00", got)
	}
	c.Retract(0, decRow(t, s, f, "2"))
	if got := c.Result(0).String(); got != "1" {
		t.Errorf("after retracting both: %s, want 1", got)
	}
}
