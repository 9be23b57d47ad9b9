package parser

import "strings"

// query := [WITH ctes] body {UNION|INTERSECT|EXCEPT [ALL|DISTINCT] body}
// [ORDER BY …] [LIMIT n]
func (p *parser) query() Query {
	p.enter()
	defer p.leave()
	if t := p.peek(); isKw(t, "WITH") {
		p.next()
		w := &With{At: t.Pos}
		for {
			c := &CTE{Name: p.ident("a name for the WITH query")}
			if p.atOp("(") {
				c.Columns = p.identList("column")
			}
			p.expectKw("AS", "after the WITH query's name")
			p.expectOp("(", "before the WITH query")
			c.Query = p.query()
			p.expectOp(")", "after the WITH query")
			w.CTEs = append(w.CTEs, c)
			if !p.acceptOp(",") {
				break
			}
		}
		w.Body = p.query()
		return w
	}
	q := p.queryTerm()
	for {
		t := p.peek()
		op := ""
		switch {
		case isKw(t, "UNION"), isKw(t, "INTERSECT"), isKw(t, "EXCEPT"):
			op = strings.ToUpper(t.Text)
		case isKw(t, "MINUS"):
			op = "EXCEPT"
		}
		if op == "" {
			break
		}
		p.next()
		so := &SetOp{At: t.Pos, Op: op, Left: q}
		if p.acceptKw("ALL") {
			so.All = true
		} else {
			p.acceptKw("DISTINCT")
		}
		so.Right = p.queryTerm()
		q = so
	}
	if p.atKw("ORDER") || p.atKw("LIMIT") || p.atKw("FETCH") || p.atKw("OFFSET") {
		sel, ok := q.(*Select)
		if !ok || sel.OrderBy != nil || sel.Limit != nil {
			// ORDER BY after a UNION: kept on a wrapper so the planner can
			// refuse it at its position.
			sel = &Select{At: p.peek().Pos, Items: []*SelectItem{{At: p.peek().Pos, Star: true}}, From: &SubqueryRef{At: q.Position(), Query: q}}
			q = sel
		}
		p.orderLimit(sel)
	}
	return q
}

func (p *parser) queryTerm() Query {
	t := p.peek()
	switch {
	case isKw(t, "SELECT"):
		return p.selectStmt()
	case isKw(t, "VALUES"):
		p.next()
		v := &Values{At: t.Pos}
		for {
			p.expectOp("(", "before a row of VALUES")
			var row []Expr
			for {
				row = append(row, p.expr())
				if !p.acceptOp(",") {
					break
				}
			}
			p.expectOp(")", "after a row of VALUES")
			v.Rows = append(v.Rows, row)
			if !p.acceptOp(",") {
				break
			}
		}
		return v
	case t.Kind == TokOp && t.Text == "(":
		p.next()
		q := p.query()
		p.expectOp(")", "after the query")
		return q
	}
	p.failAt(t.Pos, "expected SELECT, found %s", t.describe())
	return nil
}

func (p *parser) orderLimit(sel *Select) {
	if p.acceptKw("ORDER", "BY") {
		sel.OrderBy = p.orderItems()
	}
	if t := p.peek(); isKw(t, "LIMIT") {
		p.next()
		sel.Limit = p.expr()
		if p.acceptKw("OFFSET") {
			p.expr()
		}
	} else if isKw(t, "FETCH") || isKw(t, "OFFSET") {
		p.failAt(t.Pos, "%s is not supported: a Top-N is ROW_NUMBER() OVER (PARTITION BY … ORDER BY …) with WHERE rn <= N", strings.ToUpper(t.Text))
	}
}

func (p *parser) orderItems() []*OrderItem {
	var out []*OrderItem
	for {
		it := &OrderItem{Expr: p.expr()}
		if p.acceptKw("DESC") {
			it.Desc = true
		} else {
			p.acceptKw("ASC")
		}
		if p.acceptKw("NULLS", "FIRST") {
			it.NullsFirst, it.NullsSet = true, true
		} else if p.acceptKw("NULLS", "LAST") {
			it.NullsSet = true
		}
		out = append(out, it)
		if !p.acceptOp(",") {
			return out
		}
	}
}

func (p *parser) selectStmt() *Select {
	t := p.next() // SELECT
	s := &Select{At: t.Pos}
	if h := p.peek(); h.Kind == TokHint {
		p.failAt(h.Pos, "query hints are not supported (table hints /*+ OPTIONS(…) */ after a table name are)")
	}
	if p.acceptKw("DISTINCT") {
		s.Distinct = true
	} else {
		p.acceptKw("ALL")
	}
	for {
		s.Items = append(s.Items, p.selectItem())
		if !p.acceptOp(",") {
			break
		}
	}
	if p.acceptKw("FROM") {
		s.From = p.tableExpr()
	}
	if p.acceptKw("WHERE") {
		s.Where = p.expr()
	}
	if g := p.peek(); isKw(g, "GROUP") && isKw(p.peekN(1), "BY") {
		p.next()
		p.next()
		for {
			if x := p.peek(); isKw(x, "GROUPING") || isKw(x, "ROLLUP") || isKw(x, "CUBE") {
				s.GroupingSets = strings.ToUpper(x.Text)
				p.next()
				if isKw(p.peek(), "SETS") {
					p.next()
				}
				p.skipParens()
			} else {
				s.GroupBy = append(s.GroupBy, p.expr())
			}
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if p.acceptKw("HAVING") {
		s.Having = p.expr()
	}
	if w := p.peek(); isKw(w, "WINDOW") {
		p.failAt(w.Pos, "a WINDOW clause (named OVER windows) is not supported: write the window in OVER (…) or use a window table function (TUMBLE, HOP, SESSION, CUMULATE)")
	}
	p.orderLimit(s)
	return s
}

func (p *parser) selectItem() *SelectItem {
	t := p.peek()
	if t.Kind == TokOp && t.Text == "*" {
		p.next()
		return &SelectItem{At: t.Pos, Star: true}
	}
	// qualifier.* : a name followed by . *
	if identOK(t) {
		j := 0
		for identOK(p.peekN(j)) && p.peekN(j+1).Kind == TokOp && p.peekN(j+1).Text == "." {
			if n := p.peekN(j + 2); n.Kind == TokOp && n.Text == "*" {
				q := &Name{}
				for k := 0; k <= j; k += 2 {
					x := p.peekN(k)
					q.Parts = append(q.Parts, &Ident{At: x.Pos, Name: x.Text, Quoted: x.Kind == TokQIdent})
				}
				p.i += j + 3
				return &SelectItem{At: t.Pos, Star: true, Qualifier: q}
			}
			j += 2
		}
	}
	it := &SelectItem{At: t.Pos, Expr: p.expr()}
	if p.acceptKw("AS") {
		if s := p.peek(); s.Kind == TokString {
			p.failAt(s.Pos, "an alias is an identifier: write AS %s or AS `%s`, not a string", s.Text, s.Text)
		}
		it.Alias = p.ident("an alias")
	} else if identOK(p.peek()) {
		it.Alias = p.ident("an alias")
	}
	return it
}

// tableExpr := primary { [kind] JOIN primary [ON …|USING (…)] | , primary }
func (p *parser) tableExpr() TableExpr {
	p.enter()
	defer p.leave()
	left := p.tablePrimary()
	for {
		t := p.peek()
		kind := ""
		switch {
		case t.Kind == TokOp && t.Text == ",":
			p.next()
			left = &JoinExpr{At: t.Pos, Kind: ",", Left: left, Right: p.tablePrimary()}
			continue
		case isKw(t, "JOIN"):
			kind = "INNER"
		case isKw(t, "INNER"):
			kind = "INNER"
		case isKw(t, "LEFT"), isKw(t, "RIGHT"), isKw(t, "FULL"):
			kind = strings.ToUpper(t.Text)
		case isKw(t, "CROSS"):
			kind = "CROSS"
		case isKw(t, "NATURAL"):
			p.failAt(t.Pos, "NATURAL JOIN is not supported: write the join condition with ON")
		}
		if kind == "" {
			return left
		}
		if !isKw(t, "JOIN") {
			p.next()
			p.acceptKw("OUTER")
		}
		p.expectKw("JOIN", "after "+kind)
		j := &JoinExpr{At: t.Pos, Kind: kind, Left: left, Right: p.tablePrimary()}
		switch {
		case p.acceptKw("ON"):
			j.On = p.expr()
		case p.atKw("USING"):
			p.next()
			j.Using = p.identList("column")
		case kind != "CROSS":
			p.failAt(p.peek().Pos, "expected ON after the joined table, found %s", p.peek().describe())
		}
		left = j
	}
}

func (p *parser) tablePrimary() TableExpr {
	t := p.peek()
	switch {
	case isKw(t, "LATERAL"):
		p.next()
		if p.atKw("TABLE") {
			p.failAt(t.Pos, "LATERAL TABLE (a table function per row) is not supported")
		}
		sq := p.subqueryRef()
		sq.Lateral = true
		return sq
	case isKw(t, "TABLE"):
		p.next()
		p.expectOp("(", "after TABLE (a table function: TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)))")
		ft := p.peek()
		fn := p.primary()
		call, ok := fn.(*FuncCall)
		if !ok {
			p.failAt(ft.Pos, "expected a table function call inside TABLE(…), such as TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)")
		}
		p.expectOp(")", "after the table function")
		tf := &TableFunc{At: t.Pos, Call: call}
		tf.Alias = p.optAlias()
		return tf
	case isKw(t, "UNNEST"):
		p.failAt(t.Pos, "UNNEST is not supported: tidemark rows have no arrays")
	case isKw(t, "MATCH_RECOGNIZE"):
		p.failAt(t.Pos, "MATCH_RECOGNIZE is not supported")
	case t.Kind == TokOp && t.Text == "(":
		// A subquery or a parenthesized join.
		if n := p.peekN(1); isKw(n, "SELECT") || isKw(n, "WITH") || isKw(n, "VALUES") {
			return p.subqueryRef()
		}
		if p.startsQuery(1) {
			var sq *SubqueryRef
			if p.try(func() { sq = p.subqueryRef() }) {
				return sq
			}
		}
		p.next()
		te := p.tableExpr()
		p.expectOp(")", "after the joined tables")
		return te
	}
	tr := &TableRef{At: t.Pos, Name: p.name("a table or view name")}
	if h := p.peek(); h.Kind == TokHint {
		p.next()
		tr.Options = p.hintOptions(h)
	}
	if p.atKw("FOR") {
		p.next()
		if !p.acceptKw("SYSTEM_TIME", "AS", "OF") {
			p.failAt(p.peek().Pos, "expected SYSTEM_TIME AS OF after FOR (a temporal join: t FOR SYSTEM_TIME AS OF o.ts AS r), found %s", p.peek().describe())
		}
		tr.ForSystemTime = p.additive()
	}
	tr.Alias = p.optAlias()
	if tr.Alias != nil && p.atOp("(") {
		tr.ColumnAliases = p.identList("column")
	}
	if m := p.peek(); isKw(m, "MATCH_RECOGNIZE") {
		p.failAt(m.Pos, "MATCH_RECOGNIZE is not supported")
	}
	return tr
}

// startsQuery reports whether the tokens from n on are parentheses
// opening a query.
func (p *parser) startsQuery(n int) bool {
	for {
		t := p.peekN(n)
		if t.Kind == TokOp && t.Text == "(" {
			n++
			continue
		}
		return isKw(t, "SELECT") || isKw(t, "WITH") || isKw(t, "VALUES")
	}
}

func (p *parser) subqueryRef() *SubqueryRef {
	t := p.expectOp("(", "before the subquery")
	sq := &SubqueryRef{At: t.Pos, Query: p.query()}
	p.expectOp(")", "after the subquery")
	sq.Alias = p.optAlias()
	if sq.Alias != nil && p.atOp("(") {
		sq.ColumnAliases = p.identList("column")
	}
	return sq
}

func (p *parser) optAlias() *Ident {
	if p.acceptKw("AS") {
		return p.ident("an alias")
	}
	if identOK(p.peek()) {
		return p.ident("an alias")
	}
	return nil
}

// hintOptions parses the OPTIONS('k'='v', …) of a table hint.
func (p *parser) hintOptions(h Token) []*Option {
	toks, _, err := tokenize(p.src.File, h.Text, func(string) (string, bool) { return "", false })
	if err != nil {
		p.failAt(h.Pos, "in the hint: %s", plainMessage(err))
	}
	for i := range toks {
		toks[i].Pos = h.Pos
	}
	sub := &parser{src: p.src, toks: toks}
	if !sub.acceptKw("OPTIONS") {
		p.failAt(h.Pos, "unsupported hint /*+%s*/: tidemark reads the table hint OPTIONS('key' = 'value', …)", h.Text)
	}
	opts := sub.options()
	if sub.peek().Kind != TokEOF {
		p.failAt(h.Pos, "one hint per table: OPTIONS('key' = 'value', …)")
	}
	return opts
}
