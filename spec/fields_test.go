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
