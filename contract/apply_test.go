package contract

import (
	"reflect"
	"testing"
	"time"

	"github.com/tidemark/tidemark/spec"
)

// applyContract is the contract the Apply cases use.
func applyContract(t *testing.T, changes ...string) *Contract {
	t.Helper()
	return mustParse(t, doc(append([]string{
		"product: orders",
		"fields: {id: string, ts: timestamp, amount: decimal, order_id: string, v: int, at: {type: timestamp, metadata: true}, part: {type: int, metadata: true}}",
		`event_time: {field: ts, layout: "2006-01-02 15:04:05", timezone: Asia/Seoul}`,
		"ingest_time: at",
		"ordering: {key: order_id, version: v}",
	}, changes...)...))
}

// contractSchema is applyContract's fields as a source.schema.
var contractSchema = spec.FieldTypes{
	{Name: "id", Type: "string"}, {Name: "ts", Type: "timestamp"}, {Name: "amount", Type: "decimal"},
	{Name: "order_id", Type: "string"}, {Name: "v", Type: "int"}, {Name: "at", Type: "timestamp"}, {Name: "part", Type: "int"},
}

var contractTime = spec.EventTime{Field: "ts", Format: "layout", Layout: "2006-01-02 15:04:05", Timezone: "Asia/Seoul", IngestTimeField: "at"}

func TestApply(t *testing.T) {
	five := spec.Duration(5 * time.Minute)
	day, month, zero := spec.Duration(24*time.Hour), spec.Duration(720*time.Hour), spec.Duration(0)
	for _, tc := range []struct {
		name string
		c    []string // contract changes
		in   spec.Pipeline
		want spec.Pipeline
	}{
		{
			name: "schema and event time from the contract",
			in:   spec.Pipeline{Name: "p", EventTime: spec.EventTime{OutOfOrderness: five, IdleTimeout: five}},
			want: spec.Pipeline{Name: "p", Source: spec.Source{Schema: contractSchema},
				EventTime: spec.EventTime{Field: "ts", Format: "layout", Layout: "2006-01-02 15:04:05", Timezone: "Asia/Seoul", OutOfOrderness: five, IdleTimeout: five, IngestTimeField: "at"}},
		},
		{
			name: "timestamp rules from the contract: the smallest max_future and max_age",
			c:    []string{"realtime: true", "rules: [{name: f1, max_future: 48h}, {name: a1, max_age: 720h}, {name: f2, max_future: 24h}, {name: a2, max_age: 1000h}, {name: pos, check: amount >= 0}]"},
			in:   spec.Pipeline{},
			want: spec.Pipeline{Source: spec.Source{Schema: contractSchema},
				EventTime: spec.EventTime{Field: "ts", Format: "layout", Layout: "2006-01-02 15:04:05", Timezone: "Asia/Seoul", IngestTimeField: "at", MaxFuture: &day, MaxPast: &month}},
		},
		{
			name: "the pipeline's timestamp rules stay, an explicit 0s too",
			c:    []string{"realtime: true", "rules: [{name: f1, max_future: 48h}, {name: a1, max_age: 720h}]"},
			in:   spec.Pipeline{EventTime: spec.EventTime{MaxFuture: &zero, MaxPast: &five, IngestTimeField: "produced"}},
			want: spec.Pipeline{Source: spec.Source{Schema: contractSchema},
				EventTime: spec.EventTime{Field: "ts", Format: "layout", Layout: "2006-01-02 15:04:05", Timezone: "Asia/Seoul", IngestTimeField: "produced", MaxFuture: &zero, MaxPast: &five}},
		},
		{
			name: "the pipeline's own declarations stay first; aliases agree",
			in:   spec.Pipeline{Source: spec.Source{Schema: spec.FieldTypes{{Name: "extra", Type: "bool"}, {Name: "v", Type: "integer"}, {Name: "amount", Type: "numeric"}}}},
			want: spec.Pipeline{
				Source: spec.Source{Schema: spec.FieldTypes{{Name: "extra", Type: "bool"}, {Name: "v", Type: "integer"}, {Name: "amount", Type: "numeric"},
					{Name: "id", Type: "string"}, {Name: "ts", Type: "timestamp"}, {Name: "order_id", Type: "string"}, {Name: "at", Type: "timestamp"}, {Name: "part", Type: "int"}}},
				EventTime: contractTime,
			},
		},
		{
			name: "another event-time field is allowed and kept whole",
			in:   spec.Pipeline{EventTime: spec.EventTime{Field: "at", Format: "epoch_ms"}},
			want: spec.Pipeline{Source: spec.Source{Schema: contractSchema}, EventTime: spec.EventTime{Field: "at", Format: "epoch_ms"}},
		},
		{
			name: "dedup key and ignore from the contract, with the arrival field",
			in: spec.Pipeline{Source: spec.Source{ArrivalTimeField: "arrived"},
				Dedup: &spec.Dedup{TTL: spec.Duration(24 * time.Hour)}},
			want: spec.Pipeline{Source: spec.Source{ArrivalTimeField: "arrived", Schema: contractSchema}, EventTime: contractTime,
				Dedup: &spec.Dedup{Key: "id", TTL: spec.Duration(24 * time.Hour), Ignore: []string{"at", "part", "arrived"}}},
		},
		{
			name: "dedup key and ignore of the pipeline stay",
			in:   spec.Pipeline{Dedup: &spec.Dedup{Key: "order_id", Ignore: []string{}}},
			want: spec.Pipeline{Source: spec.Source{Schema: contractSchema}, EventTime: contractTime,
				Dedup: &spec.Dedup{Key: "order_id", Ignore: []string{}}},
		},
		{
			name: "a composite event id",
			c:    []string{`event_id: id + "-" + string(line_no)`},
			in:   spec.Pipeline{Dedup: &spec.Dedup{}},
			want: spec.Pipeline{Source: spec.Source{Schema: contractSchema}, EventTime: contractTime,
				Dedup: &spec.Dedup{Key: `id + "-" + string(line_no)`, Ignore: []string{"at", "part"}}},
		},
		{
			name: "no metadata fields: ignore stays unset",
			c: []string{"fields: {id: string, ts: timestamp, order_id: string, v: int}", "-ingest_time",
				`event_time: {field: ts}`},
			in: spec.Pipeline{Dedup: &spec.Dedup{}},
			want: spec.Pipeline{Source: spec.Source{Schema: spec.FieldTypes{{Name: "id", Type: "string"}, {Name: "ts", Type: "timestamp"}, {Name: "order_id", Type: "string"}, {Name: "v", Type: "int"}}},
				EventTime: spec.EventTime{Field: "ts", Format: "rfc3339"}, Dedup: &spec.Dedup{Key: "id"}},
		},
		{
			name: "order_by from the contract",
			in:   spec.Pipeline{OrderBy: &spec.OrderBy{TTL: five}},
			want: spec.Pipeline{Source: spec.Source{Schema: contractSchema}, EventTime: contractTime,
				OrderBy: &spec.OrderBy{Key: "order_id", Version: "v", TTL: five}},
		},
		{
			name: "order_by version alone from the contract",
			in:   spec.Pipeline{OrderBy: &spec.OrderBy{Key: "id"}},
			want: spec.Pipeline{Source: spec.Source{Schema: contractSchema}, EventTime: contractTime,
				OrderBy: &spec.OrderBy{Key: "id", Version: "v"}},
		},
		{
			name: "order_by given whole needs no ordering",
			c:    []string{"-ordering"},
			in:   spec.Pipeline{OrderBy: &spec.OrderBy{Key: "id", Version: "v"}},
			want: spec.Pipeline{Source: spec.Source{Schema: contractSchema}, EventTime: contractTime,
				OrderBy: &spec.OrderBy{Key: "id", Version: "v"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := applyContract(t, tc.c...)
			p := tc.in
			if err := Apply(c, &p); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", p, tc.want)
			}
		})
	}
}

func TestApplyErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    []string
		in   spec.Pipeline
		want string
	}{
		{
			name: "types differ",
			in:   spec.Pipeline{Source: spec.Source{Schema: spec.FieldTypes{{Name: "amount", Type: "string"}, {Name: "v", Type: "decimal"}, {Name: "ts", Type: "timestamp"}}}},
			want: "source.schema.amount: declared string in the pipeline, but the contract orders declares decimal\n" +
				"source.schema.v: declared decimal in the pipeline, but the contract orders declares int",
		},
		{
			name: "an unknown pipeline type differs",
			in:   spec.Pipeline{Source: spec.Source{Schema: spec.FieldTypes{{Name: "amount", Type: "float"}}}},
			want: "source.schema.amount: declared float in the pipeline, but the contract orders declares decimal",
		},
		{
			name: "order_by without an ordering",
			c:    []string{"-ordering"},
			in:   spec.Pipeline{OrderBy: &spec.OrderBy{Key: "order_id"}},
			want: "order_by: key and version are required: the contract orders declares no ordering",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := applyContract(t, tc.c...)
			p := tc.in
			before := tc.in
			err := Apply(c, &p)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
			if !reflect.DeepEqual(p, before) {
				t.Fatalf("Apply changed the pipeline on error: %+v", p)
			}
		})
	}
	if err := Apply(nil, &spec.Pipeline{}); err == nil {
		t.Fatal("Apply(nil) succeeded")
	}
}
