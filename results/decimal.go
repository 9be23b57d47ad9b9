package results

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Decimal is an exact decimal number of any size: coef × 10^−scale. Diff
// computes differences and totals with it, so that PostgreSQL numeric
// values and the SQLite sink's decimal text are never rounded through
// binary floating point. The zero value is 0.
type Decimal struct {
	coef  *big.Int // nil is 0
	scale int32
}

// ErrNotDecimal is returned (wrapped) by ParseDecimal for text that is not
// a decimal number.
var ErrNotDecimal = errors.New("not a decimal number")

// maxExponent bounds the exponent ParseDecimal accepts, so that "1e999999999"
// cannot ask for a number of a billion digits.
const maxExponent = 1000

// ParseDecimal parses a decimal literal exactly: an optional sign, digits
// with an optional point, and an optional exponent ("-5000", "20.00",
// ".5", "1.25e3"). The result keeps the literal's scale ("20.00" has scale
// 2). NaN and infinities are not numbers here.
func ParseDecimal(s string) (Decimal, error) {
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > maxExponent || e < -maxExponent {
			return Decimal{}, fmt.Errorf("%w: %q", ErrNotDecimal, s)
		}
		mant, exp = s[:i], e
	}
	neg := false
	if mant != "" && (mant[0] == '+' || mant[0] == '-') {
		neg = mant[0] == '-'
		mant = mant[1:]
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" && frac == "" || !digits(intPart) || !digits(frac) {
		return Decimal{}, fmt.Errorf("%w: %q", ErrNotDecimal, s)
	}
	coef, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok {
		return Decimal{}, fmt.Errorf("%w: %q", ErrNotDecimal, s)
	}
	if neg {
		coef.Neg(coef)
	}
	scale := len(frac) - exp
	if scale < 0 {
		coef.Mul(coef, pow10(-scale))
		scale = 0
	}
	return Decimal{coef: coef, scale: int32(scale)}, nil
}

// isPlainDecimal reports whether s is a decimal written as the SQLite sink
// writes one: an optional minus, digits, an optional point and digits.
func isPlainDecimal(s string) bool {
	if strings.HasPrefix(s, "-") {
		s = s[1:]
	}
	i, f, hasPoint := strings.Cut(s, ".")
	return i != "" && digits(i) && digits(f) && (!hasPoint || f != "")
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// DecimalFromInt returns v as a Decimal.
func DecimalFromInt(v int64) Decimal { return Decimal{coef: big.NewInt(v)} }

func (d Decimal) int() *big.Int {
	if d.coef == nil {
		return new(big.Int)
	}
	return d.coef
}

// align returns the coefficients of a and b at their common (larger) scale.
func align(a, b Decimal) (x, y *big.Int, scale int32) {
	x, y = a.int(), b.int()
	switch {
	case a.scale < b.scale:
		x = new(big.Int).Mul(x, pow10(int(b.scale-a.scale)))
		return x, y, b.scale
	case b.scale < a.scale:
		y = new(big.Int).Mul(y, pow10(int(a.scale-b.scale)))
	}
	return x, y, a.scale
}

// Add returns d + e, at the larger of their scales.
func (d Decimal) Add(e Decimal) Decimal {
	x, y, s := align(d, e)
	return Decimal{coef: new(big.Int).Add(x, y), scale: s}
}

// Sub returns d − e, at the larger of their scales.
func (d Decimal) Sub(e Decimal) Decimal {
	x, y, s := align(d, e)
	return Decimal{coef: new(big.Int).Sub(x, y), scale: s}
}

// Cmp compares d and e by value (20.00 equals 20): −1, 0 or +1.
func (d Decimal) Cmp(e Decimal) int {
	x, y, _ := align(d, e)
	return x.Cmp(y)
}

// Sign returns −1, 0 or +1.
func (d Decimal) Sign() int { return d.int().Sign() }

// Abs returns |d|.
func (d Decimal) Abs() Decimal {
	return Decimal{coef: new(big.Int).Abs(d.int()), scale: d.scale}
}

// String returns d as a plain decimal literal with its scale: "20.00",
// "-5000", "0.005".
func (d Decimal) String() string {
	s := d.int().String()
	if d.scale == 0 {
		return s
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if n := int(d.scale) + 1 - len(s); n > 0 {
		s = strings.Repeat("0", n) + s
	}
	p := len(s) - int(d.scale)
	s = s[:p] + "." + s[p:]
	if neg {
		s = "-" + s
	}
	return s
}

// MarshalText implements encoding.TextMarshaler (JSON: a string, exact).
func (d Decimal) MarshalText() ([]byte, error) { return []byte(d.String()), nil }
