package spec

import (
	"testing"

	"github.com/tidemark/tidemark/row"
)

// TestCanonicalTypeAgreesWithRow: every type name the spec accepts maps,
// by CanonicalType, to a name of the same row.Kind as the engine's parser
// (row.ParseKind) gives the name itself; the three lists (row.ParseKind,
// parseTypeName through CanonicalType) accept the same names.
func TestCanonicalTypeAgreesWithRow(t *testing.T) {
	for _, name := range []string{"bool", "boolean", "int", "integer", "int64", "long", "decimal", "number", "numeric", "string", "text", "timestamp", "time", "float", "varchar", ""} {
		k, kerr := row.ParseKind(name)
		_, serr := parseTypeName(name)
		if (kerr == nil) != (serr == nil) {
			t.Errorf("%q: row.ParseKind error %v, parseTypeName error %v", name, kerr, serr)
			continue
		}
		if kerr != nil {
			continue
		}
		c := CanonicalType(name)
		if ck, err := row.ParseKind(c); err != nil || ck != k {
			t.Errorf("%q: canonical %q is kind %v (%v), the name kind %v", name, c, ck, err, k)
		}
		if CanonicalType(c) != c {
			t.Errorf("%q: canonical %q is not canonical", name, c)
		}
	}
}
