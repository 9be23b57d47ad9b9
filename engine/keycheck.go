package engine

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tidemark/tidemark/internal/suggest"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/source"
)

// A misspelt key field (docs/pipeline.md, "key"): when nothing lists the
// source's fields (plan.SourceFields is nil: no contract, no CSV header,
// no source.schema_complete), a key field the source never has would make
// every record fall into one all-null key, and the run would fill the
// result table with it. A group key may be null on purpose in some
// records, but a key field that is null or missing in every record of the
// first batch a fresh run reads stops the run before anything is routed
// (so before any sink writes), naming the field and the record fields
// close to it. A field declared in source.schema, or filled by reference
// data, is trusted.

// keyWatch is a root stage's group-key field that no field list declares.
type keyWatch struct {
	stage, field string
	index        int // in the source schema
}

// initKeyWatch lists the fields checkFirstBatch looks at.
func (rt *runtime) initKeyWatch() {
	p := rt.plan
	if plan.SourceFields(p.Spec, p.Contract) != nil {
		return
	}
	declared := map[string]bool{}
	for _, f := range p.Spec.Source.Schema {
		declared[f.Name] = true
	}
	if r := p.Spec.Reference; r != nil { // filled by the lookup, not the source
		for _, f := range r.Fields {
			declared[f.Name] = true
		}
	}
	for _, st := range p.Stages {
		if st.Input != -1 || st.Desc.Stateless {
			continue
		}
		for _, f := range st.Key {
			if f.Index < st.InputFields && f.Index < p.SourceSchema.Len() && !declared[f.Name] {
				rt.keyWatch = append(rt.keyWatch, keyWatch{stage: st.Name, field: f.Name, index: f.Index})
			}
		}
	}
}

// checkFirstBatch checks the watched key fields in the first batch of a
// fresh run that holds a decoded record (later batches are not looked at).
func (rt *runtime) checkFirstBatch(b *source.Batch) error {
	if len(rt.keyWatch) == 0 || rt.keyChecked {
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
	rt.keyChecked = true
	if rt.events > 0 {
		return nil // resumed from a checkpoint: its first batch was checked
	}
	for _, w := range rt.keyWatch {
		allNull := true
		for i := range b.Meta {
			if b.Meta[i].Err == nil && !b.Rows[i].IsNull(w.index) {
				allNull = false
				break
			}
		}
		if !allNull {
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
			if json.Unmarshal(rt.src.EventJSON(nil, &b.Meta[i]), &obj) != nil {
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
		return fmt.Errorf("stage %s: key field %q is null or missing in all %d records of the first batch read (from %s)%s; nothing was written. A misspelt field? If it really is null in these records, declare it in source.schema",
			w.stage, w.field, valid, b.Meta[first].Pos, hint)
	}
	return nil
}
