package plan

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
)

const unionHead = "name: p\nsource: {type: nexmark, events: 100}\nevent_time: {field: date_time}\nstages:\n" +
	"  - {name: dear, filter: 'event_type == 2 && bid.price > 5000000', select: [bid.auction as auction, bid.price as price]}\n" +
	"  - {name: even, input: source, filter: 'event_type == 2 && bid.auction % 2 == 0', select: [bid.auction as auction, bid.price as price]}\n"

// TestCompileUnion: a union stage takes the description of the stages it
// unites under its own name, and has no node of its own to feed.
func TestCompileUnion(t *testing.T) {
	pl, err := Compile(parse(t, unionHead+"  - {name: picked, union: [dear, even], sinks: [{type: stdout}]}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	u := pl.Stages[2]
	want := changelog.Desc{Stage: "picked", Values: []changelog.Column{{Name: "auction", Kind: row.KindInt}, {Name: "price", Kind: row.KindInt}},
		Timezone: "UTC", EmitMode: "update", Stateless: true}
	if len(u.Union) != 2 || u.Union[0] != 0 || u.Union[1] != 1 {
		t.Errorf("Union = %v, want [0 1]", u.Union)
	}
	if d := u.Desc; d.Stage != want.Stage || len(d.Key) != 0 || len(d.Values) != 2 || d.Values[0] != want.Values[0] || d.Values[1] != want.Values[1] || !d.Stateless || d.EmitMode != pl.Stages[0].Desc.EmitMode {
		t.Errorf("Desc = %+v, want %+v (emit mode of the stages)", d, want)
	}
	if pl.Stages[0].Desc.Stage != "dear" {
		t.Errorf("the united stage's Desc was renamed: %q", pl.Stages[0].Desc.Stage)
	}
	if !strings.Contains(Describe(pl), "stage picked: union, reads dear, even\n  columns     auction, price (every row of dear and even as it is emitted)\n") {
		t.Errorf("Describe:\n%s", Describe(pl))
	}
}

// TestUnionErrors: what a union stage refuses, in validation and when the
// plan compiles.
func TestUnionErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"one stage", unionHead + "  - {name: u, union: [dear]}\n", `stages[2].union: lists 1 stages: a union unites 2 to 64`},
		{"not earlier", unionHead + "  - {name: u, union: [dear, later]}\n  - {name: later, select: [event_type]}\n", `stages[2].union[1]: "later" is not an earlier stage`},
		{"the source", unionHead + "  - {name: u, union: [dear, source]}\n", `stages[2].union[1]: "source" is not an earlier stage`},
		{"twice", unionHead + "  - {name: u, union: [dear, dear]}\n", `stages[2].union[1]: "dear" listed twice`},
		{"a union of a union", unionHead + "  - {name: u, union: [dear, even]}\n  - {name: v, union: [u, dear]}\n", `stages[3].union[0]: "u" is itself a union: list its stages instead`},
		{"stage keys", unionHead + "  - {name: u, union: [dear, even], filter: 'auction > 1'}\n", `stages[2].union: a union stage has only name and sinks`},
		{"emit", unionHead + "  - {name: u, union: [dear, even], emit: {mode: final}}\n", `stages[2].union: a union stage's rows keep their stages' emit mode and late handling`},
		{"read by a stage", unionHead + "  - {name: u, union: [dear, even]}\n  - {name: w, input: u, key: [auction], window: {type: global}, aggregates: {n: count()}}\n", `stages[3].input: "u" is a union stage: its rows go to its sinks only`},
		{"read by a join", unionHead + "  - {name: u, union: [dear, even]}\n  - {name: j, join: {type: regular, ttl: 1s, left: {input: u, as: L}, right: {as: R}, on: ['L.auction = R.bid.auction'], select: {a: L.auction}}}\n", `stages[3].join.left.input: "u" is a union stage`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spec.Parse("p.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant %q", err, tc.want)
			}
		})
	}
	for _, tc := range []struct{ name, stages, want string }{
		{"columns", "  - {name: one, input: source, filter: 'event_type == 2', select: [bid.auction as auction]}\n  - {name: u, union: [dear, one]}\n",
			`u: union: dear and one have different columns: (auction int, price int) and (auction int)`},
		{"kinds", "  - {name: agg, input: source, key: [bid.auction], window: {type: global}, aggregates: {price: max(bid.price)}}\n  - {name: u, union: [dear, agg]}\n",
			`u: union: dear and agg emit different rows: a select stage's and an aggregation's`},
		{"keys", "  - {name: a1, input: source, key: [bid.auction], window: {type: global}, aggregates: {n: count()}}\n  - {name: a2, input: source, key: [bid.bidder], window: {type: global}, aggregates: {n: count()}}\n  - {name: u, union: [a1, a2]}\n",
			`u: union: a1 and a2 have different keys: (bid.auction int) and (bid.bidder int)`},
		{"emit modes", "  - {name: a1, input: source, key: [bid.auction], window: {type: global}, aggregates: {n: count()}}\n  - {name: a2, input: source, key: [bid.auction], window: {type: global}, aggregates: {n: count()}, emit: {mode: final}}\n  - {name: u, union: [a1, a2]}\n",
			`u: union: a1 and a2 have different emit modes: update and final`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(parse(t, unionHead+tc.stages), nil)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v\nwant %s", err, tc.want)
			}
		})
	}
}
