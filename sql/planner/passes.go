package planner

import (
	"github.com/tidemark/tidemark/expr"
	"github.com/tidemark/tidemark/spec"
)

// The passes over the planned stages before the pipeline is assembled:
// a join keeps in its state only the columns the stages reading it use,
// and a select stage that only renames a join's columns becomes the
// join's own select (one stage, as a pipeline file would write it).

// fieldsRead returns the input fields a stage reads (nil, true when it
// reads them all: it cannot be known, or the stage has sinks of its own
// rows... not relevant here: a reader's fields).
func fieldsRead(st *spec.Stage) map[string]bool {
	out := map[string]bool{}
	derived := map[string]bool{}
	for _, f := range st.Fields {
		derived[f.Name] = true
	}
	addText := func(text string) {
		p, err := expr.Parse(text)
		if err != nil {
			return
		}
		for _, n := range p.Identifiers() {
			if !derived[n] {
				out[n] = true
			}
		}
	}
	if st.Filter != "" {
		addText(st.Filter)
	}
	for _, f := range st.Fields {
		addText(f.Expr)
	}
	for _, k := range st.Key {
		if !derived[k] {
			out[k] = true
		}
	}
	for _, a := range st.Aggregates {
		_, args, err := expr.ParseCall(a.Expr)
		if err != nil {
			continue
		}
		for _, p := range args {
			for _, n := range p.Identifiers() {
				if !derived[n] {
					out[n] = true
				}
			}
		}
	}
	for _, item := range st.Select {
		if f, _ := spec.SelectItem(item); !derived[f] {
			out[f] = true
		}
	}
	if t := st.TopN; t != nil {
		for _, o := range t.Order {
			if len(o) > 6 && o[:5] == "desc(" && o[len(o)-1] == ')' {
				o = o[5 : len(o)-1]
			}
			addText(o)
		}
		for _, item := range t.Columns {
			if f, _ := spec.SelectItem(item); !derived[f] {
				out[f] = true
			}
		}
	}
	if st.EventTime != nil {
		out[st.EventTime.Field] = true
	}
	return out
}

// pruneJoins drops from each join's select the columns no reader uses,
// and folds a renaming select stage into the join it reads.
func (pl *planner) pruneJoins() {
	readers := map[*stageDef][]*stageDef{}
	joined := map[*stageDef]bool{} // stages a join side reads: all columns kept
	for _, sd := range pl.stages {
		if sd.input != nil {
			readers[sd.input] = append(readers[sd.input], sd)
		}
		for _, in := range sd.joinIn {
			if in != nil {
				joined[in] = true
			}
		}
	}
	var drop = map[*stageDef]bool{}
	into := map[*stageDef]*stageDef{} // a dropped select → the join taking its items
	for _, sd := range pl.stages {
		if sd.kind != stageJoin || len(sd.sinkTables) > 0 || joined[sd] {
			continue
		}
		rs := readers[sd]
		// A select stage that only renames the join's columns, the join's
		// one reader: its items become the join's select.
		if len(rs) == 1 && rs[0].kind == stageSelect && rs[0].st.Filter == "" && len(rs[0].st.Fields) == 0 {
			sel := rs[0]
			exprOf := map[string]string{}
			for _, c := range sd.st.Join.Select {
				exprOf[c.Name] = c.Expr
			}
			var items spec.NamedExprs
			ok := true
			for _, it := range sel.st.Select {
				f, name := spec.SelectItem(it)
				e, found := exprOf[f]
				if !found {
					ok = false
					break
				}
				items = append(items, spec.NamedExpr{Name: name, Expr: e})
			}
			if ok {
				j := *sd.st.Join
				j.Select = items
				sd.st.Join = &j
				sd.st.Sinks = sel.st.Sinks
				sd.sinkTables = sel.sinkTables
				if sel.st.Window.Timezone != "" {
					sd.st.Window.Timezone = sel.st.Window.Timezone
				}
				sd.out = sel.out
				drop[sel] = true
				into[sel] = sd
				continue
			}
		}
		used := map[string]bool{}
		for _, r := range rs {
			for f := range fieldsRead(&r.st) {
				used[f] = true
			}
		}
		var keep spec.NamedExprs
		for _, c := range sd.st.Join.Select {
			if used[c.Name] {
				keep = append(keep, c)
			}
		}
		if len(keep) == 0 && len(sd.st.Join.Select) > 0 {
			keep = sd.st.Join.Select[:1]
		}
		j := *sd.st.Join
		j.Select = keep
		sd.st.Join = &j
	}
	if len(drop) == 0 {
		return
	}
	for _, sd := range pl.stages {
		for i, in := range sd.unionIn {
			if j, ok := into[in]; ok {
				sd.unionIn[i] = j
			}
		}
	}
	var kept []*stageDef
	for _, sd := range pl.stages {
		if !drop[sd] {
			kept = append(kept, sd)
		}
	}
	pl.stages = kept
}
