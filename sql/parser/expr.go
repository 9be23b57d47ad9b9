package parser

import "strings"

// Expression precedence, lowest first: OR; AND; NOT; comparisons and
// predicates (= <> != < <= > >=, IS, BETWEEN, IN, LIKE, SIMILAR TO); ||;
// + -; * / %; unary - +; primaries with [index].

func (p *parser) expr() Expr {
	p.enter()
	defer p.leave()
	return p.or()
}

func (p *parser) or() Expr {
	l := p.and()
	for {
		t := p.peek()
		if !isKw(t, "OR") {
			return l
		}
		p.next()
		l = &Binary{At: t.Pos, Op: "OR", L: l, R: p.and()}
	}
}

func (p *parser) and() Expr {
	l := p.not()
	for {
		t := p.peek()
		if !isKw(t, "AND") {
			return l
		}
		p.next()
		l = &Binary{At: t.Pos, Op: "AND", L: l, R: p.not()}
	}
}

func (p *parser) not() Expr {
	if t := p.peek(); isKw(t, "NOT") {
		p.next()
		p.enter()
		defer p.leave()
		return &Unary{At: t.Pos, Op: "NOT", X: p.not()}
	}
	return p.predicate()
}

func (p *parser) predicate() Expr {
	l := p.concat()
	for {
		t := p.peek()
		if t.Kind == TokOp {
			switch t.Text {
			case "=", "<>", "!=", "<", "<=", ">", ">=":
				p.next()
				op := t.Text
				if op == "!=" {
					op = "<>"
				}
				l = &Binary{At: t.Pos, Op: op, L: l, R: p.concat()}
				continue
			}
			return l
		}
		not := false
		if isKw(t, "NOT") {
			n := p.peekN(1)
			if !(isKw(n, "BETWEEN") || isKw(n, "IN") || isKw(n, "LIKE") || isKw(n, "SIMILAR")) {
				return l
			}
			p.next()
			not = true
			t = p.peek()
		}
		switch {
		case isKw(t, "IS"):
			p.next()
			is := &IsTest{At: t.Pos, X: l, Not: p.acceptKw("NOT")}
			w := p.peek()
			switch {
			case isKw(w, "NULL"), isKw(w, "TRUE"), isKw(w, "FALSE"), isKw(w, "UNKNOWN"):
				p.next()
				is.What = strings.ToUpper(w.Text)
			case isKw(w, "DISTINCT") && isKw(p.peekN(1), "FROM"):
				p.next()
				p.next()
				is.What = "DISTINCT FROM"
				is.Y = p.concat()
			default:
				p.failAt(w.Pos, "expected NULL, TRUE, FALSE, UNKNOWN or DISTINCT FROM after IS, found %s", w.describe())
			}
			l = is
		case isKw(t, "BETWEEN"):
			p.next()
			if p.acceptKw("SYMMETRIC") {
				p.failAt(t.Pos, "BETWEEN SYMMETRIC is not supported: write x BETWEEN lo AND hi with lo ≤ hi")
			}
			p.acceptKw("ASYMMETRIC")
			b := &Between{At: t.Pos, X: l, Not: not, Lo: p.concat()}
			p.expectKw("AND", "in BETWEEN … AND …")
			b.Hi = p.concat()
			l = b
		case isKw(t, "IN"):
			p.next()
			in := &InList{At: t.Pos, X: l, Not: not}
			p.expectOp("(", "after IN")
			if isKw(p.peek(), "SELECT") || isKw(p.peek(), "WITH") {
				in.Query = p.query()
			} else {
				for {
					in.List = append(in.List, p.expr())
					if !p.acceptOp(",") {
						break
					}
				}
			}
			p.expectOp(")", "after the IN list")
			l = in
		case isKw(t, "LIKE"), isKw(t, "SIMILAR"):
			p.next()
			op := "LIKE"
			if isKw(t, "SIMILAR") {
				p.expectKw("TO", "after SIMILAR")
				op = "SIMILAR TO"
			}
			lk := &Like{At: t.Pos, Op: op, X: l, Not: not, Pattern: p.concat()}
			if p.acceptKw("ESCAPE") {
				lk.Escape = p.concat()
			}
			l = lk
		default:
			return l
		}
	}
}

func (p *parser) concat() Expr {
	l := p.additive()
	for p.atOp("||") {
		t := p.next()
		l = &Binary{At: t.Pos, Op: "||", L: l, R: p.additive()}
	}
	return l
}

func (p *parser) additive() Expr {
	l := p.multiplicative()
	for {
		t := p.peek()
		if t.Kind != TokOp || t.Text != "+" && t.Text != "-" {
			return l
		}
		p.next()
		l = &Binary{At: t.Pos, Op: t.Text, L: l, R: p.multiplicative()}
	}
}

func (p *parser) multiplicative() Expr {
	l := p.unary()
	for {
		t := p.peek()
		if t.Kind != TokOp || t.Text != "*" && t.Text != "/" && t.Text != "%" {
			return l
		}
		p.next()
		l = &Binary{At: t.Pos, Op: t.Text, L: l, R: p.unary()}
	}
}

func (p *parser) unary() Expr {
	t := p.peek()
	if t.Kind == TokOp && (t.Text == "-" || t.Text == "+") {
		p.next()
		p.enter()
		defer p.leave()
		x := p.unary()
		if lit, ok := x.(*Literal); ok && lit.Kind == LitNumber && t.Text == "-" && !strings.HasPrefix(lit.Text, "-") {
			// -5 is one literal (so that the smallest BIGINT can be written).
			return &Literal{At: t.Pos, Kind: LitNumber, Text: "-" + lit.Text}
		}
		return &Unary{At: t.Pos, Op: t.Text, X: x}
	}
	x := p.primary()
	for p.atOp("[") {
		b := p.next()
		ix := &Index{At: b.Pos, X: x, Index: p.expr()}
		p.expectOp("]", "after the index")
		x = ix
	}
	return x
}

// timeUnits are the units of INTERVAL, EXTRACT and TIMESTAMPADD.
var timeUnits = map[string]bool{
	"YEAR": true, "QUARTER": true, "MONTH": true, "WEEK": true, "DAY": true, "HOUR": true,
	"MINUTE": true, "SECOND": true, "MILLISECOND": true, "MICROSECOND": true, "NANOSECOND": true,
	"DOW": true, "DOY": true, "EPOCH": true, "DECADE": true, "CENTURY": true, "MILLENNIUM": true,
	"ISODOW": true, "ISOYEAR": true, "SQL_TSI_SECOND": true,
}

// unitFuncs take a time unit as their first argument.
var unitFuncs = map[string]bool{"TIMESTAMPADD": true, "TIMESTAMPDIFF": true, "TIMESTAMP_DIFF": true}

// niladic are functions written without parentheses.
var niladic = map[string]bool{
	"CURRENT_TIMESTAMP": true, "CURRENT_DATE": true, "CURRENT_TIME": true,
	"LOCALTIMESTAMP": true, "LOCALTIME": true, "CURRENT_ROW_TIMESTAMP": true,
}

func (p *parser) primary() Expr {
	t := p.peek()
	switch t.Kind {
	case TokNumber:
		p.next()
		return &Literal{At: t.Pos, Kind: LitNumber, Text: t.Text}
	case TokString:
		p.next()
		return &Literal{At: t.Pos, Kind: LitString, Text: t.Text}
	case TokOp:
		switch t.Text {
		case "(":
			if p.startsQuery(1) {
				var sq *SubqueryExpr
				if p.try(func() {
					p.next()
					q := p.query()
					p.expectOp(")", "after the subquery")
					sq = &SubqueryExpr{At: t.Pos, Query: q}
				}) {
					return sq
				}
			}
			p.next()
			e := p.expr()
			if p.atOp(",") {
				p.failAt(p.peek().Pos, "a row value (a, b, …) is not supported here")
			}
			p.expectOp(")", "to close the parenthesis opened at "+t.Pos.String())
			return e
		case "*":
			p.failAt(t.Pos, "* is not an expression here: write COUNT(*), or SELECT * alone")
		}
		p.failAt(t.Pos, "expected an expression, found %s", t.describe())
	case TokQIdent:
		return p.columnOrCall()
	case TokHint:
		p.failAt(t.Pos, "a hint /*+ … */ is not allowed inside an expression")
	case TokEOF:
		p.failAt(t.Pos, "expected an expression, found the end of the script")
	case TokIdent:
	default:
		p.failAt(t.Pos, "expected an expression, found %s", t.describe())
	}
	kw := strings.ToUpper(t.Text)
	switch kw {
	case "NULL":
		p.next()
		return &Literal{At: t.Pos, Kind: LitNull, Text: "NULL"}
	case "TRUE", "FALSE":
		p.next()
		return &Literal{At: t.Pos, Kind: LitBool, Text: kw}
	case "TIMESTAMP", "DATE", "TIME", "TIMESTAMP_LTZ":
		if p.peekN(1).Kind == TokString {
			p.next()
			v := p.next()
			return &TypedLiteral{At: t.Pos, Type: kw, Value: v.Text}
		}
	case "INTERVAL":
		return p.interval()
	case "CASE":
		return p.caseExpr()
	case "CAST", "TRY_CAST":
		p.next()
		p.expectOp("(", "after "+kw)
		c := &Cast{At: t.Pos, X: p.expr(), Try: kw == "TRY_CAST"}
		p.expectKw("AS", "in "+kw+"(x AS type)")
		c.Type = p.dataType()
		p.expectOp(")", "after the type of "+kw)
		return c
	case "EXTRACT":
		if isOpTok(p.peekN(1), "(") {
			p.next()
			p.next()
			u := p.next()
			unit := strings.ToUpper(u.Text)
			if u.Kind != TokIdent || !timeUnits[unit] {
				p.failAt(u.Pos, "expected a time unit (YEAR, MONTH, DAY, HOUR, MINUTE, SECOND, …) in EXTRACT, found %s", u.describe())
			}
			p.expectKw("FROM", "in EXTRACT(unit FROM x)")
			e := &Extract{At: t.Pos, Unit: unit, X: p.expr()}
			p.expectOp(")", "after EXTRACT")
			return e
		}
	case "EXISTS":
		p.next()
		p.expectOp("(", "after EXISTS")
		q := p.query()
		p.expectOp(")", "after the EXISTS subquery")
		return &SubqueryExpr{At: t.Pos, Query: q, Exists: true}
	case "TABLE":
		p.next()
		ta := &TableArg{At: t.Pos}
		if p.atOp("(") {
			p.next()
			ta.Query = p.query()
			p.expectOp(")", "after the TABLE subquery")
		} else {
			ta.Name = p.name("a table name")
		}
		if p.acceptKw("PARTITION", "BY") {
			// One column, or several in parentheses: PARTITION BY (a, b).
			if p.acceptOp("(") {
				for {
					ta.PartitionBy = append(ta.PartitionBy, p.concat())
					if !p.acceptOp(",") {
						break
					}
				}
				p.expectOp(")", "after the PARTITION BY columns")
			} else {
				ta.PartitionBy = append(ta.PartitionBy, p.concat())
			}
		}
		return ta
	case "DESCRIPTOR":
		if isOpTok(p.peekN(1), "(") {
			p.next()
			d := &Descriptor{At: t.Pos}
			d.Columns = p.identList("column")
			return d
		}
	}
	if (kw == "LEFT" || kw == "RIGHT") && isOpTok(p.peekN(1), "(") {
		p.next()
		return p.call(&Name{Parts: []*Ident{{At: t.Pos, Name: t.Text}}})
	}
	if reserved[kw] {
		p.failAt(t.Pos, "expected an expression, found the reserved word %s (quote it as `%s` to use it as a name)", kw, t.Text)
	}
	if niladic[kw] && !isOpTok(p.peekN(1), "(") {
		p.next()
		return &FuncCall{At: t.Pos, Name: &Name{Parts: []*Ident{{At: t.Pos, Name: t.Text}}}}
	}
	return p.columnOrCall()
}

func isOpTok(t Token, op string) bool { return t.Kind == TokOp && t.Text == op }

// columnOrCall reads a.b.c, or a function call name(…).
func (p *parser) columnOrCall() Expr {
	first := p.ident("a column or function name")
	parts := []*Ident{first}
	for p.atOp(".") {
		n := p.peekN(1)
		if n.Kind != TokIdent && n.Kind != TokQIdent {
			break
		}
		p.next()
		// After a dot any word is a field name (`A.value` needs no quotes).
		x := p.next()
		parts = append(parts, &Ident{At: x.Pos, Name: x.Text, Quoted: x.Kind == TokQIdent})
	}
	if !p.atOp("(") {
		return &ColumnRef{Parts: parts}
	}
	return p.call(&Name{Parts: parts})
}

func (p *parser) call(name *Name) *FuncCall {
	open := p.next()
	c := &FuncCall{At: name.Position(), Name: name}
	fname := c.FuncName()
	switch {
	case p.acceptOp(")"):
	case p.atOp("*") && isOpTok(p.peekN(1), ")"):
		p.next()
		p.next()
		c.Star = true
	default:
		if p.acceptKw("DISTINCT") {
			c.Distinct = true
		} else {
			p.acceptKw("ALL")
		}
		for i := 0; ; i++ {
			if i == 0 && unitFuncs[fname] {
				u := p.peek()
				if u.Kind == TokIdent && timeUnits[strings.ToUpper(u.Text)] && (isOpTok(p.peekN(1), ",") || isOpTok(p.peekN(1), ")")) {
					p.next()
					c.Args = append(c.Args, &TimeUnit{At: u.Pos, Unit: strings.ToUpper(u.Text)})
					if p.acceptOp(",") {
						continue
					}
					break
				}
			}
			if n := p.peek(); identOK(n) && isOpTok(p.peekN(1), "=>") {
				p.next()
				p.next()
				c.Args = append(c.Args, &NamedArg{At: n.Pos, Name: &Ident{At: n.Pos, Name: n.Text, Quoted: n.Kind == TokQIdent}, Value: p.expr()})
			} else {
				c.Args = append(c.Args, p.expr())
			}
			if !p.acceptOp(",") {
				break
			}
		}
		p.expectOp(")", "to close the call of "+name.String()+" opened at "+open.Pos.String())
	}
	if f := p.peek(); isKw(f, "FILTER") {
		p.next()
		p.expectOp("(", "after FILTER")
		p.expectKw("WHERE", "in FILTER (WHERE …)")
		c.Filter = p.expr()
		p.expectOp(")", "after FILTER (WHERE …)")
	}
	if p.atKw("WITHIN") {
		p.failAt(p.peek().Pos, "WITHIN GROUP is not supported")
	}
	if o := p.peek(); isKw(o, "OVER") {
		p.next()
		c.Over = p.over(o.Pos)
	}
	return c
}

// over := ( [PARTITION BY …] [ORDER BY …] [frame] )
func (p *parser) over(at Pos) *Over {
	if identOK(p.peek()) {
		p.failAt(p.peek().Pos, "a named window (OVER w) is not supported: write OVER (PARTITION BY … ORDER BY …)")
	}
	p.expectOp("(", "after OVER")
	o := &Over{At: at}
	if p.acceptKw("PARTITION", "BY") {
		for {
			o.PartitionBy = append(o.PartitionBy, p.expr())
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if p.acceptKw("ORDER", "BY") {
		o.OrderBy = p.orderItems()
	}
	if t := p.peek(); isKw(t, "ROWS") || isKw(t, "RANGE") {
		o.FrameAt = t.Pos
		var words []string
		depth := 0
		for {
			x := p.peek()
			if x.Kind == TokEOF {
				p.failAt(at, "OVER ( opened here is not closed")
			}
			if isOpTok(x, "(") {
				depth++
			}
			if isOpTok(x, ")") {
				if depth == 0 {
					break
				}
				depth--
			}
			words = append(words, x.Text)
			p.next()
		}
		o.Frame = strings.Join(words, " ")
	}
	p.expectOp(")", "to close OVER (")
	return o
}

// interval := INTERVAL [-|+] 'value' unit [TO unit] | INTERVAL n unit
func (p *parser) interval() Expr {
	t := p.next()
	iv := &IntervalLit{At: t.Pos}
	if s := p.peek(); isOpTok(s, "-") || isOpTok(s, "+") {
		p.next()
		iv.Neg = s.Text == "-"
	}
	v := p.peek()
	switch v.Kind {
	case TokString, TokNumber:
		p.next()
		iv.Value = v.Text
	default:
		p.failAt(v.Pos, "expected the interval's value, as in INTERVAL '5' SECOND, found %s", v.describe())
	}
	u := p.peek()
	unit := strings.ToUpper(u.Text)
	if u.Kind != TokIdent || !timeUnits[strings.TrimSuffix(unit, "S")] && !timeUnits[unit] {
		p.failAt(u.Pos, "expected the interval's unit (SECOND, MINUTE, HOUR, DAY, MONTH, YEAR …) after its value, found %s", u.describe())
	}
	p.next()
	iv.Unit = unit
	if p.atOp("(") {
		p.skipParens() // SECOND(3): the precision
	}
	if p.acceptKw("TO") {
		u2 := p.next()
		iv.ToUnit = strings.ToUpper(u2.Text)
		if u2.Kind != TokIdent || !timeUnits[iv.ToUnit] {
			p.failAt(u2.Pos, "expected a unit after TO, found %s", u2.describe())
		}
		if p.atOp("(") {
			p.skipParens()
		}
	}
	return iv
}

func (p *parser) caseExpr() Expr {
	t := p.next()
	c := &Case{At: t.Pos}
	if !p.atKw("WHEN") {
		c.Operand = p.expr()
	}
	for p.acceptKw("WHEN") {
		w := &When{Cond: p.expr()}
		p.expectKw("THEN", "after CASE … WHEN condition")
		w.Result = p.expr()
		c.Whens = append(c.Whens, w)
	}
	if len(c.Whens) == 0 {
		p.failAt(p.peek().Pos, "expected WHEN in the CASE opened at %s, found %s", t.Pos, p.peek().describe())
	}
	if p.acceptKw("ELSE") {
		c.Else = p.expr()
	}
	p.expectKw("END", "to close the CASE opened at "+t.Pos.String())
	return c
}
