package file

import (
	"strconv"

	"github.com/tidemark/tidemark/row"
)

// appendText appends the text of field f of r, the form partition names,
// partition hashes and ordinal runs compare: a string as is, an int in
// base 10, a decimal with its scale ("2.50"), a bool as true/false, a time
// in RFC 3339 UTC. The field must not be null.
func appendText(dst []byte, r *row.Row, f row.Field) []byte {
	switch f.Kind {
	case row.KindString:
		return append(dst, r.S[f.Slot]...)
	case row.KindInt:
		return strconv.AppendInt(dst, r.I[f.Slot], 10)
	case row.KindDecimal:
		return row.FormatDecimal(dst, r.D[f.Slot])
	case row.KindBool:
		return strconv.AppendBool(dst, r.I[f.Slot] != 0)
	case row.KindTime:
		return row.AppendTime(dst, r.I[f.Slot], nil)
	}
	return dst
}
