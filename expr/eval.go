package expr

import (
	"fmt"

	"github.com/tidemark/tidemark/row"
)

// Expr is a compiled expression: a tree of typed closures over the slots of
// rows shaped by the schema it was compiled against. It is immutable and
// safe for concurrent use.
//
// The typed Eval methods read the row's slots directly and allocate nothing
// (except to build a result string, or an error). Each returns ok=false when
// the result is null (then v is the zero value), and an error (*EvalError)
// when evaluation fails: the caller quarantines the record with that reason.
// The row must have been shaped by the schema passed to Compile.
type Expr struct {
	src     string
	kind    row.Kind
	b       fn[bool]
	i       fn[int64]
	d       fn[row.Decimal]
	s       fn[string]
	field   row.Field
	isField bool
	test    IntTest
	hasTest bool
}

func newExpr(src string, n *node) *Expr {
	e := &Expr{src: src, kind: n.kind, field: n.field, isField: n.isField, test: n.test, hasTest: n.hasTest}
	switch n.kind {
	case row.KindBool:
		e.b, e.i = n.b, n.ints()
	case row.KindInt:
		e.i, e.d = n.i, n.decs()
	case row.KindTime:
		e.i = n.i
	case row.KindDecimal:
		e.d = n.d
	case row.KindString:
		e.s = n.s
	}
	return e
}

// Kind returns the static kind of the result. It is row.KindNull only for
// an expression that is always null, such as a bare nil literal.
func (e *Expr) Kind() row.Kind { return e.kind }

// Source returns the expression's source text.
func (e *Expr) Source() string { return e.src }

// IsField reports whether the expression is a bare field reference, and
// returns that field, so callers can read the slot instead of evaluating.
func (e *Expr) IsField() (row.Field, bool) { return e.field, e.isField }

func (e *Expr) kindErr(method string) error {
	return &EvalError{Source: e.src, Err: fmt.Errorf("%w: %s on a %s expression", ErrKind, method, e.kind)}
}

// EvalBool evaluates a bool expression. ok is false when the result is null.
// It returns an *EvalError wrapping ErrKind when the expression is not bool.
func (e *Expr) EvalBool(r *row.Row) (v bool, ok bool, err error) {
	if e.b == nil {
		if e.kind == row.KindNull {
			return false, false, nil
		}
		return false, false, e.kindErr("EvalBool")
	}
	return e.b(r)
}

// EvalInt evaluates an int expression, a timestamp expression (ms since the
// Unix epoch) or a bool expression (0 or 1). ok is false when the result is
// null. It returns an *EvalError wrapping ErrKind for decimal and string
// expressions, and one wrapping the cause when evaluation fails.
func (e *Expr) EvalInt(r *row.Row) (v int64, ok bool, err error) {
	if e.i == nil {
		if e.kind == row.KindNull {
			return 0, false, nil
		}
		return 0, false, e.kindErr("EvalInt")
	}
	return e.i(r)
}

// EvalDecimal evaluates a decimal expression, or an int expression
// converted exactly. ok is false when the result is null. It returns an
// *EvalError wrapping ErrKind for other kinds, and one wrapping the cause
// (ErrDivisionByZero, ErrOverflow, ...) when evaluation fails.
func (e *Expr) EvalDecimal(r *row.Row) (v row.Decimal, ok bool, err error) {
	if e.d == nil {
		if e.kind == row.KindNull {
			return row.Decimal{}, false, nil
		}
		return row.Decimal{}, false, e.kindErr("EvalDecimal")
	}
	return e.d(r)
}

// EvalString evaluates a string expression. ok is false when the result is
// null. It returns an *EvalError wrapping ErrKind when the expression is not
// a string.
func (e *Expr) EvalString(r *row.Row) (v string, ok bool, err error) {
	if e.s == nil {
		if e.kind == row.KindNull {
			return "", false, nil
		}
		return "", false, e.kindErr("EvalString")
	}
	return e.s(r)
}

// Eval evaluates the expression to a boxed value of its kind (row.Null when
// null). It is for use off the hot path; errors are as for the typed
// methods.
func (e *Expr) Eval(r *row.Row) (row.Value, error) {
	switch e.kind {
	case row.KindBool:
		v, ok, err := e.b(r)
		if err != nil || !ok {
			return row.Null, err
		}
		return row.Bool(v), nil
	case row.KindInt, row.KindTime:
		v, ok, err := e.i(r)
		if err != nil || !ok {
			return row.Null, err
		}
		return row.Value{Kind: e.kind, I: v}, nil
	case row.KindDecimal:
		v, ok, err := e.d(r)
		if err != nil || !ok {
			return row.Null, err
		}
		return row.Dec(v), nil
	case row.KindString:
		v, ok, err := e.s(r)
		if err != nil || !ok {
			return row.Null, err
		}
		return row.Str(v), nil
	}
	return row.Null, nil
}
