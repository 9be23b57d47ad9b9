package engine

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tidemark/tidemark/expr"
	"github.com/tidemark/tidemark/internal/suggest"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// A misspelt key field (docs/pipeline.md, "key" and "join"): when nothing
// lists an input's fields (plan.SourceFields is nil: no contract, no CSV
// header, no source.schema_complete), a key field the input never has
// would make every record fall into one all-null key, and the run would
// fill the result table with it — or, for a join key, quarantine every
// row of the side under join_key. A group key may be null on purpose in
// some records, but a key field that is null or missing in every record
// of the first batch a fresh run reads of its input (for a join side,
// every record its filter keeps) stops the run before anything is routed
// (so before any sink writes), naming the field and the record fields
// close to it. A field declared in the input's source.schema, or filled
// by reference data, is trusted.

// keyWatch is a group-key field of a root stage, or a join key field of
// a side, that no field list declares.
type keyWatch struct {
	stage, field string
	what         string     // `key field "f"`, or "join key A.f"
	input        int        // the input the field is read from (0: the source)
	index        int        // in the input's schema
	filter       *expr.Expr // a join side's filter (nil: every record)
}

// initKeyWatch lists the fields checkFirstBatch looks at.
func (rt *runtime) initKeyWatch() {
	p := rt.plan
	declared := func(src *spec.Source, c bool) map[string]bool {
		d := map[string]bool{}
		for _, f := range src.Schema {
			d[f.Name] = true
		}
		if o := src.Ordinal; o != nil {
			d[o.Field] = true
		}
		if r := p.Spec.Reference; r != nil && c { // filled by the lookup, not the source
			for _, f := range r.Fields {
				d[f.Name] = true
			}
		}
		return d
	}
	// listed: the input's fields are listed (the plan refuses a field
	// that is not among them).
	listed := make([]bool, p.InputCount())
	decl := make([]map[string]bool, p.InputCount())
	listed[0] = plan.SourceFields(p.Spec, p.Contract) != nil
	decl[0] = declared(&p.Spec.Source, true)
	for i := range p.Spec.Inputs {
		src := p.Spec.Inputs[i].Source
		listed[i+1] = plan.SourceFields(&spec.Pipeline{Source: src}, nil) != nil
		decl[i+1] = declared(&src, false)
	}
	rt.keyChecked = make([]bool, p.InputCount())
	for _, st := range p.Stages {
		if j := st.Join; j != nil {
			for _, sd := range j.Sides {
				if sd.Input < 0 || listed[sd.Input] {
					continue
				}
				for k, f := range sd.Key {
					if sd.KeyExprs[k] != nil || f.Index < 0 || decl[sd.Input][f.Name] {
						continue
					}
					rt.keyWatch = append(rt.keyWatch, keyWatch{stage: st.Name, field: f.Name, what: "join key " + sd.Alias + "." + f.Name,
						input: sd.Input, index: f.Index, filter: sd.Filter})
				}
			}
			continue
		}
		if st.Input != -1 || st.Desc.Stateless || listed[0] {
			continue
		}
		for _, f := range st.Key {
			if f.Index < st.InputFields && f.Index < p.SourceSchema.Len() && !decl[0][f.Name] {
				rt.keyWatch = append(rt.keyWatch, keyWatch{stage: st.Name, field: f.Name, what: fmt.Sprintf("key field %q", f.Name), index: f.Index})
			}
		}
	}
}

// checkFirstBatch checks the watched key fields of input in in its first
// batch of a fresh run that holds a decoded record (later batches are not
// looked at); src is the input's source (its records' JSON for the hint).
func (rt *runtime) checkFirstBatch(b *source.Batch, in int, src source.Source) error {
	if len(rt.keyWatch) == 0 || rt.keyChecked[in] {
		return nil
	}
	first, valid := -1, 0
	for i := range b.Meta {
		if b.Meta[i].Err == nil {
			if first < 0 {
				first = i
			}
			valid++
		}
	}
	if valid == 0 {
		return nil
	}
	rt.keyChecked[in] = true
	if rt.ck != nil && rt.ck.restored > 0 || in == 0 && rt.events > 0 {
		return nil // resumed from a checkpoint: its first batch was checked
	}
	for _, w := range rt.keyWatch {
		if w.input != in {
			continue
		}
		kept, allNull := 0, true
		for i := range b.Meta {
			if b.Meta[i].Err != nil {
				continue
			}
			if w.filter != nil {
				if keep, ok, err := w.filter.EvalBool(&b.Rows[i]); err != nil || !ok || !keep {
					continue
				}
			}
			kept++
			if !b.Rows[i].IsNull(w.index) {
				allNull = false
				break
			}
		}
		if !allNull || kept == 0 {
			continue
		}
		// The names of the fields the first records (up to 100) have.
		seen := map[string]bool{}
		var names []string
		for i, n := first, 0; i < len(b.Meta) && n < 100; i++ {
			if b.Meta[i].Err != nil {
				continue
			}
			n++
			var obj map[string]json.RawMessage
			if json.Unmarshal(src.EventJSON(nil, &b.Meta[i]), &obj) != nil {
				continue
			}
			for k := range obj {
				if !seen[k] {
					seen[k] = true
					names = append(names, k)
				}
			}
		}
		slices.Sort(names)
		hint := suggest.Hint(w.field, names)
		records := fmt.Sprintf("all %d records of the first batch read", kept)
		if w.filter != nil {
			records = fmt.Sprintf("all %d records of the first batch read that the side's filter keeps", kept)
		}
		return &startRefusal{fmt.Errorf("stage %s: %s is null or missing in %s (from %s)%s; nothing was written. A misspelt field? If it really is null in these records, declare it in source.schema",
			w.stage, w.what, records, b.Meta[first].Pos, hint)}
	}
	return nil
}
