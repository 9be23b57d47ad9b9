package results

import (
	"errors"
	"testing"
)

func TestParseDecimal(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"0", "0"}, {"20.00", "20.00"}, {"-5000", "-5000"}, {"+0.5", "0.5"}, {".5", "0.5"},
		{"1.", "1"}, {"1.25e3", "1250"}, {"2E-2", "0.02"}, {"-0.001", "-0.001"},
		{"123456789012345678901234567890.123456789012345678901234567890", "123456789012345678901234567890.123456789012345678901234567890"},
		{"1e+20", "100000000000000000000"},
	} {
		d, err := ParseDecimal(c.in)
		if err != nil || d.String() != c.want {
			t.Errorf("ParseDecimal(%q) = %s, %v; want %s", c.in, d, err, c.want)
		}
	}
	for _, in := range []string{"", "-", ".", "NaN", "Infinity", "1..2", "1e", "e5", "1e99999", "12a", " 1", "--1"} {
		if _, err := ParseDecimal(in); !errors.Is(err, ErrNotDecimal) {
			t.Errorf("ParseDecimal(%q): err %v, want ErrNotDecimal", in, err)
		}
	}
}

func TestDecimalArithmetic(t *testing.T) {
	p := func(s string) Decimal {
		d, err := ParseDecimal(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if got := p("0.1").Add(p("0.2")).String(); got != "0.3" {
		t.Errorf("0.1+0.2 = %s", got)
	}
	if got := p("100.00").Sub(p("100.004")).String(); got != "-0.004" {
		t.Errorf("100.00-100.004 = %s", got)
	}
	if got := p("25000").Sub(p("-5000.5")).String(); got != "30000.5" {
		t.Errorf("25000-(-5000.5) = %s", got)
	}
	if p("20.00").Cmp(p("20")) != 0 || p("0.01").Cmp(p("0.004")) != 1 || p("-1").Cmp(p("0")) != -1 {
		t.Error("Cmp")
	}
	if got := p("-0.004").Abs().String(); got != "0.004" {
		t.Errorf("Abs = %s", got)
	}
	var zero Decimal
	if zero.String() != "0" || zero.Add(p("1.50")).String() != "1.50" || zero.Sign() != 0 {
		t.Error("zero value")
	}
	if DecimalFromInt(-42).String() != "-42" {
		t.Error("DecimalFromInt")
	}
	for _, c := range []struct {
		s  string
		ok bool
	}{{"20.00", true}, {"-5000", true}, {"0", true}, {"1.", false}, {".5", false}, {"1e3", false}, {"+1", false}, {"", false}, {"2026-09-01T10:00:00+09:00", false}} {
		if isPlainDecimal(c.s) != c.ok {
			t.Errorf("isPlainDecimal(%q) = %v", c.s, !c.ok)
		}
	}
}
