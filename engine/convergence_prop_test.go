package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/spec"
	"pgregory.net/rapid"
)

// finalRows is a result sink keeping the final row of every (window, key).
type finalRows struct{ m map[string]string }

func (f *finalRows) Write(_ context.Context, rows []changelog.Row) error {
	for _, r := range rows {
		if !r.IsFinal {
			continue
		}
		k := fmt.Sprintf("%d %s", r.WindowStart, r.Key[0])
		if _, dup := f.m[k]; dup {
			return fmt.Errorf("two final rows for %s", k)
		}
		f.m[k] = fmt.Sprintf("%s %s", r.Values[0], r.Values[1])
	}
	return nil
}
func (f *finalRows) Flush(context.Context) error { return nil }
func (f *finalRows) Close(context.Context) error { return nil }

// TestConvergesUnderReorderingAndRedelivery is the second article's claim
// as a property: any arrival order of a set of payments and refunds, each
// delivered one to three times, gives exactly the final rows of a batch
// group-by over the distinct events (lateness large enough that nothing is
// too late; deduplication by event id).
func TestConvergesUnderReorderingAndRedelivery(t *testing.T) {
	dir := t.TempDir()
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	rapid.Check(t, func(rt *rapid.T) {
		type event struct {
			id, store, kind string
			amount          int
			at              time.Time
		}
		n := rapid.IntRange(1, 40).Draw(rt, "events")
		var events []event
		for i := 0; i < n; i++ {
			events = append(events, event{
				id:     fmt.Sprintf("e%d", i),
				store:  rapid.SampledFrom([]string{"S1", "S2", "S3"}).Draw(rt, "store"),
				kind:   rapid.SampledFrom([]string{"PAYMENT", "PAYMENT", "REFUND"}).Draw(rt, "kind"),
				amount: rapid.IntRange(1, 1000).Draw(rt, "amount"),
				at:     base.Add(time.Duration(rapid.IntRange(0, 119).Draw(rt, "minute")) * time.Minute),
			})
		}
		var deliveries []event
		for _, e := range events {
			for c := rapid.IntRange(1, 3).Draw(rt, "copies"); c > 0; c-- {
				deliveries = append(deliveries, e)
			}
		}
		perm := rapid.Permutation(deliveries).Draw(rt, "order")
		var b strings.Builder
		for i, e := range perm {
			fmt.Fprintf(&b, `{"at":"%s","ts":"%s","event_id":"%s","type":"%s","store":"%s","amount":%d}`+"\n",
				base.Add(time.Duration(i)*time.Second).Format(time.RFC3339), e.at.Format(time.RFC3339), e.id, e.kind, e.store, e.amount)
		}
		in := filepath.Join(dir, "in.jsonl")
		if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
			rt.Fatal(err)
		}
		mode := rapid.SampledFrom([]string{"final", "update", "retract"}).Draw(rt, "mode")
		p := &spec.Pipeline{
			Name:            "net",
			Source:          spec.Source{Type: "file", Path: in, Format: "jsonl", ArrivalTimeField: "at", Schema: spec.FieldTypes{{Name: "amount", Type: "int"}}},
			EventTime:       spec.EventTime{Field: "ts"},
			Dedup:           &spec.Dedup{Key: "event_id", TTL: spec.Duration(48 * time.Hour)},
			Fields:          spec.NamedExprs{{Name: "delta", Expr: `type == "REFUND" ? -amount : amount`}},
			Key:             []string{"store"},
			Window:          spec.Window{Type: "tumbling", Size: spec.Duration(10 * time.Minute)},
			AllowedLateness: spec.Duration(1000 * time.Hour),
			Aggregates:      spec.NamedExprs{{Name: "net", Expr: "sum(delta)"}, {Name: "n", Expr: "count()"}},
			Emit:            spec.Emit{Mode: mode},
			Sinks:           []spec.Sink{{Type: "final"}},
		}
		p.Defaults()
		if err := p.Validate(); err != nil {
			rt.Fatal(err)
		}
		pl, err := plan.Compile(p, nil)
		if err != nil {
			rt.Fatal(err)
		}
		got := &finalRows{m: map[string]string{}}
		reg := DefaultRegistry()
		reg.Results["final"] = func(context.Context, spec.Sink, changelog.Desc, *Env) (sink.Results, error) { return got, nil }
		sum, err := Run(context.Background(), pl, Options{Registry: reg})
		if err != nil {
			rt.Fatal(err)
		}
		if sum.Duplicates != int64(len(deliveries)-len(events)) || sum.Conflicts != 0 {
			rt.Fatalf("duplicates %d, conflicts %d; want %d, 0", sum.Duplicates, sum.Conflicts, len(deliveries)-len(events))
		}
		// The batch group-by over the distinct events.
		type agg struct{ net, n int }
		want := map[string]*agg{}
		for _, e := range events {
			k := fmt.Sprintf("%d %s", e.at.Truncate(10*time.Minute).UnixMilli(), e.store)
			a := want[k]
			if a == nil {
				a = &agg{}
				want[k] = a
			}
			if e.kind == "REFUND" {
				a.net -= e.amount
			} else {
				a.net += e.amount
			}
			a.n++
		}
		if len(got.m) != len(want) {
			rt.Fatalf("%d final rows, batch has %d: %v", len(got.m), len(want), got.m)
		}
		for k, a := range want {
			if g := got.m[k]; g != fmt.Sprintf("%d %d", a.net, a.n) {
				rt.Fatalf("%s: got %q, batch %d %d", k, g, a.net, a.n)
			}
		}
	})
}
