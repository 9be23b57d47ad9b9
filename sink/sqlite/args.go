package sqlite

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// encoder turns result rows into SQL arguments: one flat list per row, the
// table's columns in order. It keeps the text of the last instant of each
// bookkeeping column, since consecutive rows usually share their window
// and watermark.
type encoder struct {
	cols []column
	nKey int
	loc  *time.Location
	tf   row.TimeFormatter
	buf  []byte
	last [4]struct {
		ms   int64
		text string
		ok   bool
	}
}

// The cached instants of encoder.last.
const (
	lastStart = iota
	lastEnd
	lastWatermark
	lastUpdated
)

// encode appends r's arguments to args. It returns an error, leaving args
// as it was, when r has the wrong number of key or value columns or a
// value of the wrong kind (an int is accepted for a decimal column).
func (e *encoder) encode(args []any, r *changelog.Row) ([]any, error) {
	nVal := len(e.cols) - 6 - e.nKey
	if len(r.Key) != e.nKey || len(r.Values) != nVal {
		return args, fmt.Errorf("row has %d key and %d value columns, table has %d and %d",
			len(r.Key), len(r.Values), e.nKey, nVal)
	}
	n := len(args)
	args = append(args, e.instant(lastStart, r.WindowStart), e.instant(lastEnd, r.WindowEnd))
	for i, v := range r.Key {
		a, err := e.value(&e.cols[2+i], v)
		if err != nil {
			return args[:n], err
		}
		args = append(args, a)
	}
	for i, v := range r.Values {
		a, err := e.value(&e.cols[2+e.nKey+i], v)
		if err != nil {
			return args[:n], err
		}
		args = append(args, a)
	}
	var wm any
	switch r.WatermarkAt {
	case changelog.WatermarkInfinity:
		wm = "infinity"
	case changelog.WatermarkNone:
		wm = nil
	default:
		wm = e.instant(lastWatermark, r.WatermarkAt)
	}
	var final int64
	if r.IsFinal {
		final = 1
	}
	return append(args, int64(r.Version), final, wm, e.instant(lastUpdated, r.UpdatedAt)), nil
}

// instant returns ms as RFC 3339 text, reusing the last text of slot.
func (e *encoder) instant(slot int, ms int64) string {
	l := &e.last[slot]
	if !l.ok || l.ms != ms {
		e.buf = e.formatter().Append(e.buf[:0], ms)
		l.ms, l.text, l.ok = ms, string(e.buf), true
	}
	return l.text
}

// value converts v for column c: nil for null, int64 for int and bool
// (0/1), text for decimal (exact literal), string and timestamp.
func (e *encoder) value(c *column, v row.Value) (any, error) {
	switch {
	case v.Kind == row.KindNull:
		return nil, nil
	case v.Kind == c.kind:
	case v.Kind == row.KindInt && c.kind == row.KindDecimal:
		return strconv.FormatInt(v.I, 10), nil
	default:
		return nil, fmt.Errorf("column %q is %s, value is %s", c.name, c.kind, v.Kind)
	}
	switch c.kind {
	case row.KindBool:
		if v.I != 0 {
			return int64(1), nil
		}
		return int64(0), nil
	case row.KindInt:
		return v.I, nil
	case row.KindDecimal:
		e.buf = row.FormatDecimal(e.buf[:0], v.D)
		return string(e.buf), nil
	case row.KindString:
		return strings.Clone(v.S), nil // the row's strings may be reused after Write
	default:
		e.buf = e.formatter().Append(e.buf[:0], v.I)
		return string(e.buf), nil
	}
}

// formatter returns the encoder's time formatter for loc, made on first use.
func (e *encoder) formatter() *row.TimeFormatter {
	if e.tf.Location() == nil {
		e.tf = row.NewTimeFormatter(e.loc)
	}
	return &e.tf
}
