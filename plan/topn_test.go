package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/spec"
)

const topNHead = "name: p\nsource: {type: nexmark, events: 100}\nevent_time: {field: date_time}\nfilter: event_type == 2\n"

// TestCompileTopN: a Top-N stage compiles to a ranked operator over one
// top_n column whose order is the fields (a desc() and an expression as
// a hidden derived field) and whose columns are the listed fields; its
// rows are keyed by the key and the rank and carry the columns under
// their names; Describe says so. A column the source does not have (the
// columns are among the fields the source decodes), and a Top-N over a
// retracting input, are refused.
func TestCompileTopN(t *testing.T) {
	pl, err := Compile(parse(t, topNHead+"key: [bid.auction]\ntop_n: {n: 3, order: [desc(bid.price), bid.price % 7], columns: [bid.bidder as bidder, date_time], rank: place}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := pl.Stages[0]
	if !s.Operator.Ranked || len(s.Aggs) != 1 || len(s.Operator.Aggs) != 1 {
		t.Fatalf("Ranked %v, %d specs, %d columns: want one ranked top_n", s.Operator.Ranked, len(s.Aggs), len(s.Operator.Aggs))
	}
	sp := s.Aggs[0]
	var order, cols []string
	for i, f := range sp.Order {
		order = append(order, fmt.Sprintf("%s desc=%v", f.Name, sp.Desc[i]))
	}
	for _, f := range sp.Cols {
		cols = append(cols, f.Name)
	}
	if sp.Func != "top_n" || sp.N != 3 || strings.Join(order, ", ") != "bid.price desc=true, __top_n_2 desc=false" || strings.Join(cols, ", ") != "bid.bidder, date_time" {
		t.Errorf("spec %s n=%d order [%s] columns [%s]", sp.Func, sp.N, strings.Join(order, ", "), strings.Join(cols, ", "))
	}
	if len(s.Derived) != 1 || s.Derived[0].Field.Name != "__top_n_2" {
		t.Errorf("derived fields %+v, want __top_n_2", s.Derived)
	}
	var key, vals []string
	for _, c := range s.Desc.Key {
		key = append(key, c.Name+":"+c.Kind.String())
	}
	for _, c := range s.Desc.Values {
		vals = append(vals, c.Name+":"+c.Kind.String())
	}
	if strings.Join(key, " ") != "bid.auction:int place:int" || strings.Join(vals, " ") != "bidder:int date_time:timestamp" || s.Desc.EmitMode != "final" {
		t.Errorf("Desc key [%s] values [%s] mode %s", strings.Join(key, " "), strings.Join(vals, " "), s.Desc.EmitMode)
	}
	if d := Describe(pl); !strings.Contains(d, "stage p: top-n, reads source\n") ||
		!strings.Contains(d, "  top_n       the first 3 rows by desc(bid.price), bid.price % 7; columns bid.bidder as bidder, date_time; rank place\n") {
		t.Errorf("Describe:\n%s", d)
	}
	// Emit modes update and retract over the global window: the top_n
	// keeps each rank's version, the operator ranks in that mode.
	for _, mode := range []string{"update", "retract"} {
		pl, err := Compile(parse(t, topNHead+"key: [bid.auction]\ntop_n: {n: 2, order: [desc(bid.price)], columns: [bid.bidder as bidder]}\nemit: {mode: "+mode+"}\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		s := pl.Stages[0]
		if m, _ := operator.ParseMode(mode); !s.Aggs[0].Versions || s.Operator.Mode != m || s.Desc.EmitMode != mode {
			t.Errorf("mode %s: Versions %v, operator mode %v, Desc %s", mode, s.Aggs[0].Versions, s.Operator.Mode, s.Desc.EmitMode)
		}
		if d := Describe(pl); !strings.Contains(d, "  state       per key: its 2 first rows (top_n) and each rank's version in panes (one per window and key); a record entering them emits the ranks it changed at once\n") {
			t.Errorf("Describe:\n%s", d)
		}
	}
	if pl.Stages[0].Aggs[0].Versions {
		t.Errorf("a final Top-N keeps no versions")
	}
	// Refused when the pipeline is read: an updating Top-N of another
	// window than the global one, and early firings.
	for _, tc := range []struct{ yaml, want string }{
		{"key: [bid.auction]\nwindow: {type: tumbling, size: 10s}\nemit: {mode: update}\ntop_n: {n: 2, order: [bid.price], columns: [bid.bidder]}\n", `emit.mode: "update": a Top-N stage of window tumbling emits its ranks when each window closes (final); emit modes update and retract are for a Top-N over the global window`},
		{"key: [bid.auction]\nemit: {mode: update, early_every: 1s}\ntop_n: {n: 2, order: [bid.price], columns: [bid.bidder]}\n", "emit.early_every: a Top-N stage has no early firings"},
	} {
		if _, err := spec.Parse("p.yaml", []byte(topNHead+tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.yaml, err, tc.want)
		}
	}
	for _, tc := range []struct{ yaml, want string }{
		{"key: [bid.auction]\ntop_n: {n: 2, order: [bid.price], columns: [bid.bidr]}\n", `field "bid.bidr" is not a Nexmark field`},
		{"key: [bid.auction]\nwindow: {type: global}\naggregates: {t: \"top_n(2, bid.price)\"}\n", "aggregates.t: top_n is a stage of its own"},
		{"order_by: {key: bid.auction, version: bid.price}\nkey: [bid.auction]\ntop_n: {n: 2, order: [bid.price], columns: [bid.bidder]}\n", "top_n() cannot take back a row"},
	} {
		_, err := Compile(parse(t, topNHead+tc.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
