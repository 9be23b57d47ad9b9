package contract

import (
	"os"
	"testing"

	"github.com/tidemark/tidemark/row"
)

// FuzzParse: no input makes Parse panic; a contract Parse accepts passes
// Validate, has its defaults, lists its rule fields, and compiles against
// a schema of its declared fields (plus undeclared rule fields as
// strings) unless a check does not type-check; Check then does not panic
// on an all-null row.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"testdata/order_item_event.yaml", "../examples/online-retail/contract.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(doc()))
	f.Add([]byte(checkContract))
	f.Add([]byte(doc("fields: {id: {type: string, required: true}, ts: !!str timestamp, a: &x int, b: *x}")))
	f.Add([]byte(doc(`rules: [{name: a, check: "amount > 1 / 0"}, {name: b, max_future: 1h, max_violation_rate: .nan}]`)))
	f.Add([]byte(doc("quality: {max_null_rate: {id: .inf}, max_conflicts: 9223372036854775807}")))
	f.Add([]byte("fields: {a: !foo}\n"))
	f.Add([]byte("fields:\n  - a\n"))
	f.Add([]byte("? [a]\n: b\n"))
	f.Add([]byte("%YAML 1.2\n---\nproduct: p\n...\n---\nproduct: q\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a contract that Validate rejects: %v", err)
		}
		if c.EventTime.Format == "" {
			t.Fatal("no event_time.format default")
		}
		names, err := RuleFields(c)
		if err != nil {
			t.Fatalf("RuleFields of a valid contract: %v", err)
		}
		_ = c.MetadataFields()
		s := row.NewSchema()
		for _, fd := range c.Fields {
			k, err := row.ParseKind(fd.Type)
			if err != nil {
				t.Fatalf("valid contract with type %q", fd.Type)
			}
			s.Add(fd.Name, k)
		}
		for _, n := range names {
			if _, ok := s.Lookup(n); !ok {
				s.Add(n, row.KindString)
			}
		}
		ingest, has := s.Lookup(c.IngestTime)
		ch, err := Compile(c, s, ingest, has && c.IngestTime != "")
		if err != nil {
			return // a check over the wrong kinds
		}
		r := s.NewRow()
		ch.Check(r, 0, 0)
		for i := range ch.Len() {
			ch.CheckOne(i, r, 1, -1)
		}
	})
}
