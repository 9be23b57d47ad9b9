package expr

import (
	"errors"
	"math"
	"testing"

	"github.com/tidemark/tidemark/row"
)

// FuzzCompile feeds arbitrary source text through Parse, Identifiers,
// Compile and every Eval method on a fixed schema and three rows (typical
// values, all null, extremes). Nothing may panic; compile failures must be
// *CompileError and evaluation failures *EvalError; the typed and boxed
// results must agree. ParseCall gets the same text.
//
//	go test -fuzz=FuzzCompile ./expr
func FuzzCompile(f *testing.F) {
	for _, tc := range evalCases {
		f.Add(tc.src)
	}
	for _, tc := range errCases {
		f.Add(tc.src)
	}
	for _, tc := range compileErrCases {
		f.Add(tc.src)
	}
	for _, src := range []string{
		`sum(Quantity * UnitPrice)`, `count()`, `max_by(price, auction)`,
		`é + 1.5`, `"é" + name`, `1e400`, `.5e-3`, `0x7FFFFFFFFFFFFFFF`,
		`amount / 0.0000000000000000001`, `amount * 0.0000000000000000001 * 0.1`,
		`decimal(s_dec) / 3 * 3`, `int(string(small))`, `abs(small + 1)`,
	} {
		f.Add(src)
	}

	s := testSchema(f)
	rows := []*row.Row{testRow(f, s), s.NewRow(), extremeRow(f, s)}

	f.Fuzz(func(t *testing.T, src string) {
		_, _, _ = ParseCall(src)
		_, _, _ = ParseCall("f(" + src + ")")
		p, err := Parse(src)
		if err != nil {
			return
		}
		_ = p.Identifiers()
		e, err := Compile(p, s)
		if err != nil {
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("Compile(%q): %T %v is not a *CompileError", src, err, err)
			}
			_ = err.Error()
			return
		}
		for _, r := range rows {
			v, err := e.Eval(r)
			if err != nil {
				var ee *EvalError
				if !errors.As(err, &ee) {
					t.Fatalf("Eval(%q): %T %v is not an *EvalError", src, err, err)
				}
				_ = err.Error()
			}
			if !v.IsNull() && v.Kind != e.Kind() {
				t.Fatalf("Eval(%q) kind %s, Kind() %s", src, v.Kind, e.Kind())
			}
			_ = v.String()
			bv, bok, berr := e.EvalBool(r)
			iv, iok, ierr := e.EvalInt(r)
			dv, dok, derr := e.EvalDecimal(r)
			sv, sok, serr := e.EvalString(r)
			if err != nil {
				continue
			}
			var typed row.Value
			switch e.Kind() {
			case row.KindBool:
				if berr != nil || ierr != nil || bok != iok || (bok && (iv != 0) != bv) {
					t.Fatalf("%q: EvalBool %v %v %v, EvalInt %v %v %v", src, bv, bok, berr, iv, iok, ierr)
				}
				if bok {
					typed = row.Bool(bv)
				}
			case row.KindInt, row.KindTime:
				if ierr != nil {
					t.Fatalf("%q: EvalInt: %v", src, ierr)
				}
				if iok {
					typed = row.Value{Kind: e.Kind(), I: iv}
				}
			case row.KindDecimal:
				if derr != nil {
					t.Fatalf("%q: EvalDecimal: %v", src, derr)
				}
				if dok {
					typed = row.Dec(dv)
				}
			case row.KindString:
				if serr != nil {
					t.Fatalf("%q: EvalString: %v", src, serr)
				}
				if sok {
					typed = row.Str(sv)
				}
			}
			if !typed.Equal(v) {
				t.Fatalf("%q: typed %v, boxed %v", src, typed, v)
			}
		}
	})
}

// extremeRow holds edge values: int extremes, zeros, empty strings, the
// earliest timestamps.
func extremeRow(t testing.TB, s *row.Schema) *row.Row {
	r := s.NewRow()
	for _, f := range s.Fields {
		var v row.Value
		switch f.Kind {
		case row.KindBool:
			v = row.Bool(false)
		case row.KindInt:
			v = row.Int(math.MinInt64)
			if f.Index%2 == 0 {
				v = row.Int(math.MaxInt64)
			}
		case row.KindTime:
			v = row.Time(math.MinInt64 + 1)
		case row.KindDecimal:
			v = row.Dec(dec(t, "-99999999999999999999.9999999999999999999"))
			if f.Index%2 == 0 {
				v = row.Dec(row.Decimal{})
			}
		case row.KindString:
			v = row.Str("")
		}
		if err := r.Set(f, v); err != nil {
			t.Fatal(err)
		}
	}
	return r
}
