package planner

import (
	"strings"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/sql/parser"
)

// tableFunc plans FROM TABLE(TUMBLE | HOP | SESSION | CUMULATE(TABLE t,
// DESCRIPTOR(ts), intervals…)): t's relation with the window columns
// window_start, window_end and window_time, planned when the rows are
// grouped (or joined) by them.
func (pl *planner) tableFunc(tf *parser.TableFunc, ctes scopeCTE) (*rel, error) {
	c := tf.Call
	name := c.FuncName()
	params := map[string][]string{
		"TUMBLE":   {"DATA", "TIMECOL", "SIZE", "OFFSET"},
		"HOP":      {"DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"},
		"SESSION":  {"DATA", "TIMECOL", "GAP"},
		"CUMULATE": {"DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"},
	}[name]
	if params == nil {
		return nil, pl.errAt(c.At, "unknown table function %s (window table functions: TUMBLE, HOP, SESSION, CUMULATE)%s", c.Name.String(), hintOf(name, []string{"TUMBLE", "HOP", "SESSION", "CUMULATE"}))
	}
	args := map[string]parser.Expr{}
	for i, a := range c.Args {
		if na, ok := a.(*parser.NamedArg); ok {
			k := strings.ToUpper(na.Name.Name)
			found := false
			for _, p := range params {
				found = found || p == k
			}
			if !found {
				return nil, pl.errAt(na.At, "%s has no parameter %s (%s)", name, na.Name.Name, strings.Join(params, ", "))
			}
			args[k] = na.Value
			continue
		}
		if i >= len(params) {
			return nil, pl.errAt(a.Position(), "%s takes at most %d arguments (%s)", name, len(params), strings.Join(params, ", "))
		}
		args[params[i]] = a
	}
	ta, ok := args["DATA"].(*parser.TableArg)
	if !ok {
		at := c.At
		if args["DATA"] != nil {
			at = args["DATA"].Position()
		}
		return nil, pl.errAt(at, "%s's first argument is the table: TABLE t", name)
	}
	var in *rel
	var err error
	if ta.Query != nil {
		in, err = pl.query(ta.Query, ctes)
	} else {
		in, err = pl.tableRef(&parser.TableRef{At: ta.At, Name: ta.Name}, ctes, false)
	}
	if err != nil {
		return nil, err
	}
	if len(ta.PartitionBy) > 0 && name != "SESSION" {
		return nil, pl.errAt(ta.At, "PARTITION BY in the TABLE argument belongs to SESSION")
	}
	desc, ok := args["TIMECOL"].(*parser.Descriptor)
	if !ok || len(desc.Columns) != 1 {
		return nil, pl.errAt(c.At, "%s's second argument is the time column: DESCRIPTOR(ts)", name)
	}
	tc, err := pl.resolve(in, &parser.ColumnRef{Parts: desc.Columns})
	if err != nil {
		return nil, err
	}
	if tc.v.t.kind != row.KindTime {
		return nil, pl.errAt(desc.At, "DESCRIPTOR(%s): the column is %s, not a TIMESTAMP", desc.Columns[0].Name, tc.v.t)
	}
	ms := func(key string, required bool) (int64, error) {
		a, ok := args[key]
		if !ok {
			if required {
				return 0, pl.errAt(c.At, "%s needs its %s (an INTERVAL)", name, strings.ToLower(key))
			}
			return 0, nil
		}
		iv, ok := a.(*parser.IntervalLit)
		if !ok {
			return 0, pl.errAt(a.Position(), "%s's %s is an INTERVAL literal", name, strings.ToLower(key))
		}
		n, err := pl.intervalMs(iv)
		if err != nil {
			return 0, err
		}
		if n <= 0 && key != "OFFSET" {
			return 0, pl.errAt(iv.At, "%s's %s must be positive", name, strings.ToLower(key))
		}
		return n, nil
	}
	w := &windowTVF{at: tf.At, fn: name, time: tc.v, in: in}
	var size, slide, off int64
	switch name {
	case "TUMBLE":
		if size, err = ms("SIZE", true); err != nil {
			return nil, err
		}
		w.w = spec.Window{Type: "tumbling", Size: durationOf(size)}
	case "HOP":
		if slide, err = ms("SLIDE", true); err != nil {
			return nil, err
		}
		if size, err = ms("SIZE", true); err != nil {
			return nil, err
		}
		w.w = spec.Window{Type: "sliding", Size: durationOf(size), Slide: durationOf(slide)}
	case "CUMULATE":
		if slide, err = ms("STEP", true); err != nil {
			return nil, err
		}
		if size, err = ms("SIZE", true); err != nil {
			return nil, err
		}
		w.w = spec.Window{Type: "cumulate", Size: durationOf(size), Step: durationOf(slide)}
	case "SESSION":
		gap, err := ms("GAP", true)
		if err != nil {
			return nil, err
		}
		w.w = spec.Window{Type: "session", Gap: durationOf(gap)}
		for _, pe := range ta.PartitionBy {
			v, err := pl.expr(pe, &ectx{rel: in, where: "PARTITION BY"})
			if err != nil {
				return nil, err
			}
			w.parts = append(w.parts, v)
		}
	}
	if name != "SESSION" {
		if off, err = ms("OFFSET", false); err != nil {
			return nil, err
		}
		w.w.Offset = durationOf(off)
	}
	out := in.clone()
	out.win = w
	for _, n := range []string{"window_start", "window_end", "window_time"} {
		out.cols = append(out.cols, &col{qual: "", name: n, v: val{win: n, t: tTime}, hidden: n == "window_time"})
	}
	if tf.Alias != nil {
		out = requalify(out, tf.Alias.Name)
	}
	return out, nil
}

// procField is the source field the runner fills with each record's
// processing time when a query calls PROCTIME()
// (source.processing_time_field).
const procField = "__proctime"

// proctime is PROCTIME(): the record's processing time, a field the runner
// fills (its arrival time when the source records one — the Nexmark
// generator's delivery time — else the clock), on the pipeline's source.
func (pl *planner) proctime(e *parser.FuncCall, cx *ectx) (val, error) {
	if cx.rel == nil || cx.rel.prod == nil || cx.rel.prod.kind != prodSource {
		return val{}, pl.errAt(e.At, "PROCTIME() is the processing time of the pipeline's source's records: call it in a query (or view) reading that table")
	}
	pl.procTime = true
	return val{text: procField, field: procField, t: typ{row.KindTime, "TIMESTAMP_LTZ(3)"}, proctime: true}, nil
}

// lookupField is the line number (source.ordinal, 1-based) of a lookup
// table's rows, read as their version time in ms since the epoch
// (checkAsOf).
const lookupField = "__line"
