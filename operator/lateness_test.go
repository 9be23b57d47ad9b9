package operator

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/window"
)

// restoreWith writes every key group of o and restores them into a new
// operator built by mk (another allowed lateness).
func restoreWith(t *testing.T, o *Operator, mk func() *Operator) *Operator {
	t.Helper()
	var groups []int
	for g := range o.cfg.KeyGroups {
		groups = append(groups, g)
	}
	enc := map[int]*state.Encoder{}
	o.SnapshotGroups(groups, func(g int) *state.Encoder { enc[g] = &state.Encoder{}; return enc[g] })
	var parts [][]byte
	for _, g := range groups {
		if e := enc[g]; e != nil {
			parts = append(parts, e.Bytes())
		}
	}
	r := mk()
	if err := r.RestoreGroups(parts, o.Globals()); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRestoreUnderLargerLateness: a window closed under allowed lateness
// 3m stays closed after a restore under 5m (its state is gone; an event
// for it is too late, a retraction after close), while a window open at
// the restore closes at end + 5m. Before, the window came back under 5m
// and emitted a second insert for a row identity that had its final row.
func TestRestoreUnderLargerLateness(t *testing.T) {
	schema, kf, vf := testSchema(t)
	mk := func(lateness int64) func() *Operator {
		return func() *Operator {
			count, _ := aggregate.New(aggregate.Spec{Name: "n", Func: "count", Retract: true})
			o, err := New(Config{Assigner: &window.Fixed{Size: minute, Slide: minute}, AllowedLateness: lateness, Mode: Update,
				Key: []row.Field{kf}, Aggs: []aggregate.Column{count}, KeyGroups: 8})
			if err != nil {
				t.Fatal(err)
			}
			return o
		}
	}
	r := schema.NewRow()
	ev := func(o *Operator, k string, m int64, w int) Outcome {
		schema.Shape(r)
		r.Set(kf, row.Str(k))
		r.Set(vf, row.Int(1))
		out, err := o.Process(r, m*minute+1000, w, 0)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	var rows []string
	drain := func(o *Operator) {
		for _, x := range o.Drain() {
			rows = append(rows, strings.Join([]string{x.Op.Short(), mins(x.WindowStart), x.Key[0].S, x.Values[0].String()}, " "))
		}
	}
	o := mk(3 * minute)()
	ev(o, "k", 0, 1) // [:00, :01)
	ev(o, "k", 2, 1) // [:02, :03)
	o.AdvanceWatermark(4*minute, 0)
	drain(o) // [:00, :01) closed at :04; [:02, :03) fired, open until :06
	o = restoreWith(t, o, mk(5*minute))
	if out := ev(o, "k", 0, 1); out != TooLate {
		t.Fatalf("event of [:00, :01), closed under 3m, after a restore under 5m: outcome %d", out)
	}
	if out := ev(o, "k", 0, -1); out != RetractTooLate {
		t.Fatalf("retraction in [:00, :01): outcome %d", out)
	}
	if out := ev(o, "k", 2, 1); out != LateAccepted {
		t.Fatalf("event of [:02, :03): outcome %d", out)
	}
	drain(o)
	o.AdvanceWatermark(7*minute, 0) // :03 + 3m passed: still open under 5m
	drain(o)
	if out := ev(o, "k", 2, 1); out != LateAccepted {
		t.Fatalf("event of [:02, :03) at watermark :07: outcome %d", out)
	}
	o.AdvanceWatermark(8*minute, 0) // :03 + 5m
	drain(o)
	// [:00, :01) fired and closed at once at :04 (one final row); [:02,
	// :03) fired at :04, took two late events and closed at :08.
	want := "+I 00 k 1|+I 02 k 1|+U 02 k 2|+U 02 k 3|+U 02 k 3"
	if got := strings.Join(rows, "|"); got != want {
		t.Fatalf("rows\n%s\nwant\n%s", got, want)
	}
	if g := o.Globals(); g.ClosedThrough != 3*minute {
		t.Fatalf("closed through %d", g.ClosedThrough)
	}
}

// TestRestoreUnderSmallerLateness: after a restore under a smaller
// allowed lateness, a window the new lateness has closed takes no more
// events and emits its final row at the next watermark advance; sessions
// alike.
func TestRestoreUnderSmallerLateness(t *testing.T) {
	schema, kf, vf := testSchema(t)
	for _, kind := range []string{"tumbling", "session"} {
		t.Run(kind, func(t *testing.T) {
			mk := func(lateness int64) func() *Operator {
				return func() *Operator {
					count, _ := aggregate.New(aggregate.Spec{Name: "n", Func: "count"})
					cfg := Config{AllowedLateness: lateness, Mode: Update, Key: []row.Field{kf}, Aggs: []aggregate.Column{count}, KeyGroups: 8}
					if kind == "session" {
						cfg.Gap = minute
					} else {
						cfg.Assigner = &window.Fixed{Size: minute, Slide: minute}
					}
					o, err := New(cfg)
					if err != nil {
						t.Fatal(err)
					}
					return o
				}
			}
			r := schema.NewRow()
			ev := func(o *Operator, m int64) Outcome {
				schema.Shape(r)
				r.Set(kf, row.Str("k"))
				r.Set(vf, row.Int(1))
				out, err := o.Process(r, m*minute, 1, 0)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			o := mk(5 * minute)()
			ev(o, 0) // [:00, :01)
			o.AdvanceWatermark(4*minute, 0)
			var rows []string
			drain := func() {
				for _, x := range o.Drain() {
					rows = append(rows, x.Op.Short()+" "+mins(x.WindowStart)+"-"+mins(x.WindowEnd)+" "+x.Values[0].String()+" final="+map[bool]string{true: "y", false: "n"}[x.IsFinal]+" wm="+mins(x.WatermarkAt))
				}
			}
			drain() // fired at :04, open until :06 under 5m
			o = restoreWith(t, o, mk(2*minute))
			// Under 2m it closed at :03: too late, and no second session.
			if out := ev(o, 0); out != TooLate {
				t.Fatalf("event at :00: outcome %d", out)
			}
			drain()
			o.AdvanceWatermark(changelog.WatermarkInfinity, 0)
			drain()
			want := "+I 00-01 1 final=n wm=04|+U 00-01 1 final=y wm=+inf"
			if got := strings.Join(rows, "|"); got != want {
				t.Fatalf("rows\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestRestoreUnderSmallerLatenessSliced: sliding windows of 2 minutes
// sliding by 1 (sliced: one partial per 1-minute slice). Key a has 3
// events at :10 (windows [:09, :11) and [:10, :12)); the watermark
// reaches :15 under 5m allowed lateness (both fired, open until :16 and
// :17). Restored under 3m, both are closed (:11 + 3m, :12 + 3m ≤ :15) and
// emit their final rows at the next advance. An event of key b at :11
// (windows [:10, :12), closed, and [:11, :13), fired and open until :16)
// arrives between the restore and that advance: it enters [:11, :13)
// only, although its slice [:11, :12) is also [:10, :12)'s. Before, the
// close of [:10, :12) merged the slice's rows in and emitted b there. The unsliced operator gives the
// same rows (checked here too).
func TestRestoreUnderSmallerLatenessSliced(t *testing.T) {
	schema, kf, vf := testSchema(t)
	for _, mode := range []Mode{Final, Update} {
		for _, noSlice := range []bool{false, true} {
			mk := func(lateness int64) func() *Operator {
				return func() *Operator {
					count, _ := aggregate.New(aggregate.Spec{Name: "n", Func: "count"})
					o, err := New(Config{Assigner: &window.Fixed{Size: 2 * minute, Slide: minute}, AllowedLateness: lateness,
						Mode: mode, Key: []row.Field{kf}, Aggs: []aggregate.Column{count}, KeyGroups: 8, NoSlicing: noSlice})
					if err != nil {
						t.Fatal(err)
					}
					if o.Sliced() == noSlice {
						t.Fatalf("sliced %v with NoSlicing %v", o.Sliced(), noSlice)
					}
					return o
				}
			}
			r := schema.NewRow()
			ev := func(o *Operator, k string, m int64) Outcome {
				schema.Shape(r)
				r.Set(kf, row.Str(k))
				r.Set(vf, row.Int(1))
				out, err := o.Process(r, m*minute, 1, 0)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			var rows []string
			drain := func(o *Operator) {
				for _, x := range o.Drain() {
					rows = append(rows, x.Op.Short()+" "+mins(x.WindowStart)+"-"+mins(x.WindowEnd)+" "+x.Key[0].S+" "+x.Values[0].String()+" final="+map[bool]string{true: "y", false: "n"}[x.IsFinal])
				}
			}
			o := mk(5 * minute)()
			for range 3 {
				ev(o, "a", 10)
			}
			o.AdvanceWatermark(15*minute, 0)
			drain(o)
			o = restoreWith(t, o, mk(3*minute))
			if out := ev(o, "b", 11); out != LateAccepted {
				t.Fatalf("mode %d, NoSlicing %v: event of b at :11: outcome %d", mode, noSlice, out)
			}
			drain(o)
			o.AdvanceWatermark(16*minute, 0) // [:11, :13) is open until :16 under 3m: it closes now
			drain(o)
			o.AdvanceWatermark(changelog.WatermarkInfinity, 0)
			drain(o)
			// Mode final: [:09, :11) and [:10, :12) hold a's 3 events,
			// [:11, :13) b's one, all closing at :16. Mode update: a's
			// windows fired at :15 (not final); b's event enters [:11,
			// :13), which had fired without it (a late first row); every
			// window closes at :16 with a final row.
			want := "+I 09-11 a 3 final=y|+I 10-12 a 3 final=y|+I 11-13 b 1 final=y"
			if mode == Update {
				want = "+I 09-11 a 3 final=n|+I 10-12 a 3 final=n|+I 11-13 b 1 final=n|" +
					"+U 09-11 a 3 final=y|+U 10-12 a 3 final=y|+U 11-13 b 1 final=y"
			}
			if got := strings.Join(rows, "|"); got != want {
				t.Fatalf("mode %d, NoSlicing %v: rows\n%s\nwant\n%s", mode, noSlice, got, want)
			}
		}
	}
}
