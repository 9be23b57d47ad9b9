package devregistry

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

func newClient(t *testing.T) (*sr.Client, *Registry) {
	t.Helper()
	reg := New()
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(srv.Close)
	cl, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	return cl, reg
}

func record(fields string) string {
	return `{"type":"record","name":"Order","namespace":"shop","fields":[` + fields + `]}`
}

// TestAvroResolutionCases: the cases of the Avro specification's "Schema
// Resolution" section, as BACKWARD checks (the new schema reads data
// written with the registered one): writer first, reader second.
func TestAvroResolutionCases(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name           string
		writer, reader string
		ok             bool
	}{
		// "if both are records: ... the ordering of fields may be different"
		{"fields reordered", record(`{"name":"a","type":"int"},{"name":"b","type":"string"}`), record(`{"name":"b","type":"string"},{"name":"a","type":"int"}`), true},
		// "if the writer's record contains a field with a name not present in the reader's record, the writer's value for that field is ignored"
		{"writer field ignored", record(`{"name":"a","type":"int"},{"name":"extra","type":"string"}`), record(`{"name":"a","type":"int"}`), true},
		// "if the reader's record schema has a field that contains a default value, and writer's schema does not have a field with the same name, then the reader should use the default value"
		{"reader field with default", record(`{"name":"a","type":"int"}`), record(`{"name":"a","type":"int"},{"name":"currency","type":"string","default":"GBP"}`), true},
		// "... has a field with no default value, and writer's schema does not have a field with the same name, an error should be signalled"
		{"reader field without default", record(`{"name":"a","type":"int"}`), record(`{"name":"a","type":"int"},{"name":"currency","type":"string"}`), false},
		// "int is promotable to long, float, or double"
		{"int to long", record(`{"name":"a","type":"int"}`), record(`{"name":"a","type":"long"}`), true},
		{"int to double", record(`{"name":"a","type":"int"}`), record(`{"name":"a","type":"double"}`), true},
		{"long to int", record(`{"name":"a","type":"long"}`), record(`{"name":"a","type":"int"}`), false},
		// "long is promotable to float or double"; "float is promotable to double"
		{"long to float", record(`{"name":"a","type":"long"}`), record(`{"name":"a","type":"float"}`), true},
		{"float to double", record(`{"name":"a","type":"float"}`), record(`{"name":"a","type":"double"}`), true},
		{"double to float", record(`{"name":"a","type":"double"}`), record(`{"name":"a","type":"float"}`), false},
		// "string is promotable to bytes"; "bytes is promotable to string"
		{"string to bytes", record(`{"name":"a","type":"string"}`), record(`{"name":"a","type":"bytes"}`), true},
		{"bytes to string", record(`{"name":"a","type":"bytes"}`), record(`{"name":"a","type":"string"}`), true},
		{"string to int", record(`{"name":"a","type":"string"}`), record(`{"name":"a","type":"int"}`), false},
		// "if both are enums: if the writer's symbol is not present in the reader's enum and the reader has a default value, then that value is used, otherwise an error is signalled"
		{"enum symbol added", record(`{"name":"c","type":{"type":"enum","name":"C","symbols":["A","B"]}}`), record(`{"name":"c","type":{"type":"enum","name":"C","symbols":["A","B","D"]}}`), true},
		{"enum symbol removed", record(`{"name":"c","type":{"type":"enum","name":"C","symbols":["A","B"]}}`), record(`{"name":"c","type":{"type":"enum","name":"C","symbols":["A"]}}`), false},
		{"enum symbol removed with default", record(`{"name":"c","type":{"type":"enum","name":"C","symbols":["A","B"]}}`), record(`{"name":"c","type":{"type":"enum","name":"C","symbols":["A","U"],"default":"U"}}`), true},
		// "if both are unions: the first schema in the reader's union that matches the selected writer's union schema is recursively resolved against it. if none match, an error is signalled"
		{"union widened", record(`{"name":"a","type":["null","int"]}`), record(`{"name":"a","type":["null","int","string"]}`), true},
		{"union narrowed", record(`{"name":"a","type":["null","int","string"]}`), record(`{"name":"a","type":["null","int"]}`), false},
		// "if reader's is a union, but writer's is not: the first schema in the reader's union that matches the writer's schema is recursively resolved against it"
		{"made nullable", record(`{"name":"a","type":"int"}`), record(`{"name":"a","type":["null","int"],"default":null}`), true},
		// "if writer's is a union, but reader's is not: if the reader's schema matches the selected writer's schema, it is recursively resolved against it. If they do not match, an error is signalled."
		{"nullable made required", record(`{"name":"a","type":["null","int"]}`), record(`{"name":"a","type":"int"}`), false},
		// "if both are arrays: this resolution algorithm is applied recursively to the reader's and writer's array item schemas"
		{"array items promoted", record(`{"name":"a","type":{"type":"array","items":"int"}}`), record(`{"name":"a","type":{"type":"array","items":"long"}}`), true},
		{"array items narrowed", record(`{"name":"a","type":{"type":"array","items":"long"}}`), record(`{"name":"a","type":{"type":"array","items":"int"}}`), false},
		// "if both are maps: ... recursively to the reader's and writer's value schemas"
		{"map values promoted", record(`{"name":"a","type":{"type":"map","values":"float"}}`), record(`{"name":"a","type":{"type":"map","values":"double"}}`), true},
		// "both schemas are fixed and their sizes and names match"
		{"fixed size changed", record(`{"name":"a","type":{"type":"fixed","name":"F","size":4}}`), record(`{"name":"a","type":{"type":"fixed","name":"F","size":8}}`), false},
		// "both schemas are records with the same (unqualified) name"
		{"record renamed", `{"type":"record","name":"Order","fields":[{"name":"a","type":"int"}]}`, `{"type":"record","name":"Purchase","fields":[{"name":"a","type":"int"}]}`, false},
		// the article's evolution: amount replaced by gross_amount + currency
		{"amount replaced without defaults", record(`{"name":"amount","type":"double"}`), record(`{"name":"gross_amount","type":"double"},{"name":"currency","type":"string"}`), false},
		{"amount kept, gross_amount and currency with defaults", record(`{"name":"amount","type":"double"}`), record(`{"name":"amount","type":"double"},{"name":"gross_amount","type":["null","double"],"default":null},{"name":"currency","type":"string","default":"GBP"}`), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, _ := newClient(t)
			if _, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: c.writer}); err != nil {
				t.Fatal(err)
			}
			res, err := cl.CheckCompatibility(ctx, "orders-value", -1, sr.Schema{Schema: c.reader})
			if err != nil {
				t.Fatal(err)
			}
			if res.Is != c.ok {
				t.Fatalf("is_compatible = %v, want %v (%v)", res.Is, c.ok, res.Messages)
			}
			_, err = cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: c.reader})
			var re *sr.ResponseError
			switch {
			case c.ok && err != nil:
				t.Fatalf("registration refused: %v", err)
			case !c.ok && (!errors.As(err, &re) || re.ErrorCode != 409):
				t.Fatalf("registration: %v, want error code 409", err)
			}
		})
	}
}

// TestLevels: FORWARD checks the other direction, FULL both, the
// transitive levels every version, NONE nothing; a subject's level wins
// over the global one.
func TestLevels(t *testing.T) {
	ctx := context.Background()
	v1 := record(`{"name":"a","type":"int"}`)
	v2 := record(`{"name":"a","type":"int"},{"name":"b","type":"string","default":""}`) // adds a field with a default
	v3 := record(`{"name":"b","type":"string","default":""}`)                           // removes a (no default)
	for _, c := range []struct {
		level        sr.CompatibilityLevel
		v2ok, v3ok   bool
		v3okAfterAll bool
	}{
		// v3 read by v2 (forward) is fine if a had a default: it has not.
		{sr.CompatBackward, true, true, true},
		{sr.CompatForward, true, false, false},
		{sr.CompatFull, true, false, false},
		{sr.CompatNone, true, true, true},
	} {
		cl, _ := newClient(t)
		if r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: c.level}, "orders-value"); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		if _, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: v1}); err != nil {
			t.Fatal(err)
		}
		_, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: v2})
		if (err == nil) != c.v2ok {
			t.Errorf("%s: v2 registration: %v", c.level, err)
		}
		_, err = cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: v3})
		if (err == nil) != c.v3ok {
			t.Errorf("%s: v3 registration: %v", c.level, err)
		}
	}
	// BACKWARD_TRANSITIVE checks every version: a schema the latest
	// accepts but an older one does not is refused.
	cl, _ := newClient(t)
	cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatBackwardTransitive}, "t-value")
	w1 := record(`{"name":"a","type":"int"}`)
	w2 := record(`{"name":"a","type":"int"},{"name":"b","type":"string"}`) // new field without default: BACKWARD fails against w1
	cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "t-value")
	cl.CreateSchema(ctx, "t-value", sr.Schema{Schema: w1})
	cl.CreateSchema(ctx, "t-value", sr.Schema{Schema: w2})
	cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatBackwardTransitive}, "t-value")
	w3 := record(`{"name":"a","type":"int"},{"name":"b","type":"string"},{"name":"c","type":"long","default":0}`)
	if _, err := cl.CreateSchema(ctx, "t-value", sr.Schema{Schema: w3}); err == nil || !strings.Contains(err.Error(), "against version 1") {
		t.Errorf("BACKWARD_TRANSITIVE: %v, want a refusal naming version 1", err)
	}
	cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatBackward}, "t-value")
	if _, err := cl.CreateSchema(ctx, "t-value", sr.Schema{Schema: w3}); err != nil {
		t.Errorf("BACKWARD (latest only): %v", err)
	}
}

// TestProtobufRules: Confluent's Protobuf rules under BACKWARD.
func TestProtobufRules(t *testing.T) {
	ctx := context.Background()
	base := `syntax = "proto3"; package shop; message Order { string id = 1; int64 amount = 2; repeated string tags = 3; }`
	for _, c := range []struct {
		name, next string
		ok         bool
	}{
		{"field added", `syntax = "proto3"; package shop; message Order { string id = 1; int64 amount = 2; repeated string tags = 3; string currency = 4; }`, true},
		{"field removed", `syntax = "proto3"; package shop; message Order { string id = 1; repeated string tags = 3; }`, true},
		{"int64 to int32 (same wire group)", `syntax = "proto3"; package shop; message Order { string id = 1; int32 amount = 2; repeated string tags = 3; }`, true},
		{"int64 to string", `syntax = "proto3"; package shop; message Order { string id = 1; string amount = 2; repeated string tags = 3; }`, false},
		{"int64 to sint64", `syntax = "proto3"; package shop; message Order { string id = 1; sint64 amount = 2; repeated string tags = 3; }`, false},
		{"repeated to singular", `syntax = "proto3"; package shop; message Order { string id = 1; int64 amount = 2; string tags = 3; }`, false},
		{"message removed", `syntax = "proto3"; package shop; message Purchase { string id = 1; }`, false},
		{"package changed", `syntax = "proto3"; package store; message Order { string id = 1; int64 amount = 2; repeated string tags = 3; }`, false},
	} {
		cl, _ := newClient(t)
		if _, err := cl.CreateSchema(ctx, "o-value", sr.Schema{Schema: base, Type: sr.TypeProtobuf}); err != nil {
			t.Fatal(err)
		}
		_, err := cl.CreateSchema(ctx, "o-value", sr.Schema{Schema: c.next, Type: sr.TypeProtobuf})
		if (err == nil) != c.ok {
			t.Errorf("%s: registration: %v, want ok=%v", c.name, err, c.ok)
		}
	}
}
