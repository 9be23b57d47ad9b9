package parser

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
)

// Options configure Parse.
type Options struct {
	// Lookup gives the values of ${NAME} placeholders (nil: os.LookupEnv).
	Lookup func(string) (string, bool)
}

// maxDepth bounds the nesting of expressions and queries: deeper input is
// an error, not a stack overflow.
const maxDepth = 500

// Parse parses a script of statements separated by semicolons. file names
// the script in errors. The error is an *Error at the first problem.
func Parse(file string, src []byte, opts Options) (script *Script, err error) {
	text := string(src)
	lookup := opts.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	source := NewSource(file, text)
	p := &parser{src: source}
	defer func() {
		if r := recover(); r != nil {
			if b, ok := r.(bailout); ok {
				script, err = nil, b.err
				return
			}
			// A bug, not the input's fault: still no panic for the caller.
			script, err = nil, fmt.Errorf("%s: the SQL parser failed (please report this with the script): %v\n%s", file, r, debug.Stack())
		}
	}()
	toks, _, err := tokenize(file, text, lookup)
	if err != nil {
		return nil, err
	}
	p.toks = toks
	return p.script(), nil
}

// ParseExpr parses one expression (for tests and tools).
func ParseExpr(src string) (e Expr, err error) {
	source := NewSource("", src)
	p := &parser{src: source}
	defer func() {
		if r := recover(); r != nil {
			if b, ok := r.(bailout); ok {
				e, err = nil, b.err
				return
			}
			e, err = nil, fmt.Errorf("the SQL parser failed: %v", r)
		}
	}()
	toks, _, err := tokenize("", src, func(string) (string, bool) { return "", false })
	if err != nil {
		return nil, err
	}
	p.toks = toks
	e = p.expr()
	if t := p.peek(); t.Kind != TokEOF {
		p.failAt(t.Pos, "unexpected %s after the expression", t.describe())
	}
	return e, nil
}

type bailout struct{ err error }

type parser struct {
	src   *Source
	toks  []Token
	i     int
	depth int
}

func (p *parser) peek() Token { return p.toks[p.i] }

//go:noinline
func (p *parser) peekN(n int) Token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

//go:noinline
func (p *parser) next() Token {
	t := p.toks[p.i]
	if t.Kind != TokEOF {
		p.i++
	}
	return t
}

//go:noinline
func (p *parser) failAt(at Pos, format string, args ...any) {
	panic(bailout{p.src.Errorf(at, format, args...)})
}

// enter guards recursion depth; defer p.leave() after it.
func (p *parser) enter() {
	p.depth++
	if p.depth > maxDepth {
		p.failAt(p.peek().Pos, "nested more than %d levels deep", maxDepth)
	}
}

func (p *parser) leave() { p.depth-- }

// try runs f and reports whether it parsed; on a syntax error it puts the
// parser back where it was (for the two readings of "((": a subquery or
// a parenthesized join or expression).
func (p *parser) try(f func()) (ok bool) {
	save, depth := p.i, p.depth
	defer func() {
		if r := recover(); r != nil {
			if _, isBailout := r.(bailout); !isBailout {
				panic(r)
			}
			p.i, p.depth, ok = save, depth, false
		}
	}()
	f()
	return true
}

// isKw reports whether t is the unquoted keyword kw (upper case).
//
//go:noinline
func isKw(t Token, kw string) bool {
	return t.Kind == TokIdent && len(t.Text) == len(kw) && strings.EqualFold(t.Text, kw)
}

func (p *parser) atKw(kws ...string) bool {
	t := p.peek()
	for _, k := range kws {
		if isKw(t, k) {
			return true
		}
	}
	return false
}

// acceptKw consumes the keyword sequence kws if the next tokens are it.
func (p *parser) acceptKw(kws ...string) bool {
	for i, k := range kws {
		if !isKw(p.peekN(i), k) {
			return false
		}
	}
	p.i += len(kws)
	return true
}

func (p *parser) expectKw(kw, context string) Token {
	t := p.peek()
	if !isKw(t, kw) {
		p.failAt(t.Pos, "expected %s %s, found %s", kw, context, t.describe())
	}
	return p.next()
}

func (p *parser) atOp(op string) bool {
	t := p.peek()
	return t.Kind == TokOp && t.Text == op
}

//go:noinline
func (p *parser) acceptOp(op string) bool {
	if p.atOp(op) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expectOp(op, context string) Token {
	t := p.peek()
	if t.Kind != TokOp || t.Text != op {
		p.failAt(t.Pos, "expected %q %s, found %s", op, context, t.describe())
	}
	return p.next()
}

// reserved are the keywords that cannot be unquoted identifiers (quote
// them with backquotes: `value`). A subset of Flink's reserved words: the
// ones that would make a statement ambiguous here.
var reserved = map[string]bool{
	"SELECT": true, "FROM": true, "WHERE": true, "GROUP": true, "BY": true, "HAVING": true,
	"ORDER": true, "LIMIT": true, "UNION": true, "INTERSECT": true, "EXCEPT": true, "MINUS": true,
	"JOIN": true, "INNER": true, "LEFT": true, "RIGHT": true, "FULL": true, "OUTER": true,
	"CROSS": true, "NATURAL": true, "ON": true, "USING": true, "AS": true, "AND": true, "OR": true,
	"NOT": true, "IN": true, "IS": true, "NULL": true, "TRUE": true, "FALSE": true, "CASE": true,
	"WHEN": true, "THEN": true, "ELSE": true, "END": true, "BETWEEN": true, "LIKE": true,
	"SIMILAR": true, "INTERVAL": true, "TABLE": true, "CREATE": true, "INSERT": true, "INTO": true,
	"VALUES": true, "WITH": true, "DISTINCT": true, "ALL": true, "FOR": true, "OVER": true,
	"PARTITION": true, "WINDOW": true, "EXISTS": true, "CAST": true, "LATERAL": true,
	"SET": true, "FILTER": true, "ESCAPE": true, "UNKNOWN": true, "OFFSET": true, "FETCH": true,
	"MATCH_RECOGNIZE": true, "VALUE": true,
}

// identAt reports whether t can be an identifier here.
func identOK(t Token) bool {
	return t.Kind == TokQIdent || t.Kind == TokIdent && !reserved[strings.ToUpper(t.Text)]
}

// ident reads an identifier, what naming the thing expected.
func (p *parser) ident(what string) *Ident {
	t := p.peek()
	if !identOK(t) {
		if t.Kind == TokIdent {
			p.failAt(t.Pos, "expected %s, found the reserved word %s (quote it as `%s` to use it as a name)", what, strings.ToUpper(t.Text), t.Text)
		}
		p.failAt(t.Pos, "expected %s, found %s", what, t.describe())
	}
	p.next()
	return &Ident{At: t.Pos, Name: t.Text, Quoted: t.Kind == TokQIdent}
}

// name reads a possibly qualified name a.b.c.
func (p *parser) name(what string) *Name {
	n := &Name{Parts: []*Ident{p.ident(what)}}
	for p.atOp(".") && identOK(p.peekN(1)) {
		p.next()
		n.Parts = append(n.Parts, p.ident(what))
	}
	return n
}

func (p *parser) identList(what string) []*Ident {
	p.expectOp("(", "before the "+what+" list")
	var out []*Ident
	for {
		out = append(out, p.ident(what))
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectOp(")", "after the "+what+" list")
	return out
}

func (p *parser) stringLit(what string) (string, Pos) {
	t := p.peek()
	if t.Kind != TokString {
		p.failAt(t.Pos, "expected %s (a quoted string), found %s", what, t.describe())
	}
	p.next()
	return t.Text, t.Pos
}

// script := { stmt ; } EOF
func (p *parser) script() *Script {
	s := &Script{Source: p.src}
	for {
		for p.acceptOp(";") {
		}
		if p.peek().Kind == TokEOF {
			return s
		}
		st := p.stmt()
		s.Stmts = append(s.Stmts, st)
		t := p.peek()
		if t.Kind == TokEOF {
			return s
		}
		if !p.atOp(";") {
			p.failAt(t.Pos, "expected ; or the end of the script after the statement, found %s", t.describe())
		}
	}
}

func (p *parser) stmt() Stmt {
	t := p.peek()
	if t.Kind == TokHint {
		p.failAt(t.Pos, "a hint /*+ … */ belongs after a table name (OPTIONS), not before a statement")
	}
	if t.Kind != TokIdent {
		p.failAt(t.Pos, "expected a statement (CREATE TABLE, CREATE VIEW, SET, INSERT INTO), found %s", t.describe())
	}
	switch strings.ToUpper(t.Text) {
	case "CREATE":
		return p.create()
	case "SET":
		return p.set()
	case "RESET":
		p.next()
		s := &Set{At: t.Pos, Reset: true}
		if p.peek().Kind == TokString {
			s.Key, s.KeyAt = p.stringLit("the key")
		}
		return s
	case "INSERT":
		return p.insert()
	case "EXECUTE":
		p.next()
		if p.acceptKw("STATEMENT", "SET") {
			p.expectKw("BEGIN", "after EXECUTE STATEMENT SET")
			return p.statementSet(t.Pos)
		}
		if p.atKw("INSERT") {
			return p.insert()
		}
		p.failAt(p.peek().Pos, "expected STATEMENT SET or INSERT after EXECUTE, found %s", p.peek().describe())
	case "BEGIN":
		p.next()
		if !p.acceptKw("STATEMENT", "SET") {
			p.failAt(p.peek().Pos, "expected STATEMENT SET after BEGIN, found %s", p.peek().describe())
		}
		p.expectOp(";", "after BEGIN STATEMENT SET")
		return p.statementSet(t.Pos)
	case "SELECT", "WITH", "VALUES":
		p.failAt(t.Pos, "a query alone has nowhere to go: write INSERT INTO <table> %s … (tidemark runs INSERT statements; CREATE TABLE declares the table)", strings.ToUpper(t.Text))
	case "DROP", "ALTER", "USE", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "LOAD", "UNLOAD", "ADD", "REMOVE", "TRUNCATE", "DELETE", "UPDATE", "ANALYZE", "CALL":
		p.next()
		p.skipStatement()
		return &Unsupported{At: t.Pos, Keyword: strings.ToUpper(t.Text)}
	}
	p.failAt(t.Pos, "expected a statement (CREATE TABLE, CREATE VIEW, SET, INSERT INTO), found %s", t.describe())
	return nil
}

// skipStatement skips the tokens up to the next ; outside parentheses
// (the rest of a statement the planner refuses by its keyword).
func (p *parser) skipStatement() {
	for depth := 0; ; {
		x := p.peek()
		if x.Kind == TokEOF || depth == 0 && isOpTok(x, ";") {
			return
		}
		if isOpTok(x, "(") {
			depth++
		} else if isOpTok(x, ")") && depth > 0 {
			depth--
		}
		p.next()
	}
}

// statementSet reads insert; … END after BEGIN.
func (p *parser) statementSet(at Pos) *StatementSet {
	ss := &StatementSet{At: at}
	for {
		for p.acceptOp(";") {
		}
		if p.acceptKw("END") {
			return ss
		}
		t := p.peek()
		if !isKw(t, "INSERT") {
			if t.Kind == TokEOF {
				p.failAt(at, "the statement set opened here has no END")
			}
			p.failAt(t.Pos, "a statement set holds INSERT statements only, found %s", t.describe())
		}
		ss.Inserts = append(ss.Inserts, p.insert())
		if !p.atOp(";") && !p.atKw("END") {
			p.failAt(p.peek().Pos, "expected ; after the INSERT, found %s", p.peek().describe())
		}
	}
}

func (p *parser) set() Stmt {
	t := p.next()
	s := &Set{At: t.Pos}
	if p.atOp(";") || p.peek().Kind == TokEOF {
		return s
	}
	switch k := p.peek(); k.Kind {
	case TokString:
		s.Key, s.KeyAt = p.stringLit("the key")
	case TokIdent, TokQIdent:
		// SET key = value, unquoted (the SQL client's older form).
		var parts []string
		s.KeyAt = k.Pos
		for {
			x := p.next()
			if x.Kind != TokIdent && x.Kind != TokQIdent && x.Kind != TokNumber {
				p.failAt(x.Pos, "expected the key of SET, found %s", x.describe())
			}
			parts = append(parts, x.Text)
			if !p.acceptOp(".") {
				break
			}
		}
		s.Key = strings.Join(parts, ".")
	default:
		p.failAt(k.Pos, "expected SET 'key' = 'value', found %s", k.describe())
	}
	p.expectOp("=", "between the key and the value of SET")
	v := p.peek()
	switch v.Kind {
	case TokString, TokNumber, TokIdent:
		p.next()
		s.Value, s.ValueAt = v.Text, v.Pos
	default:
		p.failAt(v.Pos, "expected the value of SET (a quoted string), found %s", v.describe())
	}
	return s
}

func (p *parser) create() Stmt {
	at := p.next().Pos
	temp := p.acceptKw("TEMPORARY")
	system := p.acceptKw("SYSTEM")
	p.acceptKw("OR", "REPLACE")
	t := p.peek()
	switch {
	case isKw(t, "TABLE"):
		p.next()
		return p.createTable(at, temp)
	case isKw(t, "VIEW"):
		p.next()
		v := &CreateView{At: at, Temporary: temp}
		v.IfNotExists = p.acceptKw("IF", "NOT", "EXISTS")
		v.Name = p.name("a view name")
		if p.atOp("(") {
			v.Columns = p.identList("column")
		}
		p.expectKw("AS", "before the view's query")
		v.Query = p.query()
		return v
	case isKw(t, "FUNCTION"):
		p.next()
		f := &CreateFunction{At: at, Temporary: temp, System: system}
		p.acceptKw("IF", "NOT", "EXISTS")
		f.Name = p.name("a function name")
		p.expectKw("AS", "before the function's class name")
		f.Class, f.ClassAt = p.stringLit("the function's class name")
		if p.acceptKw("LANGUAGE") {
			f.Language = strings.ToUpper(p.next().Text)
		}
		return f
	case isKw(t, "CATALOG"), isKw(t, "DATABASE"):
		p.next()
		p.skipStatement()
		return &Unsupported{At: at, Keyword: "CREATE " + strings.ToUpper(t.Text)}
	}
	p.failAt(t.Pos, "expected TABLE, VIEW or FUNCTION after CREATE, found %s", t.describe())
	return nil
}

func (p *parser) createTable(at Pos, temp bool) *CreateTable {
	ct := &CreateTable{At: at, Temporary: temp}
	ct.IfNotExists = p.acceptKw("IF", "NOT", "EXISTS")
	ct.Name = p.name("a table name")
	if p.acceptOp("(") {
		for {
			p.tableElement(ct)
			if p.acceptOp(",") {
				continue
			}
			p.expectOp(")", "or \",\" after the table's column")
			break
		}
	}
	for {
		switch {
		case p.acceptKw("COMMENT"):
			p.stringLit("the comment")
		case p.acceptKw("PARTITIONED", "BY"):
			ct.PartitionBy = p.identList("partition column")
		case p.acceptKw("WITH"):
			ct.With = p.options()
		case p.acceptKw("LIKE"):
			ct.Like = p.name("a table name")
			if p.atOp("(") {
				p.skipParens()
			}
		case p.atKw("DISTRIBUTED"):
			p.failAt(p.peek().Pos, "DISTRIBUTED BY is not supported: tidemark partitions state by the group key (key groups); drop the clause")
		default:
			return ct
		}
	}
}

// skipParens skips a balanced parenthesized group.
func (p *parser) skipParens() {
	depth := 0
	for {
		t := p.next()
		switch {
		case t.Kind == TokEOF:
			p.failAt(t.Pos, "unbalanced parentheses")
		case t.Kind == TokOp && t.Text == "(":
			depth++
		case t.Kind == TokOp && t.Text == ")":
			depth--
			if depth == 0 {
				return
			}
		}
	}
}

// options := ( 'k' = 'v' {, 'k' = 'v'} )
func (p *parser) options() []*Option {
	p.expectOp("(", "after WITH")
	var out []*Option
	if p.acceptOp(")") {
		return out
	}
	for {
		o := &Option{}
		t := p.peek()
		switch t.Kind {
		case TokString:
			o.Key, o.KeyAt = p.stringLit("an option key")
		case TokIdent, TokQIdent:
			// An unquoted key (connector = 'x'), as older Flink allowed.
			var parts []string
			o.KeyAt = t.Pos
			for {
				x := p.next()
				parts = append(parts, x.Text)
				if !p.acceptOp(".") {
					break
				}
			}
			o.Key = strings.Join(parts, ".")
		default:
			p.failAt(t.Pos, "expected an option 'key' = 'value', found %s", t.describe())
		}
		p.expectOp("=", "between the option's key and value")
		v := p.peek()
		switch v.Kind {
		case TokString, TokNumber:
			p.next()
			o.Value, o.ValueAt = v.Text, v.Pos
		case TokIdent:
			if !isKw(v, "TRUE") && !isKw(v, "FALSE") {
				p.failAt(v.Pos, "expected the value of option '%s' (a quoted string), found %s", o.Key, v.describe())
			}
			p.next()
			o.Value, o.ValueAt = strings.ToLower(v.Text), v.Pos
		default:
			p.failAt(v.Pos, "expected the value of option '%s' (a quoted string), found %s", o.Key, v.describe())
		}
		out = append(out, o)
		if p.acceptOp(",") {
			continue
		}
		p.expectOp(")", "or \",\" after the option")
		return out
	}
}

func (p *parser) tableElement(ct *CreateTable) {
	t := p.peek()
	switch {
	case isKw(t, "WATERMARK"):
		p.next()
		if ct.Watermark != nil {
			p.failAt(t.Pos, "a second WATERMARK: a table has one (the first is at %s)", ct.Watermark.At)
		}
		p.expectKw("FOR", "after WATERMARK")
		w := &WatermarkDef{At: t.Pos, Column: p.ident("the event-time column")}
		p.expectKw("AS", "before the watermark expression")
		w.Expr = p.expr()
		ct.Watermark = w
		return
	case isKw(t, "CONSTRAINT"):
		p.next()
		p.ident("a constraint name")
		if !p.atKw("PRIMARY") {
			p.failAt(p.peek().Pos, "expected PRIMARY KEY after CONSTRAINT name (the only constraint), found %s", p.peek().describe())
		}
		fallthrough
	case isKw(p.peek(), "PRIMARY") && isKw(p.peekN(1), "KEY"):
		at := p.peek().Pos
		p.next()
		p.next()
		pk := &PrimaryKey{At: at, Columns: p.identList("key column")}
		pk.NotEnforced = p.acceptKw("NOT", "ENFORCED")
		if ct.PrimaryKey != nil {
			p.failAt(at, "a second PRIMARY KEY: a table has one")
		}
		ct.PrimaryKey = pk
		return
	}
	c := &ColumnDef{At: t.Pos, Name: p.ident("a column name")}
	if p.acceptKw("AS") {
		c.Computed = p.expr()
	} else {
		c.Type = p.dataType()
		for {
			switch {
			case p.acceptKw("NOT", "NULL"):
				c.NotNull = true
			case p.acceptKw("NULL"):
			case p.acceptKw("PRIMARY", "KEY"):
				c.PrimaryKey = true
				p.acceptKw("NOT", "ENFORCED")
			case p.acceptKw("METADATA"):
				c.MetadataSet = true
				c.Metadata = c.Name.Name
				if p.acceptKw("FROM") {
					c.Metadata, _ = p.stringLit("the metadata key")
				}
				c.Virtual = p.acceptKw("VIRTUAL")
			default:
				goto done
			}
		}
	}
done:
	if p.acceptKw("COMMENT") {
		c.Comment, _ = p.stringLit("the comment")
	}
	ct.Columns = append(ct.Columns, c)
}

// dataType := name [(params)] [WITH LOCAL TIME ZONE] | ROW<…> | ARRAY<T> | MAP<K, V>
func (p *parser) dataType() *DataType {
	p.enter()
	defer p.leave()
	t := p.peek()
	if t.Kind != TokIdent && t.Kind != TokQIdent {
		p.failAt(t.Pos, "expected a type (BIGINT, DECIMAL(p, s), STRING, TIMESTAMP(3), ROW<…>), found %s", t.describe())
	}
	p.next()
	dt := &DataType{At: t.Pos, Name: strings.ToUpper(t.Text)}
	switch dt.Name {
	case "DOUBLE":
		p.acceptKw("PRECISION")
	case "CHARACTER", "CHAR":
		if p.acceptKw("VARYING") {
			dt.Name = "VARCHAR"
		}
	case "ROW":
		closer := ">"
		if !p.acceptOp("<") {
			p.expectOp("(", "or < after ROW")
			closer = ")"
		}
		if p.acceptOp(closer) {
			return dt
		}
		for {
			f := &FieldDef{Name: p.ident("a field name")}
			f.Type = p.dataType()
			if p.acceptKw("COMMENT") {
				p.stringLit("the comment")
			}
			dt.Fields = append(dt.Fields, f)
			if p.acceptOp(",") {
				continue
			}
			p.expectOp(closer, "or \",\" after the ROW field")
			break
		}
		return p.typeSuffix(dt)
	case "ARRAY", "MULTISET":
		if p.acceptOp("<") {
			dt.Elem = p.dataType()
			p.expectOp(">", "after the element type")
		}
		return p.typeSuffix(dt)
	case "MAP":
		p.expectOp("<", "after MAP")
		dt.Key = p.dataType()
		p.expectOp(",", "between MAP's key and value types")
		dt.Value = p.dataType()
		p.expectOp(">", "after MAP's value type")
		return p.typeSuffix(dt)
	}
	if p.acceptOp("(") {
		for {
			n := p.peek()
			if n.Kind != TokNumber || strings.ContainsAny(n.Text, ".eE") {
				p.failAt(n.Pos, "expected a whole number (a precision, scale or length), found %s", n.describe())
			}
			p.next()
			v := 0
			for _, c := range n.Text {
				v = v*10 + int(c-'0')
				if v > 1<<20 {
					p.failAt(n.Pos, "%s is too large for a type parameter", n.Text)
				}
			}
			dt.Params = append(dt.Params, v)
			if !p.acceptOp(",") {
				break
			}
		}
		p.expectOp(")", "after the type's parameters")
	}
	if dt.Name == "TIMESTAMP" || dt.Name == "TIME" {
		switch {
		case p.acceptKw("WITH", "LOCAL", "TIME", "ZONE"):
			dt.LocalTZ = true
		case p.acceptKw("WITHOUT", "TIME", "ZONE"):
		case p.acceptKw("WITH", "TIME", "ZONE"):
			p.failAt(t.Pos, "TIMESTAMP WITH TIME ZONE is not a Flink type: use TIMESTAMP(3) or TIMESTAMP_LTZ(3)")
		}
	}
	return p.typeSuffix(dt)
}

func (p *parser) typeSuffix(dt *DataType) *DataType {
	if p.acceptKw("NOT", "NULL") {
		dt.NotNull = true
	}
	return dt
}

func (p *parser) insert() *Insert {
	t := p.next() // INSERT
	ins := &Insert{At: t.Pos}
	switch {
	case p.acceptKw("INTO"):
	case p.acceptKw("OVERWRITE"):
		ins.Overwrite = true
	default:
		p.failAt(p.peek().Pos, "expected INTO after INSERT, found %s", p.peek().describe())
	}
	ins.Table = p.name("a table name")
	if p.atKw("PARTITION") {
		p.failAt(p.peek().Pos, "INSERT … PARTITION (…) is not supported: declare the partition columns with PARTITIONED BY and select them")
	}
	if p.atOp("(") && !(isKw(p.peekN(1), "SELECT") || isKw(p.peekN(1), "WITH") || isKw(p.peekN(1), "VALUES") || p.peekN(1).Kind == TokOp && p.peekN(1).Text == "(") {
		ins.Columns = p.identList("column")
	}
	ins.Query = p.query()
	return ins
}
