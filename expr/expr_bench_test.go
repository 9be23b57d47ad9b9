package expr

// Benchmarks for the two expressions of the retail example, three ways:
//
//   - Handwritten: the Go a person would write against the row's slots; the
//     floor.
//   - Tidemark: this package's compiled closures over row slots, exact
//     decimals.
//   - ExprLangVM: expr-lang's own compiler and VM (expr.Compile + expr.Run
//     with a map[string]any env and float64 amounts), the way expr-lang is
//     normally used; ExprLangVMReuse reuses one vm.VM to take its per-run
//     allocation out.
//
// Run: go test -run '^$' -bench . -benchmem ./expr/
// The ratio between Tidemark and ExprLangVM is the reason this package
// compiles expr-lang syntax itself; see the package documentation.

import (
	"testing"

	exprlang "github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/tidemark/tidemark/row"
)

const (
	benchTernary = `event_type == "REFUND" ? -amount : amount`
	benchIn      = `event_type in ["PAYMENT","REFUND"]`
)

func benchRow(b *testing.B) (*row.Schema, *row.Row) {
	s := testSchema(b)
	return s, testRow(b, s)
}

func benchEnv() map[string]any {
	return map[string]any{"event_type": "REFUND", "amount": 19.99}
}

func BenchmarkTernary(b *testing.B) {
	b.Run("Handwritten", func(b *testing.B) {
		s, r := benchRow(b)
		et, _ := s.Lookup("event_type")
		am, _ := s.Lookup("amount")
		var sink row.Decimal
		b.ReportAllocs()
		for b.Loop() {
			if r.IsNull(et.Index) || r.IsNull(am.Index) {
				continue
			}
			d := r.D[am.Slot]
			if r.S[et.Slot] == "REFUND" {
				d = d.Neg()
			}
			sink = d
		}
		_ = sink
	})
	b.Run("Tidemark", func(b *testing.B) {
		s, r := benchRow(b)
		e := compileT(b, s, benchTernary)
		var sink row.Decimal
		b.ReportAllocs()
		for b.Loop() {
			d, _, err := e.EvalDecimal(r)
			if err != nil {
				b.Fatal(err)
			}
			sink = d
		}
		_ = sink
	})
	b.Run("ExprLangVM", func(b *testing.B) {
		env := benchEnv()
		prog, err := exprlang.Compile(benchTernary, exprlang.Env(env))
		if err != nil {
			b.Fatal(err)
		}
		var sink any
		b.ReportAllocs()
		for b.Loop() {
			v, err := exprlang.Run(prog, env)
			if err != nil {
				b.Fatal(err)
			}
			sink = v
		}
		if sink.(float64) != -19.99 {
			b.Fatalf("got %v", sink)
		}
	})
	b.Run("ExprLangVMReuse", func(b *testing.B) {
		env := benchEnv()
		prog, err := exprlang.Compile(benchTernary, exprlang.Env(env))
		if err != nil {
			b.Fatal(err)
		}
		var m vm.VM
		var sink any
		b.ReportAllocs()
		for b.Loop() {
			v, err := m.Run(prog, env)
			if err != nil {
				b.Fatal(err)
			}
			sink = v
		}
		_ = sink
	})
}

func BenchmarkIn(b *testing.B) {
	b.Run("Handwritten", func(b *testing.B) {
		s, r := benchRow(b)
		et, _ := s.Lookup("event_type")
		var sink bool
		b.ReportAllocs()
		for b.Loop() {
			if r.IsNull(et.Index) {
				continue
			}
			v := r.S[et.Slot]
			sink = v == "PAYMENT" || v == "REFUND"
		}
		_ = sink
	})
	b.Run("Tidemark", func(b *testing.B) {
		s, r := benchRow(b)
		e := compileT(b, s, benchIn)
		var sink bool
		b.ReportAllocs()
		for b.Loop() {
			v, _, err := e.EvalBool(r)
			if err != nil {
				b.Fatal(err)
			}
			sink = v
		}
		_ = sink
	})
	b.Run("ExprLangVM", func(b *testing.B) {
		env := benchEnv()
		prog, err := exprlang.Compile(benchIn, exprlang.Env(env))
		if err != nil {
			b.Fatal(err)
		}
		var sink any
		b.ReportAllocs()
		for b.Loop() {
			v, err := exprlang.Run(prog, env)
			if err != nil {
				b.Fatal(err)
			}
			sink = v
		}
		if sink != true {
			b.Fatalf("got %v", sink)
		}
	})
	b.Run("ExprLangVMReuse", func(b *testing.B) {
		env := benchEnv()
		prog, err := exprlang.Compile(benchIn, exprlang.Env(env))
		if err != nil {
			b.Fatal(err)
		}
		var m vm.VM
		var sink any
		b.ReportAllocs()
		for b.Loop() {
			v, err := m.Run(prog, env)
			if err != nil {
				b.Fatal(err)
			}
			sink = v
		}
		_ = sink
	})
}

// BenchmarkCompile measures Parse + Compile, paid once per pipeline plan.
func BenchmarkCompile(b *testing.B) {
	s, _ := benchRow(b)
	b.ReportAllocs()
	for b.Loop() {
		p, err := Parse(benchTernary)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Compile(p, s); err != nil {
			b.Fatal(err)
		}
	}
}
