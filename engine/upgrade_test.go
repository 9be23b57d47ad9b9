package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/task"
)

// upgradeBase is the pipeline the spec-change cases edit.
const upgradeBase = `name: revenue
source: {type: file, path: in.jsonl, arrival_time_field: at, partition_field: p}
event_time: {field: ts, out_of_orderness: 10s, idle_timeout: 1m}
dedup: {key: id, ttl: 1h}
quarantine: {sink: {type: jsonl, path: out/q.jsonl}}
checkpoint: {dir: out/ck}
stages:
  - name: per_store
    filter: amount > 0
    fields: {big: amount > 100}
    key: [store]
    window: {type: tumbling, size: 1m}
    allowed_lateness: 3m
    aggregates: {n: count(), total: sum(amount)}
    emit: {mode: retract}
    late: {policy: side_output, sink: {type: jsonl, path: out/late.jsonl}}
    sinks: [{type: jsonl, path: out/per_store.jsonl}]
  - name: per_minute
    input: per_store
    fields: {w: window_start}
    key: [w]
    window: {type: tumbling, size: 1m}
    allowed_lateness: 3m
    aggregates: {stores: count()}
    sinks: [{type: jsonl, path: out/per_minute.jsonl}]
`

func upgradeSpec(t *testing.T, edit func(string) string) []byte {
	t.Helper()
	y := upgradeBase
	if edit != nil {
		y = edit(y)
	}
	p, err := spec.Parse("p.yaml", []byte(y))
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	b, err := SpecJSON(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func replace(old, new string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, old) {
			panic("no " + old)
		}
		return strings.Replace(s, old, new, 1)
	}
}

// TestSpecChangesAccepted: the changes that keep state's meaning are
// accepted (and listed as such): allowed lateness, out_of_orderness, idle
// timeout and advance, the timestamp rules, the early-firing interval,
// SLOs, checkpoint settings, parallelism, and sinks and side outputs
// added or changed. Every one was refused ("restoring it would mix two
// computations").
func TestSpecChangesAccepted(t *testing.T) {
	for name, edit := range map[string]func(string) string{
		"allowed lateness":      replace("allowed_lateness: 3m\n    aggregates: {n:", "allowed_lateness: 5m\n    aggregates: {n:"),
		"downstream lateness":   replace("allowed_lateness: 3m\n    aggregates: {stores", "allowed_lateness: 10m\n    aggregates: {stores"),
		"out_of_orderness":      replace("out_of_orderness: 10s", "out_of_orderness: 30s"),
		"idle timeout":          replace("idle_timeout: 1m", "idle_timeout: 5m"),
		"idle advance":          replace("idle_timeout: 1m", "idle_timeout: 1m, idle_advance: true"),
		"max_future off":        replace("idle_timeout: 1m", "idle_timeout: 1m, max_future: 0s"),
		"max_past":              replace("idle_timeout: 1m", "idle_timeout: 1m, max_past: 720h"),
		"early firings":         replace("emit: {mode: retract}", "emit: {mode: retract, early_every: 30s}"),
		"slo":                   replace("checkpoint: {dir: out/ck}", "checkpoint: {dir: out/ck}\nslo: {event_time_lag_p95: 3m}"),
		"checkpoint interval":   replace("checkpoint: {dir: out/ck}", "checkpoint: {dir: out/ck, interval: 1m, retain: 5}"),
		"parallelism":           replace("checkpoint: {dir: out/ck}", "checkpoint: {dir: out/ck}\nparallelism: 4"),
		"a sink added":          replace("sinks: [{type: jsonl, path: out/per_store.jsonl}]", "sinks: [{type: jsonl, path: out/per_store.jsonl}, {type: sqlite, path: out/r.db}]"),
		"a sink moved":          replace("out/per_minute.jsonl", "out/minutes.jsonl"),
		"a late sink moved":     replace("out/late.jsonl", "out/late2.jsonl"),
		"late events dropped":   replace("late: {policy: side_output, sink: {type: jsonl, path: out/late.jsonl}}", "late: {policy: drop}"),
		"conflicts kept":        replace("checkpoint: {dir: out/ck}", "checkpoint: {dir: out/ck}\nconflicts: {sink: {type: jsonl, path: out/c.jsonl}}"),
		"quarantine sink moved": replace("out/q.jsonl", "out/quarantine.jsonl"),
		"contributions added":   replace("emit: {mode: retract}", "emit: {mode: retract}\n    contributions: {sink: {type: jsonl, path: out/contrib.jsonl}}"),
	} {
		t.Run(name, func(t *testing.T) {
			old, cur := upgradeSpec(t, nil), upgradeSpec(t, edit)
			if got := specChanges(old, cur); len(got) > 0 {
				t.Fatalf("refused: %q", got)
			}
			if got := acceptedChanges(old, cur); len(got) == 0 {
				t.Fatal("no change seen")
			}
		})
	}
}

// TestSpecChangesRefused: the changes that would mix two computations are
// refused, naming the key, both values and why.
func TestSpecChangesRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(string) string
		want string
	}{
		{"key", replace("key: [store]", "key: [store, currency]"),
			`stages[0].key[1] (unset → "currency") changed: the windows' state is keyed by it`},
		{"window size", replace("window: {type: tumbling, size: 1m}\n    allowed_lateness: 3m\n    aggregates: {n:", "window: {type: tumbling, size: 2m}\n    allowed_lateness: 3m\n    aggregates: {n:"),
			`stages[0].window.size ("1m0s" → "2m0s") changed: the open windows hold state of the old windows`},
		{"aggregates", replace("total: sum(amount)", "total: max(amount)"),
			`stages[0].aggregates[1].Expr ("sum(amount)" → "max(amount)") changed: the accumulators hold the old aggregates`},
		{"filter", replace("filter: amount > 0", "filter: amount >= 0"),
			`stages[0].filter ("amount > 0" → "amount >= 0") changed: the windows hold the events the old filter kept`},
		{"fields", replace("big: amount > 100", "big: amount > 200"),
			`stages[0].fields[0].Expr ("amount > 100" → "amount > 200") changed: the windows hold values the old derived fields computed`},
		{"dedup key", replace("dedup: {key: id, ttl: 1h}", "dedup: {key: order_id, ttl: 1h}"),
			`dedup.key ("id" → "order_id") changed: the remembered event ids are of the old dedup key`},
		{"event-time field", replace("event_time: {field: ts,", "event_time: {field: paid_at,"),
			`event_time.field ("ts" → "paid_at") changed: the windows hold events placed by the old event time`},
		{"emit mode", replace("aggregates: {stores: count()}", "aggregates: {stores: count()}\n    emit: {mode: final}"),
			`stages[1].emit.mode ("update" → "final") changed: the rows and versions emitted so far follow the old emit mode`},
		{"sink delivery", replace("out/per_minute.jsonl}", "out/per_minute.jsonl, delivery: at_least_once}"),
			`stages[1].sinks[0].delivery (unset → "at_least_once") changed: exactly-once and at-least-once sinks keep different state in the checkpoint`},
		{"source path", replace("path: in.jsonl", "path: other.jsonl"),
			`source.path ("in.jsonl" → "other.jsonl") changed: the checkpoint's source position belongs to the old source`},
		{"state backend", replace("checkpoint: {dir: out/ck}", "checkpoint: {dir: out/ck}\nstate: {backend: disk}"),
			`state.backend ("memory" → "disk") changed: the checkpoint holds the state as the old backend keeps it`},
		{"a stage renamed", replace("name: per_minute", "name: minutes"),
			`stages[1].name ("per_minute" → "minutes") changed: the state belongs to the old stages`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := specChanges(upgradeSpec(t, nil), upgradeSpec(t, tc.edit))
			if !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Fatalf("refusals:\n%s\nwant one:\n%s", strings.Join(got, "\n"), tc.want)
			}
		})
	}
}

// TestSpecSinks: every sink of a spec gets the committer id open.go gives
// it, and a sink's destination ignores its tuning keys.
func TestSpecSinks(t *testing.T) {
	withDB := replace("sinks: [{type: jsonl, path: out/per_minute.jsonl}]", "sinks: [{type: sqlite, path: out/r.db}]")
	fa, fb, ok := flatSpecs(upgradeSpec(t, withDB), upgradeSpec(t, func(s string) string {
		return replace("out/r.db}", "out/r.db, lineage: false, replace: true}")(withDB(s))
	}))
	if !ok {
		t.Fatal("spec does not parse")
	}
	var ids []string
	for _, s := range specSinks(fa) {
		ids = append(ids, s.id)
	}
	want := "per_store: sinks[0] per_store: late.sink per_minute: sinks[0] quarantine.sink"
	if got := strings.Join(ids, " "); got != want {
		t.Fatalf("ids %q, want %q", got, want)
	}
	a, b := specSinks(fa), specSinks(fb)
	if a[2].dest != b[2].dest || a[2].dest == "" || a[0].dest == a[2].dest {
		t.Fatalf("destinations %q / %q / %q", a[0].dest, a[2].dest, b[2].dest)
	}
}

// TestClosedHorizons: a version 4 manifest has no closed horizon; it is
// the checkpoint's watermark minus the allowed lateness of the spec the
// checkpoint was taken under, per stage.
func TestClosedHorizons(t *testing.T) {
	old := upgradeSpec(t, replace("allowed_lateness: 3m\n    aggregates: {stores", "allowed_lateness: 7m\n    aggregates: {stores"))
	g := task.Globals{Watermark: 100 * 60_000, Ops: []operator.Globals{{ClosedThrough: changelog.WatermarkNone}, {ClosedThrough: changelog.WatermarkNone}}}
	closedHorizons(old, &g)
	if a, b := g.Ops[0].ClosedThrough, g.Ops[1].ClosedThrough; a != 97*60_000 || b != 93*60_000 {
		t.Fatalf("horizons %d, %d", a, b)
	}
	g.Ops[0].ClosedThrough = 5 // a version 5 manifest's horizon stays
	closedHorizons(old, &g)
	if g.Ops[0].ClosedThrough != 5 {
		t.Fatal("a stored horizon was replaced")
	}
}

// TestSpecBeforeStateBackend: a checkpoint's spec from before the state
// keys existed ran the memory backend: it restores under memory, and is
// refused under disk.
func TestSpecBeforeStateBackend(t *testing.T) {
	cur := upgradeSpec(t, nil)
	var m map[string]any
	if err := json.Unmarshal(cur, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["State"]; !ok {
		t.Fatal("the spec has no State")
	}
	delete(m, "State")
	old, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if got := specChanges(old, cur); len(got) > 0 {
		t.Fatalf("refused: %q", got)
	}
	disk := upgradeSpec(t, replace("checkpoint: {dir: out/ck}", "checkpoint: {dir: out/ck}\nstate: {backend: disk, memory: 64MiB}"))
	got := strings.Join(specChanges(old, disk), "\n")
	if !strings.Contains(got, `state.backend ("memory" → "disk") changed`) || strings.Contains(got, "state.memory") {
		t.Fatalf("refusals under disk:\n%s", got)
	}
}

// TestSpecTypeAliases: a schema that names a type by one of its accepted
// aliases (docs/pipeline.md, source.schema: integer, int64 and long for
// int, ...) declares the same type, so a checkpoint of one restores
// under the other and both have the same plan fingerprint; a change of
// the type itself (int → decimal) is still refused. Before, "int" →
// "integer" refused the restore (source.schema[0].Type changed).
func TestSpecTypeAliases(t *testing.T) {
	withType := func(typ string) func(string) string {
		return replace("partition_field: p}", "partition_field: p, schema: {amount: "+typ+", ok: bool, at: timestamp, note: string}}")
	}
	fingerprint := func(edit func(string) string) string {
		t.Helper()
		p, err := spec.Parse("p.yaml", []byte(edit(upgradeBase)))
		if err != nil {
			t.Fatal(err)
		}
		fp, err := PlanFingerprint(p)
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	for canon, aliases := range map[string][]string{"int": {"integer", "int64", "long"}, "decimal": {"number", "numeric"}} {
		for _, alias := range aliases {
			old, cur := upgradeSpec(t, withType(canon)), upgradeSpec(t, withType(alias))
			if got := specChanges(old, cur); len(got) > 0 {
				t.Errorf("%s → %s refused: %q", canon, alias, got)
			}
			if got := specChanges(cur, old); len(got) > 0 {
				t.Errorf("%s → %s refused: %q", alias, canon, got)
			}
			if a, b := fingerprint(withType(canon)), fingerprint(withType(alias)); a != b {
				t.Errorf("fingerprint with %s %s, with %s %s", canon, a, alias, b)
			}
		}
	}
	other := func(s string) string {
		return strings.NewReplacer("ok: bool", "ok: boolean", "at: timestamp", "at: time", "note: string", "note: text").Replace(withType("int")(s))
	}
	if got := specChanges(upgradeSpec(t, withType("int")), upgradeSpec(t, other)); len(got) > 0 {
		t.Errorf("boolean, time, text for bool, timestamp, string refused: %q", got)
	}
	got := specChanges(upgradeSpec(t, withType("int")), upgradeSpec(t, withType("decimal")))
	if len(got) != 1 || !strings.Contains(got[0], `"int" → "decimal"`) {
		t.Errorf("int → decimal: %q, want one refusal naming both types", got)
	}
	if fingerprint(withType("integer")) == fingerprint(withType("decimal")) {
		t.Error("integer and decimal have the same fingerprint")
	}
}
