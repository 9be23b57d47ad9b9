package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// TestMisspeltKeyStopsTheRun (issue 18 item 2): over JSONL with no field
// list, key [stor_id, currency] — a field no record has — stops the run
// before anything is written, naming the field and store_id; declared in
// source.schema, or null in only some records, it runs.
func TestMisspeltKeyStopsTheRun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	for i := range 3000 {
		store := `"store_id":"s1",`
		if i%2 == 0 {
			store = ""
		}
		b.WriteString(`{"paid_at":"2026-09-01T10:00:0` + string(rune('0'+i%10)) + `Z",` + store + `"currency":"KRW","amount":1}` + "\n")
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(key string, schema spec.FieldTypes) (string, error) {
		out := filepath.Join(dir, key+".jsonl")
		p := &spec.Pipeline{
			Name:       "keys",
			Source:     spec.Source{Type: "file", Path: in, Format: "jsonl", Schema: append(spec.FieldTypes{{Name: "amount", Type: "int"}}, schema...)},
			EventTime:  spec.EventTime{Field: "paid_at", OutOfOrderness: spec.Duration(time.Second)},
			Key:        []string{key, "currency"},
			Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
			Aggregates: spec.NamedExprs{{Name: "n", Expr: "count()"}},
			Sinks:      []spec.Sink{{Type: "jsonl", Path: out}},
		}
		p.Defaults()
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		pl, err := plan.Compile(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = engine.Run(context.Background(), pl, engine.Options{BatchSize: 1000})
		data, _ := os.ReadFile(out)
		return string(data), err
	}
	got, err := run("stor_id", nil)
	want := `stage keys: key field "stor_id" is null or missing in all 1000 records of the first batch read (from ` + in + `:1) (did you mean store_id?); nothing was written. A misspelt field? If it really is null in these records, declare it in source.schema`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
	if got != "" {
		t.Fatalf("the sink holds %q", got)
	}
	if got, err := run("stor_id", spec.FieldTypes{{Name: "stor_id", Type: "string"}}); err != nil || !strings.Contains(got, `"stor_id":null`) {
		t.Fatalf("declared in source.schema: %v, %q", err, got)
	}
	if got, err := run("store_id", nil); err != nil || !strings.Contains(got, `"store_id":"s1"`) || !strings.Contains(got, `"store_id":null`) {
		t.Fatalf("a key null in half the records: %v, %q", err, got)
	}
}

// TestMisspeltJoinKeyStopsTheRun (issue 25 item 5): a join key field that
// is null or missing in every record a side's filter keeps in the first
// batch of its input — a misspelt name, over JSONL with no field list —
// stops the run before anything is written, naming the side, the field
// and the record fields close to it, on a join of two views of the
// source and on an input beside it. Before, every row of the side was
// quarantined under join_key and the run exited 0. A key present in the
// records the side keeps (though absent from those of the other view), or
// declared in source.schema, runs.
func TestMisspeltJoinKeyStopsTheRun(t *testing.T) {
	dir := t.TempDir()
	src, other := filepath.Join(dir, "orders.jsonl"), filepath.Join(dir, "refunds.jsonl")
	var b, r strings.Builder
	for i := range 1000 {
		ts := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		if i%10 == 9 {
			// A cancellation: its customer under another name, which
			// only the right view reads.
			fmt.Fprintf(&b, `{"ts":"%s","kind":"cancel","buyer":"c%d","qty":-1}`+"\n", ts, i%7)
			continue
		}
		fmt.Fprintf(&b, `{"ts":"%s","kind":"sale","customer":"c%d","qty":%d}`+"\n", ts, i%7, 1+i%5)
		fmt.Fprintf(&r, `{"ts":"%s","customer":"c%d","refund":1}`+"\n", ts, i%7)
	}
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte(r.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	up := spec.Duration(time.Minute)
	run := func(name string, right spec.JoinSide, on string, inputs bool, schema spec.FieldTypes) (string, *engine.Summary, error) {
		out := filepath.Join(dir, name+".jsonl")
		p := &spec.Pipeline{
			Name:      "joinkeys",
			Source:    spec.Source{Type: "file", Path: src, Format: "jsonl", Schema: append(spec.FieldTypes{{Name: "qty", Type: "int"}}, schema...)},
			EventTime: spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(time.Second)},
			Stages: []spec.Stage{{Name: "pairs", Join: &spec.Join{Type: "interval",
				Left: spec.JoinSide{As: "S", Filter: `kind == "sale"`}, Right: right, On: []string{on},
				Between: &spec.JoinBounds{Lower: spec.Duration(-time.Minute), Upper: &up},
				Select:  spec.NamedExprs{{Name: "qty", Expr: "S.qty"}}},
				Sinks: []spec.Sink{{Type: "jsonl", Path: out}}}},
		}
		if inputs {
			p.Inputs = []spec.Input{{Name: "refunds", Source: spec.Source{Type: "file", Path: other, Format: "jsonl"},
				EventTime: spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(time.Second)}}}
		}
		p.Defaults()
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		pl, err := plan.Compile(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := engine.Run(context.Background(), pl, engine.Options{BatchSize: 1000})
		data, _ := os.ReadFile(out)
		return string(data), sum, err
	}
	cancels := spec.JoinSide{As: "C", Filter: `kind == "cancel"`}
	for _, tc := range []struct {
		name   string
		right  spec.JoinSide
		on     string
		inputs bool
		want   string
	}{
		{"left view", cancels, "S.custmer = C.buyer", false,
			`stage pairs: join key S.custmer is null or missing in all 900 records of the first batch read that the side's filter keeps (from ` + src + `:1) (did you mean customer?); nothing was written. A misspelt field? If it really is null in these records, declare it in source.schema`},
		{"input beside the source", spec.JoinSide{Input: "refunds", As: "R"}, "S.customer = R.custmer", true,
			`stage pairs: join key R.custmer is null or missing in all 900 records of the first batch read (from ` + other + `:1) (did you mean customer?); nothing was written. A misspelt field? If it really is null in these records, declare it in source.schema`},
	} {
		got, _, err := run(tc.name, tc.right, tc.on, tc.inputs, nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %s", tc.name, err, tc.want)
		}
		if got != "" {
			t.Errorf("%s: the sink holds %q", tc.name, got)
		}
	}
	// buyer is absent from the 900 sales, customer from the 100
	// cancellations: each side's key is in every record its filter keeps.
	got, sum, err := run("two views", cancels, "S.customer = C.buyer", false, nil)
	if err != nil || sum.Stages[0].Quarantined != 0 || !strings.Contains(got, `"qty":`) {
		t.Fatalf("two views of the source, keys spelt right: %v, %d quarantined, %d bytes of rows", err, sum.Stages[0].Quarantined, len(got))
	}
	got, sum, err = run("declared", cancels, "S.custmer = C.buyer", false, spec.FieldTypes{{Name: "custmer", Type: "string"}})
	if err != nil || sum.Stages[0].Quarantined != 900 || got != "" {
		t.Fatalf("a misspelt key declared in source.schema (trusted: null on purpose): %v, %d quarantined (want the 900 sales), %d bytes of rows", err, sum.Stages[0].Quarantined, len(got))
	}
}
