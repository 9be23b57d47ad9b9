package avro

import (
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/quagmt/udecimal"
	tavro "github.com/twmb/avro"
	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
)

// TestDecimalBytesExamples pins the encodings of a few values (Java's
// BigInteger.toByteArray of the unscaled value).
func TestDecimalBytesExamples(t *testing.T) {
	for _, c := range []struct {
		v     string
		scale uint8
		hex   string
		err   error
	}{
		{"12.50", 2, "04e2", nil}, // 1250
		{"12.5", 2, "04e2", nil},
		{"-0.05", 2, "fb", nil}, // -5
		{"0", 2, "00", nil},
		{"1.27", 2, "7f", nil},
		{"1.28", 2, "0080", nil}, // 128 needs a sign byte
		{"-1.28", 2, "80", nil},
		{"-1.29", 2, "ff7f", nil},
		{"12.3400", 2, "04d2", nil}, // trailing zeros beyond the scale: no loss
		{"12.345", 2, "", ErrDecimalScale},
		{"5", 0, "05", nil},
		{strings.Repeat("9", 38), 0, "4b3b4ca85a86c47a098a223fffffffff", nil},
		{"1" + strings.Repeat("0", 38), 0, "", ErrDecimalPrecision},
		{"-" + strings.Repeat("9", 19) + "." + strings.Repeat("9", 19), 19, "", nil}, // 38 digits at scale 19
	} {
		d, err := row.ParseDecimal([]byte(c.v))
		if err != nil {
			t.Fatal(err)
		}
		b, err := DecimalBytes(nil, d, c.scale)
		if !errors.Is(err, c.err) {
			t.Errorf("%s at %d: error %v, want %v", c.v, c.scale, err, c.err)
			continue
		}
		if c.hex != "" && hexOf(b) != c.hex {
			t.Errorf("%s at %d: %s, want %s", c.v, c.scale, hexOf(b), c.hex)
		}
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	var s []byte
	for _, c := range b {
		s = append(s, digits[c>>4], digits[c&15])
	}
	return string(s)
}

// TestDecimalBytesMatchesBigInt: for decimals with coefficients up to 128
// bits and any scale, DecimalBytes writes the unscaled value that
// math/big computes from the decimal's text, in the fewest bytes, or
// refuses exactly when that value would need rounding or more than 38
// digits.
func TestDecimalBytesMatchesBigInt(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		neg := rapid.Bool().Draw(t, "neg")
		hi := rapid.Uint64Range(0, 1<<rapid.IntRange(0, 63).Draw(t, "hibits")).Draw(t, "hi")
		if rapid.Bool().Draw(t, "small") {
			hi = 0
		}
		lo := rapid.Uint64().Draw(t, "lo")
		prec := uint8(rapid.IntRange(0, 19).Draw(t, "prec"))
		scale := uint8(rapid.IntRange(0, 19).Draw(t, "scale"))
		d, err := udecimal.NewFromHiLo(neg, hi, lo, prec)
		if err != nil {
			t.Skip(err)
		}
		// The independent answer: the text's digits as a big.Int at scale.
		r, ok := new(big.Rat).SetString(d.String())
		if !ok {
			t.Fatalf("big.Rat cannot read %s", d.String())
		}
		u := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
		limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil)
		b, err := DecimalBytes(nil, d, scale)
		switch {
		case !u.IsInt():
			if !errors.Is(err, ErrDecimalScale) {
				t.Fatalf("%s at %d: %v, want ErrDecimalScale", d, scale, err)
			}
			return
		case new(big.Int).Abs(u.Num()).Cmp(limit) >= 0:
			if !errors.Is(err, ErrDecimalPrecision) {
				t.Fatalf("%s at %d: %v, want ErrDecimalPrecision", d, scale, err)
			}
			return
		case err != nil:
			t.Fatalf("%s at %d: %v", d, scale, err)
		}
		want := u.Num()
		got := new(big.Int).SetBytes(b)
		if len(b) > 0 && b[0]&0x80 != 0 {
			got.Sub(got, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
		if got.Cmp(want) != 0 {
			t.Fatalf("%s at %d: % x is %s, want %s", d, scale, b, got, want)
		}
		if len(b) > 1 && (b[0] == 0 && b[1]&0x80 == 0 || b[0] == 0xff && b[1]&0x80 != 0) {
			t.Fatalf("%s at %d: % x has a redundant sign byte", d, scale, b)
		}
		// And the decoder reads it back.
		back, why := format.TwosComplementDecimal(b, scale)
		if why != "" || !back.Equal(d) {
			t.Fatalf("%s at %d: read back as %s (%s)", d, scale, back, why)
		}
	})
}

// TestAppendersMatchTwmbAvro: AppendLong, AppendString, AppendBool and
// AppendDecimal write what twmb/avro's encoder writes for a record of
// those types.
func TestAppendersMatchTwmbAvro(t *testing.T) {
	s := tavro.MustParse(`{"type":"record","name":"R","fields":[
	  {"name":"l","type":"long"},{"name":"s","type":"string"},{"name":"b","type":"boolean"},
	  {"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":38,"scale":3}},
	  {"name":"u","type":["null","long"]}]}`)
	rapid.Check(t, func(t *rapid.T) {
		l := rapid.Int64().Draw(t, "l")
		str := rapid.String().Draw(t, "s")
		b := rapid.Bool().Draw(t, "b")
		unscaled := rapid.Int64().Draw(t, "d")
		d, _ := udecimal.NewFromInt64(unscaled, 3)
		var u any
		if rapid.Bool().Draw(t, "null") {
			u = l / 3
		}
		want, err := s.AppendEncode(nil, map[string]any{"l": l, "s": str, "b": b, "d": new(big.Rat).SetFrac(big.NewInt(unscaled), big.NewInt(1000)), "u": u})
		if err != nil {
			t.Fatal(err)
		}
		got := AppendLong(nil, l)
		got = AppendString(got, str)
		got = AppendBool(got, b)
		if got, err = AppendDecimal(got, d, 3); err != nil {
			t.Fatal(err)
		}
		if u == nil {
			got = AppendLong(got, 0)
		} else {
			got = AppendLong(AppendLong(got, 1), u.(int64))
		}
		if string(got) != string(want) {
			t.Fatalf("\n got % x\nwant % x", got, want)
		}
	})
}
