package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// The staging COPY writes PostgreSQL's binary COPY format itself
// (PostgreSQL documentation, "COPY", "Binary Format"): a header, then per
// row a 16-bit field count and each field as a 32-bit length (−1 for
// NULL) and its bytes, then a 16-bit −1. The staging table's columns are
// integer (rnd), boolean (del), and per result column bigint, boolean,
// text (strings, and decimals as their exact text, cast to numeric by the
// upsert) or timestamptz (microseconds since 2000-01-01 UTC, 64-bit). The
// rows of a batch are encoded into one reused buffer with no allocation
// per row, where pgx's CopyFrom boxes every value in an interface and
// encodes it through its type map (BenchmarkResults, "copy": 12 heap
// allocations per row before).

// copyHeader is the binary COPY signature, flags and header extension
// length.
var copyHeader = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// pgEpochMs is 2000-01-01T00:00:00Z in ms since the Unix epoch: the
// origin of PostgreSQL's timestamps.
const pgEpochMs = 946_684_800_000

// copyStage COPYs b into the connection's staging table inside tx.
func (r *Results) copyStage(ctx context.Context, tx pgx.Tx, b *batch) error {
	r.copyBuf = appendCopyRows(r.copyBuf[:0], r.cols, b)
	if r.copySQL == "" {
		r.copySQL = "COPY pg_temp." + stageTable + " (" + strings.Join(r.st.stageCols, ", ") + ") FROM STDIN (FORMAT binary)"
	}
	_, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(r.copyBuf), r.copySQL)
	return err
}

// appendCopyRows appends the binary COPY data of b's entries for the
// staging table of a result table with columns cols.
func appendCopyRows(dst []byte, cols []column, b *batch) []byte {
	dst = append(dst, copyHeader...)
	fields := 2 + len(cols)
	for i := range b.entries {
		e := &b.entries[i]
		dst = binary.BigEndian.AppendUint16(dst, uint16(fields))
		dst = appendInt4(dst, e.round)
		dst = appendBool(dst, e.op == changelog.Delete)
		dst = appendTimestamptz(dst, e.ws)
		dst = appendTimestamptz(dst, e.we)
		for j, v := range b.values(i) {
			dst = appendCopyValue(dst, v, b.kinds[j])
		}
		dst = appendInt8(dst, int64(e.version))
		dst = appendBool(dst, e.final)
		switch e.wm {
		case changelog.WatermarkInfinity:
			dst = binary.BigEndian.AppendUint32(dst, 8)
			dst = binary.BigEndian.AppendUint64(dst, math.MaxInt64) // 'infinity'
		case changelog.WatermarkNone:
			dst = appendNull(dst)
		default:
			dst = appendTimestamptz(dst, e.wm)
		}
		dst = appendTimestamptz(dst, e.upd)
	}
	return binary.BigEndian.AppendUint16(dst, 0xffff)
}

// appendCopyValue appends value v of a column of kind k, as valueArg
// converts it: NULL, a boolean, a bigint (the text of an int in a decimal
// column), a decimal's exact text, a string, a timestamp.
func appendCopyValue(dst []byte, v row.Value, k row.Kind) []byte {
	switch v.Kind {
	case row.KindNull:
		return appendNull(dst)
	case row.KindBool:
		return appendBool(dst, v.I != 0)
	case row.KindInt:
		if k != row.KindDecimal {
			return appendInt8(dst, v.I)
		}
		n := len(dst)
		dst = strconv.AppendInt(append(dst, 0, 0, 0, 0), v.I, 10)
		binary.BigEndian.PutUint32(dst[n:], uint32(len(dst)-n-4))
		return dst
	case row.KindDecimal:
		n := len(dst)
		dst = appendDecimal(append(dst, 0, 0, 0, 0), v.D)
		binary.BigEndian.PutUint32(dst[n:], uint32(len(dst)-n-4))
		return dst
	case row.KindString:
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(v.S)))
		return append(dst, v.S...)
	}
	return appendTimestamptz(dst, v.I)
}

func appendNull(dst []byte) []byte { return binary.BigEndian.AppendUint32(dst, 0xffffffff) }

func appendBool(dst []byte, v bool) []byte {
	dst = binary.BigEndian.AppendUint32(dst, 1)
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

func appendInt4(dst []byte, v int32) []byte {
	dst = binary.BigEndian.AppendUint32(dst, 4)
	return binary.BigEndian.AppendUint32(dst, uint32(v))
}

func appendInt8(dst []byte, v int64) []byte {
	dst = binary.BigEndian.AppendUint32(dst, 8)
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

// appendTimestamptz appends ms since the Unix epoch as a timestamptz.
func appendTimestamptz(dst []byte, ms int64) []byte {
	dst = binary.BigEndian.AppendUint32(dst, 8)
	return binary.BigEndian.AppendUint64(dst, uint64((ms-pgEpochMs)*1000))
}

// appendDecimal appends d's text with exactly its scale of digits after
// the point, as row.FormatDecimal does, without allocating when the
// coefficient fits in 128 bits.
func appendDecimal(dst []byte, d row.Decimal) []byte {
	neg, hi, lo, prec, ok := d.ToHiLo()
	if !ok {
		return row.FormatDecimal(dst, d)
	}
	// The coefficient's digits, in chunks of 19 (10¹⁹ < 2⁶⁴), least
	// significant first: (hi:lo) is divided by 10¹⁹ until it is zero.
	const chunk = 10_000_000_000_000_000_000
	var parts [3]uint64
	n := 0
	for {
		var r uint64
		hi, r = bits.Div64(0, hi, chunk)
		lo, r = bits.Div64(r, lo, chunk)
		parts[n] = r
		n++
		if hi == 0 && lo == 0 {
			break
		}
	}
	var digits [60]byte
	ds := strconv.AppendUint(digits[:0], parts[n-1], 10)
	for k := n - 2; k >= 0; k-- {
		var pad [19]byte
		s := strconv.AppendUint(pad[:0], parts[k], 10)
		for range 19 - len(s) {
			ds = append(ds, '0')
		}
		ds = append(ds, s...)
	}
	if neg {
		dst = append(dst, '-')
	}
	p := int(prec)
	if p == 0 {
		return append(dst, ds...)
	}
	if len(ds) <= p {
		dst = append(dst, '0', '.')
		for range p - len(ds) {
			dst = append(dst, '0')
		}
		return append(dst, ds...)
	}
	dst = append(dst, ds[:len(ds)-p]...)
	dst = append(dst, '.')
	return append(dst, ds[len(ds)-p:]...)
}
