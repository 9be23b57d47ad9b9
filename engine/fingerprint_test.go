package engine

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/spec"
)

// TestPlanFingerprintMatchesRestore: two specs have one fingerprint
// exactly when a restore refuses none of their differences (specChanges
// is empty): edits a restore accepts keep it, each refused one changes it;
// StateChanges names the refused ones by stage.
func TestPlanFingerprintMatchesRestore(t *testing.T) {
	parse := func(y string) *spec.Pipeline {
		p, err := spec.Parse("p.yaml", []byte(y))
		if err != nil {
			t.Fatalf("%v\n%s", err, y)
		}
		return p
	}
	base := parse(upgradeBase)
	fp, err := PlanFingerprint(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, old, new string
		keeps          bool
		change         string // StateChanges's line, for a refused edit
	}{
		{"lateness", "allowed_lateness: 3m\n    aggregates: {n:", "allowed_lateness: 9m\n    aggregates: {n:", true, ""},
		{"sink path", "out/per_store.jsonl", "out/other.jsonl", true, ""},
		{"late sink", "out/late.jsonl", "out/late2.jsonl", true, ""},
		{"out_of_orderness", "out_of_orderness: 10s", "out_of_orderness: 1m", true, ""},
		{"checkpoint dir", "dir: out/ck", "dir: out/ck2", true, ""},
		{"window", "window: {type: tumbling, size: 1m}\n    allowed_lateness: 3m\n    aggregates: {n:", "window: {type: tumbling, size: 2m}\n    allowed_lateness: 3m\n    aggregates: {n:", false,
			`stage per_store: stages[0].window.size ("1m0s" → "2m0s"): the open windows hold state of the old windows`},
		{"filter", "amount > 0", "amount > 1", false, `stage per_store: stages[0].filter ("amount > 0" → "amount > 1"): the windows hold the events the old filter kept`},
		{"aggregate", "stores: count()", "stores: count(store)", false, `stage per_minute: stages[1].aggregates[0].Expr ("count()" → "count(store)"): the accumulators hold the old aggregates`},
		{"dedup", "ttl: 1h", "ttl: 2h", false, `pipeline: dedup.ttl ("1h0m0s" → "2h0m0s"): the remembered event ids were kept under the old dedup settings`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := strings.Replace(upgradeBase, tc.old, tc.new, 1)
			if y == upgradeBase {
				t.Fatalf("edit %q changes nothing", tc.old)
			}
			p := parse(y)
			got, err := PlanFingerprint(p)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := SpecJSON(base)
			b, _ := SpecJSON(p)
			refused := specChanges(a, b)
			if (got == fp) != tc.keeps || (len(refused) == 0) != tc.keeps {
				t.Fatalf("fingerprint kept %v, refused changes %v; want kept %v", got == fp, refused, tc.keeps)
			}
			ch, err := StateChanges(base, p)
			if err != nil {
				t.Fatal(err)
			}
			if tc.keeps {
				if len(ch) != 0 {
					t.Fatalf("StateChanges = %v, want none", ch)
				}
				return
			}
			if len(ch) != 1 || ch[0] != tc.change {
				t.Fatalf("StateChanges = %q\nwant [%q]", ch, tc.change)
			}
		})
	}
}
