package spec

import "testing"

// TestSchemaCompleteValidate: source.schema_complete needs a schema to be
// complete, and is not for the generator's fixed schema.
func TestSchemaCompleteValidate(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{pipe("source: {type: file, path: e.jsonl, schema_complete: true}"),
			"x.yaml: source.schema_complete: source.schema is empty: declare every field of the records, with its type"},
		{pipe("source: {type: nexmark, events: 10, schema_complete: true}"),
			"x.yaml: source.schema_complete: a nexmark source has a fixed schema (docs/nexmark.md)"},
	} {
		if _, err := Parse("x.yaml", []byte(tc.src)); err == nil || err.Error() != tc.want {
			t.Errorf("Parse:\n%s\nerror %v\nwant %s", tc.src, err, tc.want)
		}
	}
	p := mustParse(t, pipe("source: {type: file, path: e.jsonl, schema_complete: true, schema: {ts: timestamp, store: string}}"))
	if !p.Source.SchemaComplete || len(p.Source.Schema) != 2 {
		t.Errorf("source = %+v", p.Source)
	}
	if p := mustParse(t, pipe()); p.Source.SchemaComplete {
		t.Error("schema_complete defaults to true")
	}
}

// TestKeepPayloadsZero: docs/pipeline.md says dedup.keep_payloads: 0 keeps
// no payload, but 0 used to become the default 10000; an absent key is the
// default, an explicit 0 is 0.
func TestKeepPayloadsZero(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{pipe("dedup: {key: id, ttl: 1h}"), DefaultKeepPayloads},
		{pipe("dedup: {key: id, ttl: 1h, keep_payloads: }"), DefaultKeepPayloads},
		{pipe("dedup: {key: id, ttl: 1h, keep_payloads: 0}"), 0},
		{pipe("dedup: {key: id, ttl: 1h, keep_payloads: 25}"), 25},
	} {
		p := mustParse(t, tc.src)
		if p.Dedup.KeepPayloads == nil || *p.Dedup.KeepPayloads != tc.want {
			t.Errorf("%s: keep_payloads = %v, want %d", tc.src, p.Dedup.KeepPayloads, tc.want)
		}
	}
	_, err := Parse("x.yaml", []byte(pipe("dedup: {key: id, ttl: 1h, keep_payloads: -1}")))
	if want := "x.yaml: dedup.keep_payloads: must not be negative"; err == nil || err.Error() != want {
		t.Errorf("keep_payloads -1: %v, want %s", err, want)
	}
}
