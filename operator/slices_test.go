package operator

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/changelog"
)

// runSlicedVsUnsliced feeds the same steps to a sliced operator and to an
// unsliced one (Config.NoSlicing) built from cfg, and requires the same
// outcome for every record and the same rows, in the same order, after
// every call. Snapshot steps (kind 4) restore the sliced operator from a
// snapshot (full format, or key-group sections when groups is set).
func runSlicedVsUnsliced(t fataler, f snapFields, cfg snapConfig, steps []snapStep, groups bool) {
	ucfg := cfg
	ucfg.noSlice = true
	a, b := cfg.build(t, f), ucfg.build(t, f)
	if !a.Sliced() || b.Sliced() {
		t.Fatalf("sliced %v / %v", a.Sliced(), b.Sliced())
	}
	r := f.schema.NewRow()
	var live []snapEvent
	var wm, now int64
	// One early-firing schedule for both, kept here as a runner keeps it
	// (a restore from key-group sections does not carry the operator's).
	var sch *EarlySchedule
	if cfg.early > 0 {
		sch = &EarlySchedule{Every: cfg.early}
	}
	compare := func(i int, what string) {
		ra, rb := formatRows(a.Drain()), formatRows(b.Drain())
		if strings.Join(ra, "\n") != strings.Join(rb, "\n") {
			t.Fatalf("step %d (%s): rows differ\nsliced:\n%s\nunsliced:\n%s", i, what, strings.Join(ra, "\n"), strings.Join(rb, "\n"))
		}
	}
	for i, st := range steps {
		now += st.dtNow
		switch st.kind {
		case 0, 1:
			e, weight := st.ev, 1
			if st.kind == 1 {
				if len(live) == 0 {
					continue
				}
				j := st.pick % len(live)
				e, weight = live[j], -1
				live = append(live[:j], live[j+1:]...)
			} else if cfg.retract {
				live = append(live, e)
			}
			f.fill(r, e)
			a.SetStep(uint64(i))
			oa, erra := a.Process(r, e.ts, weight, now)
			f.fill(r, e)
			b.SetStep(uint64(i))
			ob, errb := b.Process(r, e.ts, weight, now)
			if fmt.Sprint(erra) != fmt.Sprint(errb) {
				t.Fatalf("step %d: errors %v / %v", i, erra, errb)
			}
			if oa != ob {
				t.Fatalf("step %d: outcome %d sliced, %d unsliced", i, oa, ob)
			}
			compare(i, "process")
		case 2:
			wm += st.wm
			a.AdvanceWatermark(wm, now)
			b.AdvanceWatermark(wm, now)
			compare(i, "watermark")
		case 3:
			if sch != nil && sch.Due(now) {
				a.FireEarly(now)
				b.FireEarly(now)
			}
			compare(i, "early")
		case 4:
			if noRestore {
				continue
			}
			if groups {
				a = restoreGroupsFrom(t, cfg, f, a)
			} else {
				a = restoreFrom(t, cfg, f, snapshotBytes(a))
			}
		}
		sa, sb := a.Stats(), b.Stats()
		if sa.RowsEmitted != sb.RowsEmitted || sa.PartlyTooLate != sb.PartlyTooLate || sa.SkippedWindows != sb.SkippedWindows {
			t.Fatalf("step %d: counters differ: %+v vs %+v", i, sa, sb)
		}
	}
	a.AdvanceWatermark(changelog.WatermarkInfinity, now+1)
	b.AdvanceWatermark(changelog.WatermarkInfinity, now+1)
	compare(len(steps), "end")
	if st := a.Stats(); st.Entries != 0 || st.OpenWindows != 0 || st.Keys != 0 {
		t.Fatalf("sliced state left after the end: %+v", st)
	}
}

var noRestore = false

// restoreGroupsFrom snapshots every key group of o in sections and
// restores them, in reverse order, into a fresh operator from cfg.
func restoreGroupsFrom(t fataler, cfg snapConfig, f snapFields, o *Operator) *Operator {
	o.MarkAllChanged()
	groups := o.Changed(nil)
	secs := snapGroups(o, groups)
	var parts [][]byte
	for i := len(groups) - 1; i >= 0; i-- {
		parts = append(parts, secs[groups[i]])
	}
	b := cfg.build(t, f)
	if err := b.RestoreGroups(parts, o.Globals()); err != nil {
		t.Fatalf("restore groups: %v", err)
	}
	return b
}

// TestSlicedMatchesUnsliced: sliding windows of any size and slide (a
// multiple or not), every emit mode, allowed lateness, early firings,
// retractions and every aggregate: the sliced operator emits exactly the
// unsliced operator's rows (values, versions, is_final, watermark_at,
// order) and outcomes, also across restores from its snapshots.
func TestSlicedMatchesUnsliced(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := newSnapFields(t)
		cfg := drawSnapConfig(t, "sliding")
		cfg.order = Order(rapid.IntRange(0, 2).Draw(t, "order"))
		if o := cfg.build(t, f); !o.Sliced() {
			t.Skip("not sliced: an aggregate whose result depends on its history")
		}
		// Key-group sections keep the first-arrival order within each key
		// group only: a restore from them keeps the canonical orders
		// (OrderGroup, OrderBirth), not OrderArrival across key groups.
		groups := rapid.Bool().Draw(t, "groups") && cfg.order != OrderArrival
		runSlicedVsUnsliced(t, f, cfg, drawSnapSteps(t, cfg.retract), groups)
	})
}
