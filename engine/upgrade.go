package engine

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/task"
)

// Upgrades (docs/checkpoints.md, "Changing a pipeline"; docs/semantics.md):
// a checkpoint restores under a changed pipeline spec when the change
// keeps the meaning of the state — how long to wait and where the results
// go — and is refused, naming the key and why, when it would mix two
// computations: state built under the old key, windows, aggregates,
// filter, fields, dedup key or event time read under the new ones (Flink
// restores a savepoint into a job whose lateness, timeouts and sinks
// changed; one whose operators' state changed shape needs a new job).
//
// Accepted, and what they do from the restore on:
//
//   - allowed_lateness: windows close at end + the new lateness (one the
//     smaller lateness has closed already takes no more events and emits
//     its final row at the next watermark advance);
//   - event_time.out_of_orderness and idle_timeout: the watermark tracker
//     recomputes with them (the watermark never goes back);
//   - event_time.idle_advance, max_future, max_past;
//   - emit.early_every: the schedule goes on at the new period;
//   - slo, checkpoint, parallelism;
//   - sinks and side outputs (late, quarantine, conflicts, contributions)
//     added, removed or changed: a sink with the same destination as one
//     of the checkpoint's continues from it; one with a new destination is
//     a new output that receives the rows from the restore on
//     (recoverSinks).

// compatibleKeys are the spec keys (dotted Go field paths, list indexes
// as [*]) whose change a restore accepts; a key under one of them is
// accepted too, except the sinkRefused ones.
var compatibleKeys = []string{
	"Checkpoint", "Parallelism", "SLO", "State.Memory", "State.Dir",
	"EventTime.OutOfOrderness", "EventTime.IdleTimeout", "EventTime.IdleAdvance",
	"EventTime.MaxFuture", "EventTime.MaxPast",
	"AllowedLateness", "Stages[*].AllowedLateness",
	"Emit.EarlyEvery", "Stages[*].Emit.EarlyEvery",
	"Sinks", "Stages[*].Sinks", "Late", "Stages[*].Late",
	"Quarantine", "Conflicts", "Contributions", "Stages[*].Contributions",
}

// sinkRefused are the keys of a sink whose change is refused: a sink that
// takes part in checkpoints and one that does not keep different state
// (delivery), and a postgres sink's mode decides what its table holds.
var sinkRefused = map[string]string{
	"Delivery": "exactly-once and at-least-once sinks keep different state in the checkpoint",
	"Mode":     "a results table and an event ledger hold different things",
}

// refusedWhy explains, by key prefix (first match), why a change is
// refused.
var refusedWhy = []struct{ prefix, why string }{
	{"Source", "the checkpoint's source position belongs to the old source"},
	{"State.Backend", "the checkpoint holds the state as the old backend keeps it (sections of the memory backend's structures, or the disk backend's SST files), and a restore does not convert one into the other (finish or stop the run under the old backend, or recompute from the start with a new checkpoint.dir)"},
	{"EventTime.IngestTimeField", "the source would decode other fields than the checkpoint counted"},
	{"EventTime", "the windows hold events placed by the old event time"},
	{"Stages[*].EventTime", "the windows hold events placed by the old event time"},
	{"Key", "the windows' state is keyed by it"},
	{"Stages[*].Key", "the windows' state is keyed by it"},
	{"Window", "the open windows hold state of the old windows"},
	{"Stages[*].Window", "the open windows hold state of the old windows"},
	{"Aggregates", "the accumulators hold the old aggregates"},
	{"Stages[*].Aggregates", "the accumulators hold the old aggregates"},
	{"Filter", "the windows hold the events the old filter kept"},
	{"Stages[*].Filter", "the windows hold the events the old filter kept"},
	{"Fields", "the windows hold values the old derived fields computed"},
	{"Stages[*].Fields", "the windows hold values the old derived fields computed"},
	{"Select", "a select stage's output is fixed by its fields"},
	{"Stages[*].Select", "a select stage's output is fixed by its fields"},
	{"Dedup.Key", "the remembered event ids are of the old dedup key"},
	{"Dedup", "the remembered event ids were kept under the old dedup settings"},
	{"OrderBy", "the entities' versions were kept under the old order_by"},
	{"Emit.Mode", "the rows and versions emitted so far follow the old emit mode"},
	{"Stages[*].Emit.Mode", "the rows and versions emitted so far follow the old emit mode"},
	{"Stages", "the state belongs to the old stages"},
	{"Inputs", "the checkpoint's positions and join state belong to the old inputs"},
	{"Reference", "the windows hold values joined from the old reference data"},
	{"Contract", "the records were typed and checked by the old contract"},
}

// normKey replaces list indexes in a flattened key by [*].
func normKey(k string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(k, '[')
		if i < 0 {
			b.WriteString(k)
			return b.String()
		}
		j := strings.IndexByte(k[i:], ']')
		if j < 0 {
			b.WriteString(k)
			return b.String()
		}
		b.WriteString(k[:i] + "[*]")
		k = k[i+j+1:]
	}
}

// keyUnder reports whether key k is p or lies under p.
func keyUnder(k, p string) bool {
	return k == p || strings.HasPrefix(k, p+".") || strings.HasPrefix(k, p+"[")
}

// sinkPrefixes are the flattened prefixes of a spec's sinks.
var sinkPrefixes = []string{"Sinks[*]", "Stages[*].Sinks[*]", "Late.Sink", "Stages[*].Late.Sink",
	"Quarantine.Sink", "Conflicts.Sink", "Contributions.Sink", "Stages[*].Contributions.Sink"}

// refusal returns why a change of key k (flattened) is refused, or "" when
// a restore accepts it.
func refusal(k string) string {
	n := normKey(k)
	for _, p := range sinkPrefixes {
		if keyUnder(n, p) {
			if why, ok := sinkRefused[strings.TrimPrefix(n, p+".")]; ok {
				return why
			}
		}
	}
	for _, p := range compatibleKeys {
		if keyUnder(n, p) {
			return ""
		}
	}
	for _, r := range refusedWhy {
		if keyUnder(n, r.prefix) {
			return r.why
		}
	}
	return "state kept under the old value would be read under the new one"
}

// specChanges lists the changes between two spec JSON documents (flattened
// to dotted paths) that a restore refuses, each with its key, the two
// values and why: `window.size ("1m0s" → "2m0s") changed: the open windows
// hold state of the old windows`. Accepted changes (compatibleKeys) are left
// out.
func specChanges(old, cur []byte) []string {
	var out []string
	for _, c := range diffSpecs(old, cur) {
		if why := refusal(c.key); why != "" {
			out = append(out, c.text+" changed: "+why)
		}
	}
	return out
}

// PlanFingerprint returns the fingerprint of a compiled pipeline's state
// (its spec after defaults, as a checkpoint records it): sha256 over
// every spec key whose change a restore refuses (refusal), with its
// value, in key order, written "sha256:" and the first 16 hex digits. Two
// specs have the same fingerprint exactly when a checkpoint of one
// restores under the other: what a restore accepts (sinks' destinations,
// lateness, checkpoints, parallelism, …) is left out, so reformatting a
// file, renaming an alias of its SQL form or changing a compatible key
// leaves it as it is. The YAML and the SQL form of a job print the same
// fingerprint (tidemark explain).
func PlanFingerprint(p *spec.Pipeline) (string, error) {
	b, err := SpecJSON(p)
	if err != nil {
		return "", err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "", err
	}
	flat := map[string]string{}
	flatten("", v, flat)
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(flat)) {
		if refusal(k) == "" {
			continue
		}
		fmt.Fprintf(h, "%s=%s\n", k, flat[k])
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil)[:8]), nil
}

// StateChanges lists, stage by stage, the state an edit from old to cur
// (compiled specs) would discard: every change a restore refuses, with
// the key, the two values and why (specChanges), grouped under the stage
// it concerns (`stage revenue: window.size ("1m0s" → "2m0s"): the open
// windows hold state of the old windows`) or "pipeline" for keys outside
// the stages. Empty when a checkpoint of old restores under cur.
func StateChanges(old, cur *spec.Pipeline) ([]string, error) {
	a, err := SpecJSON(old)
	if err != nil {
		return nil, err
	}
	b, err := SpecJSON(cur)
	if err != nil {
		return nil, err
	}
	fa, fb, ok := flatSpecs(a, b)
	if !ok {
		return nil, errors.New("the specs do not parse")
	}
	stageOf := func(k string, f map[string]string) string {
		if rest, ok := strings.CutPrefix(k, "Stages["); ok {
			i := rest[:strings.IndexByte(rest, ']')]
			if n, ok := f["Stages["+i+"].Name"]; ok {
				name, _ := strconv.Unquote(n)
				return "stage " + name
			}
			return "stage " + i
		}
		switch {
		case strings.HasPrefix(k, "Source"), strings.HasPrefix(k, "EventTime"), strings.HasPrefix(k, "Dedup"),
			strings.HasPrefix(k, "OrderBy"), strings.HasPrefix(k, "Contract"), strings.HasPrefix(k, "Reference"),
			strings.HasPrefix(k, "Inputs"), k == "Name", strings.HasPrefix(k, "KeyGroups"), strings.HasPrefix(k, "State"):
			return "pipeline"
		}
		name, _ := strconv.Unquote(f["Name"])
		return "stage " + name
	}
	var out []string
	for _, c := range diffSpecs(a, b) {
		why := refusal(c.key)
		if why == "" {
			continue
		}
		where := stageOf(c.key, fb)
		if _, inCur := fb[c.key]; !inCur {
			where = stageOf(c.key, fa)
		}
		out = append(out, fmt.Sprintf("%s: %s: %s", where, c.text, why))
	}
	return out, nil
}

// acceptedChanges lists the changes a restore accepts, described as in
// specChanges without a reason.
func acceptedChanges(old, cur []byte) []string {
	var out []string
	for _, c := range diffSpecs(old, cur) {
		if refusal(c.key) == "" {
			out = append(out, c.text)
		}
	}
	return out
}

type specChange struct{ key, text string }

// SpecChange is one flattened key of a pipeline spec (Go field names
// joined by ".", "Stages[0].Window.Size") whose value differs between two
// specs, and the text a refusal shows of it ("key: old → new").
type SpecChange struct{ Key, Text string }

// SpecChanges compares two specs in SpecJSON's encoding and returns every
// flattened key whose value differs, sorted by key (one "(spec)" entry
// when either does not parse): the comparison a restore's refusal and a
// group instance joining a group (package engine/group) both make.
func SpecChanges(old, cur []byte) []SpecChange {
	var out []SpecChange
	for _, c := range diffSpecs(old, cur) {
		out = append(out, SpecChange{Key: c.key, Text: c.text})
	}
	return out
}

// diffSpecs returns every flattened key whose value differs, sorted.
func diffSpecs(old, cur []byte) []specChange {
	fa, fb, ok := flatSpecs(old, cur)
	if !ok {
		return []specChange{{key: "(spec)", text: "(the spec does not parse)"}}
	}
	keys := map[string]bool{}
	for k, v := range fa {
		if fb[k] != v {
			keys[k] = true
		}
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			keys[k] = true
		}
	}
	var out []specChange
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		out = append(out, specChange{k, change(k, fa, fb)})
	}
	return out
}

func flatSpecs(old, cur []byte) (fa, fb map[string]string, ok bool) {
	var a, b any
	if json.Unmarshal(old, &a) != nil || json.Unmarshal(cur, &b) != nil {
		return nil, nil, false
	}
	fa, fb = map[string]string{}, map[string]string{}
	flatten("", a, fa)
	flatten("", b, fb)
	// A spec from before state.backend existed ran the memory backend.
	for _, m := range []map[string]string{fa, fb} {
		if _, ok := m["State.Backend"]; !ok {
			m["State.Backend"] = `"memory"`
		}
	}
	return fa, fb, true
}

// change describes the change of key k: `window.size ("1m0s" → "2m0s")`.
func change(k string, fa, fb map[string]string) string {
	key, t := yamlKey(k)
	show := func(m map[string]string) string {
		v, ok := m[k]
		if !ok {
			return "unset"
		}
		if t == reflect.TypeFor[spec.Duration]() {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return strconv.Quote(time.Duration(n).String())
			}
		}
		return htmlUnescaper.Replace(v)
	}
	return fmt.Sprintf("%s (%s → %s)", key, show(fa), show(fb))
}

// htmlUnescaper undoes encoding/json's HTML escapes in the values a
// message quotes (a filter "amount > 500", not "amount \u003e 500").
var htmlUnescaper = strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")

// yamlKey turns a path of Go field names in spec.Pipeline
// ("Stages[0].Window.Size") into the pipeline file's key
// ("stages[0].window.size"), and returns the field's type (nil when a
// part cannot be mapped; that part stays as it is).
func yamlKey(path string) (string, reflect.Type) {
	t := reflect.TypeOf(spec.Pipeline{})
	var out []string
	for _, part := range strings.Split(path, ".") {
		name, idx, _ := strings.Cut(part, "[")
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice) {
			t = t.Elem()
		}
		key := name
		if t != nil && t.Kind() == reflect.Struct {
			if f, ok := t.FieldByName(name); ok {
				if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); tag != "" && tag != "-" {
					key = tag
				}
				t = f.Type
			} else {
				t = nil
			}
		} else {
			t = nil
		}
		if idx != "" {
			key += "[" + idx
		}
		out = append(out, key)
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.Join(out, "."), t
}

func flatten(prefix string, v any, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, x, out)
		}
	case []any:
		for i, x := range v {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), x, out)
		}
	case nil:
		// absent and null are the same
	default:
		if t, ok := v.(string); ok && isFieldTypeKey(prefix) {
			// A declared type by its canonical name: "integer" and
			// "int" declare the same type (spec.CanonicalType).
			v = spec.CanonicalType(t)
		}
		b, _ := json.Marshal(v)
		if string(b) == `""` || string(b) == "0" || string(b) == "false" {
			return // zero values equal absent ones
		}
		out[prefix] = string(b)
	}
}

// specSink is one sink of a spec: its committer id (registerSink's), its
// destination (the sink's keys but those that only tune it) and its
// delivery.
type specSink struct {
	id, dest, delivery string
}

// tuningKeys are the sink keys that change how a sink writes, not where:
// a sink whose other keys are the same has the same destination.
var tuningKeys = map[string]bool{"Retries": true, "Lineage": true, "Replace": true, "TransactionTimeout": true, "ClientID": true, "Delivery": true}

// specSinks lists the sinks of a flattened spec with their committer ids,
// as open.go names them.
func specSinks(f map[string]string) []specSink {
	var out []specSink
	add := func(id, prefix string) {
		var parts []string
		found := false
		for _, k := range slices.Sorted(maps.Keys(f)) {
			rest, ok := strings.CutPrefix(k, prefix+".")
			if !ok {
				continue
			}
			found = true
			if !tuningKeys[rest] {
				parts = append(parts, rest+"="+f[k])
			}
		}
		if found {
			out = append(out, specSink{id: id, dest: strings.Join(parts, " "), delivery: f[prefix+".Delivery"]})
		}
	}
	stage := func(name, prefix string) {
		for i := 0; ; i++ {
			p := fmt.Sprintf("%sSinks[%d]", prefix, i)
			if !hasPrefix(f, p+".") {
				break
			}
			add(fmt.Sprintf("%s: sinks[%d]", name, i), p)
		}
		add(name+": contributions.sink", prefix+"Contributions.Sink")
		add(name+": late.sink", prefix+"Late.Sink")
	}
	if hasPrefix(f, "Stages[0].") {
		for i := 0; hasPrefix(f, fmt.Sprintf("Stages[%d].", i)); i++ {
			name, _ := strconv.Unquote(f[fmt.Sprintf("Stages[%d].Name", i)])
			stage(name, fmt.Sprintf("Stages[%d].", i))
		}
	} else {
		name, _ := strconv.Unquote(f["Name"])
		stage(name, "")
	}
	add("quarantine.sink", "Quarantine.Sink")
	add("conflicts.sink", "Conflicts.Sink")
	return out
}

func hasPrefix(f map[string]string, p string) bool {
	for k := range f {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// recoverSinks brings every sink taking part in checkpoints to checkpoint
// c (manifest m). A sink with the destination of one of the checkpoint's
// sinks (the same id first, else any: sinks may have moved in their
// lists) recovers from what that sink prepared. A sink with a new
// destination — added since the checkpoint, or pointed elsewhere — is a
// new output: it starts empty, as in a fresh run, and receives the rows
// from the restore on; the log says so. A sink whose delivery changed is
// refused (sinkRefused).
func (rt *runtime) recoverSinks(ctx context.Context, c *checkpoint.Checkpoint, m *manifest) error {
	ck := rt.ck
	fa, fb, ok := flatSpecs(c.Spec, ck.spec)
	if !ok {
		return fmt.Errorf("checkpoint %d in %s: the spec does not parse", c.ID, ck.dir)
	}
	old, cur := specSinks(fa), specSinks(fb)
	dest := func(list []specSink, id string) (specSink, bool) {
		for _, s := range list {
			if s.id == id {
				return s, true
			}
		}
		return specSink{}, false
	}
	for _, s := range ck.committers {
		ns, _ := dest(cur, s.id)
		from := ""
		if was, ok := dest(old, s.id); ok && was.dest == ns.dest {
			from = s.id
		} else {
			for _, was := range old {
				if was.dest == ns.dest {
					from = was.id
					break
				}
			}
		}
		p, ok := m.prepared[from]
		if from != "" && !ok {
			was, _ := dest(old, from)
			return fmt.Errorf("checkpoint %d in %s: %s: delivery (%s → %s) changed: %s; use a new checkpoint.dir, or keep its delivery", c.ID, ck.dir, s.id, orDefault(was.delivery), orDefault(ns.delivery), sinkRefused["Delivery"])
		}
		if from == "" {
			rt.logf("restore: %s is a new output since checkpoint %d: it starts empty and receives the rows from here on", s.id, c.ID)
			if err := s.c.Recover(ctx, 0, nil); err != nil {
				return fmt.Errorf("%s: starting as a new output: %w", s.id, err)
			}
			continue
		}
		if from != s.id {
			rt.logf("restore: %s continues %s of checkpoint %d (same destination)", s.id, from, c.ID)
		}
		if err := s.c.Recover(ctx, c.ID, p); err != nil {
			return fmt.Errorf("%s: recovering checkpoint %d: %w", s.id, c.ID, err)
		}
	}
	if changed := acceptedChanges(c.Spec, ck.spec); len(changed) > 0 {
		rt.logf("restore: checkpoint %d was taken under another spec; these changes keep its state's meaning and apply from here on: %s", c.ID, strings.Join(changed, ", "))
	}
	return nil
}

// closedHorizons fills in the closed horizon of each stage that a version
// 4 manifest lacks (operator.Globals.ClosedThrough: the largest window end
// closed) from the checkpoint's watermark and the allowed lateness of the
// spec it was taken under: windows closed under that lateness stay closed
// under a larger one. A spec that does not decode leaves them unset (the
// restored operators then use their own lateness).
func closedHorizons(oldSpec []byte, g *task.Globals) {
	if g.Watermark == changelog.WatermarkNone {
		return
	}
	var old spec.Pipeline
	if json.Unmarshal(oldSpec, &old) != nil {
		return
	}
	stages := old.StageList()
	for i := range g.Ops {
		if g.Ops[i].ClosedThrough != changelog.WatermarkNone || i >= len(stages) {
			continue
		}
		l := stages[i].AllowedLateness.Ms()
		switch {
		case g.Watermark == changelog.WatermarkInfinity:
			g.Ops[i].ClosedThrough = g.Watermark
		case g.Watermark >= changelog.WatermarkNone+l:
			g.Ops[i].ClosedThrough = g.Watermark - l
		}
	}
}

// orDefault renders a sink's delivery ("" is the default).
func orDefault(d string) string {
	if d == "" {
		return "default"
	}
	return d
}

// isFieldTypeKey reports whether a flattened spec key is the type of a
// declared field: an entry of a spec.FieldTypes (a source's Schema, a
// reference's Fields), `…Schema[i].Type` or `…Fields[i].Type`.
func isFieldTypeKey(k string) bool {
	if !strings.HasSuffix(k, "].Type") {
		return false
	}
	i := strings.LastIndexByte(k, '[')
	return i > 0 && (strings.HasSuffix(k[:i], "Schema") || strings.HasSuffix(k[:i], "Fields"))
}
