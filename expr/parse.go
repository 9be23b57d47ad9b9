package expr

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/parser/lexer"
)

// Parsed is an expression that parsed: its source and expr-lang syntax tree.
// It is not yet bound to a schema; see Compile.
type Parsed struct {
	src  string
	root ast.Node
}

// Parse parses src with expr-lang's parser. It returns an error, wrapping
// expr-lang's positioned syntax error, when src is not a syntactically valid
// expr-lang expression. A Parsed may still fail to Compile (unknown fields,
// kind mismatches, unsupported constructs).
func Parse(src string) (*Parsed, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("empty expression")
	}
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("syntax error in %q: %w", src, err)
	}
	if tree == nil || tree.Node == nil {
		return nil, fmt.Errorf("syntax error in %q", src)
	}
	return &Parsed{src: src, root: tree.Node}, nil
}

// Source returns the text the expression was parsed from.
func (p *Parsed) Source() string { return p.src }

// Identifiers returns the field names the expression references,
// deduplicated, in order of first use in the source. A member chain a.b.c
// (or a["b"].c) is one dotted name "a.b.c". Function names are not included.
func (p *Parsed) Identifiers() []string {
	type use struct {
		name string
		at   int
	}
	var uses []use
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		switch n := n.(type) {
		case nil:
		case *ast.IdentifierNode:
			uses = append(uses, use{n.Value, n.Location().From})
		case *ast.MemberNode:
			if name, base, ok := memberName(n); ok {
				uses = append(uses, use{name, base.Location().From})
				return
			}
			walk(n.Node)
			walk(n.Property)
		case *ast.CallNode:
			if _, isName := n.Callee.(*ast.IdentifierNode); !isName {
				walk(n.Callee)
			}
			for _, a := range n.Arguments {
				walk(a)
			}
		default:
			for _, c := range children(n) {
				walk(c)
			}
		}
	}
	walk(p.root)
	sort.SliceStable(uses, func(i, j int) bool { return uses[i].at < uses[j].at })
	seen := make(map[string]bool, len(uses))
	out := make([]string, 0, len(uses))
	for _, u := range uses {
		if !seen[u.name] {
			seen[u.name] = true
			out = append(out, u.name)
		}
	}
	return out
}

// children returns the sub-nodes of n in source order (for the node types
// Identifiers does not handle itself).
func children(n ast.Node) []ast.Node {
	switch n := n.(type) {
	case *ast.UnaryNode:
		return []ast.Node{n.Node}
	case *ast.BinaryNode:
		return []ast.Node{n.Left, n.Right}
	case *ast.ChainNode:
		return []ast.Node{n.Node}
	case *ast.MemberNode:
		return []ast.Node{n.Node, n.Property}
	case *ast.SliceNode:
		return []ast.Node{n.Node, n.From, n.To}
	case *ast.BuiltinNode:
		return n.Arguments
	case *ast.PredicateNode:
		return []ast.Node{n.Node}
	case *ast.ConditionalNode:
		return []ast.Node{n.Cond, n.Exp1, n.Exp2}
	case *ast.VariableDeclaratorNode:
		return []ast.Node{n.Value, n.Expr}
	case *ast.SequenceNode:
		return n.Nodes
	case *ast.ArrayNode:
		return n.Nodes
	case *ast.MapNode:
		return n.Pairs
	case *ast.PairNode:
		return []ast.Node{n.Key, n.Value}
	}
	return nil
}

// memberName resolves a chain of identifier and constant-string member
// accesses (a.b.c, a["b"].c) to its dotted name and the chain's base
// identifier. ok is false for anything else (index by a non-string, method,
// optional access).
func memberName(n ast.Node) (name string, base *ast.IdentifierNode, ok bool) {
	switch n := n.(type) {
	case *ast.IdentifierNode:
		return n.Value, n, true
	case *ast.MemberNode:
		if n.Optional || n.Method {
			return "", nil, false
		}
		prop, isStr := n.Property.(*ast.StringNode)
		if !isStr {
			return "", nil, false
		}
		name, base, ok := memberName(n.Node)
		if !ok {
			return "", nil, false
		}
		return name + "." + prop.Value, base, true
	}
	return "", nil, false
}

// byteOffset converts a rune offset in src (expr-lang's locations count
// runes) to a byte offset, clamped to len(src).
func byteOffset(src string, runeOff int) int {
	if runeOff <= 0 {
		return 0
	}
	n := 0
	for i := range src {
		if n == runeOff {
			return i
		}
		n++
	}
	return len(src)
}

// text returns the source text of loc.
func text(src string, loc file.Location) string {
	from, to := byteOffset(src, loc.From), byteOffset(src, loc.To)
	if to < from {
		to = from
	}
	return src[from:to]
}

// ParseCall parses an aggregate call such as "count()", "sum(delta)",
// "sum(Quantity * UnitPrice)", "count_distinct(customer)" or
// "max_by(price, auction)". It returns the lower-cased function name and
// each argument parsed on its own (an argument's Source is its exact text).
//
// It returns an error for anything that is not a single call of a plain
// identifier (a method call, an operator around the call, trailing tokens,
// an empty argument) and for an argument that does not parse.
//
// The call is split with expr-lang's lexer rather than its parser because
// expr-lang treats count/sum/min/max as predicate builtins ("count()" is a
// syntax error there) and records no end position for arguments; a plain
// call (splitPlainCall) is split at its commas without the lexer, to the
// same arguments.
func ParseCall(src string) (name string, args []*Parsed, err error) {
	return parseCall(src, Parse)
}

// ParseCache parses each source text once: its Parse and ParseCall return
// for a text (or an argument's text) parsed before the same *Parsed as
// the first time. A *Parsed is read only — Compile builds its own tree
// from it and Identifiers only walks it — so one serves every use of its
// text, against any schema. For a caller that parses the same texts again
// and again (a plan's aggregates name the same fields and orders:
// nth_by(bidder, 3, desc(price)) beside nth_by(url, 3, desc(price))).
// Errors are not kept: a text that fails is parsed again, and fails the
// same way. The zero value is ready to use; it is not safe for
// concurrent use.
type ParseCache struct {
	m map[string]*Parsed
}

// Parse is the package's Parse, through the cache.
func (c *ParseCache) Parse(src string) (*Parsed, error) {
	if p, ok := c.m[src]; ok {
		return p, nil
	}
	p, err := Parse(src)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*Parsed{}
	}
	c.m[src] = p
	return p, nil
}

// ParseCall is the package's ParseCall, its arguments parsed through the
// cache.
func (c *ParseCache) ParseCall(src string) (name string, args []*Parsed, err error) {
	return parseCall(src, c.Parse)
}

func parseCall(src string, parse func(string) (*Parsed, error)) (name string, args []*Parsed, err error) {
	if name, args, ok := splitPlainCall(src, parse); ok {
		return name, args, nil
	}
	return lexedCall(src, parse)
}

// lexedCall is ParseCall's split with expr-lang's lexer.
func lexedCall(src string, parse func(string) (*Parsed, error)) (name string, args []*Parsed, err error) {
	bad := func(format string, a ...any) (string, []*Parsed, error) {
		return "", nil, fmt.Errorf("aggregate %q: %s", src, fmt.Sprintf(format, a...))
	}
	if !utf8.ValidString(src) {
		return bad("not valid UTF-8")
	}
	toks, lerr := lexer.Lex(file.NewSource(src))
	if lerr != nil {
		return "", nil, fmt.Errorf("aggregate %q: %w", src, lerr)
	}
	if n := len(toks); n > 0 && toks[n-1].Kind == lexer.EOF {
		toks = toks[:n-1]
	}
	if len(toks) < 3 || toks[0].Kind != lexer.Identifier || !toks[1].Is(lexer.Bracket, "(") {
		return bad("want a function call such as sum(amount)")
	}
	if !toks[len(toks)-1].Is(lexer.Bracket, ")") {
		return bad("want a single function call, found more after it")
	}
	name = strings.ToLower(toks[0].Value)
	body := toks[2 : len(toks)-1]
	depth := 0
	start := 0
	var spans [][]lexer.Token
	for i, t := range body {
		if t.Kind == lexer.Bracket {
			switch t.Value {
			case "(", "[", "{":
				depth++
			default:
				depth--
				if depth < 0 {
					return bad("want a single function call, found more after it")
				}
			}
		}
		if depth == 0 && t.Is(lexer.Operator, ",") {
			spans = append(spans, body[start:i])
			start = i + 1
		}
	}
	if depth != 0 {
		return bad("unbalanced brackets")
	}
	if len(body) > 0 {
		spans = append(spans, body[start:])
	}
	for i, sp := range spans {
		if len(sp) == 0 {
			return bad("argument %d is empty", i+1)
		}
		argSrc := text(src, file.Location{From: sp[0].From, To: sp[len(sp)-1].To})
		p, perr := parse(argSrc)
		if perr != nil {
			return "", nil, fmt.Errorf("aggregate %q, argument %d: %w", src, i+1, perr)
		}
		args = append(args, p)
	}
	return name, args, nil
}

// splitPlainCall is ParseCall's way round expr-lang's lexer for a plain
// call — an identifier, "(", arguments of letters, digits, "_", ".",
// spaces, parentheses and the operators * + - % < > = ! split at the
// commas outside parentheses, ")" — whose every argument parses: the
// same name and arguments as the lexer's split (TestPlainCallEqualsLexed),
// at a fraction of its cost (a plan parses every aggregate of every
// stage). Without quotes, comments, brackets or braces no token spans a
// comma or a parenthesis, so the split is the lexer's. ok is false for
// anything else, and for an argument that does not parse: the lexer's
// split then runs and gives its errors.
func splitPlainCall(src string, parse func(string) (*Parsed, error)) (name string, args []*Parsed, ok bool) {
	open := 0
	for open < len(src) && (src[open] == '_' || src[open] >= 'a' && src[open] <= 'z' || src[open] >= 'A' && src[open] <= 'Z' || open > 0 && src[open] >= '0' && src[open] <= '9') {
		open++
	}
	if open == 0 || open >= len(src)-1 || src[open] != '(' || src[len(src)-1] != ')' {
		return "", nil, false
	}
	switch src[:open] {
	case "not", "in", "or", "and", "matches", "contains", "startsWith", "endsWith", "let", "if", "else":
		return "", nil, false // operators to the lexer
	}
	var spans []string
	depth, start := 0, open+1
	body := src[open+1 : len(src)-1]
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return "", nil, false
			}
		case c == ',' && depth == 0:
			spans = append(spans, src[start:open+1+i])
			start = open + 2 + i
		case c == '_' || c == '.' || c == ' ' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
		case c == '*' || c == '+' || c == '-' || c == '%' || c == '<' || c == '>' || c == '=' || c == '!':
		default:
			return "", nil, false
		}
	}
	if depth != 0 {
		return "", nil, false
	}
	if strings.Trim(body, " ") == "" {
		return strings.ToLower(src[:open]), nil, true
	}
	spans = append(spans, src[start:len(src)-1])
	args = make([]*Parsed, 0, len(spans))
	for _, sp := range spans {
		sp = strings.Trim(sp, " ")
		if sp == "" {
			return "", nil, false
		}
		p, err := parse(sp)
		if err != nil {
			return "", nil, false
		}
		args = append(args, p)
	}
	return strings.ToLower(src[:open]), args, true
}
