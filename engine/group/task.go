package group

import (
	"github.com/tidemark/tidemark/engine"

	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/dedup"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/task"
	"github.com/tidemark/tidemark/watermark"
)

// The tasks of a group run (docs/scale-out.md). A pipeline that runs as a
// group of instances sharing a Kafka consumer group has two kinds of task:
//
//   - a source task per partition of the input topics: the router's work
//     for that partition alone (decoding, contract, timestamp rules,
//     quarantine, the partition's watermark), handing each record to the
//     keyed task that owns its key group through the repartition topic;
//   - a keyed task per partition of the repartition topic: a task.Task
//     owning the key groups of that partition (keygroup.For(q, P, K)),
//     with every keyed node (dedup, order_by, the stages); an item one of
//     its nodes makes for a key group another partition owns goes
//     through the repartition topic too.
//
// Watermarks cross the topic as marker records (the scheme of Flink's
// Kafka shuffle, FlinkKafkaShuffleProducer / KafkaShuffleFetcher): every
// task that feeds a node writes, to every partition, the watermark it has
// reached for that node, after the items it sent before it; a keyed task's
// watermark for a node is the minimum over every task that feeds the node
// — the input partitions for the nodes the source feeds, the P keyed tasks
// for the others — and none before each has reported. An idle input
// partition says so and is left out of the minimum, as in one process. A
// reporter's identity is its partition, which survives rebalances, and
// its reports only grow, so a watermark never goes back.
//
// These types do no IO: a host (the Kafka runner, or an in-memory one in
// tests) hands them records, ticks their processing time, carries what
// they send to the repartition topic and what they write to the sinks,
// and stores their checkpoints.

// wireMarks is the first byte of a watermark marker record:
//
//	Byte(2) Byte(reporter kind: 0 input partition, 1 keyed task)
//	Uint(reporter index) Uint(#entries) (Uint(node) Int(watermark ms)
//	Bool(idle))…
const wireMarks = 2

const (
	fromSource = 0
	fromKeyed  = 1
)

// markEntry is one node's watermark in a marker record.
type markEntry struct {
	node int
	wm   int64
	idle bool
}

func appendMarks(dst []byte, from byte, index int, entries []markEntry) []byte {
	e := state.NewEncoder(dst)
	e.Byte(wireMarks)
	e.Byte(from)
	e.Uint(uint64(index))
	e.Uint(uint64(len(entries)))
	for _, m := range entries {
		e.Uint(uint64(m.node))
		e.Int(m.wm)
		e.Bool(m.idle)
	}
	return e.Bytes()
}

// groupSend carries a record value to partition q of the repartition
// topic; the value is valid during the call only.
type groupSend func(q int, value []byte)

// srcTask is the source task of one input partition: a router over that
// partition alone (PartRouter, router_part.go: the direct runner's router
// code, with every item handed to the repartition topic), reporting the
// watermark to every partition.
type srcTask struct {
	index int // the input partition's index among all input partitions
	name  string
	rt    *engine.PartRouter
	g     *task.Graph
	send  groupSend
	enc   task.WireEncoder
	buf   []byte
	// reported is the last watermark and idleness reported.
	reported     int64
	reportedIdle bool
	// stop is the offset a bounded run reads up to (-1: unbounded), fixed
	// when the task first starts and kept in its checkpoints; ended says
	// the partition was read to it and +inf was reported.
	stop  int64
	ended bool
	// next is the offset of the next record (the position).
	next int64
}

// newSrcTask returns the source task of input partition index (named
// name: "topic/N"), with empty state; w takes its outputs (quarantine
// records, select stages' rows). json renders a record as JSON (the
// source's EventJSON). stop is the end offset of a bounded run, -1
// otherwise.
func newSrcTask(p *plan.Plan, g *task.Graph, opts engine.Options, index int, name string, json func([]byte, *source.Meta) []byte, w task.Writer, send groupSend, stop int64) (*srcTask, error) {
	st := &srcTask{index: index, name: name, g: g, send: send, reported: watermark.None, stop: stop}
	rt, err := engine.NewPartRouter(p, g, opts, name, json, w, func(owner, node int, pk *task.Packet, it *task.Item) {
		st.send(owner, st.enc.Encode(g, node, pk, it))
	}, st.marker)
	if err != nil {
		return nil, err
	}
	st.rt = rt
	return st, nil
}

// records routes a batch of the partition's records (Meta.Partition 0;
// records without an arrival time take Options.Clock's), then reports
// the watermark if it moved. next is the offset after the batch's last
// record.
func (st *srcTask) records(b *source.Batch, next int64) error {
	if err := st.rt.RouteBatch(b); err != nil {
		return err
	}
	st.next = next
	return st.report(false)
}

// tick advances processing time without records (idleness).
func (st *srcTask) tick(now int64) error {
	if err := st.rt.Tick(now); err != nil {
		return err
	}
	return st.report(false)
}

// end reports the end of a bounded partition: +inf to every keyed task.
func (st *srcTask) end() error {
	if st.ended {
		return nil
	}
	st.ended = true
	st.rt.End()
	return st.report(true)
}

// marker takes the router's markers: advances are reported by report
// (after the batch), early firings are the keyed tasks'.
func (st *srcTask) marker(task.Marker) {}

// report sends the partition's watermark and idleness to every keyed
// task when they changed since the last report (or always, with force).
func (st *srcTask) report(force bool) error {
	wm := st.rt.Watermark()
	if st.ended {
		wm = watermark.Infinity
	}
	idle := false
	if pt, ok := st.rt.Partition(); ok && !st.ended {
		idle = pt.Idle
	}
	if !force && wm == st.reported && idle == st.reportedIdle {
		return nil
	}
	if wm < st.reported {
		wm = st.reported
	}
	st.reported, st.reportedIdle = wm, idle
	var entries []markEntry
	for _, n := range st.g.Entry {
		entries = append(entries, markEntry{node: n, wm: wm, idle: idle})
	}
	st.buf = appendMarks(st.buf[:0], fromSource, st.index, entries)
	for q := range st.g.Tasks {
		st.send(q, st.buf)
	}
	return nil
}

// keyTask is the keyed task of one partition of the repartition topic.
type keyTask struct {
	index int
	g     *task.Graph
	t     *task.Task
	push  func(node int, p *task.Packet, it *task.Item) error
	dec   *task.WireDecoder
	pkt   task.Packet
	cnt   task.Counters
	logs  []*task.Log
	send  groupSend
	enc   task.WireEncoder
	buf   []byte
	step  uint64
	now   int64
	// wm is each node's watermark; reps each node's reporters' last
	// reports (the input partitions for the entry nodes, else the keyed
	// tasks).
	wm    []int64
	reps  [][]report
	early []*operator.EarlySchedule // per stage
	// sources is the number of input partitions.
	sources int
	marks   []markEntry
}

// report is a reporter's last watermark for a node.
type report struct {
	wm         int64
	idle, seen bool
}

// newKeyTask returns the keyed task of repartition partition index with
// empty state, writing its outputs to w. sources is the number of input
// partitions.
func newKeyTask(g *task.Graph, index, sources int, w task.Writer, send groupSend) (*keyTask, error) {
	t, err := task.New(g, index)
	if err != nil {
		return nil, err
	}
	kt := &keyTask{index: index, g: g, t: t, dec: task.NewWireDecoder(g), send: send, sources: sources,
		cnt: task.NewCounters(len(g.Plan.Stages))}
	for range g.Nodes {
		kt.logs = append(kt.logs, &task.Log{W: w})
	}
	t.SetOutput(kt.logs, &kt.cnt)
	kt.push = t.Push()
	t.SetRemote(func(owner, node int, pk *task.Packet, it *task.Item) {
		kt.send(owner, kt.enc.Encode(g, node, pk, it))
	})
	entry := map[int]bool{}
	for _, n := range g.Entry {
		entry[n] = true
	}
	for n := range g.Nodes {
		kt.wm = append(kt.wm, watermark.None)
		k := g.Tasks
		if entry[n] {
			k = sources
		}
		kt.reps = append(kt.reps, make([]report, k))
	}
	kt.early = make([]*operator.EarlySchedule, len(g.Plan.Stages))
	for si, sp := range g.Plan.Stages {
		if e := sp.Operator.EarlyEvery; e > 0 && sp.Operator.Mode != operator.Final && !sp.Desc.Stateless {
			kt.early[si] = &operator.EarlySchedule{Every: e}
		}
	}
	return kt, nil
}

func (kt *keyTask) nextStep() uint64 {
	kt.step++
	return kt.step
}

// record processes one record of the task's partition: an item or a
// watermark marker. Errors: a damaged record, an operator or sink
// failure.
func (kt *keyTask) record(value []byte) error {
	if len(value) == 0 {
		return errors.New("repartition record: empty")
	}
	switch value[0] {
	case task.WireItem:
		n, it, err := kt.dec.Decode(&kt.pkt, value, kt.nextStep())
		if err != nil {
			return err
		}
		kt.now = max(kt.now, it.Now)
		err = kt.push(n, &kt.pkt, it)
		kt.pkt.Reset()
		if err != nil {
			return err
		}
		return kt.t.Err()
	case wireMarks:
		d := state.NewDecoder(value[1:])
		from := d.Byte()
		idx := d.Len(1<<30, 0)
		n := d.Len(len(kt.g.Nodes), 1)
		kt.marks = kt.marks[:0]
		for range n {
			kt.marks = append(kt.marks, markEntry{node: d.Len(len(kt.g.Nodes)-1, 0), wm: d.Int(), idle: d.Bool()})
		}
		if err := d.Err(); err != nil {
			return fmt.Errorf("repartition marker record: %w", err)
		}
		if from != fromSource && from != fromKeyed {
			return fmt.Errorf("repartition marker record: reporter kind %d", from)
		}
		for _, m := range slicesClone(kt.marks) {
			if err := kt.observe(m.node, int(from), idx, m.wm, m.idle); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("repartition record: kind %d", value[0])
}

func slicesClone(m []markEntry) []markEntry { return append([]markEntry(nil), m...) }

// observe takes reporter (kind from, index idx)'s watermark for node n
// and advances the node when its minimum moved.
func (kt *keyTask) observe(n, from, idx int, wm int64, idle bool) error {
	reps := kt.reps[n]
	entry := kt.isEntry(n)
	if (from == fromSource) != entry || idx < 0 || idx >= len(reps) {
		return fmt.Errorf("repartition marker record: reporter %d/%d for node %d, which has %d reporters of the other kind", from, idx, n, len(reps))
	}
	r := &reps[idx]
	if r.seen && wm < r.wm {
		wm = r.wm // reports only grow; a replayed older one changes nothing
	}
	*r = report{wm: wm, idle: idle, seen: true}
	min, ok := minReport(reps)
	if !ok || min <= kt.wm[n] {
		return nil
	}
	return kt.advance(n, min)
}

// minReport is a node's watermark from its reporters: the minimum over
// those not idle (over all when every one is idle); false until every
// reporter has reported.
func minReport(reps []report) (int64, bool) {
	active, all := int64(math.MaxInt64), int64(math.MaxInt64)
	anyActive := false
	for _, r := range reps {
		if !r.seen {
			return 0, false
		}
		all = min(all, r.wm)
		if !r.idle {
			anyActive = true
			active = min(active, r.wm)
		}
	}
	if anyActive {
		return active, true
	}
	return all, true
}

func (kt *keyTask) isEntry(n int) bool {
	for _, e := range kt.g.Entry {
		if e == n {
			return true
		}
	}
	return false
}

// advance moves node n to watermark wm, then reports it for the nodes n
// feeds, to every keyed task (itself included, at once).
func (kt *keyTask) advance(n int, wm int64) error {
	kt.wm[n] = wm
	m := task.Marker{Step: kt.nextStep(), Kind: task.Advance, WM: wm, Now: kt.now}
	if err := kt.t.PushMarkerTo(n, &m); err != nil {
		return err
	}
	down := kt.g.Nodes[n].Down
	if len(down) == 0 {
		return nil
	}
	entries := make([]markEntry, 0, len(down))
	for _, d := range down {
		entries = append(entries, markEntry{node: d, wm: wm})
	}
	kt.buf = appendMarks(kt.buf[:0], fromKeyed, kt.index, entries)
	for q := range kt.g.Tasks {
		if q != kt.index {
			kt.send(q, kt.buf)
		}
	}
	for _, e := range entries {
		if err := kt.observe(e.node, fromKeyed, kt.index, e.wm, false); err != nil {
			return err
		}
	}
	return nil
}

// tick advances the task's processing time: early firings that are due.
func (kt *keyTask) tick(now int64) error {
	kt.now = max(kt.now, now)
	for si, e := range kt.early {
		if e == nil || !e.Due(kt.now) {
			continue
		}
		n := kt.g.StageNode[si]
		m := task.Marker{Step: kt.nextStep(), Kind: task.Early, Now: kt.now, Stages: []int{si}}
		if err := kt.t.PushMarkerTo(n, &m); err != nil {
			return err
		}
	}
	return nil
}

// done reports whether every node of the task has reached +inf: nothing
// more can reach it.
func (kt *keyTask) done() bool {
	for _, wm := range kt.wm {
		if wm != changelog.WatermarkInfinity {
			return false
		}
	}
	return true
}

// The state of a group task outside its key-group sections (the payload
// of its manifest, package state):
//
//	source task: Byte(1) Uint(index) Bytes8(tracker) Int(now) Int(router
//	  watermark) Uint(partitions) Int(events) Int(redelivered) Uint(step)
//	  Int(reported) Bool(reported idle) Int(stop) Bool(ended) Int(next)
//	  counters
//	keyed task: Byte(1) Uint(index) Uint(P) Uint(K) Int(now) Uint(step)
//	  per node: Int(watermark) Uint(#reporters) (Int(wm) Bool(idle)
//	  Bool(seen))…; per stage: Int(next early firing, 0 none);
//	  globals; counters

func (st *srcTask) appendState(e *state.Encoder) {
	e.Byte(1)
	e.Uint(uint64(st.index))
	st.rt.AppendState(e)
	e.Int(st.reported)
	e.Bool(st.reportedIdle)
	e.Int(st.stop)
	e.Bool(st.ended)
	e.Int(st.next)
	appendCounters(e, st.rt.Counters())
}

func (st *srcTask) restoreState(d *state.Decoder) error {
	d.Section("source task state", 1)
	if idx := d.Len(1<<30, 0); d.Err() == nil && idx != st.index {
		d.Fail("the state of input partition %d, not %d", idx, st.index)
	}
	if err := st.rt.RestoreState(d); err != nil {
		return err
	}
	st.reported, st.reportedIdle = d.Int(), d.Bool()
	st.stop, st.ended, st.next = d.Int(), d.Bool(), d.Int()
	readCounters(d, st.rt.Counters())
	return d.Err()
}

func (kt *keyTask) appendState(e *state.Encoder) {
	e.Byte(1)
	e.Uint(uint64(kt.index))
	e.Uint(uint64(kt.g.Tasks))
	e.Uint(uint64(kt.g.KeyGroups))
	e.Int(kt.now)
	e.Uint(kt.step)
	for n := range kt.g.Nodes {
		e.Int(kt.wm[n])
		e.Uint(uint64(len(kt.reps[n])))
		for _, r := range kt.reps[n] {
			e.Int(r.wm)
			e.Bool(r.idle)
			e.Bool(r.seen)
		}
	}
	for _, s := range kt.early {
		if s == nil {
			e.Int(0)
		} else {
			e.Int(s.Next)
		}
	}
	appendGlobals(e, kt.t.Globals())
	appendCounters(e, &kt.cnt)
}

// restoreState restores the task's state: its payload (appendState's)
// and its key groups' sections.
func (kt *keyTask) restoreState(d *state.Decoder, secs []task.Section) error {
	d.Section("keyed task state", 1)
	idx, p, k := d.Len(1<<30, 0), d.Len(1<<30, 0), d.Len(1<<30, 0)
	if d.Err() == nil && (idx != kt.index || p != kt.g.Tasks || k != kt.g.KeyGroups) {
		return fmt.Errorf("the state of repartition partition %d of %d over %d key groups, not %d of %d over %d (the repartition topic's partitions and key_groups may not change)", idx, p, k, kt.index, kt.g.Tasks, kt.g.KeyGroups)
	}
	kt.now, kt.step = d.Int(), d.Uint()
	for n := range kt.g.Nodes {
		kt.wm[n] = d.Int()
		nr := d.Len(1<<20, 3)
		if d.Err() == nil && nr != len(kt.reps[n]) {
			return fmt.Errorf("node %d has %d reporters in the checkpoint and %d now: the input topics' partitions or the repartition topic's changed", n, nr, len(kt.reps[n]))
		}
		for i := range kt.reps[n] {
			kt.reps[n][i] = report{wm: d.Int(), idle: d.Bool(), seen: d.Bool()}
		}
	}
	for _, s := range kt.early {
		next := d.Int()
		if s != nil {
			s.Next = next
		}
	}
	g := readGlobals(d, len(kt.g.Plan.Stages))
	readCounters(d, &kt.cnt)
	if err := d.Err(); err != nil {
		return err
	}
	g.OwnWatermarks = true
	if err := kt.t.Restore(secs, g); err != nil {
		return err
	}
	kt.t.SetWatermarks(kt.wm)
	return nil
}

// appendGlobals and readGlobals encode task.Globals: Int(watermark)
// Int(now) Int(dedup cut) Int(dedup next sweep) Int(order_by next sweep)
// Uint(#stages) per stage: Int(watermark) Int(now) Int(closed through)
// Int(emitted) Int(partly too late) Int(skipped windows).
func appendGlobals(e *state.Encoder, g task.Globals) {
	e.Int(g.Watermark)
	e.Int(g.Now)
	e.Int(g.Sweep.Cut)
	e.Int(g.Sweep.NextSweep)
	e.Int(g.OrderNextSweep)
	e.Uint(uint64(len(g.Ops)))
	for _, o := range g.Ops {
		for _, v := range []int64{o.Watermark, o.Now, o.ClosedThrough, o.Emitted, o.PartlyTooLate, o.SkippedWindows} {
			e.Int(v)
		}
	}
}

func readGlobals(d *state.Decoder, stages int) task.Globals {
	g := task.Globals{Watermark: d.Int(), Now: d.Int()}
	g.Sweep = dedup.SweepState{Cut: d.Int(), NextSweep: d.Int()}
	g.OrderNextSweep = d.Int()
	n := d.Len(1<<16, 6)
	if d.Err() == nil && n != stages {
		d.Fail("globals of %d stages, the plan has %d", n, stages)
	}
	g.Ops = make([]operator.Globals, stages)
	for i := 0; i < n && d.Err() == nil; i++ {
		o := &g.Ops[i]
		for _, p := range []*int64{&o.Watermark, &o.Now, &o.ClosedThrough, &o.Emitted, &o.PartlyTooLate, &o.SkippedWindows} {
			*p = d.Int()
		}
	}
	return g
}

// appendCounters and readCounters encode task.Counters: Int(quarantined)
// Int(duplicates) Int(conflicts) Int(stale) Int(superseded) Uint(#rules)
// (String(rule) Int(n))… Uint(#notes) (Bool(set) Uint(step)
// String(text))… Uint(#stages) per stage: its StageCounters.Fields.
func appendCounters(e *state.Encoder, c *task.Counters) {
	for _, v := range []int64{c.Quarantined, c.Duplicates, c.Conflicts, c.StaleVersions, c.Superseded} {
		e.Int(v)
	}
	e.Uint(uint64(len(c.ByRule)))
	for _, k := range sortedKeys(c.ByRule) {
		e.String(k)
		e.Int(c.ByRule[k])
	}
	e.Uint(uint64(len(c.First)))
	for _, n := range c.First {
		e.Bool(n.Set)
		e.Uint(n.Step)
		e.String(n.Text)
	}
	e.Uint(uint64(len(c.Stages)))
	for i := range c.Stages {
		for _, p := range c.Stages[i].Fields() {
			e.Int(*p)
		}
	}
}

// readCounters reads what appendCounters wrote. The direct runner's
// manifest (engine/checkpoint.go, decodeManifest) reads counters of the
// same shape in another stored format (each stage's name before its
// counters, checked against the plan), so the two readers stay apart.
func readCounters(d *state.Decoder, c *task.Counters) {
	for _, p := range []*int64{&c.Quarantined, &c.Duplicates, &c.Conflicts, &c.StaleVersions, &c.Superseded} {
		*p = d.Int()
	}
	n := d.Len(1<<20, 2)
	c.ByRule = nil
	for i := 0; i < n && d.Err() == nil; i++ {
		if c.ByRule == nil {
			c.ByRule = map[string]int64{}
		}
		k := d.String()
		c.ByRule[k] = d.Int()
	}
	n = d.Len(1<<16, 3)
	if d.Err() == nil && n != len(c.First) {
		d.Fail("%d notes, want %d", n, len(c.First))
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		c.First[i] = task.Note{Set: d.Bool(), Step: d.Uint(), Text: d.String()}
	}
	n = d.Len(1<<16, 12)
	if d.Err() == nil && n != len(c.Stages) {
		d.Fail("counters of %d stages, want %d", n, len(c.Stages))
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		for _, p := range c.Stages[i].Fields() {
			*p = d.Int()
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
