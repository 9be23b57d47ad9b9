package check_test

import (
	"reflect"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/check"
	"github.com/tidemark/tidemark/contract"
	"github.com/tidemark/tidemark/spec"
)

// withFacts checks a testdata pipeline with facts from the registry and
// the topics, keeping the findings of rules ids.
func withFacts(t *testing.T, path string, facts *check.Facts, ids ...string) []check.Finding {
	t.Helper()
	p, err := tidemark.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := tidemark.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	var out []check.Finding
	for _, f := range check.RunWith(pl.Spec, pl.Contract, now, facts) {
		for _, id := range ids {
			if f.ID == id {
				out = append(out, f)
			}
		}
	}
	return out
}

// TestRegistryCompatibility: TM110 against the registry's answer. A
// level that keeps the contract's promise (BACKWARD, FULL,
// BACKWARD_TRANSITIVE for a BACKWARD contract) is no finding; a weaker one
// (NONE, FORWARD) is an error naming the subject and both levels.
func TestRegistryCompatibility(t *testing.T) {
	const path = "testdata/registry-compatibility-weaker/fail.yaml"
	if got := check.Subjects(mustSpec(t, path)); !reflect.DeepEqual(got, []string{"orders-value"}) {
		t.Errorf("Subjects = %q", got)
	}
	for _, level := range []string{"BACKWARD", "FULL", "BACKWARD_TRANSITIVE", "FULL_TRANSITIVE"} {
		if got := withFacts(t, path, &check.Facts{Asked: true, Compatibility: map[string]string{"orders-value": level}}, "TM110"); len(got) != 0 {
			t.Errorf("%s: %+v", level, got)
		}
	}
	for _, level := range []string{"NONE", "FORWARD"} {
		got := withFacts(t, path, &check.Facts{Asked: true, Compatibility: map[string]string{"orders-value": level}}, "TM110")
		want := []check.Finding{{ID: "TM110", Rule: "registry-compatibility-weaker", Severity: check.Error, Key: "source.schema_registry",
			Why: "subject orders-value has compatibility " + level + " in the registry, weaker than the BACKWARD contract order_paid promises: a producer can register a version the consumers cannot read, and the registry will not refuse it",
			Fix: `set the subject's level: PUT /config/orders-value {"compatibility": "BACKWARD"} (or promise less in the contract's schema_versions.compatibility)`}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", level, got, want)
		}
	}
	got := withFacts(t, path, nil, "TM110")
	if len(got) != 1 || got[0].Severity != check.Info || got[0].Why != "not checked: contract order_paid promises BACKWARD for subject orders-value, and only the registry knows the level it enforces" {
		t.Errorf("without facts: %+v", got)
	}
}

// TestDeprecatedVersionProduced: TM111 warns when records of a deprecated
// version were produced after its date, and says nothing when none were.
func TestDeprecatedVersionProduced(t *testing.T) {
	const path = "testdata/deprecated-version-produced/fail.yaml"
	still := &check.Facts{Asked: true, Compatibility: map[string]string{"orders-value": "BACKWARD"},
		Produced: []check.Produced{{Subject: "orders-value", Version: 1, Since: "2026-07-01", Records: 42}}}
	got := withFacts(t, path, still, "TM111")
	want := []check.Finding{{ID: "TM111", Rule: "deprecated-version-produced", Severity: check.Warning, Key: "source.topics",
		Why: "version 1 of subject orders-value, which contract order_paid deprecated after 2026-06-30, is still produced: 42 records since 2026-07-01; the pipeline still accepts them, but the producers broke the contract's promise",
		Fix: "move the producers to a newer accepted version (or extend the version's deprecated_after, telling the consumers)"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
	stopped := &check.Facts{Asked: true, Produced: []check.Produced{{Subject: "orders-value", Version: 1, Since: "2026-07-01"}}}
	if got := withFacts(t, path, stopped, "TM111"); len(got) != 0 {
		t.Errorf("no records since: %+v", got)
	}
	got = withFacts(t, path, nil, "TM111")
	if len(got) != 1 || got[0].Severity != check.Info || got[0].Why != "not checked: contract order_paid deprecates version 1 (after 2026-06-30) of orders-value, and only the topics show whether producers still write them" {
		t.Errorf("without facts: %+v", got)
	}
	// Not yet past its date: nothing to check.
	if got := check.DeprecatedSince(mustContract(t, path), now.AddDate(0, -6, 0)); len(got) != 0 {
		t.Errorf("DeprecatedSince before the date: %v", got)
	}
	if got := check.DeprecatedSince(mustContract(t, path), now); got[1].Format("2006-01-02") != "2026-07-01" || len(got) != 1 {
		t.Errorf("DeprecatedSince = %v", got)
	}
}

func mustSpec(t *testing.T, path string) (*spec.Pipeline, *contract.Contract) {
	t.Helper()
	p, err := tidemark.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := tidemark.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	return pl.Spec, pl.Contract
}

func mustContract(t *testing.T, path string) *contract.Contract {
	_, c := mustSpec(t, path)
	return c
}
