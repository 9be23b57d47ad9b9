package parser

import (
	"fmt"
	"strings"
)

// Format renders a node as canonical SQL: keywords in upper case,
// identifiers backquoted when they need it, every compound expression in
// parentheses. Parsing Format's output gives a tree that formats the same
// (FuzzParse checks it), so it shows how the parser grouped a script.
func Format(n Node) string {
	var b strings.Builder
	f := &formatter{b: &b}
	f.node(n)
	return b.String()
}

// FormatScript renders every statement, one per line, each ending in ;.
func FormatScript(s *Script) string {
	var b strings.Builder
	for _, st := range s.Stmts {
		b.WriteString(Format(st))
		b.WriteString(";\n")
	}
	return b.String()
}

type formatter struct{ b *strings.Builder }

// w is not inlined: it is called at some 200 places, and inlined each
// would copy strings.Builder's append there (the binary's size).
//
//go:noinline
func (f *formatter) w(parts ...string) {
	for _, p := range parts {
		f.b.WriteString(p)
	}
}

// QuoteIdent renders an identifier: as is when it is a plain word that is
// not reserved, else in backquotes (` doubled).
func QuoteIdent(name string) string {
	plain := name != ""
	for i, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			plain = false
			break
		}
	}
	if u := strings.ToUpper(name); plain && !reserved[u] && !niladic[u] && !primaryWords[u] {
		return name
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// primaryWords start expressions of their own when unquoted.
var primaryWords = map[string]bool{"TIMESTAMP": true, "DATE": true, "TIME": true, "TIMESTAMP_LTZ": true,
	"EXTRACT": true, "DESCRIPTOR": true, "TRY_CAST": true}

// QuoteString renders a string literal (” for a quote).
func QuoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (f *formatter) ident(i *Ident) { f.w(QuoteIdent(i.Name)) }

func (f *formatter) name(n *Name) {
	for i, p := range n.Parts {
		if i > 0 {
			f.w(".")
		}
		f.ident(p)
	}
}

func (f *formatter) idents(ids []*Ident) {
	f.w("(")
	for i, id := range ids {
		if i > 0 {
			f.w(", ")
		}
		f.ident(id)
	}
	f.w(")")
}

func (f *formatter) options(opts []*Option) {
	f.w("(")
	for i, o := range opts {
		if i > 0 {
			f.w(", ")
		}
		f.w(QuoteString(o.Key), " = ", QuoteString(o.Value))
	}
	f.w(")")
}

func (f *formatter) node(n Node) {
	switch n := n.(type) {
	case Stmt:
		f.stmt(n)
	case Query:
		f.query(n)
	case TableExpr:
		f.table(n)
	case Expr:
		f.expr(n)
	case *DataType:
		f.dataType(n)
	default:
		f.w(fmt.Sprintf("<%T>", n))
	}
}

func (f *formatter) stmt(s Stmt) {
	switch s := s.(type) {
	case *CreateTable:
		f.w("CREATE ")
		if s.Temporary {
			f.w("TEMPORARY ")
		}
		f.w("TABLE ")
		if s.IfNotExists {
			f.w("IF NOT EXISTS ")
		}
		f.name(s.Name)
		var elems []func()
		for _, c := range s.Columns {
			c := c
			elems = append(elems, func() { f.column(c) })
		}
		if w := s.Watermark; w != nil {
			elems = append(elems, func() { f.w("WATERMARK FOR "); f.ident(w.Column); f.w(" AS "); f.expr(w.Expr) })
		}
		if pk := s.PrimaryKey; pk != nil {
			elems = append(elems, func() {
				f.w("PRIMARY KEY ")
				f.idents(pk.Columns)
				if pk.NotEnforced {
					f.w(" NOT ENFORCED")
				}
			})
		}
		if len(elems) > 0 {
			f.w(" (")
			for i, e := range elems {
				if i > 0 {
					f.w(", ")
				}
				e()
			}
			f.w(")")
		}
		if len(s.PartitionBy) > 0 {
			f.w(" PARTITIONED BY ")
			f.idents(s.PartitionBy)
		}
		if s.With != nil {
			f.w(" WITH ")
			f.options(s.With)
		}
		if s.Like != nil {
			f.w(" LIKE ")
			f.name(s.Like)
		}
	case *CreateView:
		f.w("CREATE ")
		if s.Temporary {
			f.w("TEMPORARY ")
		}
		f.w("VIEW ")
		if s.IfNotExists {
			f.w("IF NOT EXISTS ")
		}
		f.name(s.Name)
		if len(s.Columns) > 0 {
			f.w(" ")
			f.idents(s.Columns)
		}
		f.w(" AS ")
		f.query(s.Query)
	case *CreateFunction:
		f.w("CREATE ")
		if s.Temporary {
			f.w("TEMPORARY ")
		}
		if s.System {
			f.w("SYSTEM ")
		}
		f.w("FUNCTION ")
		f.name(s.Name)
		f.w(" AS ", QuoteString(s.Class))
		if s.Language != "" {
			f.w(" LANGUAGE ", s.Language)
		}
	case *Set:
		if s.Reset {
			f.w("RESET")
			if s.Key != "" {
				f.w(" ", QuoteString(s.Key))
			}
			return
		}
		f.w("SET")
		if s.Key != "" {
			f.w(" ", QuoteString(s.Key), " = ", QuoteString(s.Value))
		}
	case *Insert:
		f.insert(s)
	case *StatementSet:
		f.w("EXECUTE STATEMENT SET BEGIN ")
		for _, in := range s.Inserts {
			f.insert(in)
			f.w("; ")
		}
		f.w("END")
	case *Unsupported:
		f.w(s.Keyword)
	}
}

func (f *formatter) insert(s *Insert) {
	if s.Overwrite {
		f.w("INSERT OVERWRITE ")
	} else {
		f.w("INSERT INTO ")
	}
	f.name(s.Table)
	if len(s.Columns) > 0 {
		f.w(" ")
		f.idents(s.Columns)
	}
	f.w(" ")
	f.query(s.Query)
}

func (f *formatter) column(c *ColumnDef) {
	f.ident(c.Name)
	if c.Computed != nil {
		f.w(" AS ")
		f.expr(c.Computed)
	} else {
		f.w(" ")
		f.dataType(c.Type)
		if c.NotNull {
			f.w(" NOT NULL")
		}
		if c.PrimaryKey {
			f.w(" PRIMARY KEY NOT ENFORCED")
		}
		if c.MetadataSet {
			f.w(" METADATA FROM ", QuoteString(c.Metadata))
			if c.Virtual {
				f.w(" VIRTUAL")
			}
		}
	}
	if c.Comment != "" {
		f.w(" COMMENT ", QuoteString(c.Comment))
	}
}

func (f *formatter) dataType(t *DataType) {
	f.w(t.Name)
	switch {
	case t.Name == "ROW":
		f.w("<")
		for i, fd := range t.Fields {
			if i > 0 {
				f.w(", ")
			}
			f.ident(fd.Name)
			f.w(" ")
			f.dataType(fd.Type)
		}
		f.w(">")
	case t.Key != nil:
		f.w("<")
		f.dataType(t.Key)
		f.w(", ")
		f.dataType(t.Value)
		f.w(">")
	case t.Elem != nil:
		f.w("<")
		f.dataType(t.Elem)
		f.w(">")
	case len(t.Params) > 0:
		f.w("(")
		for i, p := range t.Params {
			if i > 0 {
				f.w(", ")
			}
			f.w(fmt.Sprint(p))
		}
		f.w(")")
	}
	if t.LocalTZ {
		f.w(" WITH LOCAL TIME ZONE")
	}
	if t.NotNull {
		f.w(" NOT NULL")
	}
}

func (f *formatter) query(q Query) {
	switch q := q.(type) {
	case *Select:
		f.w("SELECT ")
		if q.Distinct {
			f.w("DISTINCT ")
		}
		for i, it := range q.Items {
			if i > 0 {
				f.w(", ")
			}
			switch {
			case it.Star && it.Qualifier != nil:
				f.name(it.Qualifier)
				f.w(".*")
			case it.Star:
				f.w("*")
			default:
				f.expr(it.Expr)
				if it.Alias != nil {
					f.w(" AS ")
					f.ident(it.Alias)
				}
			}
		}
		if q.From != nil {
			f.w(" FROM ")
			f.table(q.From)
		}
		if q.Where != nil {
			f.w(" WHERE ")
			f.expr(q.Where)
		}
		if len(q.GroupBy) > 0 || q.GroupingSets != "" {
			f.w(" GROUP BY ")
			for i, g := range q.GroupBy {
				if i > 0 {
					f.w(", ")
				}
				f.expr(g)
			}
			if q.GroupingSets != "" {
				if len(q.GroupBy) > 0 {
					f.w(", ")
				}
				f.w(q.GroupingSets, "(…)")
			}
		}
		if q.Having != nil {
			f.w(" HAVING ")
			f.expr(q.Having)
		}
		if len(q.OrderBy) > 0 {
			f.w(" ORDER BY ")
			f.orderItems(q.OrderBy)
		}
		if q.Limit != nil {
			f.w(" LIMIT ")
			f.expr(q.Limit)
		}
	case *SetOp:
		f.w("(")
		f.query(q.Left)
		f.w(") ", q.Op)
		if q.All {
			f.w(" ALL")
		}
		f.w(" (")
		f.query(q.Right)
		f.w(")")
	case *With:
		f.w("WITH ")
		for i, c := range q.CTEs {
			if i > 0 {
				f.w(", ")
			}
			f.ident(c.Name)
			if len(c.Columns) > 0 {
				f.w(" ")
				f.idents(c.Columns)
			}
			f.w(" AS (")
			f.query(c.Query)
			f.w(")")
		}
		f.w(" ")
		f.query(q.Body)
	case *Values:
		f.w("VALUES ")
		for i, r := range q.Rows {
			if i > 0 {
				f.w(", ")
			}
			f.w("(")
			for j, e := range r {
				if j > 0 {
					f.w(", ")
				}
				f.expr(e)
			}
			f.w(")")
		}
	}
}

func (f *formatter) orderItems(items []*OrderItem) {
	for i, o := range items {
		if i > 0 {
			f.w(", ")
		}
		f.expr(o.Expr)
		if o.Desc {
			f.w(" DESC")
		}
		if o.NullsSet {
			if o.NullsFirst {
				f.w(" NULLS FIRST")
			} else {
				f.w(" NULLS LAST")
			}
		}
	}
}

func (f *formatter) alias(a *Ident, cols []*Ident) {
	if a != nil {
		f.w(" AS ")
		f.ident(a)
		if len(cols) > 0 {
			f.idents(cols)
		}
	}
}

func (f *formatter) table(t TableExpr) {
	switch t := t.(type) {
	case *TableRef:
		f.name(t.Name)
		if len(t.Options) > 0 {
			f.w(" /*+ OPTIONS")
			f.options(t.Options)
			f.w(" */")
		}
		if t.ForSystemTime != nil {
			f.w(" FOR SYSTEM_TIME AS OF ")
			f.expr(t.ForSystemTime)
		}
		f.alias(t.Alias, t.ColumnAliases)
	case *SubqueryRef:
		if t.Lateral {
			f.w("LATERAL ")
		}
		f.w("(")
		f.query(t.Query)
		f.w(")")
		f.alias(t.Alias, t.ColumnAliases)
	case *TableFunc:
		f.w("TABLE(")
		f.expr(t.Call)
		f.w(")")
		f.alias(t.Alias, nil)
	case *JoinExpr:
		f.w("(")
		f.table(t.Left)
		if t.Kind == "," {
			f.w(", ")
		} else {
			f.w(" ", t.Kind, " JOIN ")
		}
		f.table(t.Right)
		if t.On != nil {
			f.w(" ON ")
			f.expr(t.On)
		}
		if len(t.Using) > 0 {
			f.w(" USING ")
			f.idents(t.Using)
		}
		f.w(")")
	}
}

func (f *formatter) expr(e Expr) {
	switch e := e.(type) {
	case *ColumnRef:
		for i, p := range e.Parts {
			if i > 0 {
				f.w(".")
			}
			f.ident(p)
		}
	case *Literal:
		switch e.Kind {
		case LitString:
			f.w(QuoteString(e.Text))
		default:
			f.w(e.Text)
		}
	case *TypedLiteral:
		f.w(e.Type, " ", QuoteString(e.Value))
	case *IntervalLit:
		f.w("INTERVAL ")
		if e.Neg {
			f.w("-")
		}
		f.w(QuoteString(e.Value), " ", e.Unit)
		if e.ToUnit != "" {
			f.w(" TO ", e.ToUnit)
		}
	case *Binary:
		f.w("(")
		f.expr(e.L)
		f.w(" ", e.Op, " ")
		f.expr(e.R)
		f.w(")")
	case *Unary:
		f.w("(", e.Op)
		if e.Op == "NOT" {
			f.w(" ")
		}
		f.expr(e.X)
		f.w(")")
	case *FuncCall:
		for i, p := range e.Name.Parts {
			if i > 0 {
				f.w(".")
			}
			if q := QuoteIdent(p.Name); q != p.Name && !reserved[strings.ToUpper(p.Name)] && !strings.ContainsAny(q[1:len(q)-1], "`") && QuoteIdent(p.Name+"x") == p.Name+"x" {
				f.w(p.Name) // a function name: CURRENT_TIMESTAMP, DATE_FORMAT
			} else {
				f.w(q)
			}
		}
		if niladic[e.FuncName()] && len(e.Args) == 0 && !e.Star {
			return
		}
		f.w("(")
		if e.Distinct {
			f.w("DISTINCT ")
		}
		if e.Star {
			f.w("*")
		}
		for i, a := range e.Args {
			if i > 0 {
				f.w(", ")
			}
			f.expr(a)
		}
		f.w(")")
		if e.Filter != nil {
			f.w(" FILTER (WHERE ")
			f.expr(e.Filter)
			f.w(")")
		}
		if o := e.Over; o != nil {
			f.w(" OVER (")
			sep := ""
			if len(o.PartitionBy) > 0 {
				f.w("PARTITION BY ")
				for i, p := range o.PartitionBy {
					if i > 0 {
						f.w(", ")
					}
					f.expr(p)
				}
				sep = " "
			}
			if len(o.OrderBy) > 0 {
				f.w(sep, "ORDER BY ")
				f.orderItems(o.OrderBy)
				sep = " "
			}
			if o.Frame != "" {
				f.w(sep, o.Frame)
			}
			f.w(")")
		}
	case *Case:
		f.w("CASE")
		if e.Operand != nil {
			f.w(" ")
			f.expr(e.Operand)
		}
		for _, wh := range e.Whens {
			f.w(" WHEN ")
			f.expr(wh.Cond)
			f.w(" THEN ")
			f.expr(wh.Result)
		}
		if e.Else != nil {
			f.w(" ELSE ")
			f.expr(e.Else)
		}
		f.w(" END")
	case *Cast:
		if e.Try {
			f.w("TRY_CAST(")
		} else {
			f.w("CAST(")
		}
		f.expr(e.X)
		f.w(" AS ")
		f.dataType(e.Type)
		f.w(")")
	case *Between:
		f.w("(")
		f.expr(e.X)
		if e.Not {
			f.w(" NOT")
		}
		f.w(" BETWEEN ")
		f.expr(e.Lo)
		f.w(" AND ")
		f.expr(e.Hi)
		f.w(")")
	case *InList:
		f.w("(")
		f.expr(e.X)
		if e.Not {
			f.w(" NOT")
		}
		f.w(" IN (")
		if e.Query != nil {
			f.query(e.Query)
		}
		for i, x := range e.List {
			if i > 0 {
				f.w(", ")
			}
			f.expr(x)
		}
		f.w("))")
	case *IsTest:
		f.w("(")
		f.expr(e.X)
		f.w(" IS ")
		if e.Not {
			f.w("NOT ")
		}
		f.w(e.What)
		if e.Y != nil {
			f.w(" ")
			f.expr(e.Y)
		}
		f.w(")")
	case *Like:
		f.w("(")
		f.expr(e.X)
		if e.Not {
			f.w(" NOT")
		}
		f.w(" ", e.Op, " ")
		f.expr(e.Pattern)
		if e.Escape != nil {
			f.w(" ESCAPE ")
			f.expr(e.Escape)
		}
		f.w(")")
	case *Extract:
		f.w("EXTRACT(", e.Unit, " FROM ")
		f.expr(e.X)
		f.w(")")
	case *TimeUnit:
		f.w(e.Unit)
	case *SubqueryExpr:
		if e.Exists {
			f.w("EXISTS ")
		}
		f.w("(")
		f.query(e.Query)
		f.w(")")
	case *TableArg:
		f.w("TABLE ")
		if e.Query != nil {
			f.w("(")
			f.query(e.Query)
			f.w(")")
		} else {
			f.name(e.Name)
		}
		if len(e.PartitionBy) > 0 {
			f.w(" PARTITION BY (")
			for i, x := range e.PartitionBy {
				if i > 0 {
					f.w(", ")
				}
				f.expr(x)
			}
			f.w(")")
		}
	case *Descriptor:
		f.w("DESCRIPTOR")
		f.idents(e.Columns)
	case *NamedArg:
		f.ident(e.Name)
		f.w(" => ")
		f.expr(e.Value)
	case *Index:
		f.expr(e.X)
		f.w("[")
		f.expr(e.Index)
		f.w("]")
	case *Star:
		f.w("*")
	}
}
