package expr

import (
	"errors"
	"fmt"
	"strings"

	"github.com/expr-lang/expr/ast"

	"github.com/tidemark/tidemark/row"
)

// fn is a compiled (sub-)expression of result type T: it returns the value,
// ok=false for null (with the zero T), or a runtime error (*EvalError).
type fn[T any] func(*row.Row) (T, bool, error)

// node is one compiled sub-expression. Exactly the closure for its kind is
// set: b for bool, i for int and timestamp, d for decimal, s for string; a
// KindNull node (statically always null) has none.
type node struct {
	kind row.Kind
	b    fn[bool]
	i    fn[int64]
	d    fn[row.Decimal]
	s    fn[string]

	konst bool      // the value does not depend on the row
	lit   bool      // a literal or folded constant; val holds it
	val   row.Value // when lit: the value (row.Null for null)

	field   row.Field // when isField: the field read
	isField bool

	test    IntTest // when hasTest: b as a range test (fieldVsInt)
	hasTest bool

	at int // rune offset of the construct in the source, for messages
}

func nullOf[T any]() fn[T] {
	return func(*row.Row) (T, bool, error) {
		var z T
		return z, false, nil
	}
}

func constOf[T any](v T) fn[T] {
	return func(*row.Row) (T, bool, error) { return v, true, nil }
}

// bools returns n as a bool closure; n is bool or null.
func (n *node) bools() fn[bool] {
	if n.kind == row.KindBool {
		return n.b
	}
	return nullOf[bool]()
}

// ints returns n as an int64 closure; n is int, timestamp, bool (0/1) or
// null.
func (n *node) ints() fn[int64] {
	switch n.kind {
	case row.KindInt, row.KindTime:
		return n.i
	case row.KindBool:
		b := n.b
		return func(r *row.Row) (int64, bool, error) {
			v, ok, err := b(r)
			if v && ok {
				return 1, true, nil
			}
			return 0, ok, err
		}
	}
	return nullOf[int64]()
}

// decs returns n as a decimal closure; n is decimal, int (converted
// exactly) or null.
func (n *node) decs() fn[row.Decimal] {
	switch n.kind {
	case row.KindDecimal:
		return n.d
	case row.KindInt:
		i := n.i
		return func(r *row.Row) (row.Decimal, bool, error) {
			v, ok, err := i(r)
			if err != nil || !ok {
				return row.Decimal{}, false, err
			}
			return row.DecimalFromInt(v), true, nil
		}
	}
	return nullOf[row.Decimal]()
}

// strs returns n as a string closure; n is string or null.
func (n *node) strs() fn[string] {
	if n.kind == row.KindString {
		return n.s
	}
	return nullOf[string]()
}

// nullTest returns a closure reporting whether n is null, for x == nil.
func (n *node) nullTest() func(*row.Row) (bool, error) {
	if n.isField {
		idx := n.field.Index
		return func(r *row.Row) (bool, error) { return r.IsNull(idx), nil }
	}
	switch n.kind {
	case row.KindBool:
		return nullTestOf(n.b)
	case row.KindInt, row.KindTime:
		return nullTestOf(n.i)
	case row.KindDecimal:
		return nullTestOf(n.d)
	case row.KindString:
		return nullTestOf(n.s)
	}
	return func(*row.Row) (bool, error) { return true, nil }
}

func nullTestOf[T any](f fn[T]) func(*row.Row) (bool, error) {
	return func(r *row.Row) (bool, error) {
		_, ok, err := f(r)
		return !ok, err
	}
}

// unify returns the kind two branches (?:, ??) or list elements share:
// equal kinds, int with decimal (decimal), or null with anything.
func unify(a, b row.Kind) (row.Kind, bool) {
	switch {
	case a == b:
		return a, true
	case a == row.KindNull:
		return b, true
	case b == row.KindNull:
		return a, true
	case a.Numeric() && b.Numeric():
		return row.KindDecimal, true
	}
	return row.KindNull, false
}

// typed builds a node of kind k whose closure is build's result for that
// kind: one generic constructor per kind, so callers write the logic once.
func typed(k row.Kind, at int, konst bool, parts []*node,
	mkB func([]fn[bool]) fn[bool],
	mkI func([]fn[int64]) fn[int64],
	mkD func([]fn[row.Decimal]) fn[row.Decimal],
	mkS func([]fn[string]) fn[string],
) *node {
	n := &node{kind: k, at: at, konst: konst}
	switch k {
	case row.KindBool:
		fs := make([]fn[bool], len(parts))
		for j, p := range parts {
			fs[j] = p.bools()
		}
		n.b = mkB(fs)
	case row.KindInt, row.KindTime:
		fs := make([]fn[int64], len(parts))
		for j, p := range parts {
			fs[j] = p.ints()
		}
		n.i = mkI(fs)
	case row.KindDecimal:
		fs := make([]fn[row.Decimal], len(parts))
		for j, p := range parts {
			fs[j] = p.decs()
		}
		n.d = mkD(fs)
	case row.KindString:
		fs := make([]fn[string], len(parts))
		for j, p := range parts {
			fs[j] = p.strs()
		}
		n.s = mkS(fs)
	}
	return n
}

type compiler struct {
	src    string
	schema *row.Schema
}

// Compile type-checks p against schema s (field name -> row.Field via
// s.Lookup) and builds the typed closures that evaluate it over rows shaped
// by s.
//
// It returns a *CompileError for an unknown field (with close names from the
// schema as suggestions), an unknown function, operands of the wrong kind,
// an unsupported construct ("unsupported in tidemark expressions: ...") or a
// constant sub-expression that always fails, such as 1 / 0.
func Compile(p *Parsed, s *row.Schema) (*Expr, error) {
	if p == nil || p.root == nil {
		return nil, errors.New("expr: Compile of a nil expression")
	}
	if s == nil {
		return nil, fmt.Errorf("expr: Compile %q with a nil schema", p.src)
	}
	c := &compiler{src: p.src, schema: s}
	n, err := c.compile(p.root)
	if err != nil {
		return nil, err
	}
	return newExpr(p.src, n), nil
}

func (c *compiler) errAt(at int, format string, a ...any) *CompileError {
	line, col := position(c.src, at)
	return &CompileError{Source: c.src, Line: line, Column: col, Msg: fmt.Sprintf(format, a...)}
}

func (c *compiler) unsupported(at int, what string) error {
	return c.errAt(at, "unsupported in tidemark expressions: %s", what)
}

// evalErr wraps a runtime cause with the expression's source.
func (c *compiler) evalErr(cause error) error { return &EvalError{Source: c.src, Err: cause} }

func (c *compiler) compile(an ast.Node) (*node, error) {
	n, err := c.compileNode(an)
	if err != nil {
		return nil, err
	}
	if n.konst && !n.lit {
		return c.fold(n)
	}
	return n, nil
}

func (c *compiler) compileNode(an ast.Node) (*node, error) {
	if an == nil {
		return nil, c.errAt(0, "empty expression")
	}
	at := an.Location().From
	switch n := an.(type) {
	case *ast.NilNode:
		return &node{kind: row.KindNull, konst: true, lit: true, at: at}, nil
	case *ast.BoolNode:
		return litNode(row.Bool(n.Value), at), nil
	case *ast.IntegerNode:
		return litNode(row.Int(int64(n.Value)), at), nil
	case *ast.FloatNode:
		return c.floatLit(n)
	case *ast.StringNode:
		return litNode(row.Str(n.Value), at), nil
	case *ast.IdentifierNode, *ast.MemberNode:
		return c.fieldRef(an)
	case *ast.ChainNode:
		return nil, c.unsupported(at, "optional chaining (?.)")
	case *ast.UnaryNode:
		return c.unary(n)
	case *ast.BinaryNode:
		return c.binary(n)
	case *ast.ConditionalNode:
		return c.conditional(n)
	case *ast.CallNode:
		id, ok := n.Callee.(*ast.IdentifierNode)
		if !ok {
			return nil, c.unsupported(at, "method call")
		}
		return c.call(id.Value, n.Arguments, at)
	case *ast.BuiltinNode:
		for _, a := range n.Arguments {
			if _, isPred := a.(*ast.PredicateNode); isPred {
				return nil, c.unsupported(at, fmt.Sprintf("predicate function %s()", n.Name))
			}
		}
		return c.call(n.Name, n.Arguments, at)
	case *ast.ArrayNode:
		return nil, c.unsupported(at, "array literal (a list is allowed only on the right of in)")
	case *ast.MapNode, *ast.PairNode:
		return nil, c.unsupported(at, "map literal")
	case *ast.SliceNode:
		return nil, c.unsupported(at, "slice ([a:b])")
	case *ast.PointerNode:
		return nil, c.unsupported(at, "pointer (#)")
	case *ast.PredicateNode:
		return nil, c.unsupported(at, "predicate")
	case *ast.VariableDeclaratorNode:
		return nil, c.unsupported(at, "let")
	case *ast.SequenceNode:
		return nil, c.unsupported(at, "sequence (;)")
	case *ast.BytesNode:
		return nil, c.unsupported(at, "bytes literal")
	}
	return nil, c.unsupported(at, strings.TrimPrefix(fmt.Sprintf("%T", an), "*ast."))
}

// litNode returns a constant node for v (not null).
func litNode(v row.Value, at int) *node {
	n := &node{kind: v.Kind, konst: true, lit: true, val: v, at: at}
	switch v.Kind {
	case row.KindBool:
		n.b = constOf(v.I != 0)
	case row.KindInt, row.KindTime:
		n.i = constOf(v.I)
	case row.KindDecimal:
		n.d = constOf(v.D)
	case row.KindString:
		n.s = constOf(v.S)
	}
	return n
}

// fold evaluates a constant node once and replaces it by its value. A
// constant that always fails is a compile error.
func (c *compiler) fold(n *node) (*node, error) {
	if n.kind == row.KindNull {
		n.lit = true
		return n, nil
	}
	var (
		v   row.Value
		ok  bool
		err error
	)
	switch n.kind {
	case row.KindBool:
		var b bool
		b, ok, err = n.b(nil)
		v = row.Bool(b)
	case row.KindInt, row.KindTime:
		v.Kind = n.kind
		v.I, ok, err = n.i(nil)
	case row.KindDecimal:
		v.Kind = row.KindDecimal
		v.D, ok, err = n.d(nil)
	case row.KindString:
		v.Kind = row.KindString
		v.S, ok, err = n.s(nil)
	}
	if err != nil {
		var ee *EvalError
		if errors.As(err, &ee) {
			err = ee.Err
		}
		return nil, c.errAt(n.at, "constant expression always fails: %v", err)
	}
	if ok {
		return litNode(v, n.at), nil
	}
	out := &node{kind: n.kind, konst: true, lit: true, at: n.at}
	switch n.kind {
	case row.KindBool:
		out.b = nullOf[bool]()
	case row.KindInt, row.KindTime:
		out.i = nullOf[int64]()
	case row.KindDecimal:
		out.d = nullOf[row.Decimal]()
	case row.KindString:
		out.s = nullOf[string]()
	}
	return out, nil
}

// floatLit turns a float literal into the exact decimal its source text
// spells (never through float64).
func (c *compiler) floatLit(n *ast.FloatNode) (*node, error) {
	at := n.Location().From
	t := strings.ReplaceAll(text(c.src, n.Location()), "_", "")
	mant, exp := t, ""
	if i := strings.IndexAny(t, "eE"); i >= 0 {
		mant, exp = t[:i], t[i:]
	}
	if strings.HasPrefix(mant, ".") {
		mant = "0" + mant
	}
	mant = strings.TrimSuffix(mant, ".")
	d, err := row.ParseDecimal([]byte(mant + exp))
	if err != nil {
		return nil, c.errAt(at, "number %s is not an exact decimal: %v", t, err)
	}
	return litNode(row.Dec(d), at), nil
}

// fieldRef resolves an identifier or member chain to a schema field.
func (c *compiler) fieldRef(an ast.Node) (*node, error) {
	name, base, ok := memberName(an)
	if !ok {
		at := an.Location().From
		if m, isMember := an.(*ast.MemberNode); isMember {
			switch {
			case m.Method:
				return nil, c.unsupported(at, "method call")
			case m.Optional:
				return nil, c.unsupported(at, "optional chaining (?.)")
			}
		}
		return nil, c.unsupported(at, "index access ([...])")
	}
	at := base.Location().From
	f, found := c.schema.Lookup(name)
	if !found {
		e := c.errAt(at, "unknown field %q", name)
		e.Suggestions = CloseNames(c.schema, name)
		if len(e.Suggestions) == 0 && len(c.schema.Fields) > 0 && len(c.schema.Fields) <= 12 {
			names := make([]string, len(c.schema.Fields))
			for i, f := range c.schema.Fields {
				names[i] = f.Name
			}
			e.Msg += " (fields: " + strings.Join(names, ", ") + ")"
		}
		return nil, e
	}
	return fieldNode(f, at), nil
}

// fieldNode reads field f straight from its row slot.
func fieldNode(f row.Field, at int) *node {
	idx, slot := f.Index, f.Slot
	n := &node{kind: f.Kind, field: f, isField: true, at: at}
	switch f.Kind {
	case row.KindBool:
		n.b = func(r *row.Row) (bool, bool, error) {
			if r.IsNull(idx) {
				return false, false, nil
			}
			return r.I[slot] != 0, true, nil
		}
	case row.KindInt, row.KindTime:
		n.i = func(r *row.Row) (int64, bool, error) {
			if r.IsNull(idx) {
				return 0, false, nil
			}
			return r.I[slot], true, nil
		}
	case row.KindDecimal:
		n.d = func(r *row.Row) (row.Decimal, bool, error) {
			if r.IsNull(idx) {
				return row.Decimal{}, false, nil
			}
			return r.D[slot], true, nil
		}
	case row.KindString:
		n.s = func(r *row.Row) (string, bool, error) {
			if r.IsNull(idx) {
				return "", false, nil
			}
			return r.S[slot], true, nil
		}
	}
	return n
}

// conditional compiles c ? a : b (and if c { a } else { b }) with SQL CASE
// semantics: a null condition is not true, so it yields b.
func (c *compiler) conditional(n *ast.ConditionalNode) (*node, error) {
	cond, err := c.compile(n.Cond)
	if err != nil {
		return nil, err
	}
	if cond.kind != row.KindBool && cond.kind != row.KindNull {
		return nil, c.errAt(cond.at, "condition of ?: must be bool, not %s", cond.kind)
	}
	a, err := c.compile(n.Exp1)
	if err != nil {
		return nil, err
	}
	b, err := c.compile(n.Exp2)
	if err != nil {
		return nil, err
	}
	k, ok := unify(a.kind, b.kind)
	if !ok {
		return nil, c.errAt(a.at, "branches of ?: have different kinds: %s and %s", a.kind, b.kind)
	}
	if cond.kind == row.KindNull {
		return b.as(k), nil
	}
	cb := cond.bools()
	konst := cond.konst && a.konst && b.konst
	return typed(k, cond.at, konst, []*node{a, b},
		func(f []fn[bool]) fn[bool] { return ternary(cb, f[0], f[1]) },
		func(f []fn[int64]) fn[int64] { return ternary(cb, f[0], f[1]) },
		func(f []fn[row.Decimal]) fn[row.Decimal] { return ternary(cb, f[0], f[1]) },
		func(f []fn[string]) fn[string] { return ternary(cb, f[0], f[1]) },
	), nil
}

func ternary[T any](cond fn[bool], a, b fn[T]) fn[T] {
	return func(r *row.Row) (T, bool, error) {
		v, ok, err := cond(r)
		if err != nil {
			var z T
			return z, false, err
		}
		if v && ok {
			return a(r)
		}
		return b(r)
	}
}

// coalesce compiles a ?? b: a when a is not null, else b.
func (c *compiler) coalesce(a, b *node, at int) (*node, error) {
	k, ok := unify(a.kind, b.kind)
	if !ok {
		return nil, c.errAt(at, "operands of ?? have different kinds: %s and %s", a.kind, b.kind)
	}
	if a.kind == row.KindNull {
		return b.as(k), nil
	}
	if b.kind == row.KindNull {
		return a.as(k), nil
	}
	return typed(k, at, a.konst && b.konst, []*node{a, b},
		func(f []fn[bool]) fn[bool] { return coalesceFn(f[0], f[1]) },
		func(f []fn[int64]) fn[int64] { return coalesceFn(f[0], f[1]) },
		func(f []fn[row.Decimal]) fn[row.Decimal] { return coalesceFn(f[0], f[1]) },
		func(f []fn[string]) fn[string] { return coalesceFn(f[0], f[1]) },
	), nil
}

func coalesceFn[T any](a, b fn[T]) fn[T] {
	return func(r *row.Row) (T, bool, error) {
		v, ok, err := a(r)
		if err != nil || ok {
			return v, ok, err
		}
		return b(r)
	}
}

// as returns n converted to kind k (k is n's kind, or decimal for an int
// node, or anything for a null node).
func (n *node) as(k row.Kind) *node {
	if n.kind == k {
		return n
	}
	out := &node{kind: k, konst: n.konst, at: n.at}
	switch k {
	case row.KindBool:
		out.b = n.bools()
	case row.KindInt, row.KindTime:
		out.i = n.ints()
	case row.KindDecimal:
		out.d = n.decs()
	case row.KindString:
		out.s = n.strs()
	}
	return out
}
