package task

import (
	"errors"
	"fmt"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/keygroup"
)

// MarkerKind is what a Marker does.
type MarkerKind uint8

// The marker kinds.
const (
	// Advance moves input In's watermark to WM (the pipeline watermark
	// when the source is the only input): windows fire and close, dedup
	// ids and order_by versions expire, joins fire.
	Advance MarkerKind = iota
	// Early runs the early firing of the stages in Stages.
	Early
)

// Marker is an event every task receives at its step: a watermark advance
// or an early firing.
type Marker struct {
	Step uint64
	Kind MarkerKind
	WM   int64 // Advance: the new watermark (ms)
	In   int   // Advance: the input whose watermark it is (0: the source)
	Now  int64 // processing time (ms)
	// Stages lists the stages whose early firing is due (Early).
	Stages []int
}

// Round is one round of the runner: its markers, in step order, which
// every task's every node sees.
type Round struct {
	ID      uint64
	Markers []Marker
}

// Task is the keyed state of one task and the step function over it
// (package doc). Not safe for concurrent use.
type Task struct {
	g     *Graph
	index int
	rng   keygroup.Range
	nodes []*nodeRT
	cnt   *Counters
}

// nodeRT is one node of a task.
type nodeRT struct {
	t     *Task
	n     *Node
	idx   int
	log   *Log
	snd   *Sender
	dedup *dedupNode
	order *orderNode
	stage *stageNode
	join  *joinNode
	pos   []int      // merge scratch
	ins   []inStream // Stream's scratch
	cr    crScratch  // the upstream row of the item being taken (Packet.putCR)
	// in holds each input's watermark as the markers told it (a join
	// node's in every graph; every node's when the graph's watermarks
	// are not simply the source's, Graph.MultiWM), and wm the node's own
	// (Graph.NodeWatermark) under MultiWM.
	in []int64
	wm int64
}

// New returns task index of graph g, owning g.Range(index), with empty
// state. Errors: a stage whose operator cannot be built.
func New(g *Graph, index int) (*Task, error) {
	if index < 0 || index >= g.Tasks {
		return nil, fmt.Errorf("task %d of %d", index, g.Tasks)
	}
	cnt := NewCounters(len(g.Plan.Stages))
	t := &Task{g: g, index: index, rng: g.Range(index), cnt: &cnt}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		nr := &nodeRT{t: t, n: n, idx: i, log: &Log{}}
		nr.snd = NewSender(g, nr.log, t.cnt)
		switch n.Kind {
		case KindDedup:
			nr.dedup = newDedupNode(g, t.rng)
		case KindOrder:
			nr.order = newOrderNode(g, t.rng)
		case KindStage:
			sn, err := newStageNode(g, n.Stage)
			if err != nil {
				return nil, err
			}
			nr.stage = sn
		case KindJoin:
			jn, err := newJoinNode(g, n.Stage, t.rng)
			if err != nil {
				return nil, err
			}
			nr.join = jn
		}
		nr.in = make([]int64, g.Inputs)
		for k := range nr.in {
			nr.in[k] = changelog.WatermarkNone
		}
		nr.wm = changelog.WatermarkNone
		t.nodes = append(t.nodes, nr)
	}
	return t, nil
}

// Index returns the task's index.
func (t *Task) Index() int { return t.index }

// Range returns the key groups the task owns.
func (t *Task) Range() keygroup.Range { return t.rng }

// Log returns node n's output log.
func (t *Task) Log(n int) *Log { return t.nodes[n].log }

// Counters returns the counters the task counts into.
func (t *Task) Counters() *Counters { return t.cnt }

// SetOutput points the task's outputs at logs (one per node, in graph
// order) and cnt: the buffers of the next round. The task only appends to
// them.
func (t *Task) SetOutput(logs []*Log, cnt *Counters) {
	t.cnt = cnt
	for i, nr := range t.nodes {
		nr.log = logs[i]
		nr.snd.Retarget(logs[i], cnt)
	}
}

// Process runs node n over round r. in holds the node's input packets of
// the round, one per sender in sender order (the runner's single packet
// for an entry node); out[d][task] are the packets to fill for each node d
// the node feeds. The node's outputs go to Log(n). Errors: an aggregate or
// operator failure (the run must stop).
func (t *Task) Process(n int, r *Round, in []*Packet, out [][]*Packet) (err error) {
	nr := t.nodes[n]
	nr.snd.Out = out
	if cap(nr.pos) < len(in) {
		nr.pos = make([]int, len(in))
	}
	pos := nr.pos[:len(in)]
	clear(pos)
	if nr.dedup != nil && nr.dedup.cold != nil {
		if err := nr.dedup.prefetch(in); err != nil {
			return fmt.Errorf("dedup: %w", err)
		}
	}
	mk := r.Markers
	mi := 0
	if len(in) == 1 {
		// One sender (the runner, or a single task): its order is the
		// order; markers interleave by step.
		p := in[0]
		for i := range p.Len() {
			it := p.At(i)
			for mi < len(mk) && mk[mi].Step < it.Step {
				if err := nr.marker(&mk[mi]); err != nil {
					return err
				}
				mi++
			}
			if err := nr.item(p, it); err != nil {
				return err
			}
		}
		for ; mi < len(mk); mi++ {
			if err := nr.marker(&mk[mi]); err != nil {
				return err
			}
		}
		return nil
	}
	for {
		// The next item: the least (step, tail) of the packets' heads.
		best := -1
		for k, p := range in {
			if pos[k] == p.Len() {
				continue
			}
			if best < 0 || orderLess(p, p.At(pos[k]), in[best], in[best].At(pos[best])) {
				best = k
			}
		}
		// A marker acts after every item of its step.
		if mi < len(mk) && (best < 0 || mk[mi].Step < in[best].At(pos[best]).Step) {
			if err := nr.marker(&mk[mi]); err != nil {
				return err
			}
			mi++
			continue
		}
		if best < 0 {
			return nil
		}
		p := in[best]
		it := p.At(pos[best])
		pos[best]++
		if err := nr.item(p, it); err != nil {
			return err
		}
	}
}

// Inputs are a node's inputs of one round as they arrive (Task.Stream):
// numbered as Process's packets — the runner's first for an entry node,
// then one stream per (feeding node, task) in Graph.NodeFeeders order —
// each a sequence of packets in (step, tail) order, ended once its
// sender has finished the round. The runner implements it; Wait blocks.
type Inputs interface {
	// Next returns stream k's next packet, or nil when none has arrived:
	// then ended reports whether the stream has ended, and when it has not,
	// b is set to the least position its sender may still send at (its
	// Bound; invalid when it has promised nothing yet).
	Next(k int, b *Bound) (p *Packet, ended bool)
	// Done hands back a packet of stream k whose items the node has all
	// taken: nothing of the node refers to its memory any more.
	Done(k int, p *Packet)
	// Wait is called when the node can take nothing until a stream moves;
	// from is the least position the node may still take (every item it
	// sends after this is at or after it). It returns once a stream may
	// have moved, or with an error that stops the node.
	Wait(from *Bound) error
}

// inStream is Stream's state of one input stream.
type inStream struct {
	p     *Packet
	pos   int
	ended bool
	b     Bound
}

// checkEvery is how many items a streamed node takes between two calls
// of its check function (SetCheck).
const checkEvery = 64

// SetCheck makes node n call f while it runs (Process, Stream): after
// every checkEvery items, after each marker and after each chunk of a
// firing (Graph.FireChunk rows; a join's every 256 rows). The runner hands
// on the packets the node filled once they hold enough, and may wait
// there for the receivers to take them: this is what bounds the memory
// between tasks. An error from f stops the node (Process and Stream
// return it).
func (t *Task) SetCheck(n int, f func() error) { t.nodes[n].snd.check = f }

// Stream runs node n over round r like Process, taking its inputs from
// in as they arrive instead of whole (streams of them, numbered as
// Process's packets): an item is taken once every other stream has an
// item after it or has promised to send none before it (its Bound), or
// has ended; a marker acts once every stream is past its step. So the
// node takes its items and markers in exactly Process's order, and the
// packets it reads can be handed back, and its output handed on, while
// a firing of the feeding nodes goes on. Errors: as Process's, and
// in.Wait's or the check function's.
func (t *Task) Stream(n int, r *Round, in Inputs, streams int, out [][]*Packet) error {
	nr := t.nodes[n]
	nr.snd.Out = out
	if cap(nr.ins) < streams {
		nr.ins = make([]inStream, streams)
	}
	ss := nr.ins[:streams]
	for k := range ss {
		ss[k].p, ss[k].pos, ss[k].ended, ss[k].b.Valid = nil, 0, false, false
	}
	mk := r.Markers
	mi := 0
	taken := 0
	var from Bound
	for {
		// The least head (ties: the lower stream, as Process), and the
		// least promise of a stream without a head.
		best, lb, open := -1, -1, 0
		for k := range ss {
			s := &ss[k]
			for !s.ended && (s.p == nil || s.pos == s.p.Len()) {
				if s.p != nil {
					in.Done(k, s.p)
					s.p = nil
				}
				p, ended := in.Next(k, &s.b)
				if p == nil {
					s.ended = ended
					break
				}
				s.p, s.pos = p, 0
			}
			if s.ended {
				continue
			}
			open++
			if s.p == nil {
				if lb < 0 || s.b.Less(&ss[lb].b) {
					lb = k
				}
				continue
			}
			if best < 0 || orderLess(s.p, s.p.At(s.pos), ss[best].p, ss[best].p.At(ss[best].pos)) {
				best = k
			}
		}
		// The least head is taken when it comes before every promise.
		take := best >= 0 && (lb < 0 || itemBefore(ss[best].p, ss[best].p.At(ss[best].pos), best, &ss[lb].b, lb))
		// A marker acts after every item of its step: once no stream can
		// still send one.
		if mi < len(mk) {
			act := true
			if open > 0 {
				next := ^uint64(0)
				if best >= 0 {
					next = ss[best].p.At(ss[best].pos).Step
				}
				if lb >= 0 {
					act = ss[lb].b.Valid
					next = min(next, ss[lb].b.Step)
				}
				act = act && mk[mi].Step < next
			}
			if act {
				if err := nr.marker(&mk[mi]); err != nil {
					return err
				}
				mi++
				if err := nr.snd.checked(); err != nil {
					return err
				}
				continue
			}
		}
		if take {
			s := &ss[best]
			it := s.p.At(s.pos)
			s.pos++
			if err := nr.item(s.p, it); err != nil {
				return err
			}
			if taken++; taken%checkEvery == 0 {
				if err := nr.snd.checked(); err != nil {
					return err
				}
			}
			continue
		}
		if open == 0 {
			return nil
		}
		// Nothing to take until a stream moves: the least position still
		// to come is the least head or promise.
		from.Valid = false
		if best >= 0 {
			from.SetItem(ss[best].p, ss[best].p.At(ss[best].pos))
		}
		if lb >= 0 && (best < 0 || ss[lb].b.Less(&from)) {
			from.Set(ss[lb].b.Step, ss[lb].b.Tail)
			from.Valid = ss[lb].b.Valid
		}
		if err := in.Wait(&from); err != nil {
			return err
		}
	}
}

// Push puts the task (of a run of one task) in push mode: every item a
// node makes goes at once to the node that takes it, depth first, as
// PushItem and PushMarker hand them in — no packets, no rounds of nodes.
// A node's state sees the same items and markers in the same order as in
// round mode, so it ends the same. It returns the function that takes the
// items a sender outside the task (the runner's) makes.
func (t *Task) Push() func(node int, p *Packet, it *Item) error {
	push := func(node int, p *Packet, it *Item) error { return t.nodes[node].item(p, it) }
	for _, nr := range t.nodes {
		nr.snd.direct, nr.snd.into = push, t
	}
	return push
}

// PushMarker hands a marker to every node, in graph order (push mode):
// each node acts on it after the items its upstream node made while
// acting on it.
func (t *Task) PushMarker(m *Marker) error {
	for _, nr := range t.nodes {
		if err := nr.marker(m); err != nil {
			return err
		}
		if err := nr.snd.Err(); err != nil {
			return err
		}
		if err := nr.log.Err(); err != nil {
			return err
		}
	}
	return nil
}

// SetRemote makes the task's nodes, in push mode, hand the items whose key
// group another task owns to f (Sender.SetRemote), with this task as
// self.
func (t *Task) SetRemote(f func(owner, node int, p *Packet, it *Item)) {
	for _, nr := range t.nodes {
		nr.snd.SetRemote(t.index, f)
	}
}

// SetWatermarks tells each node's sender the watermark of its node
// (wms[node]): the watermark_at of the select rows it makes. For a task
// restored in a group run, where each node has its own watermark.
func (t *Task) SetWatermarks(wms []int64) {
	for i, nr := range t.nodes {
		nr.snd.SetWatermark(wms[i])
	}
}

// PushMarkerTo hands a marker to node alone (push mode, in a group run,
// where each node's watermark is the minimum over the tasks feeding it:
// docs/scale-out.md).
func (t *Task) PushMarkerTo(node int, m *Marker) error {
	nr := t.nodes[node]
	if err := nr.marker(m); err != nil {
		return err
	}
	if err := nr.snd.Err(); err != nil {
		return err
	}
	return nr.log.Err()
}

// Err returns the first error a node of the task met in push mode.
func (t *Task) Err() error {
	for _, nr := range t.nodes {
		if err := nr.snd.Err(); err != nil {
			return err
		}
		if err := nr.log.Err(); err != nil {
			return err
		}
	}
	return nil
}

func (nr *nodeRT) item(p *Packet, it *Item) error {
	if it.crLen > 0 && it.CR == nil && (it.Row == nil || nr.stage == nil) {
		// A stage's input row travels made (Sender.toStage): its
		// upstream row is decoded only for a side output
		// (stageNode.origin).
		if err := nr.cr.takeCR(p, it); err != nil {
			return err
		}
	}
	switch nr.n.Kind {
	case KindDedup:
		return nr.dedup.item(nr, p, it)
	case KindOrder:
		nr.order.item(nr, p, it)
		return nil
	case KindJoin:
		return nr.join.item(nr, p, it)
	}
	return nr.stage.item(nr, p, it)
}

func (nr *nodeRT) marker(m *Marker) error {
	if m.Kind == Advance && nr.t.g.MultiWM {
		// Each input's watermark moves on its own; the node acts when its
		// own (the least over its terms) advances, and a join on either
		// side's.
		if m.WM <= nr.in[m.In] {
			return nil
		}
		nr.in[m.In] = m.WM
		if nr.join != nil {
			nr.join.marker(nr, m)
			return nil
		}
		w := nr.t.g.NodeWatermark(nr.idx, nr.in)
		if w <= nr.wm {
			return nil
		}
		nr.wm = w
		mm := *m
		mm.WM = w
		m = &mm
	}
	switch nr.n.Kind {
	case KindDedup:
		if m.Kind == Advance {
			nr.dedup.advance(m.WM)
			nr.snd.SetWatermark(m.WM)
		}
		return nil
	case KindOrder:
		if m.Kind == Advance {
			nr.order.expire(m.WM)
			nr.snd.SetWatermark(m.WM)
		}
		return nil
	case KindJoin:
		if m.Kind == Advance {
			nr.in[m.In] = max(nr.in[m.In], m.WM)
			nr.join.marker(nr, m)
		}
		return nil
	}
	return nr.stage.marker(nr, m)
}

// noChange reports whether a and b are an update_before/update_after pair
// of one row with the same window and values: a no-op for a downstream
// aggregate (a window closing in retract mode changes only is_final and
// the version).
func noChange(a, b *changelog.Row) bool {
	if a.Op != changelog.UpdateBefore || b.Op != changelog.UpdateAfter ||
		a.WindowStart != b.WindowStart || a.WindowEnd != b.WindowEnd || len(a.Values) != len(b.Values) {
		return false
	}
	for i := range a.Key {
		if !a.Key[i].Equal(b.Key[i]) {
			return false
		}
	}
	for i := range a.Values {
		if !a.Values[i].Equal(b.Values[i]) {
			return false
		}
	}
	return true
}

// ErrNotFresh is returned by Restore on a task that has processed input.
var ErrNotFresh = errors.New("task: Restore needs a new task")
