package planner

import (
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sql/parser"
)

// typ is a SQL value's type as tidemark holds it: one of row's kinds
// (int, decimal, string, timestamp, bool), or null for the NULL literal.
// name is the SQL type it was declared or derived as (BIGINT,
// DECIMAL(23, 3), TIMESTAMP(3)), for messages.
type typ struct {
	kind row.Kind
	name string
}

var (
	tInt     = typ{row.KindInt, "BIGINT"}
	tDecimal = typ{row.KindDecimal, "DECIMAL"}
	tString  = typ{row.KindString, "STRING"}
	tTime    = typ{row.KindTime, "TIMESTAMP(3)"}
	tBool    = typ{row.KindBool, "BOOLEAN"}
	tNull    = typ{row.KindNull, "NULL"}
)

func (t typ) String() string {
	if t.name != "" {
		return t.name
	}
	return t.kind.String()
}

// numeric reports whether t is an int or a decimal.
func (t typ) numeric() bool { return t.kind == row.KindInt || t.kind == row.KindDecimal }

// specType is the spec's type name of t (source.schema).
func (t typ) specType() string {
	switch t.kind {
	case row.KindInt:
		return "int"
	case row.KindDecimal:
		return "decimal"
	case row.KindBool:
		return "bool"
	case row.KindTime:
		return "timestamp"
	}
	return "string"
}

// sqlTypeOf maps a declared SQL type to a typ. ROW types are handled by
// the caller (their fields become columns); an unsupported type is an
// error naming what is supported.
func (pl *planner) sqlTypeOf(dt *parser.DataType) (typ, error) {
	name := dt.Name
	display := name
	if len(dt.Params) > 0 {
		ps := make([]string, len(dt.Params))
		for i, p := range dt.Params {
			ps[i] = fmt.Sprint(p)
		}
		display += "(" + strings.Join(ps, ", ") + ")"
	}
	switch name {
	case "TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT":
		return typ{row.KindInt, display}, nil
	case "DECIMAL", "DEC", "NUMERIC":
		return typ{row.KindDecimal, display}, nil
	case "FLOAT", "DOUBLE", "REAL":
		// tidemark computes with exact decimals, not binary floating point.
		return typ{row.KindDecimal, display}, nil
	case "CHAR", "VARCHAR", "STRING":
		return typ{row.KindString, display}, nil
	case "BOOLEAN", "BOOL":
		return typ{row.KindBool, display}, nil
	case "TIMESTAMP", "TIMESTAMP_LTZ":
		if dt.LocalTZ {
			display = "TIMESTAMP_LTZ" + strings.TrimPrefix(display, "TIMESTAMP")
		}
		return typ{row.KindTime, display}, nil
	case "DATE":
		return typ{}, pl.errAt(dt.At, "DATE is not supported: declare TIMESTAMP(3) (tidemark's times are instants in ms)")
	case "TIME":
		return typ{}, pl.errAt(dt.At, "TIME is not supported: declare TIMESTAMP(3) or STRING")
	case "BYTES", "BINARY", "VARBINARY":
		return typ{}, pl.errAt(dt.At, "%s is not supported: declare STRING", name)
	case "ARRAY", "MAP", "MULTISET":
		return typ{}, pl.errAt(dt.At, "%s is not supported: tidemark rows hold scalars and nested ROW fields", name)
	case "ROW":
		return typ{}, pl.errAt(dt.At, "a ROW type is only supported as a table column (its fields become person.id, …)")
	}
	return typ{}, pl.errAt(dt.At, "unknown type %s (types: BIGINT, INT, DECIMAL(p, s), STRING, VARCHAR, BOOLEAN, TIMESTAMP(3), TIMESTAMP_LTZ(3), ROW<…>)", name)
}
