package expr

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/internal/suggest"
	"github.com/tidemark/tidemark/row"
)

// Runtime causes. An [EvalError] wraps exactly one of these (possibly with a
// further cause of its own), so callers can classify a quarantined record
// with errors.Is.
var (
	// ErrDivisionByZero: the right operand of / or % is zero.
	ErrDivisionByZero = errors.New("division by zero")
	// ErrOverflow: an int result does not fit in int64. Int arithmetic never
	// wraps around.
	ErrOverflow = errors.New("integer overflow")
	// ErrConversion: int(x) or decimal(x) was given text that is not a
	// number of that kind.
	ErrConversion = errors.New("cannot convert")
	// ErrKind: an EvalX method was called that does not fit the expression's
	// static kind (for example EvalString on an int expression).
	ErrKind = errors.New("wrong result kind")
)

// EvalError is the error every Eval method returns: the cause and the source
// of the whole expression, so a quarantined record can name the rule it
// broke. The message reads "<cause> in <source>", e.g.
// "division by zero in amount / qty".
type EvalError struct {
	Source string // the expression's source text
	Err    error  // the cause: ErrDivisionByZero, ErrOverflow, ... (possibly wrapped)
}

// Error returns "<cause> in <source>".
func (e *EvalError) Error() string { return e.Err.Error() + " in " + e.Source }

// Unwrap returns the cause.
func (e *EvalError) Unwrap() error { return e.Err }

// CompileError is the error Compile returns for an expression that parses
// but cannot be compiled: an unknown field or function, operands of the
// wrong kind, a construct tidemark does not support, or a constant
// sub-expression that always fails (1 / 0).
type CompileError struct {
	Source string // the expression's source text
	Line   int    // 1-based line of the offending construct
	Column int    // 1-based column (in characters) of the offending construct
	Msg    string // what is wrong
	// Suggestions are schema field names close to an unknown field name,
	// best first (at most 3); empty for other errors.
	Suggestions []string
}

// Error returns the message with its position and the source, e.g.
// `unknown field "amout" at column 1 of "amout * 2"; did you mean "amount"?`.
func (e *CompileError) Error() string {
	var b strings.Builder
	b.WriteString(e.Msg)
	if e.Line > 1 {
		fmt.Fprintf(&b, " at line %d, column %d of %q", e.Line, e.Column, e.Source)
	} else {
		fmt.Fprintf(&b, " at column %d of %q", e.Column, e.Source)
	}
	if len(e.Suggestions) > 0 {
		b.WriteString("; did you mean ")
		for i, s := range e.Suggestions {
			switch {
			case i == 0:
			case i == len(e.Suggestions)-1:
				b.WriteString(" or ")
			default:
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", s)
		}
		b.WriteString("?")
	}
	return b.String()
}

// position returns the 1-based line and column of the rune offset at in src.
func position(src string, at int) (line, col int) {
	line, col = 1, 1
	n := 0
	for _, r := range src {
		if n == at {
			break
		}
		n++
		if r == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

// CloseNames returns up to 3 field names of s that are close to name (for
// "did you mean" messages): equal ignoring case, within a small edit
// distance (Levenshtein), or one a prefix of the other. Best matches first;
// ties in schema order. It is suggest.Close over the schema's names.
func CloseNames(s *row.Schema, name string) []string {
	names := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		names[i] = f.Name
	}
	return suggest.Close(name, names)
}
