package avro

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strings"

	"github.com/tidemark/tidemark/row"
)

// This file is the writing half: the Avro binary encoding of the values a
// tidemark row holds, appended to a buffer (Avro specification, "Binary
// Encoding": int and long as zig-zag varints, a boolean as one byte,
// bytes and string as a long length and the bytes, a union as the long
// index of its branch and the value). The append functions allocate
// nothing when dst has room, except AppendDecimal for a decimal whose
// coefficient exceeds 128 bits.

// AppendLong appends v as an Avro long (or int): its zig-zag varint.
func AppendLong(dst []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// AppendBool appends b as an Avro boolean (one byte, 0 or 1).
func AppendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// AppendString appends s as an Avro string: its length as a long, then
// its bytes (which Avro requires to be UTF-8; the caller checks).
func AppendString(dst []byte, s string) []byte {
	dst = AppendLong(dst, int64(len(s)))
	return append(dst, s...)
}

// AppendBytes appends b as Avro bytes: its length as a long, then b.
func AppendBytes(dst, b []byte) []byte {
	dst = AppendLong(dst, int64(len(b)))
	return append(dst, b...)
}

// MaxDecimalPrecision is the precision (total digits) of the decimals
// AppendDecimal writes: 38, the largest Kafka Connect, ksqlDB, Spark and
// most SQL engines read into a fixed-point type (Java's BigDecimal has no
// limit; Hive, BigQuery and Snowflake stop at 38).
const MaxDecimalPrecision = 38

// ErrDecimalScale is wrapped by AppendDecimal's error for a value with
// more digits after the point than the scale: writing it would round.
var ErrDecimalScale = errors.New("more digits after the point than the column's scale")

// ErrDecimalPrecision is wrapped by AppendDecimal's error for a value of
// more than MaxDecimalPrecision digits at the column's scale.
var ErrDecimalPrecision = errors.New("more digits than the precision")

// pow10 holds 10^0 … 10^19 (10^19 < 2^64).
var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return
}()

// ten38 is 10^38 as a 128-bit number (hi, lo): the bound of a 38-digit
// unscaled value.
var ten38hi, ten38lo = func() (uint64, uint64) {
	hi, lo := bits.Mul64(pow10[19], pow10[19])
	return hi, lo
}()

// DecimalBytes appends the unscaled value of d at scale digits after the
// point (d × 10^scale, an integer) as a big-endian two's-complement
// integer of the fewest bytes that hold it (as Java's
// BigInteger.toByteArray writes it): the payload of Avro's decimal
// logical type on bytes and of Confluent's Protobuf decimal. scale is at
// most row.MaxDecimalScale. It never rounds: a value with more digits
// after the point than scale (other than trailing zeros) is an error
// wrapping ErrDecimalScale, one of more than MaxDecimalPrecision digits an
// error wrapping ErrDecimalPrecision; dst is then returned unchanged.
func DecimalBytes(dst []byte, d row.Decimal, scale uint8) ([]byte, error) {
	if scale > row.MaxDecimalScale {
		return dst, fmt.Errorf("decimal scale %d: more than %d", scale, row.MaxDecimalScale)
	}
	if d.PrecUint() > scale {
		t := d.Trunc(scale)
		if !t.Equal(d) {
			return dst, fmt.Errorf("%s at scale %d: %w", d.String(), scale, ErrDecimalScale)
		}
		d = t
	}
	neg, hi, lo, prec, ok := d.ToHiLo()
	if !ok {
		return decimalBytesBig(dst, d, scale)
	}
	if prec < scale {
		// Multiply the coefficient by 10^(scale-prec), at most 10^19.
		m := pow10[scale-prec]
		h1, l1 := bits.Mul64(lo, m)
		h2, l2 := bits.Mul64(hi, m)
		var carry uint64
		hi, carry = bits.Add64(h1, l2, 0)
		lo = l1
		if h2 != 0 || carry != 0 {
			return dst, fmt.Errorf("%s at scale %d: %w (%d)", d.String(), scale, ErrDecimalPrecision, MaxDecimalPrecision)
		}
	}
	if hi > ten38hi || hi == ten38hi && lo >= ten38lo {
		return dst, fmt.Errorf("%s at scale %d: %w (%d)", d.String(), scale, ErrDecimalPrecision, MaxDecimalPrecision)
	}
	if neg && (hi|lo) != 0 {
		// Two's complement of the magnitude.
		hi, lo = ^hi, ^lo
		var c uint64
		lo, c = bits.Add64(lo, 1, 0)
		hi += c
	}
	var buf [16]byte
	for i := 0; i < 8; i++ {
		buf[i] = byte(hi >> (56 - 8*i))
		buf[8+i] = byte(lo >> (56 - 8*i))
	}
	b := buf[:]
	for len(b) > 1 && ((b[0] == 0 && b[1]&0x80 == 0) || (b[0] == 0xff && b[1]&0x80 != 0)) {
		b = b[1:]
	}
	return append(dst, b...), nil
}

// decimalBytesBig is DecimalBytes for a coefficient beyond 128 bits.
func decimalBytesBig(dst []byte, d row.Decimal, scale uint8) ([]byte, error) {
	txt := strings.Replace(d.StringFixed(scale), ".", "", 1)
	n, ok := new(big.Int).SetString(txt, 10)
	if !ok {
		return dst, fmt.Errorf("decimal %s: not a number", d.String())
	}
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(MaxDecimalPrecision), nil)
	if new(big.Int).Abs(n).Cmp(limit) >= 0 {
		return dst, fmt.Errorf("%s at scale %d: %w (%d)", d.String(), scale, ErrDecimalPrecision, MaxDecimalPrecision)
	}
	return appendTwosComplement(dst, n), nil
}

// appendTwosComplement appends n as a big-endian two's-complement
// integer of the fewest bytes.
func appendTwosComplement(dst []byte, n *big.Int) []byte {
	if n.Sign() >= 0 {
		b := n.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			dst = append(dst, 0)
		}
		return append(dst, b...)
	}
	// 2^(8k) + n for the smallest k whose range holds n.
	k := (new(big.Int).Neg(n).Sub(new(big.Int).Neg(n), big.NewInt(1)).BitLen())/8 + 1
	m := new(big.Int).Lsh(big.NewInt(1), uint(8*k))
	b := m.Add(m, n).Bytes()
	for len(b) < k {
		b = append([]byte{0}, b...)
	}
	return append(dst, b...)
}

// AppendDecimal appends d as Avro bytes with logical type decimal at
// scale (its DecimalBytes as a length-prefixed byte string). Errors:
// DecimalBytes's.
func AppendDecimal(dst []byte, d row.Decimal, scale uint8) ([]byte, error) {
	var tmp [17]byte
	b, err := DecimalBytes(tmp[:0], d, scale)
	if err != nil {
		return dst, err
	}
	return AppendBytes(dst, b), nil
}

// AppendDouble appends f as an Avro double (8 bytes, little endian).
func AppendDouble(dst []byte, f float64) []byte {
	u := math.Float64bits(f)
	return append(dst, byte(u), byte(u>>8), byte(u>>16), byte(u>>24), byte(u>>32), byte(u>>40), byte(u>>48), byte(u>>56))
}

// ValidName reports whether s is an Avro name: it starts with a letter
// or '_' and holds only letters, digits and '_' (Avro specification,
// "Names"). Record field names must be names.
func ValidName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
