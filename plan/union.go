package plan

import (
	"fmt"
	"slices"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/spec"
)

// compileUnion compiles a union stage (spec.Stage.Union): its rows are
// the rows of the stages it names, as they emit them, so its description
// is theirs under its own name, and they must describe their rows alike —
// the same key and value columns (names and kinds, in order), the same
// emit mode, and all select stages, all joins or all aggregations of the
// same window kind — for one sink to take every row. It returns nil
// without an error when a united stage failed to compile (that error is
// reported).
func (pl *Plan) compileUnion(st spec.Stage, idx map[string]int) (*Stage, error) {
	var first *Stage
	u := &Stage{Name: st.Name, Sinks: st.Sinks, Late: st.Late}
	for _, n := range st.Union {
		i, ok := idx[n]
		if !ok || i < 0 || i >= len(pl.Stages) {
			return nil, fmt.Errorf("union: %q is not an earlier stage", n)
		}
		up := pl.Stages[i]
		if up == nil {
			return nil, nil
		}
		if len(up.Union) > 0 {
			return nil, fmt.Errorf("union: %s is itself a union: list its stages instead", n)
		}
		u.Union = append(u.Union, i)
		u.Retracting = u.Retracting || up.Retracting
		if first == nil {
			first = up
			continue
		}
		if err := sameRows(&first.Desc, &up.Desc, first.Join != nil, up.Join != nil); err != nil {
			return nil, fmt.Errorf("union: %s and %s %w", first.Name, up.Name, err)
		}
	}
	u.Input = u.Union[0]
	u.Schema = first.Schema
	u.InputFields = first.InputFields
	u.Loc = first.Loc
	u.Desc = first.Desc
	u.Desc.Key = slices.Clone(first.Desc.Key)
	u.Desc.Values = slices.Clone(first.Desc.Values)
	u.Desc.Stage = st.Name
	return u, nil
}

// sameRows reports how two stages' rows differ, as "…: reason" after
// their names, or nil when one sink can take both.
func sameRows(a, b *changelog.Desc, aJoin, bJoin bool) error {
	kind := func(d *changelog.Desc, join bool) string {
		switch {
		case join:
			return "a join"
		case d.Stateless:
			return "a select stage"
		case d.Session:
			return "an aggregation of session windows"
		}
		return "an aggregation"
	}
	cols := func(cs []changelog.Column) string {
		s := ""
		for i, c := range cs {
			if i > 0 {
				s += ", "
			}
			s += c.Name + " " + c.Kind.String()
		}
		return "(" + s + ")"
	}
	switch {
	case kind(a, aJoin) != kind(b, bJoin):
		return fmt.Errorf("emit different rows: %s's and %s's", kind(a, aJoin), kind(b, bJoin))
	case !slices.Equal(a.Key, b.Key):
		return fmt.Errorf("have different keys: %s and %s", cols(a.Key), cols(b.Key))
	case !slices.Equal(a.Values, b.Values):
		return fmt.Errorf("have different columns: %s and %s", cols(a.Values), cols(b.Values))
	case a.EmitMode != b.EmitMode:
		return fmt.Errorf("have different emit modes: %s and %s", a.EmitMode, b.EmitMode)
	case a.Timezone != b.Timezone:
		return fmt.Errorf("render times in different zones: %s and %s", a.Timezone, b.Timezone)
	}
	return nil
}
