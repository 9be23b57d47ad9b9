package debezium

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

func testSchema(t testing.TB) *row.Schema {
	s := row.NewSchema()
	for _, f := range []struct {
		n string
		k row.Kind
	}{{"id", row.KindInt}, {"store", row.KindString}, {"amount", row.KindDecimal}, {"note", row.KindString}, {"created_at", row.KindTime},
		{record.FieldOp, row.KindString}, {record.FieldLSN, row.KindInt}, {record.FieldKey, row.KindString}, {record.FieldUnchanged, row.KindString},
		{record.FieldXid, row.KindInt}, {record.FieldTable, row.KindString}, {record.FieldCommitTime, row.KindTime}} {
		if _, err := s.Add(f.n, f.k); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// render writes a decoded row as "field=value …" (nulls left out).
func render(s *row.Schema, r *row.Row) string {
	var b []string
	for _, f := range s.Fields {
		if r.IsNull(f.Index) {
			continue
		}
		v := r.Get(f)
		if f.Name == record.FieldUnchanged {
			var names []string
			for _, g := range s.Fields {
				if record.Unchanged(v.S, g.Index) {
					names = append(names, g.Name)
				}
			}
			b = append(b, f.Name+"="+strings.Join(names, ","))
			continue
		}
		b = append(b, f.Name+"="+v.String())
	}
	return strings.Join(b, " ")
}

func TestDecodeJSON(t *testing.T) {
	s := testSchema(t)
	src := `"source":{"version":"2.7.0.Final","connector":"postgresql","name":"db","ts_ms":1788256800123,"db":"shop","schema":"public","table":"orders","txId":741,"lsn":23806536}`
	row1 := `{"id":7,"store":"s1","amount":"12.50","note":"n","created_at":"2026-09-01T10:00:00Z"}`
	for _, c := range []struct {
		name, in, want, err string
		skip                bool
	}{
		{"create", `{"before":null,"after":` + row1 + `,` + src + `,"op":"c","ts_ms":1788256800200}`,
			"id=7 store=s1 amount=12.50 note=n created_at=2026-09-01T10:00:00Z __op=c __lsn=23806536 __key=7 __xid=741 __table=public.orders __commit_time=2026-09-01T10:00:00.123Z", "", false},
		{"wrapped", `{"schema":{"type":"struct","fields":[]},"payload":{"before":null,"after":` + row1 + `,` + src + `,"op":"u"}}`,
			"id=7 store=s1 amount=12.50 note=n created_at=2026-09-01T10:00:00Z __op=u __lsn=23806536 __key=7 __xid=741 __table=public.orders __commit_time=2026-09-01T10:00:00.123Z", "", false},
		{"read", `{"before":null,"after":` + row1 + `,` + src + `,"op":"r"}`,
			"id=7 store=s1 amount=12.50 note=n created_at=2026-09-01T10:00:00Z __op=r __lsn=0 __key=7 __xid=741 __table=public.orders __commit_time=2026-09-01T10:00:00.123Z", "", false},
		{"delete", `{"before":{"id":7,"store":"","amount":"0","note":null,"created_at":"1970-01-01T00:00:00Z"},"after":null,` + src + `,"op":"d"}`,
			"id=7 store= amount=0 created_at=1970-01-01T00:00:00Z __op=d __lsn=23806536 __key=7 __xid=741 __table=public.orders __commit_time=2026-09-01T10:00:00.123Z", "", false},
		{"unchanged toast", `{"before":null,"after":{"id":7,"store":"s1","amount":"1","note":"__debezium_unavailable_value","created_at":"2026-09-01T10:00:00Z"},` + src + `,"op":"u"}`,
			"id=7 store=s1 amount=1 created_at=2026-09-01T10:00:00Z __op=u __lsn=23806536 __key=7 __unchanged=note __xid=741 __table=public.orders __commit_time=2026-09-01T10:00:00.123Z", "", false},
		{"message", `{"op":"m","source":{"lsn":1},"message":{"prefix":"x"}}`, "", "", true},
		{"truncate", `{"op":"t",` + src + `}`, "", "field op: a truncate event: the table's rows cannot be taken back one by one", false},
		{"no op", `{"after":` + row1 + `}`, "", "field op: not a Debezium change event: no op", false},
		{"unknown op", `{"op":"x","after":` + row1 + `}`, "", `field op: unknown op "x" (want c, u, d or r)`, false},
		{"no key", `{"op":"c","after":{"store":"s"},` + src + `}`, "", "field id: key column id is null or missing in after", false},
		{"no lsn", `{"op":"c","after":` + row1 + `}`, "", "field source.lsn: the c event has no source.lsn, the version of its row", false},
		{"bad amount", `{"op":"c","after":{"id":1,"amount":"x"},` + src + `}`, "", "field after.amount: want decimal, got string \"x\"", false},
		{"not json", `{"op":`, "", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := NewJSON(Config{Fields: format.Fields{Schema: s}, Key: []string{"id"}})
			if err != nil {
				t.Fatal(err)
			}
			r := s.NewRow()
			var a source.Arena
			skip, de := d.Decode([]byte(c.in), r, &a)
			if skip != c.skip {
				t.Fatalf("skip %v", skip)
			}
			switch {
			case c.name == "not json":
				if de == nil || de.Rule != "decode" {
					t.Fatalf("error %v", de)
				}
			case c.err != "":
				if de == nil || de.Error() != c.err {
					t.Fatalf("error %v, want %s", de, c.err)
				}
			case de != nil:
				t.Fatalf("error %v", de)
			case !c.skip:
				if got := render(s, r); got != c.want {
					t.Fatalf("got  %s\nwant %s", got, c.want)
				}
			}
		})
	}
}

// TestCompositeKey: several key columns make a JSON array of their
// texts, as postgres_cdc's __key.
func TestCompositeKey(t *testing.T) {
	s := testSchema(t)
	d, err := NewJSON(Config{Fields: format.Fields{Schema: s}, Key: []string{"store", "id", "region"}})
	if err != nil {
		t.Fatal(err)
	}
	r := s.NewRow()
	var a source.Arena
	if _, de := d.Decode([]byte(`{"op":"c","after":{"id":7,"store":"s\"1","region":"eu"},"source":{"lsn":5}}`), r, &a); de != nil {
		t.Fatal(de)
	}
	f, _ := s.Lookup(record.FieldKey)
	if got := r.Get(f).S; got != `["s\"1","7","eu"]` {
		t.Fatalf("key %s", got)
	}
	if _, err := NewJSON(Config{Fields: format.Fields{Schema: s}}); err == nil || !strings.Contains(err.Error(), "source.key_columns: required") {
		t.Fatalf("no key: %v", err)
	}
}

// FuzzDecodeJSON: no input panics, and a decoded change has a key and a
// version.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"before":null,"after":{"id":7,"store":"s1","amount":"12.50"},"source":{"lsn":1,"txId":2,"ts_ms":3,"schema":"p","table":"o"},"op":"c"}`,
		`{"payload":{"before":{"id":7},"after":null,"source":{"lsn":9},"op":"d"}}`,
		`{"op":"m"}`, `{"op":"r","after":{"id":1}}`, `null`, `[]`,
	} {
		f.Add([]byte(s))
	}
	s := testSchema(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := NewJSON(Config{Fields: format.Fields{Schema: s}, Key: []string{"id"}})
		if err != nil {
			t.Fatal(err)
		}
		r := s.NewRow()
		var a source.Arena
		skip, de := d.Decode(b, r, &a)
		if skip || de != nil {
			return
		}
		k, _ := s.Lookup(record.FieldKey)
		v, _ := s.Lookup(record.FieldLSN)
		if r.IsNull(k.Index) || r.IsNull(v.Index) {
			t.Fatalf("%q: a change without a key or version", b)
		}
	})
}
