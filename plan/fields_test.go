package plan

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/contract"
	"github.com/tidemark/tidemark/spec"
)

// ordersContract declares every field of the order events; its
// event-time field is left out of fields (contracts allow that).
const ordersContract = `product: orders
owner: order domain
schema_version: "1"
fields:
  event_id: {type: string, required: true}
  order_id: string
  version: int
  store_id: string
  currency: string
  amount: decimal
  meta.ingested_at: {type: timestamp, metadata: true}
event_id: event_id
event_time: {field: paid_at}
`

// compileWith decodes y as tidemark.Compile does: the contract (when not
// "") applied, then defaults and validation, then Compile.
func compileWith(t *testing.T, y, contractYAML string) (*Plan, error) {
	t.Helper()
	p, err := spec.Decode("p.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var c *contract.Contract
	if contractYAML != "" {
		if c, err = contract.Parse("orders.yaml", []byte(contractYAML)); err != nil {
			t.Fatal(err)
		}
		if err := contract.Apply(c, p); err != nil {
			t.Fatal(err)
		}
	}
	p.Defaults()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return Compile(p, c)
}

// TestMisspeltFieldWithContract is the case: key [stor_id,
// currency] over JSONL compiled, and the run wrote an all-NULL stor_id
// column. With a contract that lists the fields it is refused.
func TestMisspeltFieldWithContract(t *testing.T) {
	const y = "name: revenue\nsource: {type: file, path: orders.jsonl}\nkey: [stor_id, currency]\n" +
		"window: {type: tumbling, size: 1m}\naggregates: {revenue: sum(amount)}\n"
	_, err := compileWith(t, y, ordersContract)
	want := `revenue: key: "stor_id" is not among the fields of contract orders (did you mean store_id?)`
	if err == nil || err.Error() != want {
		t.Errorf("Compile: %v\nwant %s", err, want)
	}
	// Spelt right, it compiles, and the contract's event-time field needs
	// no declaration.
	if _, err := compileWith(t, strings.Replace(y, "stor_id", "store_id", 1), ordersContract); err != nil {
		t.Errorf("Compile with store_id: %v", err)
	}
}

// TestMisspeltFields: every key that names a source field is checked
// against a complete source.schema, and each error names the field, the
// key and the close names; without a field list nothing is refused.
func TestMisspeltFields(t *testing.T) {
	const schema = "{event_id: string, order_id: string, version: int, store_id: string, currency: string, amount: decimal, paid_at: timestamp, at: timestamp, part: string, invoice: string}"
	src := func(extra string) string {
		return "name: p\nsource: {type: file, path: e.jsonl, schema_complete: true, schema: " + schema + extra + "}\n"
	}
	const et = "event_time: {field: paid_at}\n"
	const win = "window: {type: tumbling, size: 1m}\n"
	for _, tc := range []struct {
		name, yaml string
		want       []string // the whole error, one line each
	}{
		{"key", src("") + et + win + "key: [store_id, curency]\naggregates: {n: count()}\n",
			[]string{`p: key: "curency" is not among the fields of source.schema (source.schema_complete) (did you mean currency?)`}},
		{"aggregate argument", src("") + et + win + "aggregates: {revenue: sum(amout), n: 'count_distinct(order_idd)'}\n",
			[]string{`p: aggregates.revenue: "amout" is not among the fields of source.schema (source.schema_complete) (did you mean amount?)`,
				`p: aggregates.n: "order_idd" is not among the fields of source.schema (source.schema_complete) (did you mean order_id?)`}},
		{"filter and derived field", src("") + et + win + "filter: 'curreny == \"EUR\"'\nfields: {net: amount * qty, twice: net * 2}\naggregates: {s: sum(twice)}\n",
			[]string{`p: filter: "curreny" is not among the fields of source.schema (source.schema_complete) (did you mean currency?)`,
				`p: fields.net: "qty" is not among the fields of source.schema (source.schema_complete)`}},
		{"a key close to a derived field", src("") + et + win + "fields: {net_amount: amount * 2}\nkey: [net_amout]\naggregates: {n: count()}\n",
			[]string{`p: key: "net_amout" is not among the fields of source.schema (source.schema_complete) (did you mean net_amount?)`}},
		{"select", src("") + et + "select: [order_id, amont]\n",
			[]string{`p: select: "amont" is not among the fields of source.schema (source.schema_complete) (did you mean amount?)`}},
		{"event time", src("") + "event_time: {field: paid}\n" + win + "aggregates: {n: count()}\n",
			[]string{`event_time.field: "paid" is not among the fields of source.schema (source.schema_complete) (did you mean paid_at?)`}},
		{"partition and arrival fields", src(", partition_field: prt, arrival_time_field: arrived_at") + et + win + "aggregates: {n: count()}\n",
			[]string{`source.partition_field: "prt" is not among the fields of source.schema (source.schema_complete) (did you mean part?)`,
				`source.arrival_time_field: "arrived_at" is not among the fields of source.schema (source.schema_complete)`}},
		{"ordinal and replay", src(", ordinal: {field: line_no, per: invoce}, replay: {partition_by: invoices, conflict_fraction: 0.1, conflict_field: amout}") + et + win +
			"key: [line_no]\naggregates: {n: count()}\n",
			[]string{`source.ordinal.per: "invoce" is not among the fields of source.schema (source.schema_complete) (did you mean invoice?)`,
				`source.replay.partition_by: "invoices" is not among the fields of source.schema (source.schema_complete) (did you mean invoice?)`,
				`source.replay.conflict_field: "amout" is not among the fields of source.schema (source.schema_complete) (did you mean amount?)`}},
		{"dedup", src("") + et + "dedup: {key: 'order_id + \"-\" + evnt_id', ttl: 1h, ignore: [at, ingest]}\n" + win + "aggregates: {n: count()}\n",
			[]string{`dedup.key: "evnt_id" is not among the fields of source.schema (source.schema_complete) (did you mean event_id?)`,
				`dedup.ignore: "ingest" is not among the fields of source.schema (source.schema_complete)`}},
		{"order_by", src("") + et + "order_by: {key: orderid, version: versoin}\n" + win + "aggregates: {n: count()}\n",
			[]string{`order_by.key: "orderid" is not among the fields of source.schema (source.schema_complete) (did you mean order_id?)`,
				`order_by.version: "versoin" is not among the fields of source.schema (source.schema_complete) (did you mean version?)`}},
		{"reference key", src("") + et + "reference: {path: stores.csv, key: store, fields: {region: string}}\n" + win + "key: [region]\naggregates: {n: count()}\n",
			[]string{`reference.key: "store" is not among the fields of source.schema (source.schema_complete) (did you mean store_id?)`}},
		{"the same field twice in one key is one error", src("") + et + win + "aggregates: {a: 'sum(amout * amout)'}\n",
			[]string{`p: aggregates.a: "amout" is not among the fields of source.schema (source.schema_complete) (did you mean amount?)`}},
		{"several stages", src("") + et + "stages:\n  - {name: a, key: [stor], window: {type: tumbling, size: 1m}, aggregates: {n: count()}, emit: {mode: retract}}\n" +
			"  - {name: b, input: source, key: [currncy], window: {type: tumbling, size: 1m}, aggregates: {n: count()}}\n",
			[]string{`a: key: "stor" is not among the fields of source.schema (source.schema_complete) (did you mean store_id?)`,
				`b: key: "currncy" is not among the fields of source.schema (source.schema_complete) (did you mean currency?)`}},
		{"CSV columns without a header", "name: p\nsource: {type: file, path: e.csv, csv: {header: false, columns: [paid_at, store_id, amount]}}\n" + et + win + "key: [store]\naggregates: {n: count()}\n",
			[]string{`p: key: "store" is not among the fields of source.csv.columns (did you mean store_id?)`}},
		{"nexmark", "name: p\nsource: {type: nexmark, events: 10}\nevent_time: {field: date_time}\n" + win + "key: [bid.auctio]\naggregates: {n: count()}\n",
			[]string{`p: key: "bid.auctio" is not among the fields of the Nexmark generator (docs/nexmark.md) (did you mean bid.auction?)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compileWith(t, tc.yaml, "")
			want := strings.Join(tc.want, "\n")
			if err == nil || err.Error() != want {
				t.Errorf("Compile:\n%v\nwant:\n%s", err, want)
			}
		})
	}
}

// TestFieldsAPipelineAdds: the fields the pipeline itself adds are in
// every list; a stage reading another stage is checked against the
// upstream columns, not the source's list.
func TestFieldsAPipelineAdds(t *testing.T) {
	for _, tc := range []struct{ name, yaml, contract string }{
		{"ordinal, reference, derived", "name: p\nsource: {type: file, path: e.jsonl, schema_complete: true, schema: {ts: timestamp, invoice: string, store: string}, ordinal: {field: line_no, per: invoice}}\n" +
			"event_time: {field: ts}\nreference: {path: stores.csv, key: store, fields: {region: string}}\ndedup: {key: 'invoice + \"-\" + string(line_no)', ttl: 1h}\n" +
			"fields: {r: region + \"x\"}\nkey: [region, r]\nwindow: {type: tumbling, size: 1m}\naggregates: {n: count(), lines: max(line_no)}\n", ""},
		{"a Kafka timestamp", "name: p\nsource: {type: kafka, brokers: [\"k:9092\"], topics: [t], schema_complete: true, schema: {store: string}}\n" +
			"event_time: {field: kts, from: kafka_timestamp}\nkey: [store]\nwindow: {type: tumbling, size: 1m}\naggregates: {n: count()}\n", ""},
		{"a contract's metadata in dedup.ignore", "name: p\nsource: {type: file, path: e.jsonl}\ndedup: {ttl: 1h, ignore: [meta]}\nkey: [store_id]\n" +
			"window: {type: tumbling, size: 1m}\naggregates: {n: count()}\n", ordersContract},
		{"a pipeline's own declaration beside a contract", "name: p\nsource: {type: file, path: e.jsonl, schema: {channel: string}}\nkey: [channel]\n" +
			"window: {type: tumbling, size: 1m}\naggregates: {n: count()}\n", ordersContract},
		{"downstream stages read upstream columns", "name: p\nsource: {type: file, path: e.jsonl}\nstages:\n" +
			"  - {name: a, key: [store_id], window: {type: tumbling, size: 1m}, aggregates: {n: count()}, emit: {mode: retract}}\n" +
			"  - {name: b, key: [store_id], filter: n > 1, window: {type: tumbling, size: 1h}, aggregates: {m: sum(n)}}\n", ordersContract},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := compileWith(t, tc.yaml, tc.contract); err != nil {
				t.Errorf("Compile: %v", err)
			}
		})
	}
}

// TestNoFieldListNoRefusal: source.schema may list only the typed fields
// (the default): an undeclared field is read as a string, as before; the
// runtime and `tidemark check` (TM109) watch such keys.
func TestNoFieldListNoRefusal(t *testing.T) {
	pl, err := compileWith(t, "name: p\nsource: {type: file, path: e.jsonl, schema: {amount: decimal}}\nevent_time: {field: paid_at}\n"+
		"key: [stor_id, currency]\nwindow: {type: tumbling, size: 1m}\naggregates: {revenue: sum(amount)}\n", "")
	if err != nil {
		t.Fatal(err)
	}
	if SourceFields(pl.Spec, nil) != nil {
		t.Error("SourceFields of a partial schema is not nil")
	}
}

// TestSourceFields: what lists a source's fields, and the names.
func TestSourceFields(t *testing.T) {
	p, err := spec.Parse("p.yaml", []byte("name: p\nsource: {type: file, path: e.csv, schema_complete: true, schema: {a: int, b: string}, "+
		"csv: {header: false, columns: [ts, a, b, c]}, ordinal: {field: n}}\nevent_time: {field: ts}\n"+
		"reference: {path: r.csv, key: b, fields: {region: string}}\nwindow: {type: tumbling, size: 1m}\naggregates: {n: count()}\n"))
	if err != nil {
		t.Fatal(err)
	}
	l := SourceFields(p, nil)
	if l == nil || l.From != "source.schema (source.schema_complete) and source.csv.columns" ||
		!reflect.DeepEqual(l.Names, []string{"a", "b", "ts", "c", "n", "region"}) {
		t.Errorf("SourceFields = %+v", l)
	}
}

// TestKeepPayloads: the plan takes dedup.keep_payloads as given, 0
// included (it used to be replaced by the default).
func TestKeepPayloads(t *testing.T) {
	for _, tc := range []struct {
		dedup string
		want  int
	}{
		{"{key: id, ttl: 1h}", spec.DefaultKeepPayloads},
		{"{key: id, ttl: 1h, keep_payloads: 0}", 0},
		{"{key: id, ttl: 1h, keep_payloads: 7}", 7},
	} {
		pl, err := compileWith(t, "name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\ndedup: "+tc.dedup+
			"\nwindow: {type: tumbling, size: 1m}\naggregates: {n: count()}\n", "")
		if err != nil {
			t.Fatal(err)
		}
		if pl.Dedup.KeepPayloads != tc.want {
			t.Errorf("dedup %s: KeepPayloads = %d, want %d", tc.dedup, pl.Dedup.KeepPayloads, tc.want)
		}
	}
}
