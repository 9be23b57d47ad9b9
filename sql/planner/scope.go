package planner

import (
	"errors"
	"sort"
	"strings"

	"github.com/tidemark/tidemark/internal/suggest"
	"github.com/tidemark/tidemark/sql/parser"
)

// val is a resolved scalar: expr-lang text over its producer's fields,
// with its type. field is set when the value is exactly one producer
// field; win names a window column of a window table function not yet
// planned (window_start, window_end, window_time), whose text is unknown
// until its aggregation or join is.
type val struct {
	text  string
	t     typ
	field string
	win   string
	// rowtime marks the producer's event time (a time attribute);
	// proctime a processing-time attribute (PROCTIME()).
	rowtime  bool
	proctime bool
	// hasOff says the value is the relation's event time plus off ms (an
	// aggregation's window_end is its rows' time + 1 ms): a join can
	// bound on it.
	hasOff bool
	off    int64
}

// compound reports whether text needs parentheses inside another
// expression.
func (v val) compound() bool { return v.field == "" && !isSimpleText(v.text) }

// paren returns v's text, in parentheses when compound.
//
//go:noinline
func (v val) paren() string {
	if v.compound() {
		return "(" + v.text + ")"
	}
	return v.text
}

func isSimpleText(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == '"' {
		// one string literal
		return strings.Count(s, `"`)-strings.Count(s, `\"`) == 2 && s[len(s)-1] == '"'
	}
	for _, c := range s {
		if !(c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// col is one column of a relation: its qualifier (the table's name or
// alias), name and value; a ROW column has fields (nested columns) and no
// value of its own.
type col struct {
	qual   string
	name   string
	v      val
	fields []*col
	// hidden columns are not in SELECT * (a window TVF's window_time is).
	hidden bool
}

// prodKind is where a relation's rows come from.
type prodKind uint8

const (
	prodSource prodKind = iota // the pipeline's source (input "source")
	prodInput                  // an input beside the source (inputs[])
	prodStage                  // a planned stage's rows
)

// producer is a relation's origin: its fields are what the relation's
// column texts name.
type producer struct {
	kind  prodKind
	name  string // "source", the input's name, the stage's name
	table *table // for source and input
	stage *stageDef
}

// rel is a relation during planning: columns over a producer, with the
// conditions not yet applied (conjuncts over the producer's fields) and a
// window table function not yet planned.
type rel struct {
	prod   *producer
	cols   []*col
	filter []string
	win    *windowTVF
	at     parser.Pos
}

// clone copies a relation's column list and filter (the columns
// themselves are shared: they do not change).
func (r *rel) clone() *rel {
	c := *r
	c.cols = append([]*col(nil), r.cols...)
	c.filter = append([]string(nil), r.filter...)
	return &c
}

// visible lists the columns of SELECT *.
func (r *rel) visible(qual string) []*col {
	var out []*col
	for _, c := range r.cols {
		if !c.hidden && (qual == "" || c.qual == qual) {
			out = append(out, c)
		}
	}
	return out
}

// resolve finds the column a reference names: qual.name, name, or a
// nested field name.field (of a ROW column), qual.name.field. Errors name
// the reference and the columns close to it.
func (pl *planner) resolve(r *rel, ref *parser.ColumnRef) (*col, error) {
	return pl.lookup(r, ref, true)
}

// errNoColumn is lookup's error when it is not asked to explain.
var errNoColumn = errors.New("no such column")

// has reports whether ref resolves in r (without the cost of an error's
// hints: a join asks it of both sides for every reference).
func (pl *planner) has(r *rel, ref *parser.ColumnRef) bool {
	_, err := pl.lookup(r, ref, false)
	return err == nil
}

// lookup is resolve; with explain false its errors are errNoColumn.
func (pl *planner) lookup(r *rel, ref *parser.ColumnRef, explain bool) (*col, error) {
	parts := ref.Parts
	// Candidates: a qualifier first (the longest that matches), then a
	// column, then nested fields.
	var base *col
	rest := parts
	if len(parts) > 1 {
		var matches []*col
		for _, c := range r.cols {
			if c.qual == parts[0].Name && c.name == parts[1].Name {
				matches = append(matches, c)
			}
		}
		if len(matches) == 1 {
			base, rest = matches[0], parts[2:]
		} else if len(matches) > 1 {
			return nil, pl.colErr(explain, parts[1].At, "column %s.%s is ambiguous", parts[0].Name, parts[1].Name)
		}
	}
	if base == nil {
		var matches []*col
		for _, c := range r.cols {
			if c.name == parts[0].Name {
				matches = append(matches, c)
			}
		}
		switch len(matches) {
		case 0:
			if !explain {
				return nil, errNoColumn
			}
			if len(parts) > 1 && pl.hasQual(r, parts[0].Name) {
				return nil, pl.colErr(explain, parts[1].At, "%s has no column %s%s", parts[0].Name, parts[1].Name, suggest.Hint(parts[1].Name, colNames(r, parts[0].Name)))
			}
			return nil, pl.colErr(explain, parts[0].At, "unknown column %s%s", ref.String(), pl.hint(r, ref))
		case 1:
			base, rest = matches[0], parts[1:]
		default:
			quals := make([]string, len(matches))
			for i, m := range matches {
				quals[i] = m.qual + "." + m.name
			}
			return nil, pl.colErr(explain, parts[0].At, "column %s is ambiguous (%s): qualify it", parts[0].Name, strings.Join(quals, ", "))
		}
	}
	c := base
	for _, p := range rest {
		if c.fields == nil {
			return nil, pl.colErr(explain, p.At, "%s is %s, not a ROW: it has no field %s", c.name, c.v.t, p.Name)
		}
		var next *col
		for _, f := range c.fields {
			if f.name == p.Name {
				next = f
			}
		}
		if next == nil {
			if !explain {
				return nil, errNoColumn
			}
			names := make([]string, len(c.fields))
			for i, f := range c.fields {
				names[i] = f.name
			}
			return nil, pl.colErr(explain, p.At, "%s has no field %s%s", c.name, p.Name, suggest.Hint(p.Name, names))
		}
		c = next
	}
	return c, nil
}

// colErr is lookup's error: errNoColumn unless asked to explain.
func (pl *planner) colErr(explain bool, p parser.Pos, format string, args ...any) error {
	if !explain {
		return errNoColumn
	}
	return pl.errAt(p, format, args...)
}

func (pl *planner) hasQual(r *rel, q string) bool {
	for _, c := range r.cols {
		if c.qual == q {
			return true
		}
	}
	return false
}

func colNames(r *rel, qual string) []string {
	var out []string
	for _, c := range r.cols {
		if qual == "" || c.qual == qual {
			out = append(out, c.name)
		}
	}
	return out
}

// hint suggests columns close to a reference, qualified or not.
func (pl *planner) hint(r *rel, ref *parser.ColumnRef) string {
	name := ref.String()
	var cands []string
	seen := map[string]bool{}
	for _, c := range r.cols {
		for _, s := range []string{c.name, c.qual + "." + c.name} {
			if !seen[s] && c.qual != "" || s == c.name && !seen[s] {
				seen[s] = true
				cands = append(cands, s)
			}
		}
		for _, f := range c.fields {
			s := c.name + "." + f.name
			if !seen[s] {
				seen[s] = true
				cands = append(cands, s)
			}
		}
	}
	sort.Strings(cands)
	return suggest.Hint(name, cands)
}
