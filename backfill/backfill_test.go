package backfill

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/spec"
)

// TestApply: every output moves to the version, the job gets its own name,
// checkpoints and consumer group, and the guards hold.
func TestApply(t *testing.T) {
	p, err := spec.Decode("p.yaml", []byte(`name: revenue
source: {type: kafka, brokers: ["k:9092"], topics: [orders], group: g, start: latest}
event_time: {field: ts, max_past: 720h}
quarantine: {sink: {type: jsonl, path: out/q.jsonl}}
conflicts: {sink: {type: kafka, brokers: ["k:9092"], topic: conflicts}}
checkpoint: {dir: out/ck}
stages:
  - name: per-store
    key: [store]
    window: {type: tumbling, size: 1m}
    aggregates: {n: count()}
    contributions: {sink: {type: jsonl, path: out/contrib.jsonl}}
    late: {policy: side_output, sink: {type: jsonl, path: out/late.jsonl}}
    sinks:
      - {type: sqlite, path: out/t.db}
      - {type: postgres, dsn: x, table: a.rev__live, mode: ledger, ledger_table: a.rev_ledger__live}
      - {type: parquet, path: out/rev}
      - {type: iceberg, path: out/warehouse, table: shop.rev__live}
      - {type: iceberg, path: out/warehouse}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(p, "v2"); err != nil {
		t.Fatal(err)
	}
	if p.EventTime.MaxPast == nil || p.EventTime.MaxPastMs() != 0 {
		t.Fatalf("a backfill keeps event_time.max_past %v: it would quarantine the past it replays", p.EventTime.MaxPast)
	}
	st := p.Stages[0]
	got := strings.Join([]string{p.Name, p.Checkpoint.Dir, p.Source.Group, p.Source.Start, boolText(p.Source.StopAtEnd),
		p.Quarantine.Sink.Path, p.Conflicts.Sink.Topic, st.Contributions.Sink.Path, st.Late.Sink.Path,
		st.Sinks[0].Table, st.Sinks[1].Table, st.Sinks[1].LedgerTable, st.Sinks[2].Path, st.Sinks[3].Table, st.Sinks[4].Table}, " ")
	want := "revenue__backfill_v2 out/ck/backfill-v2 g-backfill-v2 earliest true out/q.v2.jsonl conflicts.v2 out/contrib.v2.jsonl out/late.v2.jsonl per_store__v2 a.rev__v2 a.rev_ledger__v2 out/rev.v2 shop.rev__v2 per_store__v2"
	if got != want {
		t.Errorf("Apply:\n got %s\nwant %s", got, want)
	}
	for _, v := range []string{"live", "LIVE", "V2", "2x", "v__2", ""} {
		if err := Check(v); err == nil {
			t.Errorf("Check(%q): no error", v)
		}
	}
	q, _ := spec.Decode("q.yaml", []byte("name: r\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nwindow: {type: tumbling, size: 1m}\naggregates: {n: count()}\nsinks: [{type: sqlite, path: t.db, table: r__v3}]\n"))
	if err := Apply(q, "v3"); err == nil || !strings.Contains(err.Error(), "is the pipeline's own (live) table") {
		t.Errorf("backfill into the pipeline's own table: %v", err)
	}
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
