// Package expr compiles pipeline expressions — filters such as
// `event_type in ["PAYMENT", "REFUND"]` and derived fields such as
// `event_type == "REFUND" ? -amount : amount` — into typed closures over
// [row.Row] slots.
//
// The syntax is expr-lang's (github.com/expr-lang/expr): this package uses
// its parser only and compiles the syntax tree itself, because the hot path
// must not box values in interfaces, reflect or allocate per record, and
// money must stay exact decimal (expr-lang evaluates numbers as float64).
// Evaluating `event_type == "REFUND" ? -amount : amount` or
// `event_type in ["PAYMENT","REFUND"]` allocates nothing; see
// expr_bench_test.go for the measured comparison with expr-lang's VM.
//
// Use: [Parse] the source, list its [Parsed.Identifiers] (to order derived
// fields), [Compile] against a [row.Schema], then call the [Expr] method for
// its [Expr.Kind] (EvalBool, EvalInt, EvalDecimal, EvalString) per record.
// [ParseCall] splits an aggregate call such as `sum(Quantity * UnitPrice)`.
//
// # Values and kinds
//
//   - Literals: integers are int (int64); numbers with a point or exponent
//     (19.99, 1e3) are decimal, taken exactly from their source text, never
//     through float64 (at most 19 digits after the point); strings; true and
//     false; nil (the null of any kind).
//   - Identifiers and dotted member chains (a.b.c, also a["b"].c) name schema
//     fields. An unknown name is a compile error giving its column and close
//     field names ("did you mean").
//   - Kinds are int, decimal, string, bool and timestamp (int64 ms since the
//     Unix epoch, UTC). An expression's kind is static; row.KindNull only for
//     an expression that is always null, such as a bare nil.
//
// # Operators
//
//   - + - * %: int with int is int, and a result that does not fit int64 is
//     a runtime error (ErrOverflow), never a wrap-around. With any decimal
//     operand the int is converted exactly and the result is decimal, where
//     addition and subtraction are exact, * is exact up to 19 digits after the point, further
//     digits are truncated toward zero; % is the remainder with the sign of
//     the dividend (as Go's % on ints).
//   - / always yields a decimal (also int / int): the quotient truncated
//     toward zero at 19 digits after the point, trailing zeros dropped
//     (10 / 4 is 2.5, 1 / 3 is 0.3333333333333333333).
//   - Division or modulo by zero is a runtime error (ErrDivisionByZero):
//     "division by zero in <source>".
//   - string + string concatenates. Unary - and + on numbers (-x of the
//     smallest int64 overflows); not and ! on bools.
//   - ** and ^ (exponent), .. (range) and | (pipe) are unsupported.
//   - Comparisons == != < <= > >=: numbers (int and decimal mixed, exact;
//     2.0 == 2.00), strings (bytewise), timestamp with timestamp, and bool
//     with bool for == and != only. Other pairs are compile errors.
//   - x == nil and x != nil test nullness and are never null. Ordering
//     against nil (x < nil) is a compile error.
//   - x in [lit, ...] and x not in [...]: the list holds literals (or
//     constant expressions such as -1) of one kind (int and decimal mix),
//     built into a set once; nil is not allowed in the list. A non-literal
//     list is a compile error. null in [...] is null.
//   - contains, startsWith, endsWith on strings; s matches "re" with a
//     constant pattern (Go RE2 syntax, unanchored) compiled once; a
//     non-constant pattern is a compile error.
//   - a ?? b is a when a is not null, else b.
//   - c ? a : b (also if c { a } else { b }) has SQL CASE semantics: a null
//     condition is not true, so it yields b. The branches must have one kind
//     (int and decimal unify to decimal; nil unifies with anything).
//
// # Null
//
// A null operand makes arithmetic, comparisons, string operators, in and
// function results null (ok=false). Logic is SQL's three-valued logic:
// null and false is false, null or true is true, otherwise a null operand
// gives null; not null is null. Operands are evaluated left to right and
// evaluation stops at the first null or error operand, except that and/or
// short-circuit on a decided left operand (false and x, true or x) without
// evaluating x at all.
//
// # Functions
//
//	lower(s) upper(s) trim(s)   string → string (trim removes white space)
//	len(s)                      length in bytes → int
//	string(x)                   int, decimal (with its scale), bool,
//	                            timestamp (RFC 3339, UTC) → string
//	int(x)                      string (must be an integer, else
//	                            ErrConversion), decimal (truncated toward
//	                            zero), timestamp (ms), bool (0/1) → int
//	decimal(x)                  string (exact, row.ParseDecimal) or int → decimal
//	abs(x)                      int or decimal
//	round(x, n)                 int or decimal → decimal rounded half away from
//	                            zero to n (constant 0..19, default 0) digits,
//	                            written with exactly n digits (round(5, 2) is 5.00)
//	hour(t) minute(t) second(t) timestamp → hour 0..23 / minute, second 0..59 in UTC
//	year(t) month(t) day(t)     timestamp → year / month 1..12 / day 1..31 in UTC
//	char_length(s)              length in characters (runes) → int
//	substr(s, pos[, n])         SQL's SUBSTRING: characters from pos (1-based), n of them
//	regexp_extract(s, re, i)    group i of the first match of the constant pattern
//	                            (Go RE2); null without a match or when i took no part
//	split_index(s, sep, i)      the i-th (0-based) piece of s split at the constant
//	                            separator; null when there is none
//	date_format(t, pattern)     a timestamp in UTC as a Java SimpleDateFormat pattern
//	                            (yyyy-MM-dd HH:mm:ss.SSS; JavaLayout) → string
//	count_char(s, c)            occurrences of the one-character constant c; 0 for null s
//	timestamp_add(t, ms)        the timestamp ms later → timestamp
//	add_months(t, n)            n calendar months later in UTC, the day clamped → timestamp
//
// The functions from second to add_months are those SQL scripts need
// (sql/planner translates Flink's DATE_FORMAT, SPLIT_INDEX, … into them).
//
// Aggregate names (sum, count, ...) are compile errors here: they belong
// under a stage's aggregates. Every other construct — closures and
// predicates, maps, arrays outside in, slices and indexing, method calls,
// optional chaining, let, sequences, pipes — is a compile error naming the
// construct and its column: "unsupported in tidemark expressions: ...".
//
// # Errors
//
// Parse returns expr-lang's positioned syntax error (wrapped). Compile
// returns a *[CompileError]. Eval methods return an *[EvalError] whose cause
// is ErrDivisionByZero, ErrOverflow, ErrConversion or ErrKind (calling an
// EvalX that does not fit the kind). A constant sub-expression that always
// fails, such as 1 / 0, is reported by Compile. No source text makes Parse,
// Compile or evaluation panic (FuzzCompile checks this); evaluation expects a
// row shaped by the schema given to Compile.
package expr
