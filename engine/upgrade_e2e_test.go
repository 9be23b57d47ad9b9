package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// upgradeInput writes n events of 5 stores arriving every 500 ms, most
// 0–19 s after their event time, every 20th 4 to 4m40s after it (between
// an allowed lateness of 3m and one of 5m), every 40th 6 to 6m20s after
// it (too late for both). It returns each line's group (window_start,
// store), from line 1.
func upgradeInput(t *testing.T, path string, n int) []string {
	var b strings.Builder
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	groups := []string{""}
	for i := range n {
		at := base.Add(time.Duration(i) * 500 * time.Millisecond)
		delay := time.Duration((i*37)%20) * time.Second
		switch {
		case i%20 == 7:
			delay = 4*time.Minute + time.Duration(i%5)*10*time.Second
		case i%40 == 13:
			delay = 6*time.Minute + time.Duration(i%3)*10*time.Second
		}
		groups = append(groups, fmt.Sprint(at.Add(-delay).Truncate(time.Minute).Format(time.RFC3339), " s", i%5))
		fmt.Fprintf(&b, `{"at":"%s","ts":"%s","store":"s%d","amount":%d}`+"\n",
			at.Format(time.RFC3339Nano), at.Add(-delay).Format(time.RFC3339Nano), i%5, i%97)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return groups
}

func upgradePipeline(in, out, ck string, lateness time.Duration) *spec.Pipeline {
	p := &spec.Pipeline{
		Name:      "upgrade",
		Source:    spec.Source{Type: "file", Path: in, Format: "jsonl", ArrivalTimeField: "at", Schema: spec.FieldTypes{{Name: "amount", Type: "int"}}},
		EventTime: spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(10 * time.Second)},
		Stages: []spec.Stage{{
			Name: "per_store", Key: []string{"store"}, Window: spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
			AllowedLateness: spec.Duration(lateness),
			Aggregates:      spec.NamedExprs{{Name: "n", Expr: "count()"}, {Name: "total", Expr: "sum(amount)"}},
			Emit:            spec.Emit{Mode: "update"},
			Late:            spec.Late{Policy: "side_output", Sink: &spec.Sink{Type: "jsonl", Path: filepath.Join(out, "late.jsonl")}},
			Sinks:           []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "rows.jsonl")}},
		}},
	}
	if ck != "" {
		p.Checkpoint = &spec.Checkpoint{Dir: ck, Interval: spec.Duration(time.Hour)}
	}
	return p
}

// jsonLines reads a JSONL file into objects (none when it is absent).
func jsonLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		m["_line"] = l
		out = append(out, m)
	}
	return out
}

// rowGroups groups result rows by (window_start, store), in order.
func rowGroups(rows []map[string]any) map[string][]string {
	g := map[string][]string{}
	for _, r := range rows {
		k := fmt.Sprint(r["window_start"], " ", r["store"])
		g[k] = append(g[k], r["_line"].(string))
	}
	return g
}

// lateLines returns the input line of each late record and the group
// (window_start, store) of its event.
func lateLines(t *testing.T, recs []map[string]any) map[int]string {
	out := map[int]string{}
	for _, r := range recs {
		src := r["source"].(string)
		n, err := strconv.Atoi(src[strings.LastIndexByte(src, ':')+1:])
		if err != nil {
			t.Fatal(err)
		}
		ev := r["event"].(map[string]any)
		ts, err := time.Parse(time.RFC3339Nano, ev["ts"].(string))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = fmt.Sprint(ts.UTC().Truncate(time.Minute).Format(time.RFC3339), " ", ev["store"])
	}
	return out
}

// TestUpgradeLateness is the upgrade: a run with allowed_lateness
// 3m stopped as SIGTERM stops it (the context cancelled: a final
// checkpoint), restarted with 5m, continues from the checkpoint and gives
// the rows of a run that had 5m from that point on. Per (window, store):
// a window that closed before the stop (end + 3m ≤ the watermark of the
// final checkpoint) has the rows of an uninterrupted 3m run — it takes no
// more events; every other window has the rows of an uninterrupted 5m run
// (the two agree up to the stop, and from it on the lateness is 5m). A late
// record before the stop is one of the 3m run's; after it, one of the 5m
// run's, or an event of a window closed before the stop. The restore was
// refused ("allowed_lateness ("3m0s" → "5m0s") changed").
func TestUpgradeLateness(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	const n = 3000
	groups := upgradeInput(t, in, n)
	ref3, ref5 := filepath.Join(dir, "ref3"), filepath.Join(dir, "ref5")
	runPart(t, upgradePipeline(in, ref3, "", 3*time.Minute), 1, 0)
	runPart(t, upgradePipeline(in, ref5, "", 5*time.Minute), 1, 0)
	want3, want5 := rowGroups(jsonLines(t, filepath.Join(ref3, "rows.jsonl"))), rowGroups(jsonLines(t, filepath.Join(ref5, "rows.jsonl")))
	late3, late5 := lateLines(t, jsonLines(t, filepath.Join(ref3, "late.jsonl"))), lateLines(t, jsonLines(t, filepath.Join(ref5, "late.jsonl")))
	if len(late3) <= len(late5) || len(late5) == 0 {
		t.Fatalf("the input does not tell 3m from 5m: %d and %d late records", len(late3), len(late5))
	}

	out, ck := filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	s1 := runPart(t, upgradePipeline(in, out, ck, 3*time.Minute), 2, 1500)
	if !s1.Stopped || s1.EventsRead >= n {
		t.Fatalf("first run: stopped %v after %d events", s1.Stopped, s1.EventsRead)
	}
	// The windows closed at the stop: end + 3m ≤ the watermark of the
	// final checkpoint. Exactly those have their final row in the first
	// run's output, or no row at all (every event of theirs came too late).
	prefix := rowGroups(jsonLines(t, filepath.Join(out, "rows.jsonl")))
	wmStop := s1.FinalWatermark
	closedAt := func(k string) bool {
		start, err := time.Parse(time.RFC3339, strings.Fields(k)[0])
		if err != nil {
			t.Fatal(err)
		}
		return start.Add(time.Minute+3*time.Minute).UnixMilli() <= wmStop
	}
	closed := map[string]bool{}
	for _, k := range groups[1:] {
		closed[k] = closedAt(k)
	}
	for k, rows := range prefix {
		if final := strings.Contains(rows[len(rows)-1], `"is_final":true`); final != closed[k] {
			t.Fatalf("window %s: final row before the stop %v, closed at watermark %d: %v", k, final, wmStop, closed[k])
		}
	}
	nclosed := 0
	for _, c := range closed {
		if c {
			nclosed++
		}
	}
	if nclosed == 0 || nclosed == len(closed) {
		t.Fatalf("%d of %d windows closed before the stop", nclosed, len(closed))
	}
	s2 := runPart(t, upgradePipeline(in, out, ck, 5*time.Minute), 3, 0)
	if s2.Checkpoints.Restored == 0 || s2.EventsRead != n || s2.ResumedEvents == 0 {
		t.Fatalf("second run: restored %d, %d events, %d resumed", s2.Checkpoints.Restored, s2.EventsRead, s2.ResumedEvents)
	}
	stop := int(s2.ResumedEvents)

	got := rowGroups(jsonLines(t, filepath.Join(out, "rows.jsonl")))
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want5 {
		keys[k] = true
	}
	from3, from5 := 0, 0
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	}) {
		want := want5[k]
		if closed[k] {
			want = want3[k]
			from3++
		} else {
			from5++
		}
		if !slices.Equal(got[k], want) {
			t.Errorf("window %s (closed before the stop: %v):\n got %s\nwant %s", k, closed[k], strings.Join(got[k], "\n     "), strings.Join(want, "\n     "))
		}
	}
	if from3 == 0 || from5 == 0 {
		t.Fatalf("windows from the 3m run %d, from the 5m run %d", from3, from5)
	}
	late := lateLines(t, jsonLines(t, filepath.Join(out, "late.jsonl")))
	for line := 1; line <= n; line++ {
		var want bool
		if line <= stop {
			_, want = late3[line]
		} else {
			_, in5 := late5[line]
			want = in5 || closed[groups[line]]
		}
		if _, ok := late[line]; ok != want {
			t.Errorf("line %d (stop after %d): late %v, want %v", line, stop, ok, want)
		}
	}
}

// upgradeCase is a pipeline run, stopped (a final checkpoint) after stop
// records, then restarted under a changed spec: the rows and late records
// of both runs, worked out by hand.
type upgradeCase struct {
	name          string
	before, after string // the stage's keys and event_time; the harness adds source, sinks and checkpoint
	records       []string
	stop          int64
	rows          []string // op [start, end) key | n | vN [final] wm
	late          []int    // input lines of the late records
}

func upgradeYAML(body, in, out, ck string) string {
	return fmt.Sprintf(`name: upgrade
source: {type: file, path: %q, arrival_time_field: at, partition_field: p}
checkpoint: {dir: %q, interval: 1h}
late: {policy: side_output, sink: {type: jsonl, path: %q}}
sinks: [{type: jsonl, path: %q}]
window: {type: tumbling, size: 1m}
aggregates: {n: count()}
%s`, in, ck, filepath.Join(out, "late.jsonl"), filepath.Join(out, "rows.jsonl"), body)
}

// runStop runs YAML y as one task reading one record at a time; stop > 0
// cancels it (as SIGTERM does) once stop records have been read.
func runStop(t *testing.T, y string, stop int64) *engine.Summary {
	t.Helper()
	p, err := spec.Parse("p.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Compile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := engine.Options{Parallelism: 1, BatchSize: 1, Logf: t.Logf}
	if stop > 0 {
		opts.ProgressEvery = stop
		opts.Progress = func(engine.Progress) { cancel() }
	}
	sum, err := engine.Run(ctx, pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// renderRows renders the result rows of a JSONL file compactly.
func renderRows(t *testing.T, path string) []string {
	hm := func(v any) string {
		s := fmt.Sprint(v)
		if s == "infinity" {
			return "+inf"
		}
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatalf("time %q: %v", s, err)
		}
		if tm.Second() == 0 {
			return tm.UTC().Format("15:04")
		}
		return tm.UTC().Format("15:04:05")
	}
	var out []string
	for _, r := range jsonLines(t, path) {
		line := fmt.Sprintf("%s [%s, %s) | n=%v | v%v", r["op"], hm(r["window_start"]), hm(r["window_end"]), r["n"], r["version"])
		if r["is_final"] == true {
			line += " final"
		}
		out = append(out, line+" wm="+hm(r["watermark_at"]))
	}
	return out
}

// TestUpgradeChanges: each change a restore accepts, on records worked
// out by hand — the watermark, its idleness, early firings and a smaller
// lateness take effect from the restore on, with the state as it was.
// Every one of these restores was refused.
func TestUpgradeChanges(t *testing.T) {
	ev := func(p, at, ts string) string {
		return fmt.Sprintf(`{"p":%q,"at":"2026-09-01T%sZ","ts":"2026-09-01T%sZ"}`, p, at, ts)
	}
	for _, tc := range []upgradeCase{{
		// out_of_orderness 0 → 2m (and an SLO added): after the restore the watermark waits for the largest
		// event time − 2m to pass where it was (10:01:10), so the 10:01:05
		// event (line 6) is on time, where with 0s it would be too late;
		// [10:00, 10:01) closed before the stop and stays closed (line 4).
		name:   "out_of_orderness",
		before: "event_time: {field: ts}\n",
		after:  "event_time: {field: ts, out_of_orderness: 2m}\nslo: {event_time_lag_p95: 1m}\n",
		records: []string{ev("a", "10:00:30", "10:00:30"), ev("a", "10:01:10", "10:01:10"),
			ev("a", "10:01:40", "10:01:40"), ev("a", "10:01:45", "10:00:50"), ev("a", "10:02:20", "10:02:20"),
			ev("a", "10:02:25", "10:01:05"), ev("a", "10:04:30", "10:04:30")},
		stop: 2,
		rows: []string{"insert [10:00, 10:01) | n=1 | v1 final wm=10:01:10",
			"insert [10:01, 10:02) | n=3 | v1 final wm=10:02:30",
			"insert [10:02, 10:03) | n=1 | v1 final wm=+inf",
			"insert [10:04, 10:05) | n=1 | v1 final wm=+inf"},
		late: []int{4},
	}, {
		// idle_timeout 0 → 1m: partition b last delivered at 10:00:05; at
		// the restore's first record (10:01:20) it has been silent for a
		// minute and stops holding the watermark back, which goes to a's
		// 10:01:10 and fires [10:00, 10:01). Without the change every
		// window would wait for the end of the input.
		name:   "idle_timeout",
		before: "event_time: {field: ts}\n",
		after:  "event_time: {field: ts, idle_timeout: 1m}\n",
		records: []string{ev("a", "10:00:00", "10:00:00"), ev("b", "10:00:05", "10:00:05"), ev("a", "10:00:40", "10:01:10"),
			ev("a", "10:01:20", "10:01:20"), ev("a", "10:02:30", "10:02:30")},
		stop: 3,
		rows: []string{"insert [10:00, 10:01) | n=2 | v1 final wm=10:01:10",
			"insert [10:01, 10:02) | n=2 | v1 final wm=10:02:30",
			"insert [10:02, 10:03) | n=1 | v1 final wm=+inf"},
	}, {
		// early_every added (30s): the schedule starts at the restore's
		// first record (10:00:20, first firing due at 10:00:50): at
		// 10:00:55 [10:00, 10:01) is emitted provisionally with the three
		// events so far, at 10:01:30 again with four, then on time.
		name:   "early firings",
		before: "event_time: {field: ts}\n",
		after:  "event_time: {field: ts}\nemit: {early_every: 30s}\n",
		records: []string{ev("a", "10:00:00", "10:00:00"), ev("a", "10:00:10", "10:00:10"),
			ev("a", "10:00:20", "10:00:20"), ev("a", "10:00:55", "10:00:30"), ev("a", "10:01:30", "10:01:05")},
		stop: 2,
		rows: []string{"insert [10:00, 10:01) | n=3 | v1 wm=10:00:20",
			"update_after [10:00, 10:01) | n=4 | v2 wm=10:00:30",
			"update_after [10:00, 10:01) | n=4 | v3 final wm=10:01:05",
			"insert [10:01, 10:02) | n=1 | v1 final wm=+inf"},
	}, {
		// allowed_lateness 5m → 1m: [10:00, 10:01) fired at 10:02 and was
		// open until 10:06; under 1m it has closed (10:01 + 1m ≤ 10:02):
		// the 10:00:30 event is too late, and the final row comes at the
		// next watermark advance.
		name:   "smaller lateness",
		before: "event_time: {field: ts}\nallowed_lateness: 5m\n",
		after:  "event_time: {field: ts}\nallowed_lateness: 1m\n",
		records: []string{ev("a", "10:00:10", "10:00:10"), ev("a", "10:02:00", "10:02:00"),
			ev("a", "10:02:10", "10:00:30"), ev("a", "10:02:30", "10:02:30")},
		stop: 2,
		rows: []string{"insert [10:00, 10:01) | n=1 | v1 wm=10:02",
			"update_after [10:00, 10:01) | n=1 | v2 final wm=10:02:30",
			"insert [10:02, 10:03) | n=2 | v1 final wm=+inf"},
		late: []int{3},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in, out, ck := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out"), filepath.Join(dir, "ck")
			if err := os.WriteFile(in, []byte(strings.Join(tc.records, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			runStop(t, upgradeYAML(tc.before, in, out, ck), tc.stop)
			s2 := runStop(t, upgradeYAML(tc.after, in, out, ck), 0)
			if s2.Checkpoints.Restored == 0 || s2.ResumedEvents != tc.stop {
				t.Fatalf("restored checkpoint %d after %d records, want after %d", s2.Checkpoints.Restored, s2.ResumedEvents, tc.stop)
			}
			if got := renderRows(t, filepath.Join(out, "rows.jsonl")); !slices.Equal(got, tc.rows) {
				t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.rows, "\n"))
			}
			var late []int
			for line := range lateLines(t, jsonLines(t, filepath.Join(out, "late.jsonl"))) {
				late = append(late, line)
			}
			slices.Sort(late)
			if !slices.Equal(late, tc.late) {
				t.Errorf("late lines %v, want %v", late, tc.late)
			}
		})
	}
}

// TestUpgradeSinks: sinks added, moved, removed and reordered across a
// restore. The result sink that moved from sinks[0] to sinks[1] continues
// its file (the same destination: not truncated); the new sinks[0] starts
// empty and gets the rows from the restore on; the late output moved to
// another file gets the late records from the restore on while the old
// file keeps those before; a removed sink's file is left as it was. The
// restores were refused.
func TestUpgradeSinks(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	const n = 3000
	upgradeInput(t, in, n)
	ref := filepath.Join(dir, "ref")
	runPart(t, upgradePipeline(in, ref, "", 3*time.Minute), 1, 0)
	wantRows := jsonLines(t, filepath.Join(ref, "rows.jsonl"))
	wantLate := lateLines(t, jsonLines(t, filepath.Join(ref, "late.jsonl")))

	out, ck := filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	first := upgradePipeline(in, out, ck, 3*time.Minute)
	st := &first.Stages[0]
	st.Sinks = append(st.Sinks, spec.Sink{Type: "jsonl", Path: filepath.Join(out, "gone.jsonl")})
	runPart(t, first, 2, 1200)
	prefix := jsonLines(t, filepath.Join(out, "rows.jsonl"))
	gone, err := os.ReadFile(filepath.Join(out, "gone.jsonl"))
	if err != nil || len(prefix) == 0 || len(prefix) >= len(wantRows) {
		t.Fatalf("first run: %d of %d rows (%v)", len(prefix), len(wantRows), err)
	}

	second := upgradePipeline(in, out, ck, 3*time.Minute)
	st = &second.Stages[0]
	st.Sinks = []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "new.jsonl")}, st.Sinks[0]}
	st.Late.Sink.Path = filepath.Join(out, "late2.jsonl")
	s2 := runPart(t, second, 1, 0)
	if s2.Checkpoints.Restored == 0 || s2.ResumedEvents == 0 {
		t.Fatalf("not restored: %+v", s2.Checkpoints)
	}
	stop := int(s2.ResumedEvents)
	// Rows per (window, store), in order (the interleaving of stores
	// depends on the parallelism).
	want, pre := rowGroups(wantRows), rowGroups(prefix)
	got, added := rowGroups(jsonLines(t, filepath.Join(out, "rows.jsonl"))), rowGroups(jsonLines(t, filepath.Join(out, "new.jsonl")))
	if len(got) != len(want) {
		t.Fatalf("the continued sink has %d windows, an uninterrupted run %d", len(got), len(want))
	}
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("continued sink, window %s:\n%s\nwant\n%s", k, strings.Join(got[k], "\n"), strings.Join(w, "\n"))
		}
		if !slices.Equal(added[k], w[len(pre[k]):]) {
			t.Errorf("new sink, window %s:\n%s\nwant the rows after the restore\n%s", k, strings.Join(added[k], "\n"), strings.Join(w[len(pre[k]):], "\n"))
		}
	}
	if b, _ := os.ReadFile(filepath.Join(out, "gone.jsonl")); string(b) != string(gone) {
		t.Fatal("the removed sink's file changed")
	}
	before, after := lateLines(t, jsonLines(t, filepath.Join(out, "late.jsonl"))), lateLines(t, jsonLines(t, filepath.Join(out, "late2.jsonl")))
	for l := range wantLate {
		if _, ok := before[l]; ok != (l <= stop) {
			t.Errorf("late line %d in the old late file: %v (stop %d)", l, ok, stop)
		}
		if _, ok := after[l]; ok != (l > stop) {
			t.Errorf("late line %d in the moved late file: %v (stop %d)", l, ok, stop)
		}
	}
	if len(before)+len(after) != len(wantLate) {
		t.Errorf("%d + %d late records, an uninterrupted run %d", len(before), len(after), len(wantLate))
	}
}

// TestUpgradeRefused: a change that would mix two computations is refused
// at start, naming the key, both values and why, and nothing is written.
func TestUpgradeRefused(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	upgradeInput(t, in, 500)
	out, ck := filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	runPart(t, upgradePipeline(in, out, ck, 3*time.Minute), 1, 200)
	before, _ := os.ReadFile(filepath.Join(out, "rows.jsonl"))
	p := upgradePipeline(in, out, ck, 3*time.Minute)
	p.Stages[0].Window.Size = spec.Duration(2 * time.Minute)
	p.Defaults()
	pl, err := plan.Compile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = engine.Run(context.Background(), pl, engine.Options{})
	want := `stages[0].window.size ("1m0s" → "2m0s") changed: the open windows hold state of the old windows; restoring it would mix two computations`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
	if after, _ := os.ReadFile(filepath.Join(out, "rows.jsonl")); string(after) != string(before) {
		t.Fatal("the refused run changed the output")
	}
}
