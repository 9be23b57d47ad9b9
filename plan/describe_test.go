package plan

import (
	"strings"
	"testing"
)

// TestDescribeContributions: explain lists a stage's contributions output
// beside its sinks, for the top-level keys and a stage of a list alike.
func TestDescribeContributions(t *testing.T) {
	for _, y := range []string{
		"name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nkey: [store]\nwindow: {type: tumbling, size: 1m}\naggregates: {n: count()}\n" +
			"sinks: [{type: jsonl, path: out/rows.jsonl}]\ncontributions: {sink: {type: jsonl, path: out/contrib.jsonl}}\n",
		"name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nstages:\n  - name: p\n    key: [store]\n    window: {type: tumbling, size: 1m}\n    aggregates: {n: count()}\n" +
			"    sinks: [{type: jsonl, path: out/rows.jsonl}]\n    contributions: {sink: {type: jsonl, path: out/contrib.jsonl}}\n",
	} {
		pl, err := Compile(parse(t, y), nil)
		if err != nil {
			t.Fatal(err)
		}
		d := Describe(pl)
		if want := "  sink        jsonl out/rows.jsonl\n  contributions jsonl out/contrib.jsonl (every accepted event with its deltas: tidemark explain)\n"; !strings.Contains(d, want) {
			t.Errorf("Describe:\n%s\nwant the lines\n%s", d, want)
		}
	}
}
