package plan

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
)

func parse(t *testing.T, y string) *spec.Pipeline {
	t.Helper()
	p, err := spec.Parse("p.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const head = "name: p\nsource: {type: file, path: e.jsonl, schema: {amount: decimal, qty: int}}\nevent_time: {field: ts}\nwindow: {type: tumbling, size: 1m}\n"

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // each must appear; the error count must match
	}{
		{"unknown key of a downstream stage", "name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nstages:\n  - {name: a, key: [store], window: {type: tumbling, size: 1m}, aggregates: {n: count()}, emit: {mode: retract}}\n  - {name: b, key: [stor], window: {type: tumbling, size: 1m}, aggregates: {m: max(n)}}\n",
			[]string{`b: key: "stor" is not a field (did you mean store?)`}},
		{"knock-on errors are not repeated", head + "fields: {delta: -amout}\nkey: [delta]\naggregates: {total: sum(delta)}\n",
			[]string{`p: fields.delta: unary - needs a number, not string at column 1 of "-amout" (amout not declared in source.schema, so read as string)`}},
		{"sum of a string", head + "aggregates: {total: sum(name)}\n",
			[]string{`p: aggregates.total: sum(name) needs an int or decimal argument, name is string (name not declared in source.schema, so read as string)`}},
		{"filter uses a derived field", head + "filter: 'big'\nfields: {big: amount > 10}\naggregates: {n: count()}\n",
			[]string{`p: filter: uses derived field "big"; the filter runs before fields are derived and may use input fields only`}},
		{"filter not bool", head + "filter: amount\naggregates: {n: count()}\n",
			[]string{`p: filter: "amount" is decimal, not bool`}},
		{"unknown aggregate", head + "aggregates: {m: median(amount)}\n",
			[]string{`p: aggregates.m: unknown aggregate median() (want count, sum, avg, min, max, count_distinct, arg_max, arg_min, first_by, last_by or nth_by)`}},
		{"two arguments", head + "aggregates: {m: 'sum(amount, qty)'}\n",
			[]string{`p: aggregates.m: sum() takes one argument, got 2`}},
		{"derived name clashes with an input field", head + "fields: {ts: qty * 2}\naggregates: {n: count()}\n",
			[]string{`p: fields.ts: already a field of the input; choose another name`}},
		{"downstream of an upsert stream", "name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nstages:\n  - {name: a, window: {type: tumbling, size: 1m}, aggregates: {n: count()}}\n  - {name: b, window: {type: tumbling, size: 1m}, aggregates: {m: max(n)}}\n",
			[]string{`b: input a emits mode update (an upsert stream without update_before); a stage reading it needs emit.mode retract or final upstream`}},
		{"a stage reading a stage that failed to compile", "name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nstages:\n  - {name: a, window: {type: tumbling, size: 1m}, aggregates: {n: count()}}\n  - {name: b, window: {type: tumbling, size: 1m}, aggregates: {m: max(n)}, emit: {mode: retract}}\n  - {name: c, window: {type: tumbling, size: 1m}, aggregates: {k: sum(m)}}\n",
			[]string{`b: input a emits mode update (an upsert stream without update_before); a stage reading it needs emit.mode retract or final upstream`}},
		{"a stage reading a stage with an unknown field", "name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nstages:\n  - {name: a, window: {type: tumbling, size: 1m}, aggregates: {n: count()}, emit: {mode: retract}}\n  - {name: b, key: [stor], window: {type: tumbling, size: 1m}, aggregates: {m: max(n)}, emit: {mode: retract}}\n  - {name: c, window: {type: tumbling, size: 1m}, aggregates: {k: sum(m)}}\n  - {name: d, input: a, key: [nn], window: {type: tumbling, size: 1m}, aggregates: {k: sum(n)}}\n",
			[]string{`b: key: "stor" is not a field`, `d: key: "nn" is not a field`}},
		{"a stage reading a stage that failed to parse", "name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nstages:\n  - {name: a, window: {type: tumbling, size: 1m}, aggregates: {n: count()}, emit: {mode: retract}}\n  - {name: b, window: {type: tumbling, size: 1m}, aggregates: {m: 'max(('}, emit: {mode: retract}}\n  - {name: c, window: {type: tumbling, size: 1m}, aggregates: {k: sum(m)}}\n",
			[]string{`b: aggregates.m: `}},
		{"ledger of a max", head + "dedup: {key: id, ttl: 1h}\naggregates: {n: count(), top: max(amount), m: count(qty)}\nsinks: [{type: postgres, dsn: x, mode: ledger}]\n",
			[]string{`p: sinks[0].mode: ledger keeps additive aggregates, sum(x) and count(); top is max(x)`,
				`sinks[0].mode: ledger keeps additive aggregates, sum(x) and count(); m is count(x)`}},
		{"ledger downstream", "name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\ndedup: {key: id, ttl: 1h}\nstages:\n  - {name: a, window: {type: tumbling, size: 1m}, aggregates: {n: count()}, emit: {mode: retract}}\n  - {name: b, window: {type: tumbling, size: 1m}, aggregates: {m: sum(n)}, sinks: [{type: postgres, dsn: x, mode: ledger}]}\n",
			[]string{`b: sinks[0].mode: ledger reads source events; this stage reads another stage's changelog`}},
		{"a stage reading a join that failed to compile", joinHead + "  - {name: j, join: {type: interval, left: {as: L}, right: {input: r, as: R}, on: ['L.id = R.k'], between: {upper: 1m}, select: {a: L.id, b: R.id}}}\n  - {name: s, input: j, key: [a], window: {type: tumbling, size: 1m}, aggregates: {n: count(), x: sum(b)}}\n",
			[]string{`j: join.on[0]: L.id is int and R.k is string: the fields of an equality key must have the same type (declare them alike in source.schema)`}},
		{"select over order_by", "name: p\nsource: {type: file, path: e.jsonl, schema: {v: int}}\nevent_time: {field: ts}\norder_by: {key: id, version: v}\nselect: [id, v]\n",
			[]string{`p: select: with order_by a newer version of an entity retracts its previous row; a select stage's rows have no key to take back: read the source without order_by, or with a windowed stage`}},
		{"select over a retract stage", "name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nstages:\n  - {name: a, key: [k], window: {type: tumbling, size: 1m}, aggregates: {n: count()}, emit: {mode: retract}}\n  - {name: b, input: a, select: [k, n]}\n",
			[]string{`b: select: input a (emit mode retract) takes back rows it emitted (update_before); a select stage's rows have no key to take back: set a's emit.mode to final, or read a with a windowed stage`}},
		{"select over a left join", joinHead + "  - {name: j, join: {type: interval, kind: left, left: {as: L}, right: {input: r, as: R}, on: ['L.k = R.k'], between: {upper: 1m}, select: {a: L.id, b: R.id}}, emit: {mode: retract}}\n  - {name: s, input: j, select: [a, b]}\n",
			[]string{`s: select: input j (join type interval, kind left, emit mode retract) takes back rows it emitted (update_before, delete); a select stage's rows have no key to take back: set j's emit.mode to final, or read j with a windowed stage`}},
		{"select over a temporal join", joinHead + "  - {name: j, join: {type: temporal, left: {as: L}, right: {input: r, as: R}, on: ['L.k = R.k'], select: {a: L.id, b: R.id}}, emit: {mode: update}}\n  - {name: s, input: j, select: [a, b]}\n",
			[]string{`s: select: input j (join type temporal, kind inner, emit mode update) takes back rows it emitted (update_before, delete)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(parse(t, tc.yaml), nil)
			if err == nil {
				t.Fatal("no error")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.want) {
				t.Errorf("%d errors, want %d:\n%s", len(lines), len(tc.want), err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%s\nlacks\n%s", err, w)
				}
			}
		})
	}
}

// joinHead is a pipeline with an input r beside the source, before its
// stages.
const joinHead = "name: p\nsource: {type: file, path: e.jsonl, schema: {id: int}}\nevent_time: {field: ts}\ninputs:\n  - {name: r, source: {type: file, path: r.jsonl, schema: {id: int}}, event_time: {field: ts}}\nstages:\n"

// TestSelectOverJoin: a select stage reads a join that never takes a row
// back (an inner interval join in mode update, any join in mode final);
// one that does is refused (TestCompileErrors).
func TestSelectOverJoin(t *testing.T) {
	for _, j := range []string{
		"{type: interval, left: {as: L}, right: {input: r, as: R}, on: ['L.k = R.k'], between: {upper: 1m}, select: {a: L.id, b: R.id}}, emit: {mode: update}",
		"{type: interval, kind: full, left: {as: L}, right: {input: r, as: R}, on: ['L.k = R.k'], between: {upper: 1m}, select: {a: L.id, b: R.id}}, emit: {mode: final}",
		"{type: temporal, kind: left, left: {as: L}, right: {input: r, as: R}, on: ['L.k = R.k'], select: {a: L.id, b: R.id}}, emit: {mode: final}",
	} {
		p, err := Compile(parse(t, joinHead+"  - {name: j, join: "+j+"}\n  - {name: s, input: j, select: [a, b]}\n"), nil)
		if err != nil {
			t.Errorf("%s: %v", j, err)
			continue
		}
		if st := p.Stages[1]; !st.Desc.Stateless || st.Retracting {
			t.Errorf("%s: the select stage is stateless %v, retracting %v", j, st.Desc.Stateless, st.Retracting)
		}
	}
}

// TestCompileLayout: only referenced source fields are decoded, typed by the
// schema (strings otherwise); derived fields and hidden aggregate arguments
// follow the input fields in the stage schema.
func TestCompileLayout(t *testing.T) {
	p := parse(t, head+"filter: kind == \"PAY\"\nfields: {net: amount * qty}\nkey: [store]\naggregates: {total: sum(net), avg_qty: avg(qty * 2), n: count()}\n")
	pl, err := Compile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range pl.SourceSchema.Fields {
		got = append(got, f.Name+":"+f.Kind.String())
	}
	if strings.Join(got, " ") != "ts:timestamp kind:string amount:decimal qty:int store:string" {
		t.Fatalf("source fields %v", got)
	}
	st := pl.Stages[0]
	got = got[:0]
	for _, f := range st.Schema.Fields[st.InputFields:] {
		got = append(got, f.Name+":"+f.Kind.String())
	}
	if strings.Join(got, " ") != "net:decimal __avg_qty:int" {
		t.Fatalf("derived fields %v", got)
	}
	var out []string
	for _, c := range st.Desc.Values {
		out = append(out, c.Name+":"+c.Kind.String())
	}
	if strings.Join(out, " ") != "total:decimal avg_qty:decimal n:int" || st.Desc.Key[0].Kind != row.KindString {
		t.Fatalf("output columns %v key %v", out, st.Desc.Key)
	}
}
