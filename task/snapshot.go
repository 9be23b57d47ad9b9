package task

import (
	"fmt"
	"slices"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/dedup"
	"github.com/tidemark/tidemark/join"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/state"
)

// Section is the state of one key group of one node, as a checkpoint
// stores it (the node's key-group format: operator.SnapshotGroups, the
// dedup and order_by sections of dedup.go and order.go).
type Section struct {
	Node  int
	Group int
	Data  []byte
	// Delta marks a section that applies on top of the key group's
	// previous sections (the last full one and the deltas after it, in
	// order) instead of replacing them: only dedup nodes write them
	// (Graph.Incremental).
	Delta bool
}

// Snapshot appends to dst a section for every key group of every node
// whose state changed since the previous Snapshot (or since New or
// Restore), and forgets the changes. Call it between rounds. The sections'
// Data are new slices, the caller's.
func (t *Task) Snapshot(dst []Section) []Section {
	for ni, nr := range t.nodes {
		switch {
		case nr.dedup != nil:
			d := nr.dedup
			for i, ch := range d.changed {
				if !ch {
					continue
				}
				data, delta := d.snapshot(i)
				dst = append(dst, Section{Node: ni, Group: t.rng.Lo + i, Data: data, Delta: delta})
				d.changed[i] = false
			}
		case nr.order != nil:
			o := nr.order
			for i, ch := range o.changed {
				if !ch {
					continue
				}
				var e state.Encoder
				o.snapshot(i, &e)
				dst = append(dst, Section{Node: ni, Group: t.rng.Lo + i, Data: e.Bytes()})
				o.changed[i] = false
			}
		case nr.join != nil:
			op := nr.join.op
			for _, g := range op.Changed(nil) {
				var e state.Encoder
				op.SnapshotGroup(g, &e)
				dst = append(dst, Section{Node: ni, Group: g, Data: e.Bytes()})
			}
			op.ClearChanged()
		case nr.stage != nil:
			op := nr.stage.op
			groups := op.Changed(nil)
			encs := make(map[int]*state.Encoder, len(groups))
			op.SnapshotGroups(groups, func(g int) *state.Encoder {
				e := &state.Encoder{}
				encs[g] = e
				return e
			})
			for _, g := range groups {
				dst = append(dst, Section{Node: ni, Group: g, Data: encs[g].Bytes()})
			}
			op.ClearChanged()
		}
	}
	return dst
}

// Globals is the state of a task outside its key groups: the same in
// every task (watermark, processing time, sweep schedules) but for the
// operators' counters, which a checkpoint sums over the tasks.
type Globals struct {
	Watermark, Now int64
	// Sweep is the dedup sweep schedule; OrderNextSweep order_by's.
	Sweep          dedup.SweepState
	OrderNextSweep int64
	// Ops are the stages' operator globals (zero for select stages).
	Ops []operator.Globals
	// OwnWatermarks makes Restore give each stage the watermark and
	// processing time of its Ops entry instead of Watermark and Now (a
	// group run, where each node has its own watermark:
	// docs/scale-out.md).
	OwnWatermarks bool
	// Inputs holds each input's watermark (Graph.Inputs entries) when the
	// pipeline has inputs beside the source or joins; nil: Watermark is
	// the source's, the only one.
	Inputs []int64
}

// Globals returns the task's globals.
func (t *Task) Globals() Globals {
	g := Globals{Watermark: changelog.WatermarkNone, Sweep: dedup.NewSweepState(), Ops: make([]operator.Globals, len(t.g.Plan.Stages))}
	for _, nr := range t.nodes {
		switch {
		case nr.dedup != nil:
			g.Sweep = nr.dedup.sweep
		case nr.order != nil:
			g.OrderNextSweep = nr.order.nextSweep
		case nr.stage != nil:
			og := nr.stage.op.Globals()
			g.Ops[nr.stage.si] = og
			if !t.g.MultiWM {
				g.Watermark, g.Now = og.Watermark, og.Now
			}
		case nr.join != nil:
			jg := nr.join.op.Globals()
			g.Ops[nr.join.si].Emitted = jg.Emitted
			if !t.g.MultiWM {
				// The source's watermark, which both sides read: a
				// pipeline whose only keyed stage is a join has no
				// stage operator to take it from.
				g.Watermark, g.Now = max(g.Watermark, nr.in[0]), max(g.Now, jg.Now)
			}
		}
	}
	if t.g.MultiWM && len(t.nodes) > 0 {
		g.Inputs = slices.Clone(t.nodes[0].in)
		for _, nr := range t.nodes[1:] {
			for i, w := range nr.in {
				g.Inputs[i] = max(g.Inputs[i], w)
			}
		}
		g.Watermark = g.Inputs[0]
		for _, nr := range t.nodes {
			if nr.stage != nil {
				g.Now = max(g.Now, nr.stage.op.Globals().Now)
			}
		}
	}
	return g
}

// SumGlobals combines the globals of every task of a run: their shared
// values and the sums of the operators' counters.
func SumGlobals(all []Globals) Globals {
	if len(all) == 0 {
		return Globals{}
	}
	out := all[0]
	out.Ops = slices.Clone(all[0].Ops)
	for _, g := range all[1:] {
		for i := range out.Ops {
			out.Ops[i].Emitted += g.Ops[i].Emitted
			out.Ops[i].PartlyTooLate += g.Ops[i].PartlyTooLate
			out.Ops[i].SkippedWindows += g.Ops[i].SkippedWindows
		}
	}
	return out
}

// Restore brings a new task to a checkpoint: the sections of its key
// groups (any order of key groups, but a key group's delta sections after
// its full one, in the order they were written; sections of other key
// groups are an error) and the
// run's globals g. The operators' counters go to the task with index 0
// (they are sums). Errors name the node, the key group and the cause;
// the task must then be discarded.
func (t *Task) Restore(sections []Section, g Globals) error {
	if len(g.Ops) != len(t.g.Plan.Stages) {
		return fmt.Errorf("task: checkpoint globals for %d stages, the plan has %d", len(g.Ops), len(t.g.Plan.Stages))
	}
	byNode := make([][]Section, len(t.nodes))
	for _, s := range sections {
		if s.Node < 0 || s.Node >= len(t.nodes) {
			return fmt.Errorf("task: section of node %d: the graph has %d nodes", s.Node, len(t.nodes))
		}
		if !t.rng.Contains(s.Group) {
			return fmt.Errorf("task: section of key group %d given to the task of key groups [%d, %d)", s.Group, t.rng.Lo, t.rng.Hi)
		}
		byNode[s.Node] = append(byNode[s.Node], s)
	}
	for ni, nr := range t.nodes {
		secs := byNode[ni]
		slices.SortStableFunc(secs, func(a, b Section) int { return a.Group - b.Group })
		for i, s := range secs {
			first := i == 0 || secs[i-1].Group != s.Group
			switch {
			case s.Delta && (nr.dedup == nil || first):
				return fmt.Errorf("%s: key group %d: a delta section without a full section before it", nr.name(), s.Group)
			case !s.Delta && !first:
				return fmt.Errorf("%s: key group %d given twice", nr.name(), s.Group)
			}
		}
		nr.snd.SetWatermark(g.Watermark)
		// The inputs' watermarks, in every graph: a join node judges
		// its rows by its sides' (nr.in) also when every watermark is
		// the source's (a join of two views of the source), and a row
		// too late by the checkpoint's watermark must stay too late
		// after the restore.
		for i := range nr.in {
			switch {
			case i < len(g.Inputs):
				nr.in[i] = g.Inputs[i]
			case i == 0:
				nr.in[i] = g.Watermark
			}
		}
		if t.g.MultiWM {
			nr.wm = t.g.NodeWatermark(ni, nr.in)
			nr.snd.SetWatermark(nr.wm)
		}
		switch {
		case nr.join != nil:
			jn := nr.join
			groups := make([]int, len(secs))
			parts := make([][]byte, len(secs))
			for i, s := range secs {
				groups[i], parts[i] = s.Group, s.Data
			}
			l, r := jn.sideWM(nr.in, 0), jn.sideWM(nr.in, 1)
			jn.wm = [2]int64{l, r}
			jg := join.Globals{Watermarks: jn.wm, Now: g.Now}
			if t.index == 0 {
				jg.Emitted = g.Ops[jn.si].Emitted
			}
			if err := jn.op.RestoreGroups(groups, parts, jg); err != nil {
				return fmt.Errorf("stage %s: %w", jn.st.Name, err)
			}
			nr.snd.SetWatermark(jn.op.OutputWatermark())
		case nr.dedup != nil:
			nr.dedup.sweep = g.Sweep
			for _, s := range secs {
				d := state.NewDecoder(s.Data)
				restore := nr.dedup.restore
				if s.Delta {
					restore = nr.dedup.restoreDelta
				}
				if err := restore(s.Group-t.rng.Lo, d); err != nil {
					return fmt.Errorf("dedup: key group %d: %w", s.Group, err)
				}
				if d.Remaining() != 0 {
					return fmt.Errorf("dedup: key group %d: %d bytes after the section", s.Group, d.Remaining())
				}
			}
		case nr.order != nil:
			nr.order.nextSweep = g.OrderNextSweep
			for _, s := range secs {
				d := state.NewDecoder(s.Data)
				if err := nr.order.restore(s.Group-t.rng.Lo, d); err != nil {
					return fmt.Errorf("order_by: key group %d: %w", s.Group, err)
				}
				if d.Remaining() != 0 {
					return fmt.Errorf("order_by: key group %d: %d bytes after the section", s.Group, d.Remaining())
				}
			}
		case nr.stage != nil:
			parts := make([][]byte, len(secs))
			for i, s := range secs {
				parts[i] = s.Data
			}
			og := g.Ops[nr.stage.si]
			if !g.OwnWatermarks {
				og.Watermark, og.Now = g.Watermark, g.Now
				if t.g.MultiWM {
					og.Watermark = nr.wm
				}
			}
			if t.index > 0 {
				og.Emitted, og.PartlyTooLate, og.SkippedWindows = 0, 0, 0
			}
			if err := nr.stage.op.RestoreGroups(parts, og); err != nil {
				return fmt.Errorf("stage %s: %w", nr.stage.st.Name, err)
			}
		}
	}
	return nil
}

func (nr *nodeRT) name() string {
	switch nr.n.Kind {
	case KindDedup:
		return "dedup"
	case KindOrder:
		return "order_by"
	case KindJoin:
		return "stage " + nr.join.st.Name
	}
	return "stage " + nr.stage.st.Name
}

// StageStats is one stage's state in one task.
type StageStats struct {
	operator.Stats
	HotKeys []operator.KeyState
	// Join is a join stage's state (nil for other stages).
	Join *join.Stats
}

// Stats reports the task's state: per stage (zero for select stages) the
// operator's state and up to hot of its keys holding the most state, and
// the event ids the dedup tables remember with their bytes. It walks the
// state: call it between rounds, for reports.
func (t *Task) Stats(hot int) (stages []StageStats, dedupIDs, dedupBytes int) {
	stages = make([]StageStats, len(t.g.Plan.Stages))
	for _, nr := range t.nodes {
		switch {
		case nr.stage != nil:
			s := StageStats{Stats: nr.stage.op.Stats()}
			if hot > 0 {
				s.HotKeys = nr.stage.op.TopKeys(hot)
			}
			stages[nr.stage.si] = s
		case nr.join != nil:
			js := nr.join.op.Stats()
			stages[nr.join.si] = StageStats{Stats: operator.Stats{OpenWindows: js.Windows, Entries: js.Rows, Keys: js.Keys,
				StateBytes: js.StateBytes, RowsEmitted: js.RowsEmitted}, Join: &js}
		case nr.dedup != nil:
			for _, tb := range nr.dedup.tables {
				if tb != nil {
					dedupIDs += tb.Len()
					dedupBytes += tb.Bytes()
				}
			}
		}
	}
	return stages, dedupIDs, dedupBytes
}
