package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/spec"
)

// TestStageRuleCounts: the summary lists the quarantined records of each
// stage by rule, named by stage — a join stage's null join keys
// (join_key), a later stage's failing derived field (expression) — beside
// the pipeline-level rules (timestamp), and each count is the number of
// such records in the input (counted by hand below), at parallelism 1 and
// 3.
func TestStageRuleCounts(t *testing.T) {
	y := `source: {arrival_time_field: at, schema: {amount: int, qty: int}}
event_time: {field: ts}
stages:
  - name: refunds
    join:
      type: interval
      kind: left
      left: {as: p, filter: 'type == "PAY"'}
      right: {as: r, filter: 'type == "REF"'}
      on: ["p.order = r.order"]
      between: {lower: 0s, upper: 10m}
      select: {order: p.order, paid: p.amount, qty: p.qty}
    emit: {mode: retract}
  - name: totals
    input: refunds
    fields: {unit: 'paid / qty'}
    window: {type: tumbling, size: 30m}
    aggregates: {paid: sum(paid), unit: max(unit)}
    emit: {mode: final}
`
	dir := t.TempDir()
	p, err := scenarioSpec(t, y, &datadriven.TestData{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	// 3 payments and 2 refunds without an order (join_key: 5); 2 payments
	// with qty 0 (expression in totals: 2); 1 timestamp without an
	// offset (timestamp: 1); 4 good payments and 2 refunds.
	var b strings.Builder
	at := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	line := func(i int, ts, body string) {
		fmt.Fprintf(&b, `{"at":"%s","ts":"%s",%s}`+"\n", at.Add(time.Duration(i)*time.Minute).Format(time.RFC3339), ts, body)
	}
	ts := func(i int) string { return at.Add(time.Duration(i) * time.Minute).Format(time.RFC3339) }
	i := 0
	for range 3 {
		line(i, ts(i), `"type":"PAY","amount":10,"qty":1`)
		i++
	}
	for range 2 {
		line(i, ts(i), `"type":"REF","amount":1`)
		i++
	}
	for k := range 2 {
		line(i, ts(i), fmt.Sprintf(`"type":"PAY","order":"z%d","amount":10,"qty":0`, k))
		i++
	}
	line(i, "2026-09-01T10:20:00", `"type":"PAY","order":"t","amount":10,"qty":1`)
	i++
	for k := range 4 {
		line(i, ts(i), fmt.Sprintf(`"type":"PAY","order":"o%d","amount":10,"qty":2`, k))
		i++
	}
	for k := range 2 {
		line(i, ts(i), fmt.Sprintf(`"type":"REF","order":"o%d","amount":1`, k))
		i++
	}
	if err := writeScenarioInputs(p, strings.TrimSuffix(b.String(), "\n")); err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Compile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, par := range []int{1, 3} {
		reg := DefaultRegistry()
		reg.Results["capture"] = func(context.Context, spec.Sink, changelog.Desc, *Env) (sink.Results, error) { return nopResults{}, nil }
		reg.Records["capture"] = func(context.Context, spec.Sink, *Env) (sink.Records, error) { return nopRecords{}, nil }
		sum, err := Run(context.Background(), pl, Options{Registry: reg, Parallelism: par})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fmt.Sprint(sum.Rules, sum.Stages[0].Rules, sum.Stages[1].Rules), "[{timestamp 1}] [{join_key 5}] [{expression 2}]"; got != want {
			t.Errorf("parallelism %d: rules %s, want %s", par, got, want)
		}
		if sum.Quarantined != 1 || sum.Stages[0].Quarantined != 5 || sum.Stages[1].Quarantined != 2 {
			t.Errorf("parallelism %d: quarantined %d, %d, %d; want 1, 5, 2", par, sum.Quarantined, sum.Stages[0].Quarantined, sum.Stages[1].Quarantined)
		}
		var text strings.Builder
		sum.WriteText(&text, time.UTC)
		want := "  quarantined                     8  (first: input.jsonl:8: rule timestamp: timestamp has no UTC offset: \"2026-09-01T10:20:00\")\n" +
			"    rule timestamp: 1\n" +
			"    stage refunds, rule join_key: 5\n" +
			"    stage totals, rule expression: 2\n"
		got := strings.ReplaceAll(text.String(), p.Source.Path, "input.jsonl")
		if !strings.Contains(got, want) {
			t.Errorf("parallelism %d: summary\n%s\nwant the lines\n%s", par, got, want)
		}
	}
}

type nopResults struct{}

func (nopResults) Write(context.Context, []changelog.Row) error { return nil }
func (nopResults) Flush(context.Context) error                  { return nil }
func (nopResults) Close(context.Context) error                  { return nil }

type nopRecords struct{}

func (nopRecords) WriteRecord(context.Context, []byte) error { return nil }
func (nopRecords) Flush(context.Context) error               { return nil }
func (nopRecords) Close(context.Context) error               { return nil }
