package expr

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/row"
)

const (
	kB = row.KindBool
	kI = row.KindInt
	kD = row.KindDecimal
	kS = row.KindString
	kT = row.KindTime
	kN = row.KindNull
)

// evalCase: src evaluated on testRow has kind and the text want
// (row.Value.String: decimals with their scale, "null" for null).
type evalCase struct {
	src  string
	kind row.Kind
	want string
}

var evalCases = []evalCase{
	// Literals.
	{`1`, kI, "1"},
	{`0x1F`, kI, "31"},
	{`19.99`, kD, "19.99"},
	{`20.00`, kD, "20.00"},
	{`1.5e2`, kD, "150"},
	{`2E-2`, kD, "0.02"},
	{`1_000.5`, kD, "1000.5"},
	{`.5`, kD, "0.5"},
	{`"hi"`, kS, "hi"},
	{`'hi'`, kS, "hi"},
	{"`raw`", kS, "raw"},
	{`true`, kB, "true"},
	{`false`, kB, "false"},
	{`nil`, kN, "null"},

	// Fields and member chains.
	{`amount`, kD, "19.99"},
	{`qty`, kI, "3"},
	{`ts`, kT, "2026-09-01T10:30:00Z"},
	{`customer.id`, kS, "c-1"},
	{`customer["id"]`, kS, "c-1"},
	{`n_int`, kI, "null"},

	// Int arithmetic.
	{`a + b`, kI, "9"},
	{`a - b`, kI, "5"},
	{`a * b`, kI, "14"},
	{`a % b`, kI, "1"},
	{`-a % b`, kI, "-1"},
	{`a % -b`, kI, "1"},
	{`-a`, kI, "-7"},
	{`+a`, kI, "7"},
	{`--a`, kI, "7"},
	{`big - 1 + 1`, kI, "9223372036854775807"},
	{`small + 1`, kI, "-9223372036854775807"},
	{`small % -1`, kI, "0"},
	{`1 + 2 * 3`, kI, "7"},
	{`(1 + 2) * 3`, kI, "9"},

	// Division always yields a decimal.
	{`a / b`, kD, "3.5"},
	{`a / 4`, kD, "1.75"},
	{`6 / 3`, kD, "2"},
	{`10 / 4`, kD, "2.5"},
	{`1 / 3`, kD, "0.3333333333333333333"},
	{`-2 / 3`, kD, "-0.6666666666666666666"},
	{`amount / 2`, kD, "9.995"},
	{`amount / qty`, kD, "6.6633333333333333333"},

	// Decimal arithmetic is exact.
	{`19.99 + 0.01`, kD, "20.00"},
	{`19.99 + 0.01 == 20.00`, kB, "true"},
	{`0.1 + 0.2 == 0.3`, kB, "true"},
	{`0.1 + 0.2`, kD, "0.3"},
	{`amount + 0.01`, kD, "20.00"},
	{`amount - 20`, kD, "-0.01"},
	{`amount * qty`, kD, "59.97"},
	{`Quantity * UnitPrice`, kD, "15.30"},
	{`amount * price`, kD, "49.9750"},
	{`amount % 1`, kD, "0.99"},
	{`-amount % 1`, kD, "-0.99"},
	{`amount % 0.5`, kD, "0.49"},
	{`qty % 2.5`, kD, "0.5"},
	{`-amount`, kD, "-19.99"},
	{`+amount`, kD, "19.99"},
	{`amount - amount`, kD, "0"},

	// String concatenation.
	{`name + "!"`, kS, " Alice !"},
	{`"a" + "b"`, kS, "ab"},

	// Comparisons.
	{`qty == 3`, kB, "true"},
	{`qty == 3.0`, kB, "true"},
	{`3.00 == qty`, kB, "true"},
	{`2.0 == 2.00`, kB, "true"},
	{`qty != 3`, kB, "false"},
	{`amount > 19.98`, kB, "true"},
	{`amount >= 20`, kB, "false"},
	{`amount <= 19.99`, kB, "true"},
	{`amount < qty * 7`, kB, "true"},
	{`a > b`, kB, "true"},
	{`a < b`, kB, "false"},
	{`1 < 2 < 3`, kB, "true"},
	{`event_type == "REFUND"`, kB, "true"},
	{`"REFUND" == event_type`, kB, "true"},
	{`event_type != "REFUND"`, kB, "false"},
	{`event_type == name`, kB, "false"},
	{`event_type < "S"`, kB, "true"},
	{`"a" < "b"`, kB, "true"},
	{`"B" < "a"`, kB, "true"},
	{`"abc" >= "abd"`, kB, "false"},
	{`ts < ts2`, kB, "true"},
	{`ts == ts`, kB, "true"},
	{`ts >= ts2`, kB, "false"},
	{`ok == true`, kB, "true"},
	{`ok != false`, kB, "true"},

	// Nullness tests are never null.
	{`n_int == nil`, kB, "true"},
	{`n_int != nil`, kB, "false"},
	{`nil == n_str`, kB, "true"},
	{`qty == nil`, kB, "false"},
	{`nil != qty`, kB, "true"},
	{`nil == nil`, kB, "true"},
	{`nil != nil`, kB, "false"},
	{`(n_int + 1) == nil`, kB, "true"},
	{`lower(event_type) != nil`, kB, "true"},

	// A null operand makes comparisons and arithmetic null.
	{`n_int == 1`, kB, "null"},
	{`n_int > 1`, kB, "null"},
	{`n_str == "x"`, kB, "null"},
	{`"x" == n_str`, kB, "null"},
	{`n_dec < amount`, kB, "null"},
	{`n_ts < ts`, kB, "null"},
	{`n_bool == true`, kB, "null"},
	{`n_int + 1`, kI, "null"},
	{`amount + n_dec`, kD, "null"},
	{`qty * n_dec`, kD, "null"},
	{`n_int / 2`, kD, "null"},
	{`n_str + "x"`, kS, "null"},
	{`-n_int`, kI, "null"},
	{`-n_dec`, kD, "null"},
	{`nil + 1`, kI, "null"},
	{`nil + 1.5`, kD, "null"},
	{`nil + nil`, kN, "null"},
	{`n_int / zero`, kD, "null"}, // stops at the null operand

	// Three-valued logic.
	{`true and false`, kB, "false"},
	{`true && true`, kB, "true"},
	{`false or true`, kB, "true"},
	{`false || false`, kB, "false"},
	{`n_bool and false`, kB, "false"},
	{`false and n_bool`, kB, "false"},
	{`n_bool and true`, kB, "null"},
	{`true and n_bool`, kB, "null"},
	{`n_bool or true`, kB, "true"},
	{`true or n_bool`, kB, "true"},
	{`n_bool or false`, kB, "null"},
	{`false or n_bool`, kB, "null"},
	{`n_bool and n_bool`, kB, "null"},
	{`nil and false`, kB, "false"},
	{`nil or true`, kB, "true"},
	{`not n_bool`, kB, "null"},
	{`not ok`, kB, "false"},
	{`!ok`, kB, "false"},
	{`!!ok`, kB, "true"},
	{`not (n_int > 1)`, kB, "null"},
	{`ok && qty > 2`, kB, "true"},
	{`zero != 0 and a / zero > 1`, kB, "false"}, // short circuit: no division
	{`zero == 0 or a % zero > 1`, kB, "true"},

	// Coalesce.
	{`n_int ?? 5`, kI, "5"},
	{`qty ?? 5`, kI, "3"},
	{`n_dec ?? 0`, kD, "0"},
	{`n_int ?? 1.5`, kD, "1.5"},
	{`n_str ?? "none"`, kS, "none"},
	{`nil ?? qty`, kI, "3"},
	{`qty ?? nil`, kI, "3"},
	{`n_int ?? nil`, kI, "null"},
	{`n_int ?? n_dec ?? 7`, kD, "7"},

	// Conditional with CASE semantics.
	{`event_type == "REFUND" ? -amount : amount`, kD, "-19.99"},
	{`event_type == "PAYMENT" ? -amount : amount`, kD, "19.99"},
	{`n_bool ? 1 : 2`, kI, "2"},
	{`n_str == "x" ? 1 : 2`, kI, "2"},
	{`nil ? 1 : 2`, kI, "2"},
	{`ok ? 1 : 2.5`, kD, "1"},
	{`ok ? nil : 2`, kI, "null"},
	{`ok ? "y" : nil`, kS, "y"},
	{`ok ? ts : nil`, kT, "2026-09-01T10:30:00Z"},
	{`!ok ? true : n_bool`, kB, "null"},
	{`if ok { 1 } else { 2 }`, kI, "1"},
	{`qty > 5 ? "big" : qty > 2 ? "mid" : "small"`, kS, "mid"},
	{`zero == 0 ? 0 : a / zero`, kD, "0"}, // the untaken branch is not evaluated

	// in and not in.
	{`event_type in ["PAYMENT", "REFUND"]`, kB, "true"},
	{`event_type in ["PAYMENT"]`, kB, "false"},
	{`event_type not in ["PAYMENT", "REFUND"]`, kB, "false"},
	{`lower(event_type) in ["refund"]`, kB, "true"},
	{`n_str in ["x"]`, kB, "null"},
	{`n_str not in ["x"]`, kB, "null"},
	{`nil in ["x"]`, kB, "null"},
	{`qty in [1, 2, 3]`, kB, "true"},
	{`qty in [1.5, 3]`, kB, "true"},
	{`qty in [3.00]`, kB, "true"},
	{`amount in [19.99, 5]`, kB, "true"},
	{`amount in [19.990]`, kB, "true"},
	{`amount in [1, 2]`, kB, "false"},
	{`qty in [-3, 4]`, kB, "false"},
	{`-qty in [-3]`, kB, "true"},
	{`qty in [1 + 2]`, kB, "true"},
	{`qty in [1, 2, 4, 5, 6, 7, 8, 9, 10, 3]`, kB, "true"},
	{`qty in [1, 2, 4, 5, 6, 7, 8, 9, 10, 11]`, kB, "false"},
	{`event_type in ["a", "b", "c", "d", "e", "f", "g", "h", "i", "REFUND"]`, kB, "true"},
	{`event_type in ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]`, kB, "false"},
	{`n_str in ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]`, kB, "null"},
	{`ok in [true]`, kB, "true"},
	{`ok in [false]`, kB, "false"},
	{`qty in []`, kB, "false"},
	{`n_int in []`, kB, "null"},

	// String operators.
	{`name contains "lic"`, kB, "true"},
	{`name contains "x"`, kB, "false"},
	{`event_type startsWith "RE"`, kB, "true"},
	{`event_type endsWith "ND"`, kB, "true"},
	{`event_type endsWith "RE"`, kB, "false"},
	{`event_type not contains "X"`, kB, "true"},
	{`n_str contains "a"`, kB, "null"},
	{`event_type contains n_str`, kB, "null"},
	{`event_type matches "^RE.*D$"`, kB, "true"},
	{`event_type matches "^P"`, kB, "false"},
	{`event_type not matches "^P"`, kB, "true"},
	{`n_str matches "x"`, kB, "null"},

	// Functions.
	{`lower(event_type)`, kS, "refund"},
	{`upper(name)`, kS, " ALICE "},
	{`trim(name)`, kS, "Alice"},
	{`len(name)`, kI, "7"},
	{`len("héllo")`, kI, "6"},
	{`lower(n_str)`, kS, "null"},
	{`len(n_str)`, kI, "null"},
	{`string(qty)`, kS, "3"},
	{`string(amount)`, kS, "19.99"},
	{`string(price)`, kS, "2.50"},
	{`string(ok)`, kS, "true"},
	{`string(ts)`, kS, "2026-09-01T10:30:00Z"},
	{`string(event_type)`, kS, "REFUND"},
	{`string(n_int)`, kS, "null"},
	{`string(qty) + "x"`, kS, "3x"},
	{`int(s_num)`, kI, "42"},
	{`int(amount)`, kI, "19"},
	{`int(-amount)`, kI, "-19"},
	{`int(ts)`, kI, strconv.FormatInt(testTS, 10)},
	{`int(ok)`, kI, "1"},
	{`int(qty)`, kI, "3"},
	{`int(n_str)`, kI, "null"},
	{`decimal(s_dec)`, kD, "12.345"},
	{`decimal(qty)`, kD, "3"},
	{`decimal(amount)`, kD, "19.99"},
	{`decimal("1e3")`, kD, "1000"},
	{`decimal(n_str)`, kD, "null"},
	{`abs(-amount)`, kD, "19.99"},
	{`abs(amount)`, kD, "19.99"},
	{`abs(-qty)`, kI, "3"},
	{`abs(n_int)`, kI, "null"},
	{`abs(nil)`, kN, "null"},
	{`round(amount, 1)`, kD, "20.0"},
	{`round(2.345, 2)`, kD, "2.35"},
	{`round(-2.345, 2)`, kD, "-2.35"},
	{`round(2.344, 2)`, kD, "2.34"},
	{`round(2.5)`, kD, "3"},
	{`round(-2.5)`, kD, "-3"},
	{`round(qty, 2)`, kD, "3.00"},
	{`round(price, 4)`, kD, "2.5000"},
	{`round(n_dec, 2)`, kD, "null"},
	{`hour(ts)`, kI, "10"},
	{`minute(ts)`, kI, "30"},
	{`hour(ts_neg)`, kI, "23"},
	{`minute(ts_neg)`, kI, "59"},
	{`hour(n_ts)`, kI, "null"},
}

func TestEval(t *testing.T) {
	s := testSchema(t)
	r := testRow(t, s)
	for _, tc := range evalCases {
		t.Run(tc.src, func(t *testing.T) {
			e := compileT(t, s, tc.src)
			if e.Kind() != tc.kind {
				t.Fatalf("Kind() = %s, want %s", e.Kind(), tc.kind)
			}
			v, err := e.Eval(r)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if got := v.String(); got != tc.want {
				t.Fatalf("Eval = %s, want %s", got, tc.want)
			}
			if !v.IsNull() && v.Kind != tc.kind {
				t.Fatalf("value kind %s, want %s", v.Kind, tc.kind)
			}
			checkTyped(t, e, r, v)
		})
	}
}

// checkTyped checks that the typed Eval method for e's kind agrees with the
// boxed Eval.
func checkTyped(t *testing.T, e *Expr, r *row.Row, want row.Value) {
	t.Helper()
	var got row.Value
	switch e.Kind() {
	case row.KindBool:
		v, ok, err := e.EvalBool(r)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			got = row.Bool(v)
		} else if v {
			t.Fatal("EvalBool: null with v = true")
		}
	case row.KindInt, row.KindTime:
		v, ok, err := e.EvalInt(r)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			got = row.Value{Kind: e.Kind(), I: v}
		}
	case row.KindDecimal:
		v, ok, err := e.EvalDecimal(r)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			got = row.Dec(v)
		}
	case row.KindString:
		v, ok, err := e.EvalString(r)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			got = row.Str(v)
		}
	}
	if !got.Equal(want) || got.String() != want.String() {
		t.Fatalf("typed Eval = %v, boxed = %v", got, want)
	}
}

func TestExactDecimal(t *testing.T) {
	s := testSchema(t)
	r := testRow(t, s)
	v, err := compileT(t, s, `19.99 + 0.01`).Eval(r)
	if err != nil {
		t.Fatal(err)
	}
	want := row.Dec(dec(t, "20.00"))
	if !v.Equal(want) || v.D.String() != "20" || v.String() != "20.00" {
		t.Fatalf("19.99 + 0.01 = %v (%s), want exactly 20.00", v, v.D.String())
	}
}

// errCase: src compiles but evaluating it on testRow fails with is and the
// exact message msg.
var errCases = []struct {
	src string
	is  error
	msg string
}{
	{`big + 1`, ErrOverflow, "integer overflow in big + 1"},
	{`big * 2`, ErrOverflow, "integer overflow in big * 2"},
	{`small - 1`, ErrOverflow, "integer overflow in small - 1"},
	{`-small`, ErrOverflow, "integer overflow in -small"},
	{`small * -1`, ErrOverflow, "integer overflow in small * -1"},
	{`-1 * small`, ErrOverflow, "integer overflow in -1 * small"},
	{`abs(small)`, ErrOverflow, "integer overflow in abs(small)"},
	{`(big + 1) * 0.5`, ErrOverflow, "integer overflow in (big + 1) * 0.5"},
	{`a / zero`, ErrDivisionByZero, "division by zero in a / zero"},
	{`a % zero`, ErrDivisionByZero, "division by zero in a % zero"},
	{`amount / dzero`, ErrDivisionByZero, "division by zero in amount / dzero"},
	{`amount % dzero`, ErrDivisionByZero, "division by zero in amount % dzero"},
	{`amount / zero`, ErrDivisionByZero, "division by zero in amount / zero"},
	{`1 + a / zero > 2 ? 1 : 0`, ErrDivisionByZero, "division by zero in 1 + a / zero > 2 ? 1 : 0"},
	{`ok and a / zero > 1`, ErrDivisionByZero, "division by zero in ok and a / zero > 1"},
	{`int(s_bad)`, ErrConversion, `cannot convert "abc" to int: invalid syntax in int(s_bad)`},
	{`int(s_dec)`, ErrConversion, `cannot convert "12.345" to int: invalid syntax in int(s_dec)`},
	{`decimal(s_bad)`, ErrConversion, `cannot convert "abc" to decimal: not a decimal number: "abc" in decimal(s_bad)`},
	{`int(amount * 1000000000000000000)`, ErrOverflow, `integer overflow: int(19990000000000000000): integer part is too large to fit in int64 in int(amount * 1000000000000000000)`},
}

func TestEvalErrors(t *testing.T) {
	s := testSchema(t)
	r := testRow(t, s)
	for _, tc := range errCases {
		t.Run(tc.src, func(t *testing.T) {
			e := compileT(t, s, tc.src)
			_, err := e.Eval(r)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tc.is) {
				t.Fatalf("error %v is not %v", err, tc.is)
			}
			var ee *EvalError
			if !errors.As(err, &ee) || ee.Source != tc.src {
				t.Fatalf("error %v is not an *EvalError with the source", err)
			}
			if err.Error() != tc.msg {
				t.Fatalf("message\n got %s\nwant %s", err, tc.msg)
			}
		})
	}
}

// compileErrCases: src parses but Compile fails with a message containing
// msg.
var compileErrCases = []struct{ src, msg string }{
	{`amout * 2`, `unknown field "amout" at column 1 of "amout * 2"; did you mean "amount"?`},
	{`qty + 1 + amout`, `unknown field "amout" at column 11 of "qty + 1 + amout"; did you mean "amount"?`},
	{`QTY > 1`, `unknown field "QTY" at column 1 of "QTY > 1"; did you mean "qty"?`},
	{`customer.idd`, `unknown field "customer.idd" at column 1 of "customer.idd"; did you mean "customer.id"?`},
	{"qty > 1 and\n  amout > 2", `unknown field "amout" at line 2, column 3`},
	{`zzzzzz`, `unknown field "zzzzzz" at column 1 of "zzzzzz"`},
	{`qty + "a"`, `operator + cannot join int and string (convert with string(x)) at column 5`},
	{`event_type - 1`, `operator - needs numbers, not string and int at column 12`},
	{`ts + 1`, `operator + needs numbers, not timestamp and int`},
	{`event_type == 1`, `cannot compare string with int at column 12`},
	{`ts == 1`, `cannot compare timestamp with int`},
	{`ok < true`, `operator < cannot order bools (only == and !=)`},
	{`qty < nil`, `operator < cannot compare with nil; test nullness with == nil or != nil`},
	{`qty and ok`, `operator and needs bools, not int and bool at column 5`},
	{`not qty`, `operator not needs a bool, not int at column 1`},
	{`-event_type`, `unary - needs a number, not string`},
	{`qty ? 1 : 2`, `condition of ?: must be bool, not int`},
	{`ok ? 1 : "a"`, `branches of ?: have different kinds: int and string`},
	{`qty ?? "a"`, `operands of ?? have different kinds: int and string`},
	{`qty in a`, `operator in needs a list of literals on the right, such as x in ["A", "B"] at column 5`},
	{`qty in [1, "a"]`, `the list of in mixes int and string at column 12`},
	{`qty in [a]`, `the list of in must hold literals only at column 9`},
	{`qty in [1, nil]`, `nil in the list of in is not supported`},
	{`event_type in [1]`, `cannot look for a string in a list of int`},
	{`ts in [1]`, `cannot look for a timestamp in a list of int`},
	{`event_type matches name`, `operator matches needs a constant string pattern on the right`},
	{`event_type matches "("`, `bad pattern for matches: error parsing regexp`},
	{`qty contains "a"`, `operator contains needs strings, not int and string`},
	{`foo(qty)`, `unknown function foo() (functions: abs, add_months, char_length, count_char, date_format, day, decimal, hour, int, len, lower, minute, month, regexp_extract, round, second, split_index, string, substr, timestamp_add, trim, upper, year) at column 1`},
	{`sum(amount)`, `sum() is an aggregate function; use it under aggregates, not in a filter or field at column 1`},
	{`count_distinct(name)`, `count_distinct() is an aggregate function`},
	{`lower(qty)`, `lower() needs string, not int at column 7`},
	{`len(qty)`, `len() needs string, not int`},
	{`hour(qty)`, `hour() needs timestamp, not int`},
	{`abs(name)`, `abs() needs int or decimal, not string`},
	{`decimal(ts)`, `decimal() needs string or int or decimal, not timestamp`},
	{`lower(name, name)`, `lower() takes 1 argument(s), got 2`},
	{`round(amount, qty)`, `round(x, n) needs n to be a constant int from 0 to 19`},
	{`round(amount, 20)`, `round(x, n) needs n to be a constant int from 0 to 19`},
	{`round(amount, -1)`, `round(x, n) needs n to be a constant int from 0 to 19`},
	{`round()`, `round() takes 1 or 2 arguments, got 0`},
	{`1 / 0`, `constant expression always fails: division by zero at column 3`},
	{`9223372036854775807 + 1`, `constant expression always fails: integer overflow`},
	{`int("x")`, `constant expression always fails: cannot convert "x" to int`},
	{`1.5e-30`, `number 1.5e-30 is not an exact decimal`},
	{`2 ** 3`, `unsupported in tidemark expressions: exponent operator ** at column 3`},
	{`2 ^ 3`, `unsupported in tidemark expressions: exponent operator ^`},
	{`qty + {a: 1}`, `unsupported in tidemark expressions: map literal at column 7`},
	{`[1, 2]`, `unsupported in tidemark expressions: array literal (a list is allowed only on the right of in) at column 1`},
	{`name[0:2]`, `unsupported in tidemark expressions: slice ([a:b])`},
	{`name[0]`, `unsupported in tidemark expressions: index access ([...])`},
	{`name.lower()`, `unsupported in tidemark expressions: method call`},
	{`customer?.id`, `unsupported in tidemark expressions: optional chaining (?.)`},
	{`let x = 1; x`, `unsupported in tidemark expressions: let`},
	{`1; 2`, `unsupported in tidemark expressions: sequence (;)`},
	{`all([1], # > 0)`, `unsupported in tidemark expressions: predicate function all()`},
	{`filter([1], .x > 0)`, `unsupported in tidemark expressions: predicate function filter()`},
	{`name | lower()`, `unsupported in tidemark expressions: pipe (|)`},
	{`1..3`, `unsupported in tidemark expressions: range (..)`},
	{`b"abc"`, `unsupported in tidemark expressions: bytes literal`},
}

func TestCompileErrors(t *testing.T) {
	s := testSchema(t)
	for _, tc := range compileErrCases {
		t.Run(tc.src, func(t *testing.T) {
			p, err := Parse(tc.src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			_, err = Compile(p, s)
			if err == nil {
				t.Fatal("no error")
			}
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("%T is not a *CompileError: %v", err, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("message\n got %s\nwant %s", err, tc.msg)
			}
		})
	}
}

func TestUnknownFieldError(t *testing.T) {
	s := testSchema(t)
	p, err := Parse(`amout > 1`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(p, s)
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v", err)
	}
	if ce.Line != 1 || ce.Column != 1 || len(ce.Suggestions) == 0 || ce.Suggestions[0] != "amount" {
		t.Fatalf("got %+v", ce)
	}
	// A short schema is listed when nothing is close.
	small := row.NewSchema()
	if _, err := small.Add("price", row.KindDecimal); err != nil {
		t.Fatal(err)
	}
	if _, err := small.Add("qty", row.KindInt); err != nil {
		t.Fatal(err)
	}
	p, _ = Parse(`1 + zzzz`)
	_, err = Compile(p, small)
	want := `unknown field "zzzz" (fields: price, qty) at column 5 of "1 + zzzz"`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{``, `   `, `qty +`, `(qty`, `"abc`, `1e400`, `99999999999999999999`, `a b`} {
		if _, err := Parse(src); err == nil {
			t.Errorf("Parse(%q): no error", src)
		}
	}
}

func TestEvalKindMismatch(t *testing.T) {
	s := testSchema(t)
	r := testRow(t, s)

	e := compileT(t, s, `qty + 1`)
	if _, _, err := e.EvalString(r); !errors.Is(err, ErrKind) {
		t.Errorf("EvalString on int: %v", err)
	}
	if _, _, err := e.EvalBool(r); !errors.Is(err, ErrKind) {
		t.Errorf("EvalBool on int: %v", err)
	}
	if d, ok, err := e.EvalDecimal(r); err != nil || !ok || d.String() != "4" {
		t.Errorf("EvalDecimal on int = %v %v %v, want 4", d, ok, err)
	}

	e = compileT(t, s, `amount`)
	if _, _, err := e.EvalInt(r); !errors.Is(err, ErrKind) {
		t.Errorf("EvalInt on decimal: %v", err)
	}
	if _, _, err := e.EvalString(r); err == nil || err.Error() != "wrong result kind: EvalString on a decimal expression in amount" {
		t.Errorf("EvalString on decimal: %v", err)
	}

	e = compileT(t, s, `ok`)
	if v, ok, err := e.EvalInt(r); err != nil || !ok || v != 1 {
		t.Errorf("EvalInt on bool = %v %v %v, want 1", v, ok, err)
	}
	if _, _, err := e.EvalDecimal(r); !errors.Is(err, ErrKind) {
		t.Errorf("EvalDecimal on bool: %v", err)
	}

	e = compileT(t, s, `ts`)
	if v, ok, err := e.EvalInt(r); err != nil || !ok || v != testTS {
		t.Errorf("EvalInt on timestamp = %v %v %v", v, ok, err)
	}
	if _, _, err := e.EvalDecimal(r); !errors.Is(err, ErrKind) {
		t.Errorf("EvalDecimal on timestamp: %v", err)
	}

	e = compileT(t, s, `event_type`)
	if _, _, err := e.EvalInt(r); !errors.Is(err, ErrKind) {
		t.Errorf("EvalInt on string: %v", err)
	}

	// A null-kind expression is null through every method.
	e = compileT(t, s, `nil`)
	if e.Kind() != row.KindNull {
		t.Fatalf("Kind = %s", e.Kind())
	}
	if _, ok, err := e.EvalBool(r); ok || err != nil {
		t.Error("EvalBool(nil)")
	}
	if _, ok, err := e.EvalInt(r); ok || err != nil {
		t.Error("EvalInt(nil)")
	}
	if _, ok, err := e.EvalDecimal(r); ok || err != nil {
		t.Error("EvalDecimal(nil)")
	}
	if _, ok, err := e.EvalString(r); ok || err != nil {
		t.Error("EvalString(nil)")
	}
	if v, err := e.Eval(r); !v.IsNull() || err != nil {
		t.Error("Eval(nil)")
	}
}

func TestIsField(t *testing.T) {
	s := testSchema(t)
	for _, tc := range []struct {
		src   string
		field string
	}{
		{`amount`, "amount"},
		{`customer.id`, "customer.id"},
		{`(qty)`, "qty"},
		{`amount + 0`, ""},
		{`+amount`, ""},
		{`lower(name)`, ""},
		{`1`, ""},
	} {
		f, ok := compileT(t, s, tc.src).IsField()
		if ok != (tc.field != "") || (ok && f.Name != tc.field) {
			t.Errorf("IsField(%s) = %v %v, want %q", tc.src, f.Name, ok, tc.field)
		}
		if ok {
			want, _ := s.Lookup(tc.field)
			if f != want {
				t.Errorf("IsField(%s) = %+v, want %+v", tc.src, f, want)
			}
		}
	}
}

func TestIdentifiers(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want string
	}{
		{`event_type == "REFUND" ? -amount : amount`, "event_type amount"},
		{`net: 1`, ""},
		{`Quantity * UnitPrice`, "Quantity UnitPrice"},
		{`customer.id + lower(name) + customer.id`, "customer.id name"},
		{`a.b.c > x and y in [1, 2]`, "a.b.c x y"},
		{`a["b"].c`, "a.b.c"},
		{`a[i]`, "a i"},
		{`lower(s) | upper()`, "s"},
		{`(b ?? a) + a`, "b a"},
		{`round(amount, 2)`, "amount"},
		{`1 + 2`, ""},
	} {
		p, err := Parse(tc.src)
		if err != nil {
			if tc.want == "" {
				continue
			}
			t.Fatalf("Parse(%q): %v", tc.src, err)
		}
		if got := strings.Join(p.Identifiers(), " "); got != tc.want {
			t.Errorf("Identifiers(%s) = %q, want %q", tc.src, got, tc.want)
		}
		if p.Source() != tc.src {
			t.Errorf("Source = %q", p.Source())
		}
	}
}

func TestParseCall(t *testing.T) {
	for _, tc := range []struct {
		src  string
		name string
		args []string
	}{
		{`count()`, "count", nil},
		{`COUNT( )`, "count", nil},
		{`sum(delta)`, "sum", []string{"delta"}},
		{`sum(Quantity * UnitPrice)`, "sum", []string{"Quantity * UnitPrice"}},
		{` sum( Quantity*UnitPrice ) `, "sum", []string{"Quantity*UnitPrice"}},
		{`count_distinct(customer)`, "count_distinct", []string{"customer"}},
		{`max_by(price, auction)`, "max_by", []string{"price", "auction"}},
		{`min(x)`, "min", []string{"x"}},
		{`Max(x)`, "max", []string{"x"}},
		{`avg(amount)`, "avg", []string{"amount"}},
		{`sum(kind == "a,b" ? 1 : 0)`, "sum", []string{`kind == "a,b" ? 1 : 0`}},
		{`sum(round(x, 2))`, "sum", []string{"round(x, 2)"}},
		{`sum(x in [1, 2])`, "sum", []string{"x in [1, 2]"}},
		{`sum(é + 1.5)`, "sum", []string{"é + 1.5"}},
	} {
		name, args, err := ParseCall(tc.src)
		if err != nil {
			t.Errorf("ParseCall(%q): %v", tc.src, err)
			continue
		}
		var got []string
		for _, a := range args {
			got = append(got, a.Source())
		}
		if name != tc.name || strings.Join(got, "|") != strings.Join(tc.args, "|") {
			t.Errorf("ParseCall(%q) = %q %q, want %q %q", tc.src, name, got, tc.name, tc.args)
		}
	}
	for _, src := range []string{
		``, `x`, `sum`, `sum(x) + 1`, `1 + sum(x)`, `a.sum(x)`, `sum(x,)`, `sum(,x)`,
		`sum(x`, `sum(x))`, `sum(x)(y)`, `sum(x y)`, `"sum"(x)`, `sum[x]`, `sum(x) sum(y)`,
		`not(x)`, `sum((x)`, "sum(\xff)",
	} {
		if name, args, err := ParseCall(src); err == nil {
			t.Errorf("ParseCall(%q) = %q %v, want an error", src, name, args)
		}
	}
}

func TestCompileNil(t *testing.T) {
	if _, err := Compile(nil, testSchema(t)); err == nil {
		t.Error("Compile(nil) succeeded")
	}
	p, _ := Parse("1")
	if _, err := Compile(p, nil); err == nil {
		t.Error("Compile with nil schema succeeded")
	}
}

func TestAllocs(t *testing.T) {
	s := testSchema(t)
	r := testRow(t, s)
	for _, src := range []string{
		`event_type == "REFUND" ? -amount : amount`,
		`event_type in ["PAYMENT","REFUND"]`,
		`amount * qty + price > 10 and not (n_int == nil)`,
		`qty in [1, 2, 4, 5, 6, 7, 8, 9, 10, 3]`,
		`amount in [19.99, 5]`,
		`n_int ?? (qty * 2)`,
	} {
		e := compileT(t, s, src)
		var sink row.Decimal
		n := testing.AllocsPerRun(1000, func() {
			switch e.Kind() {
			case row.KindDecimal:
				d, _, _ := e.EvalDecimal(r)
				sink = d
			case row.KindBool:
				_, _, _ = e.EvalBool(r)
			default:
				_, _, _ = e.EvalInt(r)
			}
		})
		_ = sink
		if n != 0 {
			t.Errorf("%s: %v allocs per evaluation, want 0", src, n)
		}
	}
	// The null branch too.
	r2 := s.NewRow()
	e := compileT(t, s, `event_type == "REFUND" ? -amount : amount`)
	if n := testing.AllocsPerRun(1000, func() { _, _, _ = e.EvalDecimal(r2) }); n != 0 {
		t.Errorf("null row: %v allocs", n)
	}
}

func TestConcurrentEval(t *testing.T) {
	s := testSchema(t)
	e := compileT(t, s, `event_type == "REFUND" ? -amount : round(amount * qty / 7, 2)`)
	done := make(chan string)
	for g := 0; g < 4; g++ {
		r := testRow(t, s)
		go func() {
			var got string
			for i := 0; i < 1000; i++ {
				v, err := e.Eval(r)
				if err != nil {
					got = err.Error()
					break
				}
				got = v.String()
			}
			done <- got
		}()
	}
	for g := 0; g < 4; g++ {
		if got := <-done; got != "-19.99" {
			t.Errorf("goroutine got %s", got)
		}
	}
}

// TestFieldVsIntLiteral checks the one-closure comparison of an int field
// with an int literal (fieldVsInt), the literal on either side, for each
// operator, against the truth worked out here and against the general
// form (the field inside an expression, a + 0): a = 7 against 6, 7 and 8;
// the null field n_int gives null.
func TestFieldVsIntLiteral(t *testing.T) {
	s := testSchema(t)
	r := testRow(t, s)
	truth := map[string]func(a, k int64) bool{
		"==": func(a, k int64) bool { return a == k },
		"!=": func(a, k int64) bool { return a != k },
		"<":  func(a, k int64) bool { return a < k },
		"<=": func(a, k int64) bool { return a <= k },
		">":  func(a, k int64) bool { return a > k },
		">=": func(a, k int64) bool { return a >= k },
	}
	for op, f := range truth {
		for _, k := range []int64{6, 7, 8} {
			for _, tc := range []struct {
				src, general string
				want         bool
			}{
				{fmt.Sprintf("a %s %d", op, k), fmt.Sprintf("a + 0 %s %d", op, k), f(7, k)},
				{fmt.Sprintf("%d %s a", k, op), fmt.Sprintf("%d %s a + 0", k, op), f(k, 7)},
			} {
				got, ok, err := compileT(t, s, tc.src).EvalBool(r)
				if err != nil || !ok || got != tc.want {
					t.Errorf("%s = %v, %v, %v; want %v", tc.src, got, ok, err, tc.want)
				}
				gen, gok, gerr := compileT(t, s, tc.general).EvalBool(r)
				if gen != got || gok != ok || gerr != nil {
					t.Errorf("%s = %v, %v and %s = %v, %v", tc.src, got, ok, tc.general, gen, gok)
				}
			}
			src := fmt.Sprintf("n_int %s %d", op, k)
			if got, ok, err := compileT(t, s, src).EvalBool(r); ok || got || err != nil {
				t.Errorf("%s = %v, %v, %v; want null", src, got, ok, err)
			}
		}
	}
}

// TestFieldVsDecimalLiteral checks the one-closure comparison of a
// decimal field with a numeric literal (fieldVsDecimal), the literal on
// either side, for each operator, against the truth worked out here and
// against the general form (the field inside an expression, amount + 0):
// amount = 19.99 against 19, 19.98, 19.99, 19.990, 20 and -1, dzero = 0.00
// against 0 and 0.0; the null field n_dec gives null.
func TestFieldVsDecimalLiteral(t *testing.T) {
	s := testSchema(t)
	r := testRow(t, s)
	// cents of the field and of the literal, compared by op
	truth := map[string]func(a, k int64) bool{
		"==": func(a, k int64) bool { return a == k },
		"!=": func(a, k int64) bool { return a != k },
		"<":  func(a, k int64) bool { return a < k },
		"<=": func(a, k int64) bool { return a <= k },
		">":  func(a, k int64) bool { return a > k },
		">=": func(a, k int64) bool { return a >= k },
	}
	for op, f := range truth {
		for _, tc := range []struct {
			field   string
			cents   int64
			lit     string
			litCent int64
		}{
			{"amount", 1999, "19", 1900},
			{"amount", 1999, "19.98", 1998},
			{"amount", 1999, "19.99", 1999},
			{"amount", 1999, "19.990", 1999},
			{"amount", 1999, "20", 2000},
			{"amount", 1999, "-1", -100},
			{"dzero", 0, "0", 0},
			{"dzero", 0, "0.0", 0},
		} {
			for _, c := range []struct {
				src, general string
				want         bool
			}{
				{fmt.Sprintf("%s %s %s", tc.field, op, tc.lit), fmt.Sprintf("%s + 0 %s %s", tc.field, op, tc.lit), f(tc.cents, tc.litCent)},
				{fmt.Sprintf("%s %s %s", tc.lit, op, tc.field), fmt.Sprintf("%s %s %s + 0", tc.lit, op, tc.field), f(tc.litCent, tc.cents)},
			} {
				got, ok, err := compileT(t, s, c.src).EvalBool(r)
				if err != nil || !ok || got != c.want {
					t.Errorf("%s = %v, %v, %v; want %v", c.src, got, ok, err, c.want)
				}
				gen, gok, gerr := compileT(t, s, c.general).EvalBool(r)
				if gen != got || gok != ok || gerr != nil {
					t.Errorf("%s = %v, %v and %s = %v, %v", c.src, got, ok, c.general, gen, gok)
				}
			}
		}
		src := fmt.Sprintf("n_dec %s 0", op)
		if got, ok, err := compileT(t, s, src).EvalBool(r); ok || got || err != nil {
			t.Errorf("%s = %v, %v, %v; want null", src, got, ok, err)
		}
	}
}

// TestIntTest checks the range form of a field-vs-int comparison
// (Expr.IntTest, IntTest.Holds): its range worked out by hand for each
// operator, Holds giving what EvalBool gives for a = 7, the null n_int
// and the fields at the int64 bounds (big = MaxInt64, small = MinInt64),
// the bounds' empty ranges (< MinInt64, > MaxInt64) included; an
// expression of another shape has no IntTest.
func TestIntTest(t *testing.T) {
	s := testSchema(t)
	r := testRow(t, s)
	a, _ := s.Lookup("a")
	const minS = "(-9223372036854775807 - 1)"
	for _, tc := range []struct {
		src    string
		lo, hi int64
		not    bool
	}{
		{"a == 7", 7, 7, false},
		{"7 == a", 7, 7, false},
		{"a != 7", 7, 7, true},
		{"a < 7", math.MinInt64, 6, false},
		{"7 > a", math.MinInt64, 6, false},
		{"a <= 7", math.MinInt64, 7, false},
		{"a > 7", 8, math.MaxInt64, false},
		{"7 <= a", 7, math.MaxInt64, false},
		{"a >= 7", 7, math.MaxInt64, false},
		{"a > 9223372036854775807", 1, 0, false},
		{"a < " + minS, 1, 0, false},
	} {
		e := compileT(t, s, tc.src)
		it, ok := e.IntTest()
		want := IntTest{Index: a.Index, Slot: a.Slot, Lo: tc.lo, Hi: tc.hi, Not: tc.not}
		if !ok || it != want {
			t.Errorf("%s: IntTest() = %+v, %v; want %+v", tc.src, it, ok, want)
		}
	}
	for _, op := range []string{"==", "!=", "<", "<=", ">", ">="} {
		for _, f := range []string{"a", "n_int", "big", "small"} {
			for _, k := range []string{"6", "7", "8", "0", "9223372036854775807", "9223372036854775806", minS, "(-9223372036854775807)"} {
				src := f + " " + op + " " + k
				e := compileT(t, s, src)
				it, ok := e.IntTest()
				if !ok {
					t.Fatalf("%s: no IntTest", src)
				}
				v, vok, err := e.EvalBool(r)
				if hv, hok := it.Holds(r); err != nil || hv != v || hok != vok {
					t.Errorf("%s: Holds = %v, %v; EvalBool = %v, %v, %v", src, hv, hok, v, vok, err)
				}
			}
		}
	}
	// By hand at the bounds: big >= MaxInt64, small <= MinInt64, big > MaxInt64−1.
	for src, want := range map[string]bool{"big >= 9223372036854775807": true, "big > 9223372036854775807": false,
		"small <= " + minS: true, "small < " + minS: false, "big > 9223372036854775806": true, "small != " + minS: false} {
		it, _ := compileT(t, s, src).IntTest()
		if v, ok := it.Holds(r); !ok || v != want {
			t.Errorf("%s: Holds = %v, %v; want %v", src, v, ok, want)
		}
	}
	for _, src := range []string{"a + 0 == 7", "a == b", "ok", "qty == 3 && a == 7", "name == 'x'"} {
		if _, ok := compileT(t, s, src).IntTest(); ok {
			t.Errorf("%s: has an IntTest", src)
		}
	}
}
