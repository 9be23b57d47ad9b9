package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/dedup"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/task"
)

// The checkpoint protocol (docs/checkpoints.md): the router marks a round
// (a batch boundary); every task snapshots, right after that round, the
// key groups whose state changed since the previous checkpoint; the
// writer, once it has written the round, prepares every exactly-once sink
// (their output since the last checkpoint becomes durable but
// unpublished), writes the changed sections into one new segment, writes
// the manifest — source position, the router's state, counters, each key
// group's newest section (in this segment or an earlier one), and what the
// sinks prepared — atomically, and only then commits the sinks. On start
// it restores the newest checkpoint whose manifest and sections read back
// intact, into any number of tasks, and asks every sink to recover to it.

// payloadVersion is the manifest payload's own version (inside
// checkpoint.FormatVersion). Version 5 adds each stage's closed horizon;
// version 4 is still read (the horizon is then derived from the
// checkpoint's spec: upgrade.go). Version 6 marks count_distinct slots
// that hold value hashes (aggregate/distinct.go); versions 4 and 5 held
// the values, so they are read only by pipelines without count_distinct.
// Version 7 adds the inputs of a pipeline with several (engine/inputs.go).
// Version 8 adds the disk backend's stores (engine/state.go).
// Version 9 adds, last, the count of a change stream\'s deletes.
const payloadVersion = 9

// committer is one sink taking part in checkpoints.
type committer struct {
	id string // stable name: "<stage>: sinks[i]", "<stage>: late.sink", "quarantine.sink", "conflicts.sink"
	c  sink.Committer
}

// secRef locates a key group's newest section.
type secRef struct {
	seg       string
	off, n    int64
	hash      uint64
	node, grp int
	delta     bool // applies on top of the key group's sections before it
}

type nodeGroup struct{ node, group int }

// ckState is the checkpoint bookkeeping.
type ckState struct {
	dir      string
	store    checkpoint.Store
	interval time.Duration
	retain   int
	spec     []byte // the pipeline spec, canonical JSON
	nextID   int64
	last     time.Time // when the previous checkpoint completed (wall clock)
	// lastRouted is when the router last asked for one.
	lastRouted time.Time
	restored   int64 // the checkpoint restored at start, 0 for none

	committers []committer
	flushers   []func(context.Context) error // at-least-once sinks, flushed at each checkpoint

	// current is each key group's newest sections: its last full section
	// and the delta sections after it, in order; segSize the bytes of
	// each segment (for compaction).
	current map[nodeGroup][]secRef
	// retained maps each retained checkpoint to the segments it references.
	retained map[int64][]string
	segSize  map[string]int64
	// tables are the disk backend's table objects the checkpoint directory
	// holds for the retained checkpoints, by object name; stateSent the
	// bytes of tables the last checkpoint sent.
	tables    map[string]tableRef
	stateSent int64

	taken    int
	failures int
	lastID   int64
	bytes    int // size of the last checkpoint (manifest + new segment)
	segBytes int // size of the last new segment
	duration time.Duration
	total    time.Duration
	// allBytes, longest, sections and deltas: CheckpointSummary's Bytes,
	// Longest, Sections and Deltas.
	allBytes         int64
	longest          time.Duration
	sections, deltas int
}

// routerState is the router's part of a checkpoint, taken after a round.
type routerState struct {
	position []byte
	now, wm  int64
	parts    int
	events   int64
	redel    int64
	outside  int64
	step     uint64
	present  []bool
	tracker  []byte
	early    []int64 // per stage: next early firing (−1: none)
	// inputs are the inputs of a run with several (the source first;
	// position is then unused), nil otherwise.
	inputs []inputState
}

// routerState captures the router's state for a snapshot round.
func (rt *runtime) routerState() *routerState {
	s := &routerState{now: rt.now, wm: rt.wm, parts: rt.parts, events: rt.events, redel: rt.redeliver, outside: rt.outside,
		step: rt.step, present: slices.Clone(rt.present)}
	if res, ok := rt.src.(source.Resumable); ok && len(rt.ins) == 0 {
		if reo, ok := rt.split.(source.Reorderer); rt.split != nil && !(ok && reo.Reorders()) {
			s.position = rt.srcPos // the source has claimed further
		} else {
			s.position = res.Position()
		}
	}
	if len(rt.ins) > 0 {
		s.inputs = rt.inputStates()
	}
	var e state.Encoder
	rt.tracker.Snapshot(&e)
	s.tracker = e.Bytes()
	for _, sch := range rt.early {
		if sch == nil {
			s.early = append(s.early, -1)
		} else {
			s.early = append(s.early, sch.Next)
		}
	}
	if rt.ck != nil {
		rt.ck.lastRouted = rt.opts.WallClock()
	}
	return s
}

// SpecJSON returns the pipeline spec as canonical JSON (encoding/json
// sorts map keys; struct fields keep their order).
func SpecJSON(v any) ([]byte, error) { return json.Marshal(v) }

// registerSink records how a sink takes part in checkpoints: an
// exactly-once sink must implement sink.Committer; an at-least-once one is
// flushed at each checkpoint. It returns the error for an exactly-once
// sink that cannot commit per checkpoint.
func (rt *runtime) registerSink(id, typ, delivery string, s any, flush func(context.Context) error) error {
	ck := rt.ck
	if ck == nil {
		return nil
	}
	if delivery == "at_least_once" {
		ck.flushers = append(ck.flushers, flush)
		return nil
	}
	c, ok := s.(sink.Committer)
	if !ok {
		return fmt.Errorf("%s (%s): cannot take part in checkpoints: it publishes each row when written and cannot take one back; set delivery: at_least_once to accept rows written again after a restore", id, typ)
	}
	ck.committers = append(ck.committers, committer{id: id, c: c})
	return nil
}

// takeCheckpoint runs the protocol after a round the router marked.
func (rt *runtime) takeCheckpoint(ctx context.Context, ro *routerOut, outs []*taskOut) error {
	err := rt.checkpointOnce(ctx, ro, outs)
	if err != nil {
		rt.ck.failures++
		rt.publishLive(false)
	}
	return err
}

// checkpointOnce runs the protocol for the next checkpoint id.
func (rt *runtime) checkpointOnce(ctx context.Context, ro *routerOut, outs []*taskOut) error {
	ck := rt.ck
	start := time.Now()
	id := ck.nextID
	// Ledgers commit before the checkpoint; the conflicts they find are
	// written to the conflict output before it prepares.
	if err := rt.applyLedgers(ctx, 0); err != nil {
		return fmt.Errorf("checkpoint %d: %w", id, err)
	}
	prepared := make([][]byte, len(ck.committers))
	for i, s := range ck.committers {
		p, err := s.c.Prepare(ctx, id)
		if err != nil {
			return fmt.Errorf("checkpoint %d: %s: prepare: %w", id, s.id, err)
		}
		prepared[i] = p
	}
	for _, f := range ck.flushers {
		if err := f(ctx); err != nil {
			return fmt.Errorf("checkpoint %d: %w", id, err)
		}
	}
	rt.fault("prepared", id)
	segName := checkpoint.SegmentName(id)
	var secs []task.Section
	var globals []task.Globals
	size := len(checkpoint.SegmentMagic)
	for _, o := range outs {
		secs = append(secs, o.sections...)
		globals = append(globals, o.globals)
		for _, s := range o.sections {
			size += len(s.Data)
		}
	}
	// The new sections, in one allocation (grown once more for
	// compaction's copies).
	seg := append(make([]byte, 0, size), checkpoint.SegmentMagic...)
	slices.SortFunc(secs, func(a, b task.Section) int {
		if a.Node != b.Node {
			return a.Node - b.Node
		}
		return a.Group - b.Group
	})
	nsec, ndelta := 0, 0
	place := func(node, group int, data []byte, delta bool) secRef {
		r := secRef{seg: segName, off: int64(len(seg)), n: int64(len(data)), hash: xxhash.Sum64(data), node: node, grp: group, delta: delta}
		seg = append(seg, data...)
		nsec++
		if delta {
			ndelta++
		}
		return r
	}
	for _, s := range secs {
		k := nodeGroup{s.Node, s.Group}
		r := place(s.Node, s.Group, s.Data, s.Delta)
		if !s.Delta {
			ck.current[k] = []secRef{r}
			continue
		}
		if len(ck.current[k]) == 0 {
			return fmt.Errorf("checkpoint %d: node %d, key group %d: a delta section without a full section before it", id, s.Node, s.Group)
		}
		ck.current[k] = append(ck.current[k], r)
	}
	// Compaction: a segment of which less than half is still referenced
	// has its live sections copied into the new one, so that old segments
	// can go and the directory holds at most about twice the state.
	keys := slices.SortedFunc(maps.Keys(ck.current), func(a, b nodeGroup) int {
		if a.node != b.node {
			return a.node - b.node
		}
		return a.group - b.group
	})
	live := map[string]int64{}
	for _, k := range keys {
		for _, r := range ck.current[k] {
			live[r.seg] += r.n
		}
	}
	moved := int64(0)
	for _, k := range keys {
		for _, r := range ck.current[k] {
			if r.seg != segName && live[r.seg]*2 < ck.segSize[r.seg] {
				moved += r.n
			}
		}
	}
	seg = slices.Grow(seg, int(moved))
	for _, k := range keys {
		chain := ck.current[k]
		for i, r := range chain {
			if r.seg == segName || live[r.seg]*2 >= ck.segSize[r.seg] {
				continue
			}
			b, err := ck.store.ReadSegment(r.seg, r.off, r.n)
			if err != nil {
				return fmt.Errorf("checkpoint %d: compacting: %w", id, err)
			}
			if xxhash.Sum64(b) != r.hash {
				return fmt.Errorf("checkpoint %d: compacting: segment %s: section of key group %d changed on disk", id, r.seg, r.grp)
			}
			chain[i] = place(r.node, r.grp, b, r.delta)
		}
	}
	var snaps []stateSnap
	var pause DiskCheckpoint // the longest task's
	for _, o := range outs {
		snaps = append(snaps, o.snaps...)
		if o.pause.Pause > pause.Pause {
			pause = o.pause
		}
	}
	var stores []storeRef
	if rt.disk != nil {
		defer rt.removeSnaps(snaps)
		var sent int64
		var err error
		t0 := time.Now() // a measurement for the summary, not an input of the run
		times, err := waitSnaps(snaps)
		if err != nil {
			return fmt.Errorf("checkpoint %d: %w", id, err)
		}
		pause.Flush, pause.Checkpoint, pause.List, pause.Snapshot = times.Flush, times.Checkpoint, times.List, time.Since(t0)
		t0 = time.Now()
		stores, seg, sent, err = rt.uploadSnaps(snaps, seg, ck.tables, id)
		if err != nil {
			return fmt.Errorf("checkpoint %d: %w", id, err)
		}
		pause.Upload = time.Since(t0)
		ck.stateSent = sent
		rt.disk.sent += sent
		pause.ID, pause.Sent = id, sent
		rt.disk.cks = append(rt.disk.cks, pause)
		slices.SortFunc(stores, func(a, b storeRef) int { return a.lo - b.lo })
		rt.fault("uploaded", id)
	}
	segWritten := 0
	if len(seg) > len(checkpoint.SegmentMagic) {
		if err := ck.store.WriteSegment(segName, seg); err != nil {
			return fmt.Errorf("checkpoint %d: %w", id, err)
		}
		segWritten = len(seg)
		ck.segSize[segName] = int64(len(seg))
	}
	var e state.Encoder
	refs := rt.encodeManifest(&e, ro.state, task.SumGlobals(globals), prepared, stores, segName)
	c := &checkpoint.Checkpoint{ID: id, Created: rt.opts.WallClock().UnixMilli(), Pipeline: rt.plan.Spec.Name, Spec: ck.spec, Payload: e.Bytes()}
	_, n, err := checkpoint.WriteEncoded(ck.dir, id, checkpoint.Encode(c))
	if err != nil {
		return err
	}
	rt.fault("written", id)
	for i, s := range ck.committers {
		t0 := time.Now()
		err := s.c.Commit(ctx, id, prepared[i])
		rt.commits = append(rt.commits, SinkCommit{Sink: s.id, ID: id, Duration: time.Since(t0), Err: err != nil})
		if err != nil {
			return fmt.Errorf("checkpoint %d: %s: commit: %w", id, s.id, err)
		}
		rt.fault("committed:"+s.id, id)
	}
	if a, ok := rt.src.(source.Acknowledger); ok && len(rt.ins) == 0 {
		// The source may release what this checkpoint holds (a slot
		// confirms its position): its sinks have committed.
		a.Acknowledge(ro.state.position)
	}
	ck.retained[id] = refs
	if err := rt.prune(); err != nil {
		rt.logf("checkpoint %d: pruning old checkpoints: %v", id, err)
	}
	ck.nextID++
	ck.taken++
	ck.lastID, ck.bytes, ck.segBytes = id, n+segWritten, segWritten
	ck.duration = time.Since(start)
	ck.total += ck.duration
	ck.allBytes += int64(ck.bytes)
	ck.longest = max(ck.longest, ck.duration)
	ck.sections += nsec
	ck.deltas += ndelta
	ck.last = rt.opts.WallClock()
	rt.publishLive(false)
	return nil
}

// prune deletes the checkpoints beyond retain and the segments no
// retained checkpoint references.
func (rt *runtime) prune() error {
	ck := rt.ck
	if err := checkpoint.Prune(ck.dir, ck.retain); err != nil {
		return err
	}
	ids, err := checkpoint.List(ck.dir)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	have := map[int64]bool{}
	for _, id := range ids {
		have[id] = true
		for _, s := range ck.retained[id] {
			keep[s] = true
		}
	}
	for id := range ck.retained {
		if !have[id] {
			delete(ck.retained, id)
		}
	}
	segs, err := ck.store.Segments()
	if err != nil {
		return err
	}
	for _, s := range segs {
		if sid, _ := checkpoint.SegmentID(s); keep[s] || sid >= ck.nextID {
			continue
		}
		if err := ck.store.RemoveSegment(s); err != nil {
			return err
		}
		delete(ck.segSize, s)
	}
	if fs, ok := ck.store.(checkpoint.FileStore); ok && rt.disk != nil {
		files, err := fs.Files()
		if err != nil {
			return err
		}
		for _, f := range files {
			if keep[f] {
				continue
			}
			if err := fs.RemoveFile(f); err != nil {
				return err
			}
			delete(ck.tables, f)
		}
	}
	return nil
}

// The manifest payload, version 5 (state encoding):
//
//	Byte(5) Uint(key groups) Uint(tasks that wrote it) Bytes8(source position)
//	router: Int(now) Int(watermark) Uint(partitions) Int(events) Int(redelivered)
//	        Int(outside the range) Uint(step) Uint(#fields) Bool(present)…
//	        Bytes8(tracker snapshot) Uint(#stages) Int(next early firing, −1 none)…
//	counters: Int(quarantined) Int(duplicates) Int(conflicts) Int(stale)
//	        Int(superseded) Uint(#rules) (String(rule) Int(n))…
//	        Uint(#notes) (Bool(set) Uint(step) String(text))…
//	        per stage: String(name) Int(counter)… (task.StageCounters.Fields)
//	globals: Int(watermark) Int(now) Int(dedup cut) Int(dedup next sweep)
//	        Int(order_by next sweep) per stage: Int(emitted) Int(partly too
//	        late) Int(skipped windows) Int(closed through; version 5)
//	graph:  Uint(#nodes) (Byte(kind) String(stage or ""))…
//	segments: Uint(#segments) String(name)…
//	sections: Uint(#sections) (Uint(node) Uint(key group) Uint(segment index)
//	        Uint(offset) Uint(length) Fixed64(xxHash64) Bool(delta))…
//	        by node and key group; a key group's full section first, then
//	        its deltas in the order they were written
//	sinks:  Uint(#committers) (String(id) Bytes8(prepared))…
//	inputs (version 7): engine/inputs.go's encodeInputs
//	stores (version 8): engine/state.go's encodeStores
//	deletes (version 9): Int(a change stream's deletes)

// encodeManifest writes the manifest and returns the segments it
// references.
func (rt *runtime) encodeManifest(e *state.Encoder, rs *routerState, g task.Globals, prepared [][]byte, stores []storeRef, segName string) []string {
	e.Byte(payloadVersion)
	e.Uint(uint64(rt.g.KeyGroups))
	e.Uint(uint64(rt.par))
	e.Bytes8(rs.position)
	e.Int(rs.now)
	e.Int(rs.wm)
	e.Uint(uint64(rs.parts))
	e.Int(rs.events)
	e.Int(rs.redel)
	e.Int(rs.outside)
	e.Uint(rs.step)
	e.Uint(uint64(len(rs.present)))
	for _, p := range rs.present {
		e.Bool(p)
	}
	e.Bytes8(rs.tracker)
	e.Uint(uint64(len(rs.early)))
	for _, n := range rs.early {
		e.Int(n)
	}
	c := &rt.cnt
	for _, v := range []int64{c.Quarantined, c.Duplicates, c.Conflicts, c.StaleVersions, c.Superseded} {
		e.Int(v)
	}
	e.Uint(uint64(len(c.ByRule)))
	for _, k := range slices.Sorted(maps.Keys(c.ByRule)) {
		e.String(k)
		e.Int(c.ByRule[k])
	}
	e.Uint(uint64(len(c.First)))
	for _, n := range c.First {
		e.Bool(n.Set)
		e.Uint(n.Step)
		e.String(n.Text)
	}
	for i, st := range rt.plan.Stages {
		e.String(st.Name)
		for _, p := range c.Stages[i].Fields() {
			e.Int(*p)
		}
	}
	e.Int(g.Watermark)
	e.Int(g.Now)
	e.Int(g.Sweep.Cut)
	e.Int(g.Sweep.NextSweep)
	e.Int(g.OrderNextSweep)
	for _, og := range g.Ops {
		e.Int(og.Emitted)
		e.Int(og.PartlyTooLate)
		e.Int(og.SkippedWindows)
		e.Int(og.ClosedThrough)
	}
	e.Uint(uint64(len(rt.g.Nodes)))
	for _, n := range rt.g.Nodes {
		e.Byte(byte(n.Kind))
		name := ""
		if n.Stage >= 0 {
			name = rt.plan.Stages[n.Stage].Name
		}
		e.String(name)
	}
	var refs []secRef
	for _, k := range slices.SortedFunc(maps.Keys(rt.ck.current), func(a, b nodeGroup) int {
		if a.node != b.node {
			return a.node - b.node
		}
		return a.group - b.group
	}) {
		refs = append(refs, rt.ck.current[k]...)
	}
	var segs []string
	segIdx := map[string]int{}
	for _, r := range refs {
		if _, ok := segIdx[r.seg]; !ok {
			segIdx[r.seg] = len(segs)
			segs = append(segs, r.seg)
		}
	}
	e.Uint(uint64(len(segs)))
	for _, s := range segs {
		e.String(s)
	}
	e.Uint(uint64(len(refs)))
	for _, r := range refs {
		e.Uint(uint64(r.node))
		e.Uint(uint64(r.grp))
		e.Uint(uint64(segIdx[r.seg]))
		e.Uint(uint64(r.off))
		e.Uint(uint64(r.n))
		e.Fixed64(r.hash)
		e.Bool(r.delta)
	}
	e.Uint(uint64(len(rt.ck.committers)))
	for i, s := range rt.ck.committers {
		e.String(s.id)
		e.Bytes8(prepared[i])
	}
	encodeInputs(e, rs.inputs)
	encodeStores(e, stores, segName)
	if len(stores) > 0 && !slices.Contains(segs, segName) {
		segs = append(segs, segName) // the stores' files other than tables
	}
	for _, st := range stores {
		for _, t := range st.tables {
			segs = append(segs, t.obj)
		}
	}
	e.Int(rt.cnt.Deletes)
	return segs
}

// manifest is a decoded manifest.
type manifest struct {
	version          byte // the payload's version
	keyGroups, tasks int
	router           routerState
	cnt              task.Counters
	globals          task.Globals
	nodes            []string // "kind/stage"
	refs             []secRef
	segs             []string
	prepared         map[string][]byte
	// stores are the disk backend's stores (version 8), and storeSeg the
	// segment holding their files other than tables.
	stores   []storeRef
	storeSeg string
}

// decodeManifest reads a manifest payload. Errors wrap
// checkpoint.ErrCorrupt for damage (a payload that does not parse).
func (rt *runtime) decodeManifest(payload []byte) (*manifest, error) {
	d := state.NewDecoder(payload)
	version := d.Section("manifest", 4, 5, 6, 7, 8, payloadVersion)
	m := &manifest{version: version, cnt: task.NewCounters(len(rt.plan.Stages)), prepared: map[string][]byte{}}
	m.keyGroups = int(d.Len(1<<16, 0))
	m.tasks = int(d.Len(1<<16, 0))
	r := &m.router
	r.position = d.Bytes8()
	r.now, r.wm = d.Int(), d.Int()
	r.parts = d.Len(MaxPartitions, 0)
	r.events, r.redel, r.outside = d.Int(), d.Int(), d.Int()
	r.step = d.Uint()
	n := d.Len(1<<20, 1)
	for i := 0; i < n && d.Err() == nil; i++ {
		r.present = append(r.present, d.Bool())
	}
	r.tracker = d.Bytes8()
	n = d.Len(1<<16, 1)
	for i := 0; i < n && d.Err() == nil; i++ {
		r.early = append(r.early, d.Int())
	}
	c := &m.cnt
	for _, p := range []*int64{&c.Quarantined, &c.Duplicates, &c.Conflicts, &c.StaleVersions, &c.Superseded} {
		*p = d.Int()
	}
	n = d.Len(1<<20, 2)
	for i := 0; i < n && d.Err() == nil; i++ {
		if c.ByRule == nil {
			c.ByRule = map[string]int64{}
		}
		k := d.String()
		c.ByRule[k] = d.Int()
	}
	n = d.Len(1<<16, 3)
	if d.Err() == nil && n != len(c.First) {
		d.Fail("%d notes, the plan has %d stages", n, len(rt.plan.Stages))
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		c.First[i] = task.Note{Set: d.Bool(), Step: d.Uint(), Text: d.String()}
	}
	for i, st := range rt.plan.Stages {
		if name := d.String(); d.Err() == nil && name != st.Name {
			d.Fail("stage %q, the plan has %q", name, st.Name)
		}
		for _, p := range c.Stages[i].Fields() {
			*p = d.Int()
		}
	}
	g := &m.globals
	g.Watermark, g.Now = d.Int(), d.Int()
	g.Sweep = dedup.SweepState{Cut: d.Int(), NextSweep: d.Int()}
	g.OrderNextSweep = d.Int()
	g.Ops = make([]operator.Globals, len(rt.plan.Stages))
	for i := range g.Ops {
		g.Ops[i].Emitted, g.Ops[i].PartlyTooLate, g.Ops[i].SkippedWindows = d.Int(), d.Int(), d.Int()
		g.Ops[i].ClosedThrough = changelog.WatermarkNone // version 4: derived (closedHorizons)
		if version >= 5 {
			g.Ops[i].ClosedThrough = d.Int()
		}
	}
	n = d.Len(1<<16, 2)
	for i := 0; i < n && d.Err() == nil; i++ {
		k := d.Byte()
		m.nodes = append(m.nodes, fmt.Sprintf("%d/%s", k, d.String()))
	}
	n = d.Len(1<<24, 1)
	for i := 0; i < n && d.Err() == nil; i++ {
		m.segs = append(m.segs, d.String())
	}
	n = d.Len(1<<31, 13)
	for i := 0; i < n && d.Err() == nil; i++ {
		ref := secRef{node: int(d.Uint()), grp: int(d.Uint())}
		si := d.Uint()
		ref.off, ref.n = int64(d.Uint()), int64(d.Uint())
		ref.hash = d.Fixed64()
		ref.delta = d.Bool()
		if d.Err() != nil {
			break
		}
		if si >= uint64(len(m.segs)) {
			d.Fail("section %d: segment %d of %d", i, si, len(m.segs))
			break
		}
		ref.seg = m.segs[si]
		m.refs = append(m.refs, ref)
	}
	n = d.Len(1<<16, 2)
	for i := 0; i < n && d.Err() == nil; i++ {
		id := d.String()
		p := d.Bytes8()
		if len(p) == 0 {
			p = nil // what Prepare returned: nothing to publish
		}
		m.prepared[id] = p
	}
	if version >= 7 {
		r.inputs = decodeInputs(d)
	}
	if version >= 8 {
		m.stores, m.storeSeg = decodeStores(d)
		if len(m.stores) > 0 && !slices.Contains(m.segs, m.storeSeg) {
			m.segs = append(m.segs, m.storeSeg)
		}
		for _, st := range m.stores {
			for _, t := range st.tables {
				m.segs = append(m.segs, t.obj)
			}
		}
	}
	if version >= 9 {
		c.Deletes = d.Int()
	}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", checkpoint.ErrCorrupt, err)
	}
	if d.Remaining() != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the manifest", checkpoint.ErrCorrupt, d.Remaining())
	}
	return m, nil
}

// restored is a checkpoint read back: its manifest and the sections of
// every key group.
type restored struct {
	m    *manifest
	secs []task.Section
}

// usable reads and checks a checkpoint: the pipeline, the spec and the key
// groups must match (else a plain error: the run stops), and every section
// must read back with its checksum (else an ErrCorrupt error naming the
// segment: the previous checkpoint is tried).
func (rt *runtime) usable(c *checkpoint.Checkpoint) (*restored, error) {
	ck := rt.ck
	if c.Pipeline != rt.plan.Spec.Name {
		return nil, fmt.Errorf("it belongs to pipeline %q, not %q", c.Pipeline, rt.plan.Spec.Name)
	}
	if changed := specChanges(c.Spec, ck.spec); len(changed) > 0 {
		return nil, fmt.Errorf("it was taken under another pipeline spec: %s; restoring it would mix two computations (use a new checkpoint.dir to recompute from the start)", strings.Join(changed, "; "))
	}
	m, err := rt.decodeManifest(c.Payload)
	if err != nil {
		return nil, err
	}
	if m.version < 6 {
		for _, st := range rt.plan.Stages {
			for _, a := range st.Aggs {
				if a.Func == "count_distinct" {
					return nil, fmt.Errorf("it holds the values of %s's count_distinct (%s) where this build keeps their hashes (manifest version %d, this build writes %d); it cannot be restored (use a new checkpoint.dir to recompute from the start)", st.Name, a.Name, m.version, payloadVersion)
				}
			}
		}
	}
	if m.keyGroups != rt.g.KeyGroups {
		return nil, fmt.Errorf("key_groups (%d → %d) changed: a pipeline's state is split into its key groups for good; recompute from the start with a new checkpoint.dir, or keep key_groups: %d", m.keyGroups, rt.g.KeyGroups, m.keyGroups)
	}
	var want []string
	for _, n := range rt.g.Nodes {
		name := ""
		if n.Stage >= 0 {
			name = rt.plan.Stages[n.Stage].Name
		}
		want = append(want, fmt.Sprintf("%d/%s", n.Kind, name))
	}
	if !slices.Equal(want, m.nodes) {
		return nil, fmt.Errorf("its graph %v differs from the pipeline's %v", m.nodes, want)
	}
	r := &restored{m: m}
	for _, ref := range m.refs {
		if ref.node < 0 || ref.node >= len(rt.g.Nodes) || ref.grp < 0 || ref.grp >= rt.g.KeyGroups {
			return nil, fmt.Errorf("%w: section of node %d, key group %d", checkpoint.ErrCorrupt, ref.node, ref.grp)
		}
		b, err := ck.store.ReadSegment(ref.seg, ref.off, ref.n)
		if err != nil {
			return nil, fmt.Errorf("%w: key group %d: %v", checkpoint.ErrCorrupt, ref.grp, err)
		}
		if xxhash.Sum64(b) != ref.hash {
			return nil, fmt.Errorf("%w: segment %s: the section of key group %d (bytes %d–%d) fails its checksum", checkpoint.ErrCorrupt, ref.seg, ref.grp, ref.off, ref.off+ref.n)
		}
		r.secs = append(r.secs, task.Section{Node: ref.node, Group: ref.grp, Data: b, Delta: ref.delta})
	}
	if err := rt.tablesPresent(m); err != nil {
		return nil, err
	}
	return r, nil
}

// restore finds the newest usable checkpoint and brings the router, the
// tasks, the source and the sinks to it; without one it tells the sinks to
// start fresh. It runs after every sink and the source are open and before
// any record is read.
func (rt *runtime) restore(ctx context.Context) error {
	ck := rt.ck
	ck.current = map[nodeGroup][]secRef{}
	ck.retained = map[int64][]string{}
	ck.segSize = map[string]int64{}
	ck.tables = map[string]tableRef{}
	if err := checkpoint.Clean(ck.dir); err != nil {
		return fmt.Errorf("checkpoint.dir: %w", err)
	}
	c, r, err := checkpoint.LatestUsable(ck.dir, rt.logf, rt.usable)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if c == nil {
		ck.nextID = 1
		for _, s := range ck.committers {
			if err := s.c.Recover(ctx, 0, nil); err != nil {
				return fmt.Errorf("%s: %w", s.id, err)
			}
		}
		return nil
	}
	m := r.m
	if len(rt.ins) > 0 {
		if err := rt.restoreInputs(ctx, m.router.inputs); err != nil {
			return fmt.Errorf("checkpoint %d in %s: %w", c.ID, ck.dir, err)
		}
	} else {
		res, ok := rt.src.(source.Resumable)
		if !ok {
			return errors.New("checkpoint: the source cannot resume from a position (it does not implement source.Resumable)")
		}
		if err := res.Seek(ctx, m.router.position); err != nil {
			return fmt.Errorf("checkpoint %d in %s: source: %w", c.ID, ck.dir, err)
		}
	}
	rs := &m.router
	if len(rs.present) != len(rt.present) || len(rs.early) != len(rt.early) {
		return fmt.Errorf("checkpoint %d in %s: %d source fields and %d stages, the plan has %d and %d", c.ID, ck.dir, len(rs.present), len(rs.early), len(rt.present), len(rt.early))
	}
	rt.now, rt.wm, rt.parts, rt.events, rt.redeliver, rt.outside, rt.step = rs.now, rs.wm, rs.parts, rs.events, rs.redel, rs.outside, rs.step
	copy(rt.present, rs.present)
	rt.absent = 0
	for _, p := range rt.present {
		if !p {
			rt.absent++
		}
	}
	if err := rt.tracker.RestoreState(state.NewDecoder(rs.tracker)); err != nil {
		return fmt.Errorf("checkpoint %d in %s: %w", c.ID, ck.dir, err)
	}
	for i, n := range rs.early {
		if rt.early[i] != nil && n >= 0 {
			rt.early[i].Next = n
		}
	}
	rt.cnt = m.cnt
	rt.initQuarantineShare(&m.cnt)
	closedHorizons(c.Spec, &m.globals)
	if len(rt.ins) > 0 {
		m.globals.Inputs = rt.inputWatermarks()
	}
	byTask := make([][]task.Section, rt.par)
	for _, s := range r.secs {
		i := rt.g.Owner(s.Group)
		byTask[i] = append(byTask[i], s)
	}
	if rt.disk != nil {
		if err := rt.restoreStores(m.stores, func(off, n int64) ([]byte, error) { return ck.store.ReadSegment(m.storeSeg, off, n) }); err != nil {
			return fmt.Errorf("checkpoint %d in %s: %w", c.ID, ck.dir, err)
		}
		for _, st := range m.stores {
			for _, t := range st.tables {
				ck.tables[t.obj] = t
			}
		}
	}
	for i, t := range rt.tasks {
		if err := t.Restore(byTask[i], m.globals); err != nil {
			return fmt.Errorf("checkpoint %d in %s: task %d: %w", c.ID, ck.dir, i, err)
		}
	}
	rt.opGlob = m.globals
	for _, ref := range m.refs {
		k := nodeGroup{ref.node, ref.grp}
		ck.current[k] = append(ck.current[k], ref)
	}
	// The segments every retained checkpoint references (for pruning).
	ids, err := checkpoint.List(ck.dir)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if id == c.ID {
			ck.retained[id] = m.segs
			continue
		}
		if id > c.ID {
			continue
		}
		if oc, err := checkpoint.Read(ck.dir + "/" + checkpoint.Name(id)); err == nil {
			if om, err := rt.decodeManifest(oc.Payload); err == nil {
				ck.retained[id] = om.segs
			}
		}
	}
	segs, _ := ck.store.Segments()
	for _, s := range segs {
		if sid, _ := checkpoint.SegmentID(s); sid <= c.ID {
			var size int64
			for _, ref := range m.refs {
				if ref.seg == s {
					size = max(size, ref.off+ref.n)
				}
			}
			ck.segSize[s] = size
		}
	}
	if err := rt.recoverSinks(ctx, c, m); err != nil {
		return err
	}
	ck.restored, ck.nextID, ck.lastID = c.ID, c.ID+1, c.ID
	rt.resumedEvents = rt.events
	wm := "none"
	switch {
	case rt.wm == changelog.WatermarkInfinity:
		wm = "+inf (the input had ended)"
	case rt.wm != changelog.WatermarkNone:
		wm = row.FormatTime(rt.wm, rt.plan.Stages[0].Loc)
	}
	rt.logf("restored checkpoint %d from %s (%d records in, watermark %s; written by %s, restored into %d)", c.ID, ck.dir, rt.events, wm, count(m.tasks, "task"), rt.par)
	return nil
}
