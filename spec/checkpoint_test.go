package spec

import (
	"strings"
	"testing"
)

// TestCheckpointStore: checkpoint.store takes a postgres:// or
// postgresql:// URL in place of dir in a group pipeline, refuses dir
// beside it, a direct-assignment pipeline and any other form, and its
// messages never repeat the URL (it may hold a password).
func TestCheckpointStore(t *testing.T) {
	t.Setenv("CK_PASSWORD", "s3cret")
	group := `source: {type: kafka, brokers: ["k:1"], topics: [t], assignment: group, group: g}`
	kafkaSink := `sinks: [{type: kafka, brokers: "k:1", topic: out}]`
	for _, ck := range []string{
		"checkpoint: {store: \"postgres://app:${CK_PASSWORD}@db.internal:5432/ck?sslmode=require\"}",
		"checkpoint: {store: \"postgresql://app@db.internal/ck\", interval: 1s}",
		"checkpoint: {store: \"POSTGRES://db/ck\"}",
	} {
		p := mustParse(t, pipe(group, kafkaSink, ck))
		if p.Checkpoint.Store == "" || p.Checkpoint.Dir != "" || p.Checkpoint.Retain != 3 {
			t.Errorf("%s: checkpoint = %+v", ck, *p.Checkpoint)
		}
	}
	if p := mustParse(t, pipe(group, kafkaSink, "checkpoint: {store: \"postgres://app:${CK_PASSWORD}@db/ck\"}")); p.Checkpoint.Store != "postgres://app:s3cret@db/ck" {
		t.Errorf("store = %q, want the variable expanded", p.Checkpoint.Store)
	}
	const want = "want a PostgreSQL URL, postgres://… or postgresql://… (or leave store out to keep the checkpoints in checkpoint.dir)"
	for _, tc := range []struct{ src, want string }{
		{pipe(group, kafkaSink, "checkpoint: {dir: ck, store: \"postgres://app:s3cret@db/ck\"}"),
			"checkpoint.store: give dir or store, not both: a pipeline's checkpoints live in one place (dir: a directory, local or mounted by every instance; store: a PostgreSQL URL)"},
		{pipe("checkpoint: {store: \"postgres://app:s3cret@db/ck\"}"),
			"checkpoint.store: needs source.assignment: group: the store holds the checkpoints of a group of instances; one instance keeps them in checkpoint.dir"},
		{pipe(group, kafkaSink, "checkpoint: {store: \"mysql://app:s3cret@db/ck\"}"), `checkpoint.store: scheme "mysql": ` + want},
		{pipe(group, kafkaSink, "checkpoint: {store: \"s3://bucket/ck\"}"), `checkpoint.store: scheme "s3": ` + want},
		{pipe(group, kafkaSink, "checkpoint: {store: \"host=db password=s3cret\"}"), "checkpoint.store: not a URL: " + want},
		{pipe(group, kafkaSink, "checkpoint: {store: \"out/ck\"}"), "checkpoint.store: not a URL: " + want},
		{pipe(group, kafkaSink, "checkpoint: {store: \"postgres://app:s3cr%t@db/ck\"}"),
			"checkpoint.store: the URL does not parse (a password holding @, /, : or % must be percent-encoded): " + want},
		{pipe("checkpoint: {interval: 1s}"), "checkpoint.dir: required: the directory that holds the checkpoints"},
	} {
		_, err := Parse("x.yaml", []byte(tc.src))
		if got := firstLine(err); got != "x.yaml: "+tc.want {
			t.Errorf("%s:\nerror %v\nwant\nx.yaml: %s", tc.src, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error repeats the password: %v", tc.src, err)
		}
	}
}
