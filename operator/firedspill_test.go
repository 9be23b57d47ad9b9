package operator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/row"
)

// TestFiredSpillReadsBack: the instances of a window that fired and waits
// for late rows go to the store, and a late row (or retraction) of a key
// whose key group's instances are there reads that key group back, then
// emits the key's next version from its whole accumulator — also after a
// restart over the store — and the close reads back the rest. Retract
// mode, count and sum(v), allowed lateness 100, 4 key groups; keys x and y
// share a key group, z is in another. Every row and count is written out
// by hand, and each step's rows equal the memory backend's.
func TestFiredSpillReadsBack(t *testing.T) {
	f := newSnapFields(t)
	cfg := snapConfig{kind: "tumbling", size: 10, slide: 10, lateness: 100, mode: Retract, keys: 1,
		aggs: []aggChoice{{"count", ""}, {"sum", "v"}}, retract: true, groups: 4}
	group := func(k string) int {
		r := f.schema.NewRow()
		f.fill(r, snapEvent{key: k})
		return keygroup.OfKey(AppendKey(nil, r, []row.Field{f.k}), 4)
	}
	// x and y: the first two keys of one key group; z: of another.
	var x, y, z string
	for c := 'a'; c <= 'z' && (y == "" || z == ""); c++ {
		k := string(c)
		switch {
		case x == "":
			x = k
		case y == "" && group(k) == group(x):
			y = k
		case z == "" && group(k) != group(x):
			z = k
		}
	}
	st := memStore(t)
	open := spillOver(t, cfg, f, st, 1<<30)
	a, b := cfg.build(t, f), open()
	r := f.schema.NewRow()
	step := func(what string, want ...string) {
		t.Helper()
		if err := b.StoreErr(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		ra, rb := formatRows(a.Drain()), formatRows(b.Drain())
		if strings.Join(ra, "\n") != strings.Join(rb, "\n") {
			t.Fatalf("%s: rows differ\nmemory:\n%s\ndisk:\n%s", what, strings.Join(ra, "\n"), strings.Join(rb, "\n"))
		}
		var got []string
		for _, row := range rb {
			// "op [start,end) key=k vals=count,sum vN final=…": the op, key,
			// values, version and is_final.
			fs := strings.Fields(row)
			got = append(got, strings.Join([]string{fs[0], fs[2], fs[3], fs[4], fs[5]}, " "))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: rows\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	process := func(k string, ts, v int64, weight int, want Outcome) {
		t.Helper()
		for _, o := range []*Operator{a, b} {
			f.fill(r, snapEvent{key: k, ts: ts, v: &v})
			if out, err := o.Process(r, ts, weight, 0); err != nil || out != want {
				t.Fatalf("%s %+d: %v %v, want %v", k, weight, out, err, want)
			}
		}
	}
	advance := func(wm int64) {
		for _, o := range []*Operator{a, b} {
			if err := o.AdvanceWatermark(wm, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	spill := func() {
		t.Helper()
		b.spill.hot = 0
		if err := b.maybeSpill(); err != nil {
			t.Fatal(err)
		}
	}
	counts := func(what string, writes, fired, reads int64) {
		t.Helper()
		w, rd, _ := b.SpillStats()
		fw, fr := b.FiredSpills()
		if w != writes || fw != fired || rd != reads || fr != reads {
			t.Fatalf("%s: %d written (%d fired), %d read (%d fired); want %d (%d), %d (all fired)", what, w, fw, rd, fr, writes, fired, reads)
		}
	}
	key := func(k string) string { return fmt.Sprintf("key=%d:%s,", f.k.Kind, k) }
	vals := func(n, sum int) string { return fmt.Sprintf("vals=%d:%d,%d:%d,", row.KindInt, n, row.KindInt, sum) }

	process(x, 1, 1, 1, OnTime)
	process(y, 2, 2, 1, OnTime)
	process(z, 3, 3, 1, OnTime)
	advance(10)
	step("fire", "insert "+key(x)+" "+vals(1, 1)+" v1 final=false",
		"insert "+key(y)+" "+vals(1, 2)+" v1 final=false",
		"insert "+key(z)+" "+vals(1, 3)+" v1 final=false")
	spill()
	counts("fired window written", 3, 3, 0)
	if n := len(b.panes.list[0].ents); n != 0 {
		t.Fatalf("%d entries left in memory", n)
	}
	// A late row of x reads back x's key group: x and y.
	process(x, 5, 10, 1, LateAccepted)
	step("late x", "update_before "+key(x)+" "+vals(1, 1)+" v1 final=false",
		"update_after "+key(x)+" "+vals(2, 11)+" v2 final=false")
	counts("late x", 3, 3, 2)
	spill()
	counts("written again", 5, 5, 2)

	// Both restart from their key-group sections; b over the store.
	parts, gl := groupSections(b, 4)
	b = open()
	if err := b.RestoreGroups(parts, gl); err != nil {
		t.Fatal(err)
	}
	parts, gl = groupSections(a, 4)
	a = cfg.build(t, f)
	if err := a.RestoreGroups(parts, gl); err != nil {
		t.Fatal(err)
	}
	// z's retraction reads back z's key group; z's row goes (its version 2).
	process(z, 3, 3, -1, LateAccepted)
	step("retract z", "delete "+key(z)+" "+vals(1, 3)+" v2 final=false")
	counts("retract z", 0, 0, 1)
	process(y, 6, 5, 1, LateAccepted)
	step("late y", "update_before "+key(y)+" "+vals(1, 2)+" v1 final=false",
		"update_after "+key(y)+" "+vals(2, 7)+" v2 final=false")
	counts("late y", 0, 0, 3)
	spill() // x, y and z's tombstone (it keeps z's version)
	counts("written after the restart", 3, 3, 3)
	advance(110)
	step("close", "update_before "+key(x)+" "+vals(2, 11)+" v2 final=false",
		"update_after "+key(x)+" "+vals(2, 11)+" v3 final=true",
		"update_before "+key(y)+" "+vals(2, 7)+" v2 final=false",
		"update_after "+key(y)+" "+vals(2, 7)+" v3 final=true")
	counts("close", 3, 3, 6)
	left := 0
	if err := st.Scan([]byte{0}, []byte{0xff, 0xff}, func(k, v []byte) bool { left++; return true }); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d keys left in the store after the window closed", left)
	}
}

// TestFiredSpillCorrupt: a damaged fired instance in the store fails the
// late row that reads it back (and the close), with an error naming the
// key group, and a damaged marker of a fired window fails the restore;
// never a panic.
func TestFiredSpillCorrupt(t *testing.T) {
	f := newSnapFields(t)
	cfg := snapConfig{kind: "tumbling", size: 10, slide: 10, lateness: 100, mode: Retract, keys: 1,
		aggs: []aggChoice{{"count", ""}, {"sum", "v"}}, retract: true, groups: 4}
	for _, damage := range []string{"marker", "instance"} {
		t.Run(damage, func(t *testing.T) {
			st := memStore(t)
			open := spillOver(t, cfg, f, st, 0)
			o := open()
			r := f.schema.NewRow()
			keys := []string{"a", "b", "c", "d", "e"}
			for i, k := range keys {
				v := int64(i)
				f.fill(r, snapEvent{key: k, ts: int64(i), v: &v})
				if _, err := o.Process(r, int64(i), 1, 0); err != nil {
					t.Fatal(err)
				}
			}
			o.AdvanceWatermark(10, 0)
			o.Drain()
			if err := o.maybeSpill(); err != nil {
				t.Fatal(err)
			}
			if w, _ := o.FiredSpills(); w != int64(len(keys)) {
				t.Fatalf("%d fired instances written, want %d", w, len(keys))
			}
			tag := byte(spillMarker)
			if damage == "instance" {
				tag = spillEntry
			}
			damageFirst(t, st, tag, damage)
			parts, gl := groupSections(o, 4)
			o = open()
			err := o.RestoreGroups(parts, gl)
			if damage == "marker" {
				if err == nil || !strings.Contains(err.Error(), "window marker of end") || !strings.Contains(err.Error(), "key group") {
					t.Fatalf("restore over a damaged marker: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var lateErr error
			for i, k := range keys {
				v := int64(10 + i)
				f.fill(r, snapEvent{key: k, ts: 5, v: &v})
				if _, lateErr = o.Process(r, 5, 1, 0); lateErr != nil {
					break
				}
			}
			if lateErr == nil || !strings.Contains(lateErr.Error(), "key group") || !strings.Contains(lateErr.Error(), "a fired instance") {
				t.Fatalf("a late row over a damaged instance: %v", lateErr)
			}
		})
	}
}
