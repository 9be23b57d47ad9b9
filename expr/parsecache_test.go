package expr

import (
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/row"
)

// TestParseCache: a text parsed through the cache is parsed once (the
// same *Parsed every time, for a whole text and for a call's argument),
// gives what the package's Parse and ParseCall give, fails as they fail
// without being kept, and one *Parsed compiles against two schemas to
// each schema's own field.
func TestParseCache(t *testing.T) {
	var c ParseCache
	a, err := c.Parse("price * 2")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Parse("price * 2")
	if err != nil || a != b {
		t.Fatalf("second Parse: %p, %v; want the first's %p", b, err, a)
	}
	name, args, err := c.ParseCall("nth_by(bidder, 3, desc(price))")
	if err != nil || name != "nth_by" || len(args) != 3 {
		t.Fatalf("ParseCall: %q, %d args, %v", name, len(args), err)
	}
	name2, args2, err := c.ParseCall("NTH_BY(url, 3, desc(price))")
	if err != nil || name2 != "nth_by" || len(args2) != 3 {
		t.Fatalf("ParseCall: %q, %d args, %v", name2, len(args2), err)
	}
	if args[1] != args2[1] || args[2] != args2[2] || args[0] == args2[0] {
		t.Fatalf("arguments 2 and 3 (the same texts) not shared, or argument 1 (bidder, url) shared")
	}
	if p, err := c.Parse("desc(price)"); err != nil || p != args[2] {
		t.Fatalf("Parse of an argument's text: %p, %v; want the argument's %p", p, err, args[2])
	}
	wantName, wantArgs, _ := ParseCall("nth_by(bidder, 3, desc(price))")
	for i := range wantArgs {
		if args[i].Source() != wantArgs[i].Source() || name != wantName {
			t.Fatalf("argument %d: %q; ParseCall gives %q", i+1, args[i].Source(), wantArgs[i].Source())
		}
	}
	for _, bad := range []string{"price *", "sum(a,, b)", "sum(a) + 1"} {
		_, _, want := ParseCall(bad)
		for range 2 {
			_, _, err := c.ParseCall(bad)
			if err == nil || err.Error() != want.Error() {
				t.Fatalf("ParseCall(%q): %v; want %v", bad, err, want)
			}
		}
	}
	if _, err := c.Parse("price *"); err == nil {
		t.Fatal("Parse of a broken text through the cache succeeded")
	}
	if _, ok := c.m["price *"]; ok {
		t.Fatal("a failed parse was kept")
	}
	// One *Parsed, two schemas: price is slot 0 of one, slot 1 of the other.
	s1, s2 := row.NewSchema(), row.NewSchema()
	p1, _ := s1.Add("price", row.KindInt)
	b2, _ := s2.Add("bidder", row.KindInt)
	p2, _ := s2.Add("price", row.KindInt)
	r1, r2 := s1.NewRow(), s2.NewRow()
	if r1.Set(p1, row.Int(5)) != nil || r2.Set(b2, row.Int(100)) != nil || r2.Set(p2, row.Int(7)) != nil {
		t.Fatal("Set")
	}
	e1, err := Compile(a, s1)
	if err != nil {
		t.Fatal(err)
	}
	e2, err := Compile(a, s2)
	if err != nil {
		t.Fatal(err)
	}
	v1, err1 := e1.Eval(r1)
	v2, err2 := e2.Eval(r2)
	if err1 != nil || err2 != nil || v1.String() != "10" || v2.String() != "14" {
		t.Fatalf("price * 2 = %v (%v), %v (%v); want 10, 14", v1, err1, v2, err2)
	}
}

// TestPlainCallEqualsLexed: ParseCall's split of a plain call gives the
// lexer's split — the same name and arguments' texts, or no split where
// the lexer's fails — over random calls of identifiers, numbers,
// operators, commas, parentheses and spaces, and the calls of the Nexmark
// plans.
func TestPlainCallEqualsLexed(t *testing.T) {
	check := func(t interface {
		Fatalf(string, ...any)
	}, src string) {
		n1, a1, ok := splitPlainCall(src, Parse)
		n2, a2, err := lexedCall(src, Parse)
		if !ok {
			return // ParseCall takes the lexer's split
		}
		if err != nil {
			t.Fatalf("%q: the plain split gives %s with %d arguments, the lexer's fails: %v", src, n1, len(a1), err)
		}
		if n1 != n2 || len(a1) != len(a2) {
			t.Fatalf("%q: %s with %d arguments; the lexer's %s with %d", src, n1, len(a1), n2, len(a2))
		}
		for i := range a1 {
			if a1[i].Source() != a2[i].Source() {
				t.Fatalf("%q: argument %d %q; the lexer's %q", src, i+1, a1[i].Source(), a2[i].Source())
			}
		}
	}
	taken := 0
	for _, src := range []string{"count()", "count( )", "sum(amount)", "SUM(a * b)", "nth_by(bidder, 3, desc(price))",
		"first_by(price, desc(price), ts)", "sum(a)(b)", "sum(a) + f(b)", "sum((a + b) * 2)", "not(x)", "in(x)",
		"f(a,,b)", "f(,a)", "f(a,)", "f(1.)", "f(1..2)", "f(a ?? b)", "f(x, y", "f x)", "max_by(price, auction)",
		"count_distinct(customer)", "f(not a)", "f(a not in b)", "_f(a)", "f9(a)", "9f(a)", "f (a)", " f(a)"} {
		check(t, src)
		if _, _, ok := splitPlainCall(src, Parse); ok {
			taken++
		}
	}
	if taken < 10 {
		t.Fatalf("the plain split took %d of the examples; want at least 10", taken)
	}
	words := []string{"a", "b", "price", "desc", "f", "not", "in", "and", "1", "2.5", ".5", "1e3", "x.y", "_z", "true", "nil"}
	ops := []string{",", "(", ")", " ", "*", "+", "-", "%", "<", ">", "=", "!", ".", "=="}
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.SampledFrom([]string{"f", "sum", "nth_by", "not", "Count", "x9", "let"}).Draw(t, "name")
		n := rapid.IntRange(0, 12).Draw(t, "n")
		body := ""
		for i := range n {
			if rapid.Bool().Draw(t, "word"+strconv.Itoa(i)) {
				body += rapid.SampledFrom(words).Draw(t, "w"+strconv.Itoa(i))
			} else {
				body += rapid.SampledFrom(ops).Draw(t, "o"+strconv.Itoa(i))
			}
		}
		check(t, name+"("+body+")")
	})
}
