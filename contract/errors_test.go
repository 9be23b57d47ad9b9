package contract

import (
	"strings"
	"testing"
)

// TestParseErrors: YAML problems give the line and column, and show the
// line; the first line of each message is exact.
func TestParseErrors(t *testing.T) {
	t.Setenv("TIDEMARK_TEST_UNSET", "")
	for _, tc := range []struct {
		name, src, want string
	}{
		{"unknown key", doc("bogus: 1"), `c.yaml: [7:1] unknown field "bogus"`},
		{"misspelt key", doc("retension: 24h"), `c.yaml: [7:1] unknown field "retension" (did you mean retention?)`},
		{"first unknown key", doc("ownr: x\nrealtme: true\nretension: 24h"), `c.yaml: [7:1] unknown field "ownr" (did you mean owner?)`},
		{"unknown field key", doc("fields: {id: {type: string, requird: true}}"),
			`c.yaml: [4:29] id: unknown key "requird" (want type, required, metadata, cardinality or description)`},
		{"field as a list", doc("fields: {id: [string]}"),
			`c.yaml: [4:14] id: want a type such as decimal, or a mapping {type: decimal, required: true}`},
		{"fields as a list", doc("fields: [id, ts]"), `c.yaml: [4:9] fields: want a mapping of names to declarations`},
		{"required not bool", doc("fields: {id: {required: yes}}"), `c.yaml: [4:25] id.required: want true or false`},
		{"metadata not bool", doc("fields: {id: {metadata: 1}}"), `c.yaml: [4:25] id.metadata: want true or false`},
		{"cardinality not a number", doc("fields: {id: {cardinality: many}}"), `c.yaml: [4:28] id.cardinality: want a whole number of distinct values, 0 or more`},
		{"cardinality negative", doc("fields: {id: {cardinality: -3}}"), `c.yaml: [4:28] id.cardinality: want a whole number of distinct values, 0 or more`},
		{"type not scalar", doc("fields: {id: {type: [a]}}"), `c.yaml: [4:21] id.type: want a type name such as int or decimal`},
		{"description not scalar", doc("fields: {id: {description: {a: b}}}"), `c.yaml: [4:28] id.description: want text`},
		{"bare number duration", doc("max_normal_delay: 30"),
			`c.yaml: [7:19] duration must be a Go duration string such as "90s" or "3m", got 30 (a bare number has no unit)`},
		{"bad duration", doc("rules: [{name: a, max_future: 1 day}]"),
			`c.yaml: [7:31] duration "1 day": want a Go duration string such as "90s", "3m" or "24h"`},
		{"field twice", doc("fields:\n  id: string\n  id: int"), `c.yaml: [6:3] mapping key "id" already defined at [5:3]`},
		{"rules as a mapping", doc("rules: {name: a}"), `c.yaml: [7:8] mapping was used where sequence is expected`},
		{"unknown rule key", doc("rules: [{name: a, chek: x}]"), `c.yaml: [7:19] unknown field "chek" in rules[0] (did you mean check?)`},
		{"unknown quality key", doc("quality: {max_dup: 1}"), `c.yaml: [7:11] unknown field "max_dup" in quality (did you mean max_duplicate_id_rate?)`},
		{"empty", "", `c.yaml: empty contract file`},
		{"white space", " \n\t\n", `c.yaml: empty contract file`},
		{"unset variable", doc("product: ${TIDEMARK_TEST_UNSET}"),
			`c.yaml: environment variable TIDEMARK_TEST_UNSET is not set (write ${TIDEMARK_TEST_UNSET:-default} to give a default)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.src))
			if err == nil {
				t.Fatalf("no error for\n%s", tc.src)
			}
			first, _, _ := strings.Cut(err.Error(), "\n")
			if first != tc.want {
				t.Fatalf("got  %s\nwant %s\nfull: %v", first, tc.want, err)
			}
		})
	}
}

// TestParseErrorShowsLine: the whole message of a positioned error.
func TestParseErrorShowsLine(t *testing.T) {
	_, err := Parse("c.yaml", []byte(doc("fields: {id: {type: string, requird: true}}")))
	want := `c.yaml: [4:29] id: unknown key "requird" (want type, required, metadata, cardinality or description)
   1 | product: p
   2 | owner: o
   3 | schema_version: "1"
>  4 | fields: {id: {type: string, requird: true}}
                                   ^
   5 | event_id: id
   6 | event_time: {field: ts}`
	if err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
}

// TestEnvExpansion: ${VAR} and ${VAR:-default} are expanded before the
// YAML is read.
func TestEnvExpansion(t *testing.T) {
	t.Setenv("TIDEMARK_TEST_OWNER", "payments team")
	c := mustParse(t, doc("owner: ${TIDEMARK_TEST_OWNER}", "contact: ${TIDEMARK_TEST_NONE:-order desk}"))
	if c.Owner != "payments team" || c.Contact != "order desk" {
		t.Fatalf("owner %q, contact %q", c.Owner, c.Contact)
	}
}

// TestValidate: every problem is reported, one per line, each naming its
// key.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes []string
		want    string // the error after "c.yaml: "; "" for none
	}{
		{"base", nil, ""},
		{"nothing", []string{"-product", "-owner", "-schema_version", "-fields", "-event_id", "-event_time", "description: x"},
			"product: required\nowner: required\nschema_version: required\n" +
				"fields: required: declare at least one field\n" +
				"event_id: required (a field name, or an expression over fields for a composite id)\n" +
				"event_time.field: required"},
		{"blank strings", []string{`product: " "`, `owner: ""`, `schema_version: ""`},
			"product: required\nowner: required\nschema_version: required"},
		{"field types", []string{"fields: {id: string, ts: timestamp, a: float, b: integer, c: }"},
			"fields.a.type: unknown type \"float\" (want bool, int, decimal, string or timestamp)\n" +
				"fields.b.type: unknown type \"integer\" (want bool, int, decimal, string or timestamp)\n" +
				"fields.c.type: required (bool, int, decimal, string or timestamp)"},
		{"every type", []string{"fields: {id: string, ts: timestamp, a: bool, b: int, c: decimal}"}, ""},
		{"event_id not declared", []string{"event_id: order_id"}, `event_id: field "order_id" is not declared in fields`},
		{"event_id expression with an undeclared field", []string{`event_id: id + "-" + string(line_no)`}, ""},
		{"event_id syntax", []string{`event_id: id +`},
			"event_id: syntax error in \"id +\": unexpected token EOF (1:4)\n | id +\n | ...^"},
		{"event time declared string", []string{"fields: {id: string, ts: string}"},
			`event_time.field: "ts" is declared string; the event time is a timestamp (declare it timestamp or leave it out of fields)`},
		{"event time undeclared", []string{"fields: {id: string}"}, ""},
		{"layout without zone", []string{`event_time: {field: ts, layout: "2006-01-02 15:04:05"}`},
			"event_time.timezone: required with a layout: timestamps without an offset need a zone"},
		{"format layout without layout", []string{`event_time: {field: ts, format: layout, timezone: UTC}`},
			"event_time.layout: required with format layout"},
		{"layout with rfc3339", []string{`event_time: {field: ts, format: rfc3339, layout: "2006"}`},
			"event_time.layout: only with format layout"},
		{"unknown format", []string{`event_time: {field: ts, format: iso}`},
			`event_time.format: unknown format "iso" (want rfc3339, epoch_ms, epoch_s or layout)`},
		{"bad zones", []string{`event_time: {field: ts, layout: "2006", timezone: Mars/Base}`},
			`event_time.timezone: unknown zone "Mars/Base"`},
		{"local zone", []string{`event_time: {field: ts, layout: "2006", timezone: Local}`},
			`event_time.timezone: "Local" depends on the machine; name an IANA zone such as "Europe/London" or "UTC"`},
		{"epoch", []string{`event_time: {field: ts, format: epoch_ms}`}, ""},
		{"ingest_time undeclared", []string{"ingest_time: at"}, `ingest_time: field "at" is not declared in fields (declare it timestamp)`},
		{"ingest_time not a timestamp", []string{"ingest_time: amount"}, `ingest_time: "amount" is declared decimal; want timestamp`},
		{"ingest_time is the event time", []string{"ingest_time: ts"}, `ingest_time: "ts" is the event-time field; the ingest time is when the event arrived`},
		{"ordering empty", []string{"ordering: {}"},
			"ordering.key: required (the entity field, e.g. order_id)\nordering.version: required (an int field that grows with each state change)"},
		{"ordering undeclared", []string{"ordering: {key: order_id, version: v}"},
			"ordering.key: field \"order_id\" is not declared in fields\nordering.version: field \"v\" is not declared in fields (declare it int)"},
		{"ordering version not int", []string{"ordering: {key: id, version: amount}"}, `ordering.version: "amount" is declared decimal; want int`},
		{"negative durations", []string{"max_normal_delay: -1m", "retention: 1500us"},
			"max_normal_delay: must not be negative\nretention: 1.5ms is not a whole number of milliseconds"},
		{"negative rate", []string{"rate: -5"}, "rate: -5 events/s: must not be negative (0: unknown)"},
		{"rate", []string{"rate: 12000"}, ""},
		{"rule without name or kind", []string{"rules: [{description: x}]"},
			"rules[0].name: required\nrules[0]: give exactly one of check, max_future or max_age"},
		{"rule names twice", []string{"rules: [{name: a, check: amount > 0}, {name: a, max_future: 1h}]"}, `rules[1].name: "a" used twice`},
		{"rule named like a required check", []string{"fields: {id: {type: string, required: true}, ts: timestamp}", "rules: [{name: id_required, check: id != \"\"}]"},
			`rules[0].name: "id_required" is the name of the required check of field id`},
		{"rule with two kinds", []string{"rules: [{name: a, check: amount > 0, max_future: 1h}]"}, "rules[0]: give exactly one of check, max_future or max_age"},
		{"check syntax", []string{"rules: [{name: a, check: 'amount >'}]"},
			"rules[0].check: syntax error in \"amount >\": unexpected token EOF (1:8)\n | amount >\n | .......^"},
		{"negative limits", []string{"realtime: true", "rules: [{name: a, max_future: -1h}, {name: b, max_age: -2h}]"},
			"rules[0].max_future: must be positive\nrules[1].max_age: must be positive"},
		{"max_age without realtime", []string{"rules: [{name: old, max_age: 720h}]"},
			"rules[0].max_age: only for a realtime source (set realtime: true): in a backfill or a batch file old events are normal"},
		{"max_age with realtime", []string{"realtime: true", "rules: [{name: old, max_age: 720h}]"}, ""},
		{"fractional limits", []string{"realtime: true", "rules: [{name: a, max_future: 1500us}, {name: b, max_age: 1ms500us}]"},
			"rules[0].max_future: 1.5ms is not a whole number of milliseconds\nrules[1].max_age: 1.5ms is not a whole number of milliseconds"},
		{"violation rates", []string{"rules: [{name: a, check: 'true', max_violation_rate: 1.5}, {name: b, check: 'true', max_violation_rate: -0.1}, {name: c, check: 'true', max_violation_rate: .nan}, {name: d, check: 'true', max_violation_rate: 1}]"},
			"rules[0].max_violation_rate: must be between 0 and 1\nrules[1].max_violation_rate: must be between 0 and 1\nrules[2].max_violation_rate: must be between 0 and 1"},
		{"quality", []string{"quality: {max_null_rate: {zz: 0.1, amount: 2, id: 0}, max_duplicate_id_rate: 1.01, max_conflicts: -1, min_arrival_within_24h: -0.5}"},
			"quality.max_null_rate.amount: must be between 0 and 1\n" +
				"quality.max_null_rate.zz: field \"zz\" is not declared in fields\n" +
				"quality.max_duplicate_id_rate: must be between 0 and 1\n" +
				"quality.max_conflicts: must not be negative\n" +
				"quality.min_arrival_within_24h: must be between 0 and 1\n" +
				"quality.min_arrival_within_24h: needs ingest_time: the arrival is measured from it"},
		{"quality ok", []string{"fields: {id: string, ts: timestamp, at: {type: timestamp, metadata: true}}", "ingest_time: at",
			"quality: {max_null_rate: {id: 0}, max_duplicate_id_rate: 0, max_conflicts: 0, min_arrival_within_24h: 1}"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := doc(tc.changes...)
			_, err := Parse("c.yaml", []byte(src))
			got := ""
			if err != nil {
				got = strings.TrimPrefix(err.Error(), "c.yaml: ")
			}
			if got != tc.want {
				t.Fatalf("%s\ngot:\n%s\nwant:\n%s", src, got, tc.want)
			}
		})
	}
}

// TestValidateFromGo: problems only Go code can make (YAML refuses a
// repeated key and an empty name).
func TestValidateFromGo(t *testing.T) {
	c := mustParse(t, doc())
	c.Fields = append(c.Fields, Field{Name: "id", Type: "string"}, Field{Type: "int"})
	want := "fields.id: declared twice\nfields[4]: empty field name"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	c = mustParse(t, doc())
	c.EventTime.Format = ""
	if err := c.Validate(); err == nil || err.Error() != "event_time.format: required (rfc3339, epoch_ms, epoch_s or layout)" {
		t.Fatalf("got %v", err)
	}
}

func TestDefaults(t *testing.T) {
	for _, tc := range []struct{ in, want TimeField }{
		{TimeField{Field: "t"}, TimeField{Field: "t", Format: "rfc3339"}},
		{TimeField{Field: "t", Layout: "2006"}, TimeField{Field: "t", Format: "layout", Layout: "2006"}},
		{TimeField{Field: "t", Format: "epoch_s"}, TimeField{Field: "t", Format: "epoch_s"}},
	} {
		c := &Contract{EventTime: tc.in}
		c.Defaults()
		if c.EventTime != tc.want {
			t.Errorf("Defaults(%+v) = %+v, want %+v", tc.in, c.EventTime, tc.want)
		}
	}
}

func TestFieldAndMetadataFields(t *testing.T) {
	c := mustParse(t, doc("fields: {id: string, ts: timestamp, part: {type: int, metadata: true}, at: {type: timestamp, metadata: true}, retry: {type: int, metadata: true}}", "ingest_time: at"))
	if f, ok := c.Field("part"); !ok || f != (Field{Name: "part", Type: "int", Metadata: true}) {
		t.Fatalf("Field(part) = %+v, %v", f, ok)
	}
	if _, ok := c.Field("nope"); ok {
		t.Fatal("Field(nope) found")
	}
	if got, want := strings.Join(c.MetadataFields(), ","), "part,at,retry"; got != want {
		t.Fatalf("MetadataFields = %s, want %s", got, want)
	}
	// ingest_time unmarked is listed too, in declaration order.
	c = mustParse(t, doc("fields: {id: string, at: timestamp, ts: timestamp, part: {type: int, metadata: true}}", "ingest_time: at"))
	if got, want := strings.Join(c.MetadataFields(), ","), "at,part"; got != want {
		t.Fatalf("MetadataFields = %s, want %s", got, want)
	}
	// From Go code, an undeclared ingest_time comes last.
	c.IngestTime = "received_at"
	if got, want := strings.Join(c.MetadataFields(), ","), "part,received_at"; got != want {
		t.Fatalf("MetadataFields = %s, want %s", got, want)
	}
}
