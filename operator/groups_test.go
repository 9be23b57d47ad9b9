package operator

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// splitOps is a set of canonical operators that split the key groups
// between them as tasks do (keygroup.For).
type splitOps struct {
	k   int
	ops []*Operator
}

func (s *splitOps) owner(f snapFields, cfg Config, r *row.Row) int {
	enc := AppendKey(nil, r, cfg.Key)
	return keygroup.Owner(keygroup.OfKey(enc, s.k), len(s.ops), s.k)
}

// drainMerged merges the operators' drained rows by EmitOrder (a stable
// k-way merge: each operator's rows are already in order).
func (s *splitOps) drainMerged(t fataler) []changelog.Row {
	type src struct {
		rows []changelog.Row
		ord  []EmitOrder
	}
	srcs := make([]src, len(s.ops))
	for i, o := range s.ops {
		ord := append([]EmitOrder(nil), o.DrainOrder()...)
		rows := append([]changelog.Row(nil), o.Drain()...)
		if len(ord) != len(rows) {
			t.Fatalf("operator %d: %d rows, %d orders", i, len(rows), len(ord))
		}
		srcs[i] = src{rows, ord}
	}
	less := func(a, b EmitOrder) bool {
		if a.A != b.A {
			return a.A < b.A
		}
		if a.B != b.B {
			return a.B < b.B
		}
		return a.C < b.C
	}
	var out []changelog.Row
	for {
		best := -1
		for i := range srcs {
			if len(srcs[i].rows) == 0 {
				continue
			}
			if best < 0 || less(srcs[i].ord[0], srcs[best].ord[0]) {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, srcs[best].rows[0])
		srcs[best].rows, srcs[best].ord = srcs[best].rows[1:], srcs[best].ord[1:]
	}
}

// mergeByOrder merges per-operator row lists by their EmitOrder.
func mergeByOrder(rows [][]changelog.Row, ord [][]EmitOrder) []changelog.Row {
	var out []changelog.Row
	pos := make([]int, len(rows))
	less := func(a, b EmitOrder) bool {
		if a.A != b.A {
			return a.A < b.A
		}
		if a.B != b.B {
			return a.B < b.B
		}
		return a.C < b.C
	}
	for {
		best := -1
		for k := range rows {
			if pos[k] == len(rows[k]) {
				continue
			}
			if best < 0 || less(ord[k][pos[k]], ord[best][pos[best]]) {
				best = k
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, rows[best][pos[best]])
		pos[best]++
	}
}

func checkSorted(t fataler, ord []EmitOrder, what string) {
	for i := 1; i < len(ord); i++ {
		a, b := ord[i-1], ord[i]
		if a.A > b.A || (a.A == b.A && (a.B > b.B || (a.B == b.B && a.C > b.C))) {
			t.Fatalf("%s: rows %d and %d out of canonical order: %+v then %+v", what, i-1, i, a, b)
		}
	}
}

// TestSplitOperatorsMatchOne is the operator's half of "results do not
// depend on the parallelism": one canonical operator holding every key
// group, and 1–4 operators splitting the key groups between them (each
// processing only its keys' records, all seeing every watermark and early
// firing), emit the same rows — the split operators' firings merged by
// EmitOrder — and, at random points, the split operators write the key
// groups that changed (SnapshotGroups of Changed), restore into another
// number of operators (RestoreGroups), and go on identically. The stored
// key-group sections always equal the one operator's fresh sections of
// every key group: what Changed leaves out did not change. Some restores
// change the allowed lateness (of the one operator too): the operators
// go on identically under the new lateness. Sliding windows are sliced
// (slices.go) in the one and the split operators, and an unsliced
// operator fed and restored as the one operator is must emit its rows.
func TestSplitOperatorsMatchOne(t *testing.T) {
	for _, kind := range []string{"tumbling", "sliding", "session"} {
		t.Run(kind, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) { checkSplit(t, kind) })
		})
	}
}

func checkSplit(t *rapid.T, kind string) {
	f := newSnapFields(t)
	sc := drawSnapConfig(t, kind)
	k := rapid.SampledFrom([]int{1, 3, 8}).Draw(t, "keyGroups")
	sc.groups = k
	sc.order = rapid.SampledFrom([]Order{OrderGroup, OrderBirth}).Draw(t, "order")
	build := func() *Operator { return sc.build(t, f) }
	one := build()
	// Sliding windows: one and the split operators are sliced (slices.go);
	// ref, unsliced, is fed and restored as one is and must emit its rows.
	var ref *Operator
	buildRef := func() *Operator { rc := sc; rc.noSlice = true; return rc.build(t, f) }
	if kind == "sliding" {
		ref = buildRef()
	}
	newSplit := func(n int) *splitOps {
		s := &splitOps{k: k}
		for range n {
			s.ops = append(s.ops, build())
		}
		return s
	}
	split := newSplit(rapid.IntRange(1, min(4, k)).Draw(t, "tasks"))
	store := map[int][]byte{} // key group → its newest section
	steps := drawSnapSteps(t, sc.retract)
	var sch *EarlySchedule
	if sc.early > 0 {
		sch = &EarlySchedule{Every: sc.early}
	}
	r := f.schema.NewRow()
	var live []snapEvent
	var wm, now int64
	compare := func(i int, what string, got []changelog.Row) {
		checkSorted(t, one.DrainOrder(), what)
		want := formatRows(one.Drain())
		if ref != nil {
			if rr := formatRows(ref.Drain()); strings.Join(rr, "\n") != strings.Join(want, "\n") {
				t.Fatalf("step %d (%s): rows differ\nunsliced:\n%s\nsliced:\n%s", i, what,
					strings.Join(rr, "\n"), strings.Join(want, "\n"))
			}
		}
		if g := formatRows(got); strings.Join(g, "\n") != strings.Join(want, "\n") {
			t.Fatalf("step %d (%s, %d tasks): rows differ\none operator:\n%s\nsplit:\n%s", i, what, len(split.ops),
				strings.Join(want, "\n"), strings.Join(g, "\n"))
		}
	}
	checkpoint := func(i int) {
		for _, o := range split.ops {
			groups := o.Changed(nil)
			for g, b := range snapGroups(o, groups) {
				store[g] = b
			}
			o.ClearChanged()
		}
		// The store equals a full snapshot of the one operator.
		all := make([]int, k)
		for g := range all {
			all[g] = g
		}
		fresh := map[int]*state.Encoder{}
		one.SnapshotGroups(all, func(g int) *state.Encoder { fresh[g] = &state.Encoder{}; return fresh[g] })
		empty := snapGroups(build(), all)
		for g := range k {
			want := store[g]
			if want == nil { // never changed: as empty as a new operator's
				want = empty[g]
			}
			if !bytes.Equal(fresh[g].Bytes(), want) {
				t.Fatalf("step %d: key group %d: stored section differs from the state\nstored %x\nstate  %x", i, g, store[g], fresh[g].Bytes())
			}
		}
		// Restore into another number of operators, sometimes under
		// another allowed lateness (an upgrade): the one operator too.
		var glob Globals
		for _, o := range split.ops {
			g := o.Globals()
			glob.Watermark, glob.Now, glob.ClosedThrough = g.Watermark, g.Now, g.ClosedThrough
			glob.Emitted += g.Emitted
			glob.PartlyTooLate += g.PartlyTooLate
			glob.SkippedWindows += g.SkippedWindows
		}
		if rapid.IntRange(0, 3).Draw(t, "relate") == 0 {
			sc.lateness = rapid.SampledFrom([]int64{0, 5, 15, 1000}).Draw(t, "newLateness")
			var parts [][]byte
			for g := range k {
				parts = append(parts, fresh[g].Bytes())
			}
			g := one.Globals()
			one = build()
			if err := one.RestoreGroups(parts, g); err != nil {
				t.Fatalf("step %d: restore the one operator: %v", i, err)
			}
			if ref != nil {
				ref.MarkAllChanged()
				secs := snapGroups(ref, all)
				var rparts [][]byte
				for g := range k {
					rparts = append(rparts, secs[g])
				}
				rg := ref.Globals()
				ref = buildRef()
				if err := ref.RestoreGroups(rparts, rg); err != nil {
					t.Fatalf("step %d: restore the unsliced operator: %v", i, err)
				}
			}
		}
		n := rapid.IntRange(1, min(4, k)).Draw(t, "restoreTasks")
		next := newSplit(n)
		for ti, o := range next.ops {
			rg := keygroup.For(ti, n, k)
			var parts [][]byte
			for g := rg.Lo; g < rg.Hi; g++ {
				if store[g] != nil {
					parts = append(parts, store[g])
				}
			}
			gl := glob
			if ti > 0 {
				gl.Emitted, gl.PartlyTooLate, gl.SkippedWindows = 0, 0, 0
			}
			if err := o.RestoreGroups(parts, gl); err != nil {
				t.Fatalf("step %d: restore task %d of %d: %v", i, ti, n, err)
			}
		}
		split = next
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
			} else if sc.retract {
				live = append(live, e)
			}
			f.fill(r, e)
			one.SetStep(uint64(i))
			oa, erra := one.Process(r, e.ts, weight, now)
			if ref != nil {
				f.fill(r, e)
				ref.SetStep(uint64(i))
				if oc, err := ref.Process(r, e.ts, weight, now); oc != oa || fmt.Sprint(err) != fmt.Sprint(erra) {
					t.Fatalf("step %d: outcome %d, %v sliced; %d, %v unsliced", i, oa, erra, oc, err)
				}
			}
			f.fill(r, e)
			o := split.ops[split.owner(f, one.cfg, r)]
			o.SetStep(uint64(i))
			ob, errb := o.Process(r, e.ts, weight, now)
			if erra != nil || errb != nil {
				t.Fatalf("step %d: %v / %v", i, erra, errb)
			}
			if oa != ob {
				t.Fatalf("step %d: outcome %d one, %d split", i, oa, ob)
			}
			o.DrainOrder()
			compare(i, "process", append([]changelog.Row(nil), o.Drain()...))
		case 2:
			wm += st.wm
			one.AdvanceWatermark(wm, now)
			if ref != nil {
				ref.AdvanceWatermark(wm, now)
			}
			// The split operators advance in bounded steps: the rows
			// drained step by step, then merged, are the same.
			limit := rapid.IntRange(1, 4).Draw(t, "limit")
			more := make([]bool, len(split.ops))
			for k, o := range split.ops {
				more[k] = o.AdvanceWatermarkLimit(wm, now, limit)
			}
			chunks := [][]changelog.Row{}
			chunkOrd := [][]EmitOrder{}
			for k, o := range split.ops {
				var rows []changelog.Row
				var ord []EmitOrder
				for {
					ord = append(ord, o.DrainOrder()...)
					for _, r := range o.Drain() {
						r.Values = append([]row.Value(nil), r.Values...) // valid until the next call
						rows = append(rows, r)
					}
					if !more[k] {
						break
					}
					more[k] = o.ContinueAdvance(limit)
				}
				chunks = append(chunks, rows)
				chunkOrd = append(chunkOrd, ord)
			}
			compare(i, "watermark", mergeByOrder(chunks, chunkOrd))
		case 3:
			if sch != nil && sch.Due(now) {
				one.FireEarly(now)
				if ref != nil {
					ref.FireEarly(now)
				}
				for _, o := range split.ops {
					o.FireEarly(now)
				}
			}
			compare(i, "early", split.drainMerged(t))
		case 4:
			checkpoint(i)
		}
	}
	checkpoint(len(steps))
	one.AdvanceWatermark(changelog.WatermarkInfinity, now+1)
	if ref != nil {
		ref.AdvanceWatermark(changelog.WatermarkInfinity, now+1)
	}
	for _, o := range split.ops {
		o.AdvanceWatermark(changelog.WatermarkInfinity, now+1)
	}
	compare(len(steps), "end", split.drainMerged(t))
	var keys, entries int
	for _, o := range split.ops {
		s := o.Stats()
		keys += s.Keys
		entries += s.Entries
	}
	if s := one.Stats(); s.Keys != keys || s.Entries != entries {
		t.Fatalf("end: one operator holds %d keys, %d entries; split %d, %d", s.Keys, s.Entries, keys, entries)
	}
}

// snapGroups returns the sections of groups.
func snapGroups(o *Operator, groups []int) map[int][]byte {
	encs := map[int]*state.Encoder{}
	o.SnapshotGroups(groups, func(g int) *state.Encoder { e := &state.Encoder{}; encs[g] = e; return e })
	out := map[int][]byte{}
	for _, g := range groups {
		out[g] = bytes.Clone(encs[g].Bytes())
	}
	return out
}

// TestRestoreGroupsRefusesMisplacedKeys: a section whose key does not hash
// into the section's key group (a file renamed or mixed up) is refused,
// naming both key groups; so is a key group given twice.
func TestRestoreGroupsRefusesMisplacedKeys(t *testing.T) {
	f := newSnapFields(t)
	sc := snapConfig{kind: "tumbling", size: 10, slide: 10, keys: 1, aggs: []aggChoice{{"count", ""}}}
	o := sc.build(t, f)
	r := f.schema.NewRow()
	for _, key := range []string{"a", "b", "c", "d", "e"} {
		f.fill(r, snapEvent{key: key, ts: 1})
		if _, err := o.Process(r, 1, 1, 0); err != nil {
			t.Fatal(err)
		}
	}
	groups := o.Changed(nil)
	if len(groups) < 2 {
		t.Fatalf("5 keys in %v", groups)
	}
	secs := snapGroups(o, groups)
	// Rewrite the group number of one section to another group's.
	g0, g1 := groups[0], groups[1]
	bad := bytes.Clone(secs[g0])
	var e state.Encoder
	e.Uint(uint64(g0))
	var e1 state.Encoder
	e1.Uint(uint64(g1))
	i := bytes.Index(bad, e.Bytes())
	if i < 0 || len(e.Bytes()) != len(e1.Bytes()) {
		t.Skip("group number not found as one byte")
	}
	copy(bad[i:], e1.Bytes())
	err := sc.build(t, f).RestoreGroups([][]byte{bad}, Globals{})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("belongs to key group %d", g0)) {
		t.Fatalf("misplaced key: %v", err)
	}
	err = sc.build(t, f).RestoreGroups([][]byte{secs[g0], secs[g0]}, Globals{})
	if err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Fatalf("twice: %v", err)
	}
	// The sections together restore every key.
	all := [][]byte{}
	for _, g := range groups {
		all = append(all, secs[g])
	}
	re := sc.build(t, f)
	if err := re.RestoreGroups(all, o.Globals()); err != nil {
		t.Fatal(err)
	}
	if s := re.Stats(); s.Keys != 5 || s.Entries != 5 {
		t.Fatalf("restored %+v", s)
	}
}

// FuzzRestoreGroups: corrupt sections never panic.
func FuzzRestoreGroups(f *testing.F) {
	sf := newSnapFields(f)
	for _, kind := range []string{"tumbling", "session"} {
		sc := snapConfig{kind: kind, size: 10, slide: 10, gap: 5, lateness: 5, mode: Retract, keys: 2,
			aggs: []aggChoice{{"count", ""}, {"sum", "d"}, {"count_distinct", "s"}}, retract: true}
		o := sc.build(f, sf)
		r := sf.schema.NewRow()
		for i, key := range []string{"a", "b", "c", "a"} {
			v := int64(i)
			sf.fill(r, snapEvent{key: key, g: int64(i % 2), ts: int64(i * 3), v: &v, d: "1.5", s: "x"})
			o.Process(r, int64(i*3), 1, 0)
		}
		o.AdvanceWatermark(11, 1)
		o.Drain()
		for _, b := range snapGroups(o, o.Changed(nil)) {
			f.Add(kind == "session", b)
		}
	}
	f.Fuzz(func(t *testing.T, sessions bool, b []byte) {
		sc := snapConfig{kind: "tumbling", size: 10, slide: 10, gap: 5, lateness: 5, mode: Retract, keys: 2,
			aggs: []aggChoice{{"count", ""}, {"sum", "d"}, {"count_distinct", "s"}}, retract: true}
		if sessions {
			sc.kind = "session"
		}
		o := sc.build(t, sf)
		if err := o.RestoreGroups([][]byte{b}, Globals{Watermark: 11}); err != nil {
			return
		}
		// A restored operator works.
		r := sf.schema.NewRow()
		sf.fill(r, snapEvent{key: "a", ts: 20})
		o.Process(r, 20, 1, 2)
		o.AdvanceWatermark(changelog.WatermarkInfinity, 3)
		o.Drain()
	})
}
