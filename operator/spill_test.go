package operator

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/state/disk"
	"github.com/tidemark/tidemark/window"
	"pgregory.net/rapid"
)

// TestSpillMatchesMemory (rapid): tumbling windows on the disk backend —
// a hot tier of 0 to 2 entries checked after every record, so that
// nearly every record's window has partials in the store, retractions and
// int sums near the int64 range reading them back, and restarts that
// restore the key-group sections over the store — emit exactly the rows
// (values, versions, is_final, watermark_at, updated_at, order) and the
// outcomes of the memory backend, and leave nothing in the store once
// every window closed.
func TestSpillMatchesMemory(t *testing.T) { checkSpillMatchesMemory(t, "tumbling") }

// TestSliceSpillMatchesMemory (rapid): TestSpillMatchesMemory for sliced
// sliding windows (size a multiple of the slide or not) — slices written
// to the store and read back as windows fire, close or take a key group's
// share into their panes (allowed lateness), before retractions and
// before checked updates of int sums near the int64 range, and restarts
// whose stored partials keep their arrival numbers.
func TestSliceSpillMatchesMemory(t *testing.T) { checkSpillMatchesMemory(t, "sliding") }

// TestCumulateSpillMatchesMemory (rapid): the same for cumulating windows
// (sliced by step).
func TestCumulateSpillMatchesMemory(t *testing.T) { checkSpillMatchesMemory(t, "cumulate") }

func checkSpillMatchesMemory(t *testing.T, kind string) {
	var runs, restoredSpills, reads, firedRuns, restoredFired int
	rapid.Check(t, func(t *rapid.T) {
		f := newSnapFields(t)
		var cfg snapConfig
		switch kind {
		case "cumulate":
			cfg = drawSnapConfig(t, "tumbling")
			step := rapid.SampledFrom([]int64{cfg.size / 2, cfg.size / 5, cfg.size / 10}).Draw(t, "step")
			cfg.assigner = &window.Cumulate{Size: cfg.size, Step: step}
		default:
			cfg = drawSnapConfig(t, kind)
		}
		cfg.early = 0
		cfg.groups = rapid.SampledFrom([]int{0, 4}).Draw(t, "groups")
		cfg.order = Order(rapid.IntRange(0, 2).Draw(t, "order"))
		hot := rapid.IntRange(0, 2).Draw(t, "hot")
		steps := drawSnapSteps(t, cfg.retract)
		big := rapid.Bool().Draw(t, "big")
		st, err := disk.Open(disk.Options{Dir: "st", FS: vfs.NewMem()})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		a := cfg.build(t, f)
		open := func() *Operator {
			b := cfg.build(t, f)
			per := b.spillEntryBytes()
			if b.Sliced() {
				per = b.sliceEntryBytes()
			}
			if kind != "tumbling" && !b.Sliced() || !b.UseStore(st, 7, hot*per) {
				return nil
			}
			b.spill.every = 1
			return b
		}
		b := open()
		if b == nil {
			return // an aggregate whose result depends on the order of updates: memory only
		}
		spills, fired, firedRestarts := 0, int64(0), 0
		r := f.schema.NewRow()
		var live []snapEvent
		var wm, now int64
		compare := func(i int, what string) {
			if err := b.StoreErr(); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			ra, rb := formatRows(a.Drain()), formatRows(b.Drain())
			oa, ob := fmt.Sprint(a.DrainOrder()), fmt.Sprint(b.DrainOrder())
			if strings.Join(ra, "\n") != strings.Join(rb, "\n") || oa != ob {
				t.Fatalf("step %d (%s): rows differ\nmemory:\n%s\n%s\ndisk:\n%s\n%s", i, what, strings.Join(ra, "\n"), oa, strings.Join(rb, "\n"), ob)
			}
		}
		for i, s := range steps {
			now += s.dtNow
			switch s.kind {
			case 0, 1:
				e, weight := s.ev, 1
				if big && e.v != nil && *e.v%7 == 0 {
					v := (math.MaxInt64/2 + 1) * (1 - 2*(*e.v%2))
					e.v = &v
				}
				if s.kind == 1 {
					if len(live) == 0 {
						continue
					}
					j := s.pick % len(live)
					e, weight = live[j], -1
					live = append(live[:j], live[j+1:]...)
				} else if cfg.retract {
					live = append(live, e)
				}
				f.fill(r, e)
				a.SetStep(uint64(i))
				b.SetStep(uint64(i))
				oa, erra := a.Process(r, e.ts, weight, now)
				f.fill(r, e)
				ob, errb := b.Process(r, e.ts, weight, now)
				if fmt.Sprint(erra) != fmt.Sprint(errb) || oa != ob {
					t.Fatalf("step %d: memory %v %v, disk %v %v", i, oa, erra, ob, errb)
				}
				if erra != nil && !isReject(erra) {
					t.Fatalf("step %d: %v", i, erra)
				}
				compare(i, "process")
			case 2, 3:
				wm += s.wm
				ea, eb := a.AdvanceWatermark(wm, now), b.AdvanceWatermark(wm, now)
				if ea != nil || eb != nil {
					t.Fatal(ea, eb)
				}
				compare(i, "watermark")
			case 4:
				// Both restart from their key-group sections (a restore
				// orders a window's keys by key group on either backend).
				if w, _, _ := b.SpillStats(); w > 0 {
					spills++
				}
				if n, _ := b.FiredSpills(); n > 0 {
					fired += n
					firedRestarts++
				}
				parts, gl := groupSections(b, cfg.groups)
				b = open()
				if err := b.RestoreGroups(parts, gl); err != nil {
					t.Fatalf("step %d: restore: %v", i, err)
				}
				parts, gl = groupSections(a, cfg.groups)
				a = cfg.build(t, f)
				if err := a.RestoreGroups(parts, gl); err != nil {
					t.Fatalf("step %d: restore: %v", i, err)
				}
			}
		}
		if _, r, _ := b.SpillStats(); r > 0 {
			reads++
		}
		n, _ := b.FiredSpills()
		if fired += n; fired > 0 {
			firedRuns++
		}
		restoredFired += firedRestarts
		a.AdvanceWatermark(changelog.WatermarkInfinity, now+1)
		b.AdvanceWatermark(changelog.WatermarkInfinity, now+1)
		compare(len(steps), "end")
		runs++
		restoredSpills += spills
		left := 0
		if err := st.Scan([]byte{0}, []byte{0xff, 0xff}, func(k, v []byte) bool { left++; return true }); err != nil {
			t.Fatal(err)
		}
		if left != 0 {
			t.Fatalf("%d keys left in the store after every window closed", left)
		}
	})
	// The draws must exercise the store: runs that spill, restarts over
	// partials, and windows read back before they fire.
	// Tumbling windows: fired windows' instances written (late rows
	// reading them back), also across restarts.
	t.Logf("%d runs on disk, %d restarts over written partials, %d runs read back before the end; %d runs wrote fired instances, %d restarts over them", runs, restoredSpills, reads, firedRuns, restoredFired)
	if runs < 10 || restoredSpills == 0 || reads == 0 {
		t.Fatalf("%d runs on disk, %d restarts over written partials, %d read back: the draws do not exercise the store", runs, restoredSpills, reads)
	}
	if kind == "tumbling" && (firedRuns == 0 || restoredFired == 0) {
		t.Fatalf("%d runs wrote fired instances, %d restarts over them: the draws do not exercise fired windows on disk", firedRuns, restoredFired)
	}
}

// groupSections returns every key group's section of o, and its globals.
func groupSections(o *Operator, n int) ([][]byte, Globals) {
	if n == 0 {
		n = 128
	}
	groups := make([]int, n)
	for g := range groups {
		groups[g] = g
	}
	encs := make([]*state.Encoder, n)
	o.SnapshotGroups(groups, func(g int) *state.Encoder { encs[g] = &state.Encoder{}; return encs[g] })
	parts := make([][]byte, n)
	for g := range groups {
		parts[g] = encs[g].Bytes()
	}
	return parts, o.Globals()
}

func isReject(err error) bool {
	_, ok := err.(*RejectError)
	return ok
}

// TestSliceSpillCorrupt: a damaged slice marker fails the restore and a
// damaged partial fails the window that reads it back, each with an error
// naming the key group, never a panic.
func TestSliceSpillCorrupt(t *testing.T) {
	f := newSnapFields(t)
	cfg := snapConfig{kind: "sliding", size: 10, slide: 5, mode: Final, keys: 1, aggs: []aggChoice{{"count", ""}, {"sum", "v"}}, groups: 4}
	for _, damage := range []string{"marker", "partial"} {
		t.Run(damage, func(t *testing.T) {
			st := memStore(t)
			over := spillOver(t, cfg, f, st, 0)
			open := func() *Operator {
				o := over()
				o.spill.every = 1
				return o
			}
			o := open()
			r := f.schema.NewRow()
			for i := range 8 {
				v := int64(i)
				f.fill(r, snapEvent{key: string(rune('a' + i%3)), ts: int64(i), v: &v})
				if _, err := o.Process(r, int64(i), 1, 0); err != nil {
					t.Fatal(err)
				}
			}
			if w, _, _ := o.SpillStats(); w == 0 {
				t.Fatal("nothing written to the store")
			}
			// Damage the first key of the kind under node 7.
			tag := byte(sliceMarker)
			if damage == "partial" {
				tag = sliceEntry
			}
			damageFirst(t, st, tag, damage)
			parts, gl := groupSections(o, 4)
			o = open()
			err := o.RestoreGroups(parts, gl)
			if damage == "marker" {
				if err == nil || !strings.Contains(err.Error(), "slice marker of end") || !strings.Contains(err.Error(), "key group") {
					t.Fatalf("restore over a damaged marker: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o.AdvanceWatermark(changelog.WatermarkInfinity, 1)
			if err := o.StoreErr(); err == nil || !strings.Contains(err.Error(), "key group") || !strings.Contains(err.Error(), "a partial") {
				t.Fatalf("a window over a damaged partial: %v", err)
			}
		})
	}
}

// memStore opens an empty store in memory, closed when t ends.
func memStore(t *testing.T) *disk.Store {
	t.Helper()
	st, err := disk.Open(disk.Options{Dir: "st", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// spillOver returns a function that builds cfg's operator over st with a
// hot tier of hot bytes (0: none), failing t if it does not spill.
func spillOver(t *testing.T, cfg snapConfig, f snapFields, st *disk.Store, hot int) func() *Operator {
	return func() *Operator {
		o := cfg.build(t, f)
		if !o.UseStore(st, 7, hot) {
			t.Fatalf("a %s window does not spill", cfg.kind)
		}
		return o
	}
}

// damageFirst overwrites the first key of st with tag (a marker or an
// entry of node 7, in key groups 0–3) with bytes no decoder accepts;
// what names the kind in the failure.
func damageFirst(t *testing.T, st *disk.Store, tag byte, what string) {
	t.Helper()
	var key []byte
	for g := range 4 {
		lo := append(state.KeyPrefix(nil, g, 7), tag)
		hi := append(state.KeyPrefix(nil, g, 7), tag+1)
		if err := st.Scan(lo, hi, func(k, v []byte) bool { key = append([]byte(nil), k...); return false }); err != nil {
			t.Fatal(err)
		}
		if key != nil {
			break
		}
	}
	if key == nil {
		t.Fatalf("no %s in the store", what)
	}
	b := st.NewBatch()
	b.Set(key, []byte{0xff, 0x01})
	if err := st.Commit(b); err != nil {
		t.Fatal(err)
	}
}
