package scaletest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The pipelines of the harness. Each reads one input topic and has a
// stage whose allowed lateness covers every delay of the input (its
// final rows do not depend on how the partitions interleave: they equal
// a single instance's and a batch recomputation's) and one with the
// example's normal lateness (its late events go to a late topic: what
// is counted where depends on the interleaving, but each accepted event
// is counted once). Outputs are topics <name>-<stage> (and -late,
// -late_all, -quarantine, -conflicts) and a PostgreSQL table per full
// stage. {{SOURCE}} is the source's assignment keys.

// retailPipeline is the Online Retail job (examples/online-retail): net
// revenue and lines per country per hour.
const retailPipeline = `name: {{NAME}}
contract: {{DIR}}/retail-contract.yaml
source:
  type: kafka
  brokers: ["{{BROKERS}}"]
  topics: [retail]
  stop_at_end: true
  poll_timeout: 50ms
{{SOURCE}}
event_time:
  field: InvoiceDate
  layout: "2006-01-02 15:04:05"
  timezone: Europe/London
  out_of_orderness: 5m
dedup: {ttl: 24h}
quarantine: {sink: {type: kafka, brokers: ["{{BROKERS}}"], topic: {{NAME}}-quarantine}}
conflicts: {sink: {type: kafka, brokers: ["{{BROKERS}}"], topic: {{NAME}}-conflicts}}
stages:
  - name: hourly
    fields: {net_amount: Quantity * UnitPrice}
    key: [Country]
    window: {type: tumbling, size: 1h, timezone: Europe/London}
    allowed_lateness: 30m
    aggregates: {net_revenue: sum(net_amount), lines: count()}
    emit: {mode: update}
    late: {policy: side_output, sink: {type: kafka, brokers: ["{{BROKERS}}"], topic: {{NAME}}-late}}
    sinks: [{type: kafka, brokers: ["{{BROKERS}}"], topic: {{NAME}}-hourly}]
  - name: hourly_all
    input: source
    fields: {net_amount: Quantity * UnitPrice}
    key: [Country]
    window: {type: tumbling, size: 1h, timezone: Europe/London}
    allowed_lateness: 6h
    aggregates: {net_revenue: sum(net_amount), lines: count()}
    emit: {mode: update}
    late: {policy: side_output, sink: {type: kafka, brokers: ["{{BROKERS}}"], topic: {{NAME}}-late_all}}
    sinks:
      - {type: kafka, brokers: ["{{BROKERS}}"], topic: {{NAME}}-hourly_all}
      - {type: postgres, dsn: "{{DSN}}", table: {{PG}}.hourly_all}
checkpoint: {{CHECKPOINT}}
`

// nexmarkPipeline counts Nexmark bids and their volume per auction per
// 10 s (Flink's TUMBLE over bid.dateTime GROUP BY auction), and sums the
// per-auction rows again per window (a keyed stage reading a keyed
// stage: its input crosses the repartition topic, and so does its
// watermark, from every keyed task).
const nexmarkPipeline = `name: {{NAME}}
source:
  type: kafka
  brokers: ["{{BROKERS}}"]
  topics: [bids]
  stop_at_end: true
  poll_timeout: 50ms
  schema: {auction: int, bidder: int, price: int}
{{SOURCE}}
event_time: {field: date_time, out_of_orderness: 2s}
dedup: {key: event_id, ttl: 10m, ignore: [ingested_at, partition]}
quarantine: {sink: {type: kafka, brokers: ["{{BROKERS}}"], topic: {{NAME}}-quarantine}}
conflicts: {sink: {type: kafka, brokers: ["{{BROKERS}}"], topic: {{NAME}}-conflicts}}
stages:
  - name: auction_bids
    key: [auction]
    window: {type: tumbling, size: 10s}
    allowed_lateness: 1m
    aggregates: {bids: count(), volume: sum(price), top: max(price)}
    emit: {mode: retract}
    late: {policy: side_output, sink: {type: kafka, brokers: ["{{BROKERS}}"], topic: {{NAME}}-late_all}}
    sinks:
      - {type: kafka, brokers: ["{{BROKERS}}"], topic: {{NAME}}-auction_bids}
      - {type: postgres, dsn: "{{DSN}}", table: {{PG}}.auction_bids}
  - name: window_volume
    input: auction_bids
    fields: {w: window_start}
    key: [w]
    window: {type: tumbling, size: 10s}
    allowed_lateness: 1m
    aggregates: {auctions: count(), bids: sum(bids), volume: sum(volume)}
    emit: {mode: update}
    sinks: [{type: kafka, brokers: ["{{BROKERS}}"], topic: {{NAME}}-window_volume}]
  - name: auction_bids_ontime
    input: source
    key: [auction]
    window: {type: tumbling, size: 10s}
    allowed_lateness: 2s
    aggregates: {bids: count(), volume: sum(price)}
    emit: {mode: update}
    late: {policy: side_output, sink: {type: kafka, brokers: ["{{BROKERS}}"], topic: {{NAME}}-late}}
    sinks: [{type: kafka, brokers: ["{{BROKERS}}"], topic: {{NAME}}-auction_bids_ontime}]
checkpoint: {{CHECKPOINT}}
`

// job is one pipeline of an input: its name (also its consumer group and
// the prefix of its topics), file, PostgreSQL schema and topics.
type job struct {
	name, yaml string
	in         *input
	dsn, pg    string
	ckDir      string
}

// groupSource is {{SOURCE}} of a group of instances.
const groupSource = `  assignment: group
  group: {{NAME}}
  repartition_partitions: 4
  session_timeout: ` + sessionTimeout + `
  transaction_timeout: 3s`

// newJob writes the pipeline of in named name: a group's (group true) or
// one instance's with direct assignment. store is "" for a checkpoint
// directory or a PostgreSQL URL for checkpoint.store. vars replace more
// placeholders.
func newJob(t *testing.T, b *broker, in *input, dir, name string, group bool, dsn, pg, store string, vars ...string) *job {
	t.Helper()
	j := &job{name: name, yaml: filepath.Join(dir, name+".yaml"), in: in, dsn: dsn, pg: pg, ckDir: filepath.Join(dir, name+"-ck")}
	src := ""
	if group {
		src = groupSource
	}
	ck := "{dir: " + j.ckDir + ", interval: 300ms}"
	if store != "" {
		ck = `{store: "` + store + `", interval: 300ms}`
	}
	if err := os.WriteFile(filepath.Join(dir, "retail-contract.yaml"), []byte(retailContract), 0o644); err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer(append([]string{"{{SOURCE}}", src, "{{CHECKPOINT}}", ck}, vars...)...)
	y := strings.NewReplacer("{{NAME}}", name, "{{BROKERS}}", b.addr, "{{DIR}}", dir, "{{DSN}}", dsn, "{{PG}}", pg).Replace(r.Replace(in.pipeline))
	if err := os.WriteFile(j.yaml, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	b.createTopics(t, 4, j.topics()...)
	return j
}

// topics are the job's output topics.
func (j *job) topics() []string {
	out := []string{j.name + "-quarantine", j.name + "-conflicts", j.name + "-late", j.name + "-late_all",
		j.name + "-" + j.in.full.stage, j.name + "-" + j.in.normal.stage}
	if d := j.in.downstream; d != nil {
		out = append(out, j.name+"-"+d.stage)
	}
	return out
}
