package engine

import (
	"sync"
	"sync/atomic"

	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/task"
)

// The exchange between tasks (docs/parallelism.md, "The exchange"). Each
// node of each task runs a round on a goroutine of its own, the nodes of
// one task taking turns (the task's baton: a task's state is used by one
// goroutine at a time, as task.Task requires), so that a node can take
// its inputs while the nodes feeding it are still sending. A sending node
// hands its packets on once they hold flushAt bytes, and then waits while
// more than budget − flushAt bytes it sent are not yet taken; a node with
// nothing to take hands on what it holds and tells its receivers the
// least position it may still send at (task.Bound), so that they can
// take every item before it. The memory between tasks is so bounded by
// the pipeline's exchange_memory, whatever a firing's size.

// maxFlush is the most bytes a sending node holds before handing its
// packets on (flushAt is at most a quarter of its budget).
const maxFlush = 1 << 20

// xchg is a run's exchange.
type xchg struct {
	pl *pipeline
	g  *task.Graph
	n  int
	// budget is each sending node's bound (bytes it sent not yet taken,
	// with what it holds); flushAt what it holds before it hands it on.
	budget, flushAt int64
	tx              [][]*txNode // [task][node]: nil for a node feeding none
	rx              [][]*rxNode // [task][node]: nil for a node no node feeds
	baton           []sync.Mutex
}

// txNode is the sending side of one node of one task.
type txNode struct {
	task, node int
	down       []int
	// slot[d] is this node's stream index at node d's receivers.
	slot []int
	// inflight is the bytes of the packets it sent that their receivers
	// have not handed back; wake is signalled when they do.
	inflight atomic.Int64
	wake     chan struct{}
	// Used by the node's goroutine only: the packets being filled
	// (out[d][j] for node d of task j), the round, the greatest position
	// handed on and the last promise made.
	out   [][]*task.Packet
	round uint64
	last  task.Bound
	pub   task.Bound
	tmp   task.Bound // flush's scratch
}

// rxNode is the receiving side of one node of one task.
type rxNode struct {
	mu     sync.Mutex
	wake   chan struct{}
	rounds map[uint64]*rxRound
	// from[k] is stream k's sender (nil for the runner's stream).
	from []*txNode
	base int // streams before the nodes' (1 for an entry node: the runner's)
}

// rxRound is a receiving node's streams of one round.
type rxRound struct{ s []rxStream }

// rxStream is one sender's packets to one node of one task in a round.
type rxStream struct {
	q     []sentPkt
	ended bool
	b     task.Bound
}

type sentPkt struct {
	p     *task.Packet
	bytes int64
}

// exchangeLimit is the run's bound of the exchange in bytes:
// Options.ExchangeMemory, else the pipeline's exchange_memory, else
// spec.DefaultExchangeMemory.
func (rt *runtime) exchangeLimit() int64 {
	switch {
	case rt.opts.ExchangeMemory > 0:
		return rt.opts.ExchangeMemory
	case rt.plan.Spec.ExchangeMemory > 0:
		return int64(rt.plan.Spec.ExchangeMemory)
	}
	return int64(spec.DefaultExchangeMemory)
}

// newXchg sets up the exchange of a run of n tasks over graph g bounded
// by limit bytes: each of the n × (nodes feeding another) sending nodes
// gets an equal share.
func newXchg(pl *pipeline, g *task.Graph, n int, limit int64) *xchg {
	x := &xchg{pl: pl, g: g, n: n, baton: make([]sync.Mutex, n)}
	senders := 0
	for ni := range g.Nodes {
		if len(g.Nodes[ni].Down) > 0 {
			senders++
		}
	}
	if senders > 0 {
		x.budget = limit / int64(senders*n)
	}
	x.flushAt = min(x.budget/4, maxFlush)
	x.tx = make([][]*txNode, n)
	x.rx = make([][]*rxNode, n)
	for i := range n {
		x.tx[i] = make([]*txNode, len(g.Nodes))
		x.rx[i] = make([]*rxNode, len(g.Nodes))
		for ni := range g.Nodes {
			if down := g.Nodes[ni].Down; len(down) > 0 {
				t := &txNode{task: i, node: ni, down: down, wake: make(chan struct{}, 1),
					slot: make([]int, len(g.Nodes)), out: make([][]*task.Packet, len(g.Nodes))}
				x.tx[i][ni] = t
			}
		}
	}
	for j := range n {
		for d := range g.Nodes {
			fs := g.NodeFeeders(d)
			if len(fs) == 0 {
				continue
			}
			r := &rxNode{wake: make(chan struct{}, 1), rounds: map[uint64]*rxRound{}}
			for _, e := range g.Entry {
				if e == d {
					r.base = 1
				}
			}
			r.from = make([]*txNode, r.base+len(fs)*n)
			for f, u := range fs {
				for i := range n {
					r.from[r.base+f*n+i] = x.tx[i][u]
					x.tx[i][u].slot[d] = r.base + f*n + i
				}
			}
			x.rx[j][d] = r
		}
	}
	return x
}

// streams returns the number of input streams of node d.
func (x *xchg) streams(d int) int {
	r := x.rx[0][d]
	return len(r.from)
}

// notify signals a wake channel without blocking.
func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// begin readies sending node t for round id: fresh packets for every
// (node, task) it feeds.
func (x *xchg) begin(t *txNode, id uint64) {
	t.round = id
	t.last.Valid, t.pub.Valid = false, false
	for _, d := range t.down {
		ps := t.out[d][:0]
		for range x.n {
			ps = append(ps, x.pl.packet())
		}
		t.out[d] = ps
	}
}

// holding returns the bytes of the packets t is filling.
func (x *xchg) holding(t *txNode) int64 {
	var b int64
	for _, d := range t.down {
		for _, p := range t.out[d] {
			b += int64(p.Bytes())
		}
	}
	return b
}

// flush hands t's non-empty packets on and promises its receivers that
// it sends nothing more before the greatest position it handed on, or
// from when that is later (a node waiting for input: Inputs.Wait); with
// end, it ends t's streams of the round instead.
func (x *xchg) flush(t *txNode, from *task.Bound, end bool) {
	var sent int64
	for _, d := range t.down {
		for _, p := range t.out[d] {
			if n := p.Len(); n > 0 {
				// A node's items come in order: a packet's last is its
				// greatest, and the greatest of the packets' lasts is the
				// greatest item handed on.
				it := p.At(n - 1)
				t.tmp.SetItem(p, it)
				if t.last.Less(&t.tmp) {
					t.last.Set(t.tmp.Step, t.tmp.Tail)
				}
				sent += int64(p.Bytes())
			}
		}
	}
	promise := &t.last
	if from != nil && t.last.Less(from) {
		promise = from
	}
	if !end && sent == 0 && !t.pub.Less(promise) {
		return // nothing new to hand on or promise
	}
	if t.pub.Less(promise) {
		t.pub.Set(promise.Step, promise.Tail) // promises only move forward
	}
	// Counted before a receiver can hand a packet back.
	t.inflight.Add(sent)
	x.pl.exchanged(sent)
	for _, d := range t.down {
		k := t.slot[d]
		for j, p := range t.out[d] {
			r := x.rx[j][d]
			var sp sentPkt
			switch {
			case p.Len() > 0:
				sp = sentPkt{p: p, bytes: int64(p.Bytes())}
				if !end {
					t.out[d][j] = x.pl.packet()
				}
			case end:
				// Before any receiver can hand a sent packet back (and
				// Reset it, which would make it look unsent).
				x.pl.release(p)
			}
			if end {
				t.out[d][j] = nil
			}
			r.mu.Lock()
			rr := r.round(t.round)
			s := &rr.s[k]
			if sp.p != nil {
				s.q = append(s.q, sp)
			}
			if end {
				s.ended = true
			} else if t.pub.Valid {
				s.b.Set(t.pub.Step, t.pub.Tail)
			}
			r.mu.Unlock()
			notify(r.wake)
		}
	}
}

// round returns the receiving node's streams of round id (r.mu held).
func (r *rxNode) round(id uint64) *rxRound {
	rr := r.rounds[id]
	if rr == nil {
		rr = &rxRound{s: make([]rxStream, len(r.from))}
		r.rounds[id] = rr
	}
	return rr
}

// check is t's check (task.Task.SetCheck): once it holds flushAt bytes it
// hands them on, then waits (the task's baton released) while more than
// budget − flushAt bytes it sent are not yet taken.
func (x *xchg) check(t *txNode) error {
	if h := x.holding(t); h < x.flushAt || h == 0 {
		return nil
	}
	x.flush(t, nil, false)
	if t.inflight.Load() <= x.budget-x.flushAt {
		return nil
	}
	b := &x.baton[t.task]
	b.Unlock()
	defer b.Lock()
	for t.inflight.Load() > x.budget-x.flushAt {
		select {
		case <-t.wake:
		case <-x.pl.done:
			return errStopped
		}
	}
	return nil
}

// nodeIn is one node's task.Inputs of a round.
type nodeIn struct {
	x     *xchg
	r     *rxNode
	t     *txNode // the node's sending side, nil when it feeds none
	task  int
	round uint64
	entry *task.Packet // the runner's packet (stream 0 of an entry node)
	given bool
	bytes []int64 // per stream: the bytes of the packet being taken
}

func (in *nodeIn) Next(k int, b *task.Bound) (*task.Packet, bool) {
	if k < in.r.base {
		if in.given {
			return nil, true
		}
		in.given = true
		return in.entry, false
	}
	r := in.r
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.round(in.round).s[k]
	if len(s.q) > 0 {
		sp := s.q[0]
		s.q[0] = sentPkt{}
		s.q = s.q[1:]
		in.bytes[k] = sp.bytes
		return sp.p, false
	}
	if s.ended {
		return nil, true
	}
	b.Valid = s.b.Valid
	if s.b.Valid {
		b.Set(s.b.Step, s.b.Tail)
	}
	return nil, false
}

func (in *nodeIn) Done(k int, p *task.Packet) {
	if k < in.r.base {
		return // the runner's packet: released when the node has run
	}
	t := in.r.from[k]
	n := in.bytes[k]
	t.inflight.Add(-n)
	in.x.pl.exchange.Add(-n)
	notify(t.wake)
	in.x.pl.release(p)
}

func (in *nodeIn) Wait(from *task.Bound) error {
	x := in.x
	if in.t != nil {
		x.flush(in.t, from, false)
	}
	b := &x.baton[in.task]
	b.Unlock()
	defer b.Lock()
	select {
	case <-in.r.wake:
		return nil
	case <-x.pl.done:
		return errStopped
	}
}

// finish forgets the receiving node's round id (every stream ended and
// taken).
func (r *rxNode) finish(id uint64) {
	r.mu.Lock()
	delete(r.rounds, id)
	r.mu.Unlock()
}

// runNode runs node ni of task i over round rm, the task's baton held
// (released while it waits), and hands its output on.
func (rt *runtime) runNode(i, ni int, rm *roundMsg) error {
	x := rt.xc
	t := rt.tasks[i]
	tx := x.tx[i][ni]
	var out [][]*task.Packet
	if tx != nil {
		x.begin(tx, rm.round.ID)
		out = tx.out
	}
	var entry *task.Packet
	if e := rt.entryIdx[ni]; e >= 0 {
		entry = rm.pkts[e]
	}
	var err error
	if r := x.rx[i][ni]; r != nil {
		in := &nodeIn{x: x, r: r, t: tx, task: i, round: rm.round.ID, entry: entry, bytes: make([]int64, len(r.from))}
		err = t.Stream(ni, rm.round, in, len(r.from), out)
		if err == nil {
			r.finish(rm.round.ID)
		}
	} else {
		err = t.Process(ni, rm.round, []*task.Packet{entry}, out)
	}
	if entry != nil {
		rt.xc.pl.release(entry)
	}
	if err != nil {
		return err
	}
	if tx != nil {
		x.flush(tx, nil, true)
	}
	return nil
}
