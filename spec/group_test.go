package spec

import (
	"strings"
	"testing"
)

// TestValidateGroup: what a pipeline run by a group of instances
// (source.assignment: group) is refused for, naming the key.
func TestValidateGroup(t *testing.T) {
	src := `source: {type: kafka, brokers: ["k:1"], topics: [t], assignment: group, group: g}`
	kafkaSink := `sinks: [{type: kafka, brokers: "k:1", topic: out}]`
	ck := `checkpoint: {dir: ck, interval: 1s}`
	for _, tc := range []struct {
		name string
		src  string
		want []string
	}{
		{"no group", pipe(`source: {type: kafka, brokers: ["k:1"], topics: [t], assignment: group}`, kafkaSink, ck), []string{"source.group: required with assignment: group: the consumer group the instances share"}},
		{"group keys with direct", pipe(`source: {type: kafka, brokers: ["k:1"], topics: [t], repartition_partitions: 4}`), []string{"source.repartition_partitions: only with assignment: group"}},
		{"group keys on a file", pipe(`source: {type: file, path: e.jsonl, session_timeout: 5s}`), []string{"source.session_timeout: only for a kafka source, not file"}},
		{"no checkpoint", pipe(src, kafkaSink), []string{"checkpoint: required with source.assignment: group: a partition's state moves to its new owner through the checkpoint store"}},
		{"local sinks", pipe(src, ck, `sinks: [{type: jsonl, path: a.jsonl}]`, `late: {policy: side_output, sink: {type: sqlite, path: a.db, table: late}}`), []string{
			"sinks[0]: type jsonl: with source.assignment: group every instance writes the outputs, so they must be kafka topics or postgres tables",
			"late.sink: type sqlite: with source.assignment: group every instance writes the outputs, so they must be kafka topics or postgres tables"}},
		{"transaction timeout", pipe(`source: {type: kafka, brokers: ["k:1"], topics: [t], assignment: group, group: g, transaction_timeout: 5s}`, kafkaSink, `checkpoint: {dir: ck, interval: 10s}`), []string{"source.transaction_timeout: 5s must exceed checkpoint.interval (10s): a transaction stays open from one checkpoint to the next"}},
		{"at least once", pipe(src, ck, `sinks: [{type: kafka, brokers: "k:1", topic: out, delivery: at_least_once}]`), []string{"sinks[0]: delivery at_least_once: a group hands partitions from instance to instance through transactions; its outputs take part in them (leave delivery at its default, exactly_once)"}},
		{"too many partitions", pipe(`source: {type: kafka, brokers: ["k:1"], topics: [t], assignment: group, group: g, repartition_partitions: 200}`, kafkaSink, ck), []string{"source.repartition_partitions: 200 partitions over 128 key groups: each partition owns at least one key group (raise key_groups)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.src))
			want := "x.yaml: " + strings.Join(tc.want, "\n")
			if err == nil || err.Error() != want {
				t.Errorf("Parse:\n%s\nerror:\n%v\nwant:\n%s", tc.src, err, want)
			}
		})
	}
	_, err := Parse("x.yaml", []byte(pipe(`source: {type: kafka, brokers: ["k:1"], topics: [t], assignment: static}`)))
	if want := `x.yaml: [2:66] source.assignment: unknown source.assignment "static" (want direct or group)`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("an unknown assignment: %v, want %s", err, want)
	}
	p, err := Parse("x.yaml", []byte(pipe(src, kafkaSink, ck)))
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Source; s.Assignment != "group" || s.SessionTimeout.D().String() != "10s" || s.TransactionTimeout.D().String() != "30s" {
		t.Fatalf("defaults: %+v", s)
	}
}
