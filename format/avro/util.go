package avro

import (
	"fmt"

	"github.com/quagmt/udecimal"

	"github.com/tidemark/tidemark/row"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// newFromHiLo is the decimal of magnitude hi·2^64+lo, negative when neg,
// with scale digits after the point.
func newFromHiLo(neg bool, hi, lo uint64, scale uint8) (row.Decimal, error) {
	return udecimal.NewFromHiLo(neg, hi, lo, scale)
}
