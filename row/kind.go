package row

import "fmt"

// Kind is the type of a field or value.
type Kind uint8

// The kinds. KindNull is the kind of the untyped null literal only; a field
// of any kind may hold null.
const (
	KindNull    Kind = iota // untyped null
	KindBool                // stored in Row.I as 0 or 1
	KindInt                 // int64, stored in Row.I
	KindDecimal             // exact decimal, stored in Row.D
	KindString              // string, stored in Row.S
	KindTime                // instant, int64 ms since the Unix epoch (UTC), stored in Row.I
)

var kindNames = [...]string{
	KindNull:    "null",
	KindBool:    "bool",
	KindInt:     "int",
	KindDecimal: "decimal",
	KindString:  "string",
	KindTime:    "timestamp",
}

// String returns the kind's name as written in pipeline specs: "bool",
// "int", "decimal", "string", "timestamp" (or "null").
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind maps a type name from a pipeline spec to a Kind. It accepts
// "bool", "int", "decimal", "string" and "timestamp" (and the aliases
// "boolean", "integer", "int64", "number", "numeric", "text", "time").
// It returns an error naming the accepted names for anything else.
func ParseKind(s string) (Kind, error) {
	switch s {
	case "bool", "boolean":
		return KindBool, nil
	case "int", "integer", "int64", "long":
		return KindInt, nil
	case "decimal", "number", "numeric":
		return KindDecimal, nil
	case "string", "text":
		return KindString, nil
	case "timestamp", "time":
		return KindTime, nil
	}
	return KindNull, fmt.Errorf("unknown type %q (want bool, int, decimal, string or timestamp)", s)
}

// InI reports whether values of kind k live in Row.I.
func (k Kind) InI() bool { return k == KindBool || k == KindInt || k == KindTime }

// Numeric reports whether k is int or decimal.
func (k Kind) Numeric() bool { return k == KindInt || k == KindDecimal }
