package scaletest

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/pgtest"
)

// The read_committed output of a changelog topic, and what "no duplicate
// and no missing record" means for it. A result row is identified by its
// window and key (window_start and the key columns: the Kafka record
// key) and its version; the stage emits, per row, the versions 1, 2, … n
// in order (update mode: an insert, then update_after rows; retract
// mode: each update_after preceded by an update_before that retracts
// the previous version's values), and only version n is final. All of a
// row's records are on one partition (the key picks it), in offset
// order. So a topic has no duplicate when no (row, version) appears
// twice, and none missing when every row's versions run from 1 to a
// final version without a gap and an update_before precedes every
// update_after of a retract stream — anything else (a version repeated
// after a rebalance, a version skipped, a non-final last record, records
// after the final one) is reported.

// resultRow is one record of a result topic.
type resultRow struct {
	key       string // window_start|key columns
	op        string
	version   int64
	final     bool
	partition int32
	offset    int64
	// values is the row's comparable text: every column but version, op,
	// lineage, watermark_at and updated_at (which depend on when and how
	// often the row was emitted), sorted by name.
	values string
	fields map[string]any
}

// parseRows decodes a result topic's records.
func parseRows(t *testing.T, topic string, sc stageCheck, recs []record) []resultRow {
	t.Helper()
	out := make([]resultRow, 0, len(recs))
	for _, r := range recs {
		m := decodeObject(r.value)
		if m == nil {
			t.Fatalf("%s partition %d offset %d: not a JSON object: %s", topic, r.partition, r.offset, r.value)
		}
		v, err := m["version"].(json.Number).Int64()
		if err != nil {
			t.Fatalf("%s partition %d offset %d: version: %s", topic, r.partition, r.offset, r.value)
		}
		key := fmt.Sprint(m["window_start"])
		for _, k := range sc.keys {
			key += "|" + jsonText(m[k])
		}
		var names []string
		for k := range m {
			switch k {
			case "version", "op", "lineage", "watermark_at", "updated_at":
			default:
				names = append(names, k)
			}
		}
		slices.Sort(names)
		var vals strings.Builder
		for _, k := range names {
			fmt.Fprintf(&vals, "%s=%s ", k, jsonText(m[k]))
		}
		final, _ := m["is_final"].(bool)
		out = append(out, resultRow{key: key, op: fmt.Sprint(m["op"]), version: v, final: final,
			partition: r.partition, offset: r.offset, values: vals.String(), fields: m})
	}
	return out
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// checkChangelog checks a result topic for duplicates and gaps (above)
// and returns each row's final record. retract says the stage emits
// update_before rows.
func checkChangelog(t *testing.T, topic string, rows []resultRow, retract bool) map[string]resultRow {
	t.Helper()
	byKey := map[string][]resultRow{}
	var order []string
	for _, r := range rows {
		if _, ok := byKey[r.key]; !ok {
			order = append(order, r.key)
		}
		byKey[r.key] = append(byKey[r.key], r)
	}
	finals := map[string]resultRow{}
	bad := 0
	fail := func(key string, format string, args ...any) {
		bad++
		if bad <= 5 {
			var seq []string
			for _, r := range byKey[key] {
				seq = append(seq, fmt.Sprintf("%s v%d final=%v @%d/%d", r.op, r.version, r.final, r.partition, r.offset))
			}
			t.Errorf("%s: row %s: %s; its records: %s", topic, key, fmt.Sprintf(format, args...), strings.Join(seq, ", "))
		}
	}
	for _, key := range order {
		seq := byKey[key]
		var last *resultRow // the last insert or update_after
		ok := true
		for i := range seq {
			r := &seq[i]
			if r.partition != seq[0].partition {
				fail(key, "records on partitions %d and %d", seq[0].partition, r.partition)
				ok = false
				break
			}
			if last != nil && last.final {
				fail(key, "a record after the final one (offset %d)", r.offset)
				ok = false
				break
			}
			switch r.op {
			case "insert", "update_after", "delete":
				want := int64(1)
				if last != nil {
					want = last.version + 1
				}
				// An insert starts a row: its first version, or the one
				// after a delete (a stage reading another stage deletes a
				// row whose inputs were all retracted, then inserts it
				// again).
				starts := last == nil || last.op == "delete"
				if r.version != want || (r.op == "insert") != starts {
					fail(key, "%s version %d where version %d was due (a duplicate or a missing record)", r.op, r.version, want)
					ok = false
				}
				if retract && r.op == "update_after" && (i == 0 || seq[i-1].op != "update_before") {
					fail(key, "update_after version %d without the update_before retracting version %d", r.version, r.version-1)
					ok = false
				}
				last = r
			case "update_before":
				if !retract {
					fail(key, "update_before in an update stream")
					ok = false
				} else if last == nil || r.values != strings.Replace(last.values, "is_final=true", "is_final=false", 1) && r.values != last.values {
					fail(key, "update_before at offset %d does not retract the previous version's values", r.offset)
					ok = false
				}
			default:
				fail(key, "op %q", r.op)
				ok = false
			}
			if !ok {
				break
			}
		}
		if !ok {
			continue
		}
		if last != nil && last.op == "delete" {
			continue // the row is gone
		}
		if last == nil || !last.final {
			fail(key, "no final record")
			continue
		}
		finals[key] = *last
	}
	if bad > 5 {
		t.Errorf("%s: %d rows in all with such errors", topic, bad)
	}
	return finals
}

// sumFinals returns the money and count in a stage's final rows.
func sumFinals(t *testing.T, sc stageCheck, finals map[string]resultRow) (*big.Rat, int64) {
	money := new(big.Rat)
	var n int64
	for k, r := range finals {
		m, ok := new(big.Rat).SetString(jsonText(r.fields[sc.money]))
		c, err := r.fields[sc.count].(json.Number).Int64()
		if !ok || err != nil {
			t.Fatalf("row %s: %s %v, %s %v", k, sc.money, r.fields[sc.money], sc.count, r.fields[sc.count])
		}
		money.Add(money, m)
		n += c
	}
	return money, n
}

// compareFinals compares two stages' final rows (values and is_final).
func compareFinals(t *testing.T, what string, got, want map[string]resultRow) {
	t.Helper()
	bad := 0
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			bad++
			if bad <= 5 {
				t.Errorf("%s: row %s missing (want %s)", what, k, w.values)
			}
		case g.values != w.values:
			bad++
			if bad <= 5 {
				t.Errorf("%s: row %s: %s, want %s", what, k, g.values, w.values)
			}
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			bad++
			if bad <= 5 {
				t.Errorf("%s: row %s not expected: %s", what, k, g.values)
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d rows differ in all (%d rows, want %d)", what, bad, len(got), len(want))
	}
}

// compareBatch compares a full stage's final rows with the batch
// recomputation (each window and key's accepted money and count).
func compareBatch(t *testing.T, what string, sc stageCheck, finals map[string]resultRow, batch map[string]agg) {
	t.Helper()
	bad := 0
	for k, a := range batch {
		r, ok := finals[k]
		if !ok {
			bad++
			if bad <= 5 {
				t.Errorf("%s: row %s missing; the batch recomputation has %s, %d events", what, k, a.money.FloatString(4), a.n)
			}
			continue
		}
		m, _ := new(big.Rat).SetString(jsonText(r.fields[sc.money]))
		c, _ := r.fields[sc.count].(json.Number).Int64()
		if m == nil || m.Cmp(a.money) != 0 || c != a.n {
			bad++
			if bad <= 5 {
				t.Errorf("%s: row %s: %s %v, %s %v; the batch recomputation: %s, %d", what, k, sc.money, r.fields[sc.money], sc.count, c, a.money.FloatString(4), a.n)
			}
		}
	}
	if len(finals) != len(batch) {
		t.Errorf("%s: %d final rows, the batch recomputation has %d", what, len(finals), len(batch))
	}
	if bad > 5 {
		t.Errorf("%s: %d rows differ in all", what, bad)
	}
}

// sideMoney sums the money of side-output records: field names the
// member holding the event (an object, or a string with its JSON).
func sideMoney(t *testing.T, in *input, recs []record, field string) *big.Rat {
	sum := new(big.Rat)
	for _, r := range recs {
		m := decodeObject(r.value)
		if m == nil {
			t.Fatalf("side output record %s", r.value)
		}
		var ev map[string]any
		switch v := m[field].(type) {
		case map[string]any:
			ev = v
		case string:
			ev = decodeObject([]byte(v))
		}
		sum.Add(sum, lineMoney(in, ev))
	}
	return sum
}

// outputs is what a job committed, read back.
type outputs struct {
	full, normal, downstream    map[string]resultRow // final rows
	fullRows, normalRows        int                  // records in the topics
	late, lateAll, quar, confls []record
	pg                          string // the full stage's table, without versions
	pgVersions                  string // "window_start|key version" per row of the table
}

// readOutputs reads a job's topics and table and checks every changelog
// for duplicates and gaps.
func readOutputs(t *testing.T, b *broker, j *job) *outputs {
	t.Helper()
	recs := b.readCommitted(t, j.topics()...)
	o := &outputs{late: recs[j.name+"-late"], lateAll: recs[j.name+"-late_all"],
		quar: recs[j.name+"-quarantine"], confls: recs[j.name+"-conflicts"]}
	in := j.in
	topic := j.name + "-" + in.full.stage
	rows := parseRows(t, topic, in.full, recs[topic])
	o.fullRows = len(rows)
	o.full = checkChangelog(t, topic, rows, in.downstream != nil)
	topic = j.name + "-" + in.normal.stage
	rows = parseRows(t, topic, in.normal, recs[topic])
	o.normalRows = len(rows)
	o.normal = checkChangelog(t, topic, rows, false)
	if d := in.downstream; d != nil {
		topic = j.name + "-" + d.stage
		o.downstream = checkChangelog(t, topic, parseRows(t, topic, *d, recs[topic]), false)
	}
	cols := `window_start, window_end, "Country", net_revenue, lines`
	if in.name != "retail" {
		cols = `window_start, window_end, auction, bids, volume, top`
	}
	q := `SELECT ` + cols + `, is_final FROM "` + j.pg + `".` + in.full.stage + ` ORDER BY 1, 3`
	o.pg = pgtest.Dump(t, j.dsn, q)
	key := `to_json("Country")::text`
	if in.name != "retail" {
		key = `to_json(auction)::text`
	}
	o.pgVersions = pgtest.Dump(t, j.dsn, `SELECT k FROM (SELECT to_char(window_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || '|' || `+key+
		` || ' ' || version AS k FROM "`+j.pg+`".`+in.full.stage+`) r ORDER BY k COLLATE "C"`)
	return o
}

// checkRun checks one run's outputs against the model of its input and,
// when ref is not nil, against the single-instance run's outputs:
//
//   - the full stage's final rows equal the batch recomputation's and
//     (values and is_final) the reference's, in the topic and in the
//     table; nothing is late for it;
//   - the normal stage counts every accepted event once: the money in
//     its final rows plus the money of its late records equals the
//     input's money less quarantine, duplicates and conflicts, exactly,
//     and the same for the counts;
//   - quarantine and conflict outputs hold exactly the records the
//     model says, by count and money;
//   - a downstream stage's final rows equal the reference's and the sums
//     of the batch recomputation per window.
func checkRun(t *testing.T, j *job, f fates, o, ref *outputs) {
	t.Helper()
	in := j.in
	compareBatch(t, j.name+" "+in.full.stage+" against the batch recomputation", in.full, o.full, f.batch)
	if len(o.lateAll) != 0 {
		t.Errorf("%s: %d records late for %s, whose allowed lateness covers every delay", j.name, len(o.lateAll), in.full.stage)
	}
	if len(o.quar) != f.quarantined {
		t.Errorf("%s: %d quarantine records, the model quarantines %d", j.name, len(o.quar), f.quarantined)
	}
	if m := sideMoney(t, in, o.quar, "raw"); m.Cmp(f.moneyQuarantined) != 0 {
		t.Errorf("%s: quarantine money %s, the model's %s", j.name, m.FloatString(4), f.moneyQuarantined.FloatString(4))
	}
	if len(o.confls) != f.conflicts {
		t.Errorf("%s: %d conflict records, the model has %d", j.name, len(o.confls), f.conflicts)
	}
	confMoney := sideMoney(t, in, o.confls, "new_payload")
	if confMoney.Cmp(f.moneyConflicts) != 0 {
		t.Errorf("%s: conflict money %s, the model's %s", j.name, confMoney.FloatString(4), f.moneyConflicts.FloatString(4))
	}
	// Every accepted event once: final rows + late = input − quarantine −
	// duplicates − conflicts.
	money, n := sumFinals(t, in.normal, o.normal)
	lateMoney := sideMoney(t, in, o.late, "event")
	got := new(big.Rat).Add(money, lateMoney)
	want := new(big.Rat).Sub(f.moneyIn, sideMoney(t, in, o.quar, "raw"))
	want.Sub(want, f.moneyDuplicates)
	want.Sub(want, confMoney)
	if got.Cmp(want) != 0 || want.Cmp(f.moneyAccepted) != 0 {
		t.Errorf("%s %s: final rows %s + late %s = %s; input %s − quarantine − duplicates − conflicts = %s (the model accepts %s)",
			j.name, in.normal.stage, money.FloatString(4), lateMoney.FloatString(4), got.FloatString(4), f.moneyIn.FloatString(4), want.FloatString(4), f.moneyAccepted.FloatString(4))
	}
	accepted := int64(f.in - f.quarantined - f.duplicates - f.conflicts)
	if n+int64(len(o.late)) != accepted {
		t.Errorf("%s %s: %d events in the final rows + %d late, want %d accepted", j.name, in.normal.stage, n, len(o.late), accepted)
	}
	// The table holds the topic's final rows, at their versions.
	var fromTopic []string
	for k, r := range o.full {
		fromTopic = append(fromTopic, fmt.Sprintf("%s %d\n", k, r.version))
	}
	slices.Sort(fromTopic)
	if got := strings.Join(fromTopic, ""); got != o.pgVersions {
		t.Errorf("%s: the table %s and the topic's final rows differ (rows and versions):\ntable\n%s\ntopic\n%s", j.name, in.full.stage, firstLines(o.pgVersions, 5), firstLines(got, 5))
	}
	if d := in.downstream; d != nil {
		perWindow := map[string]agg{}
		auctions := map[string]int64{}
		for k, a := range f.batch {
			w, _, _ := strings.Cut(k, "|")
			p := perWindow[w]
			if p.money == nil {
				p.money = new(big.Rat)
			}
			p.money.Add(p.money, a.money)
			p.n += a.n
			perWindow[w] = p
			auctions[w]++
		}
		want := map[string]agg{}
		for w, a := range perWindow {
			want[w+"|"+jsonText(w)] = a
		}
		compareBatch(t, j.name+" "+d.stage+" against the batch recomputation", *d, o.downstream, want)
		for k, r := range o.downstream {
			w, _, _ := strings.Cut(k, "|")
			if c, _ := r.fields["auctions"].(json.Number).Int64(); c != auctions[w] {
				t.Errorf("%s %s: row %s: %d auctions, the batch recomputation %d", j.name, d.stage, k, c, auctions[w])
			}
		}
	}
	if ref == nil {
		return
	}
	compareFinals(t, j.name+" "+in.full.stage+" against one instance", o.full, ref.full)
	if o.pg != ref.pg {
		t.Errorf("%s: the table %s differs from one instance's:\n%s\nwant\n%s", j.name, in.full.stage, firstLines(o.pg, 5), firstLines(ref.pg, 5))
	}
	if in.downstream != nil {
		compareFinals(t, j.name+" "+in.downstream.stage+" against one instance", o.downstream, ref.downstream)
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
