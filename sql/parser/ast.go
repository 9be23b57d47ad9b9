package parser

import "strings"

// Node is any node of the syntax tree: it knows where it starts.
type Node interface {
	Position() Pos
}

// Script is a parsed script: its statements in order.
type Script struct {
	Stmts []Stmt
	// Source is the script's text, for the errors of later passes.
	Source *Source
}

// Stmt is a statement.
type Stmt interface {
	Node
	stmt()
}

// Ident is an identifier as written: Quoted for a `backquoted` one.
// Identifiers are case-sensitive (Flink's default); keywords are not.
type Ident struct {
	At     Pos
	Name   string
	Quoted bool
}

// Name is a possibly qualified name: catalog.database.object, or one part.
type Name struct {
	Parts []*Ident
}

// String renders the name with its parts joined by dots.
func (n *Name) String() string {
	parts := make([]string, len(n.Parts))
	for i, p := range n.Parts {
		parts[i] = p.Name
	}
	return strings.Join(parts, ".")
}

// Last is the name's last part (the object).
func (n *Name) Last() *Ident { return n.Parts[len(n.Parts)-1] }

// Position implements Node.
func (n *Name) Position() Pos { return n.Parts[0].At }

// Position implements Node.
func (i *Ident) Position() Pos { return i.At }

// Option is one 'key' = 'value' pair of a WITH clause or a SET.
type Option struct {
	Key, Value     string
	KeyAt, ValueAt Pos
}

// CreateTable is CREATE [TEMPORARY] TABLE [IF NOT EXISTS] name (columns,
// WATERMARK, PRIMARY KEY) [PARTITIONED BY (cols)] WITH (options).
type CreateTable struct {
	At          Pos
	Temporary   bool
	IfNotExists bool
	Name        *Name
	Columns     []*ColumnDef
	Watermark   *WatermarkDef
	PrimaryKey  *PrimaryKey
	PartitionBy []*Ident
	With        []*Option
	// Like is CREATE TABLE … LIKE other (unsupported; kept to say so).
	Like *Name
}

// ColumnDef is a physical column (Type set), a computed column (Computed
// set: name AS expr) or a metadata column (Metadata set).
type ColumnDef struct {
	At       Pos
	Name     *Ident
	Type     *DataType
	NotNull  bool
	Computed Expr
	// Metadata is the key of `METADATA [FROM 'key'] [VIRTUAL]` (the column
	// name when FROM is absent); MetadataSet says the clause is there.
	Metadata    string
	MetadataSet bool
	Virtual     bool
	Comment     string
	// PrimaryKey is an inline PRIMARY KEY NOT ENFORCED.
	PrimaryKey bool
}

// WatermarkDef is WATERMARK FOR column AS expr.
type WatermarkDef struct {
	At     Pos
	Column *Ident
	Expr   Expr
}

// PrimaryKey is PRIMARY KEY (cols) [NOT ENFORCED].
type PrimaryKey struct {
	At          Pos
	Columns     []*Ident
	NotEnforced bool
}

// CreateView is CREATE [TEMPORARY] VIEW [IF NOT EXISTS] name [(cols)] AS query.
type CreateView struct {
	At          Pos
	Temporary   bool
	IfNotExists bool
	Name        *Name
	Columns     []*Ident
	Query       Query
}

// CreateFunction is CREATE [TEMPORARY] [SYSTEM] FUNCTION name AS 'class'
// [LANGUAGE lang].
type CreateFunction struct {
	At        Pos
	Temporary bool
	System    bool
	Name      *Name
	Class     string
	ClassAt   Pos
	Language  string
}

// Set is SET 'key' = 'value' (Key "" with Value "" for a bare SET), or
// RESET 'key' (Reset true).
type Set struct {
	At    Pos
	Reset bool
	Option
}

// Insert is INSERT INTO|OVERWRITE table [(cols)] query.
type Insert struct {
	At        Pos
	Overwrite bool
	Table     *Name
	Columns   []*Ident
	Query     Query
}

// StatementSet is EXECUTE STATEMENT SET BEGIN insert; … END (or BEGIN
// STATEMENT SET; … END): INSERTs planned together.
type StatementSet struct {
	At      Pos
	Inserts []*Insert
}

// Unsupported is a statement tidemark parses only to refuse it (DROP,
// ALTER, USE, SHOW, …): Keyword names it.
type Unsupported struct {
	At      Pos
	Keyword string
}

func (*CreateTable) stmt()    {}
func (*CreateView) stmt()     {}
func (*CreateFunction) stmt() {}
func (*Set) stmt()            {}
func (*Insert) stmt()         {}
func (*StatementSet) stmt()   {}
func (*Unsupported) stmt()    {}

// Position implements Node.
func (s *CreateTable) Position() Pos    { return s.At }
func (s *CreateView) Position() Pos     { return s.At }
func (s *CreateFunction) Position() Pos { return s.At }
func (s *Set) Position() Pos            { return s.At }
func (s *Insert) Position() Pos         { return s.At }
func (s *StatementSet) Position() Pos   { return s.At }
func (s *Unsupported) Position() Pos    { return s.At }
func (c *ColumnDef) Position() Pos      { return c.At }
func (w *WatermarkDef) Position() Pos   { return w.At }
func (k *PrimaryKey) Position() Pos     { return k.At }

// DataType is a SQL type: Name in upper case (BIGINT, DECIMAL, VARCHAR,
// TIMESTAMP, ROW, ARRAY, MAP, …) with its parameters.
type DataType struct {
	At     Pos
	Name   string
	Params []int // precision, scale, length
	// Fields are a ROW's fields.
	Fields []*FieldDef
	// Elem is an ARRAY's or MULTISET's element; Key and Value a MAP's.
	Elem, Key, Value *DataType
	// LocalTZ is WITH LOCAL TIME ZONE (TIMESTAMP_LTZ).
	LocalTZ bool
	NotNull bool
}

// FieldDef is one field of a ROW type.
type FieldDef struct {
	Name *Ident
	Type *DataType
}

// Position implements Node.
func (t *DataType) Position() Pos { return t.At }

// Query is a query: a Select, a SetOp or a With.
type Query interface {
	Node
	query()
}

// Select is SELECT [DISTINCT] items [FROM from] [WHERE] [GROUP BY]
// [HAVING] [ORDER BY] [LIMIT].
type Select struct {
	At       Pos
	Distinct bool
	Items    []*SelectItem
	From     TableExpr
	Where    Expr
	GroupBy  []Expr
	// GroupingSets is set for GROUP BY GROUPING SETS / ROLLUP / CUBE
	// (refused by the planner, naming it).
	GroupingSets string
	Having       Expr
	OrderBy      []*OrderItem
	Limit        Expr
}

// SelectItem is expr [AS alias], * or qualifier.*.
type SelectItem struct {
	At        Pos
	Expr      Expr
	Alias     *Ident
	Star      bool
	Qualifier *Name
}

// OrderItem is expr [ASC|DESC] [NULLS FIRST|LAST].
type OrderItem struct {
	Expr       Expr
	Desc       bool
	NullsFirst bool
	NullsSet   bool
}

// SetOp is left UNION|INTERSECT|EXCEPT [ALL|DISTINCT] right.
type SetOp struct {
	At    Pos
	Op    string
	All   bool
	Left  Query
	Right Query
}

// With is WITH name AS (query), … body.
type With struct {
	At   Pos
	CTEs []*CTE
	Body Query
}

// CTE is one named query of a WITH clause.
type CTE struct {
	Name    *Ident
	Columns []*Ident
	Query   Query
}

// Values is a VALUES list (refused by the planner).
type Values struct {
	At   Pos
	Rows [][]Expr
}

func (*Select) query() {}
func (*SetOp) query()  {}
func (*With) query()   {}
func (*Values) query() {}

// Position implements Node.
func (q *Select) Position() Pos     { return q.At }
func (q *SetOp) Position() Pos      { return q.At }
func (q *With) Position() Pos       { return q.At }
func (q *Values) Position() Pos     { return q.At }
func (i *SelectItem) Position() Pos { return i.At }

// TableExpr is an item of FROM: a table or view, a subquery, a window
// table function, a join.
type TableExpr interface {
	Node
	tableExpr()
}

// TableRef is a table or view by name, [FOR SYSTEM_TIME AS OF expr] [AS]
// [alias [(cols)]], with OPTIONS hints.
type TableRef struct {
	At            Pos
	Name          *Name
	Alias         *Ident
	ColumnAliases []*Ident
	ForSystemTime Expr
	Options       []*Option
}

// SubqueryRef is [LATERAL] (query) [AS] alias.
type SubqueryRef struct {
	At            Pos
	Query         Query
	Alias         *Ident
	ColumnAliases []*Ident
	Lateral       bool
}

// TableFunc is TABLE(f(args)) [AS] alias: a window table function (TUMBLE,
// HOP, SESSION, CUMULATE) or another table function.
type TableFunc struct {
	At    Pos
	Call  *FuncCall
	Alias *Ident
}

// JoinExpr is left [kind] JOIN right [ON cond | USING (cols)]; Kind is
// INNER, LEFT, RIGHT, FULL, CROSS or "," (a comma in FROM).
type JoinExpr struct {
	At    Pos
	Kind  string
	Left  TableExpr
	Right TableExpr
	On    Expr
	Using []*Ident
}

func (*TableRef) tableExpr()    {}
func (*SubqueryRef) tableExpr() {}
func (*TableFunc) tableExpr()   {}
func (*JoinExpr) tableExpr()    {}

// Position implements Node.
func (t *TableRef) Position() Pos    { return t.At }
func (t *SubqueryRef) Position() Pos { return t.At }
func (t *TableFunc) Position() Pos   { return t.At }
func (t *JoinExpr) Position() Pos    { return t.At }

// Expr is a scalar expression.
type Expr interface {
	Node
	expr()
}

// ColumnRef is a column, qualified or not, or a nested field: a, A.b,
// person.id, A.person.id.
type ColumnRef struct {
	Parts []*Ident
}

// LitKind is a literal's kind.
type LitKind uint8

// The literal kinds.
const (
	LitNumber LitKind = iota
	LitString
	LitBool
	LitNull
)

// Literal is a number, string, TRUE/FALSE or NULL.
type Literal struct {
	At   Pos
	Kind LitKind
	Text string // the number as written, the string's value, TRUE/FALSE
}

// TypedLiteral is TIMESTAMP '…', DATE '…' or TIME '…'.
type TypedLiteral struct {
	At    Pos
	Type  string
	Value string
}

// IntervalLit is INTERVAL '5' SECOND (Value "5", Unit SECOND), INTERVAL
// '1:30' MINUTE TO SECOND, INTERVAL '-2' DAY; Neg is a sign before the
// quote (INTERVAL -'1' DAY).
type IntervalLit struct {
	At     Pos
	Value  string
	Unit   string
	ToUnit string
	Neg    bool
}

// Binary is L op R: OR, AND, = <> < <= > >=, + - * / %, ||.
type Binary struct {
	At   Pos
	Op   string
	L, R Expr
}

// Unary is op X: -, +, NOT.
type Unary struct {
	At Pos
	Op string
	X  Expr
}

// FuncCall is name([DISTINCT] args | *) [FILTER (WHERE cond)] [OVER (…)].
type FuncCall struct {
	At       Pos
	Name     *Name
	Args     []Expr
	Distinct bool
	Star     bool
	Filter   Expr
	Over     *Over
}

// Over is a window of an OVER clause: PARTITION BY, ORDER BY and a frame.
type Over struct {
	At          Pos
	PartitionBy []Expr
	OrderBy     []*OrderItem
	// Frame is the frame as written ("ROWS BETWEEN 10 PRECEDING AND
	// CURRENT ROW"), "" without one.
	Frame   string
	FrameAt Pos
}

// Case is CASE [operand] WHEN … THEN … [ELSE …] END.
type Case struct {
	At      Pos
	Operand Expr
	Whens   []*When
	Else    Expr
}

// When is one WHEN cond THEN result.
type When struct {
	Cond, Result Expr
}

// Cast is CAST(x AS type) or TRY_CAST.
type Cast struct {
	At   Pos
	X    Expr
	Type *DataType
	Try  bool
}

// Between is X [NOT] BETWEEN Lo AND Hi.
type Between struct {
	At        Pos
	X, Lo, Hi Expr
	Not       bool
}

// InList is X [NOT] IN (list) or X [NOT] IN (query).
type InList struct {
	At    Pos
	X     Expr
	List  []Expr
	Query Query
	Not   bool
}

// IsTest is X IS [NOT] NULL|TRUE|FALSE|UNKNOWN|DISTINCT FROM Y.
type IsTest struct {
	At   Pos
	X    Expr
	Not  bool
	What string
	Y    Expr // DISTINCT FROM's other operand
}

// Like is X [NOT] LIKE|SIMILAR TO pattern [ESCAPE c].
type Like struct {
	At      Pos
	Op      string
	X       Expr
	Pattern Expr
	Escape  Expr
	Not     bool
}

// Extract is EXTRACT(unit FROM x).
type Extract struct {
	At   Pos
	Unit string
	X    Expr
}

// TimeUnit is a bare time unit argument: TIMESTAMPADD(HOUR, …).
type TimeUnit struct {
	At   Pos
	Unit string
}

// SubqueryExpr is (query) or EXISTS (query) as an expression.
type SubqueryExpr struct {
	At     Pos
	Query  Query
	Exists bool
}

// TableArg is a window table function's TABLE name (or TABLE (query))
// argument.
type TableArg struct {
	At    Pos
	Name  *Name
	Query Query
	// PartitionBy is SESSION's TABLE t PARTITION BY cols.
	PartitionBy []Expr
}

// Descriptor is DESCRIPTOR(col, …).
type Descriptor struct {
	At      Pos
	Columns []*Ident
}

// NamedArg is name => value in a function call.
type NamedArg struct {
	At    Pos
	Name  *Ident
	Value Expr
}

// Index is X[i]: an array element or a map value.
type Index struct {
	At    Pos
	X     Expr
	Index Expr
}

// Star is * as an argument (COUNT(*) is FuncCall.Star instead).
type Star struct {
	At Pos
}

func (*ColumnRef) expr()    {}
func (*Literal) expr()      {}
func (*TypedLiteral) expr() {}
func (*IntervalLit) expr()  {}
func (*Binary) expr()       {}
func (*Unary) expr()        {}
func (*FuncCall) expr()     {}
func (*Case) expr()         {}
func (*Cast) expr()         {}
func (*Between) expr()      {}
func (*InList) expr()       {}
func (*IsTest) expr()       {}
func (*Like) expr()         {}
func (*Extract) expr()      {}
func (*TimeUnit) expr()     {}
func (*SubqueryExpr) expr() {}
func (*TableArg) expr()     {}
func (*Descriptor) expr()   {}
func (*NamedArg) expr()     {}
func (*Index) expr()        {}
func (*Star) expr()         {}

// Position implements Node.
func (e *ColumnRef) Position() Pos    { return e.Parts[0].At }
func (e *Literal) Position() Pos      { return e.At }
func (e *TypedLiteral) Position() Pos { return e.At }
func (e *IntervalLit) Position() Pos  { return e.At }
func (e *Binary) Position() Pos       { return e.At }
func (e *Unary) Position() Pos        { return e.At }
func (e *FuncCall) Position() Pos     { return e.At }
func (e *Case) Position() Pos         { return e.At }
func (e *Cast) Position() Pos         { return e.At }
func (e *Between) Position() Pos      { return e.At }
func (e *InList) Position() Pos       { return e.At }
func (e *IsTest) Position() Pos       { return e.At }
func (e *Like) Position() Pos         { return e.At }
func (e *Extract) Position() Pos      { return e.At }
func (e *TimeUnit) Position() Pos     { return e.At }
func (e *SubqueryExpr) Position() Pos { return e.At }
func (e *TableArg) Position() Pos     { return e.At }
func (e *Descriptor) Position() Pos   { return e.At }
func (e *NamedArg) Position() Pos     { return e.At }
func (e *Index) Position() Pos        { return e.At }
func (e *Star) Position() Pos         { return e.At }
func (o *Over) Position() Pos         { return o.At }

// String renders a column reference as written, parts joined by dots.
func (e *ColumnRef) String() string {
	parts := make([]string, len(e.Parts))
	for i, p := range e.Parts {
		parts[i] = p.Name
	}
	return strings.Join(parts, ".")
}

// FuncName is the call's function name in upper case (the last part).
func (e *FuncCall) FuncName() string { return strings.ToUpper(e.Name.Last().Name) }
