package confluent_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tidemark/tidemark/format"
	. "github.com/tidemark/tidemark/format/confluent"
	"github.com/tidemark/tidemark/internal/devregistry"
	"github.com/tidemark/tidemark/row"
)

const (
	recV1 = `{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}`
	recV2 = `{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":["null","string"],"default":null}]}`
	recV3 = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`
)

func devRegistry(t *testing.T) *Registry {
	t.Helper()
	srv := httptest.NewServer(devregistry.New().Handler())
	t.Cleanup(srv.Close)
	r, err := NewRegistry(RegistryConfig{URLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRegisterLookupCompatibility: registering is idempotent, an
// incompatible schema wraps ErrIncompatible with the registry's answer
// (ErrInvalidSchema is not exercised: the development registry does not
// parse the first version of a subject),
// Lookup finds a schema's version however it is spaced, Latest is the
// newest version, Compatibility falls back to the global level.
func TestRegisterLookupCompatibility(t *testing.T) {
	r := devRegistry(t)
	ctx := context.Background()
	id1, err := r.Register(ctx, "s-value", sr.Schema{Schema: recV1})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := r.Register(ctx, "s-value", sr.Schema{Schema: recV1}); err != nil || again != id1 {
		t.Errorf("registering again: id %d (want %d), %v", again, id1, err)
	}
	id2, err := r.Register(ctx, "s-value", sr.Schema{Schema: recV2})
	if err != nil || id2 == id1 {
		t.Fatalf("v2: %d %v", id2, err)
	}
	_, err = r.Register(ctx, "s-value", sr.Schema{Schema: recV3})
	if !errors.Is(err, ErrIncompatible) || !strings.HasPrefix(err.Error(), "registering the schema under subject s-value: incompatible with the subject's earlier versions: the registry at ") ||
		!strings.Contains(err.Error(), `answered: Schema being registered is incompatible with an earlier schema for subject "s-value"`) {
		t.Errorf("v3: %v", err)
	}
	ss, err := r.Lookup(ctx, "s-value", sr.Schema{Schema: strings.ReplaceAll(recV2, ",", " , ")})
	if err != nil || ss.Version != 2 || ss.ID != id2 {
		t.Errorf("Lookup: %+v %v", ss, err)
	}
	if _, err := r.Lookup(ctx, "s-value", sr.Schema{Schema: recV3}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Lookup of another schema: %v", err)
	}
	if l, err := r.Latest(ctx, "s-value"); err != nil || l.Version != 2 {
		t.Errorf("Latest: %+v %v", l, err)
	}
	if _, err := r.Latest(ctx, "nothing-value"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Latest of no subject: %v", err)
	}
	if level, err := r.Compatibility(ctx, "s-value"); err != nil || level != "BACKWARD" {
		t.Errorf("Compatibility (global default): %q %v", level, err)
	}
	if res := r.Client().SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFullTransitive}, "s-value"); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if level, err := r.Compatibility(ctx, "s-value"); err != nil || level != "FULL_TRANSITIVE" {
		t.Errorf("Compatibility (the subject's): %q %v", level, err)
	}
}

// TestVersionResolver: a file's schema is found in the subject; accepted
// versions give their mapping, others a schema_version rejection.
func TestVersionResolver(t *testing.T) {
	r := devRegistry(t)
	ctx := context.Background()
	for _, s := range []string{recV1, recV2} {
		if _, err := r.Register(ctx, "s-value", sr.Schema{Schema: s}); err != nil {
			t.Fatal(err)
		}
	}
	sch := row.NewSchema()
	if _, err := sch.Add("a", row.KindInt); err != nil {
		t.Fatal(err)
	}
	vr := &VersionResolver{Registry: r, Subject: "s-value", Contract: "c", Fields: format.Fields{Schema: sch},
		Versions: map[int]Version{2: {Rename: map[string]string{"a": "b"}}}}
	v, p, rej, err := vr.Resolve(ctx, "file x.avro", recV2)
	if err != nil || rej != nil || v != 2 || p.Rename["a"] != "b" {
		t.Errorf("v2: %d %+v %v %v", v, p, rej, err)
	}
	v, _, rej, err = vr.Resolve(ctx, "file x.avro", recV1)
	if err != nil || v != 1 || rej == nil || rej.Rule != "schema_version" ||
		rej.Reason != "the schema of file x.avro is version 1 of subject s-value, which the contract c does not accept (it accepts versions 2)" {
		t.Errorf("v1: %d %v %v", v, rej, err)
	}
	v, _, rej, err = vr.Resolve(ctx, "file y.avro", recV3)
	if err != nil || v != 0 || rej == nil || rej.Reason != "the schema of file y.avro is not a version of subject s-value; the contract c accepts versions 2 of it" {
		t.Errorf("unknown: %d %v %v", v, rej, err)
	}
}

// TestAppendIndexes: Confluent's shortcut for the first message, else
// zigzag varints.
func TestAppendIndexes(t *testing.T) {
	for _, c := range []struct {
		idx  []int
		want string
	}{{nil, "00"}, {[]int{0}, "00"}, {[]int{1}, "0202"}, {[]int{0, 3}, "040006"}} {
		if got := fmt.Sprintf("%x", AppendIndexes(nil, c.idx)); got != c.want {
			t.Errorf("%v: %s, want %s", c.idx, got, c.want)
		}
	}
}
