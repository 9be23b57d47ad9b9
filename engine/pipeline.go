package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/task"
)

// inflight is the number of rounds the router may be ahead of the writer:
// batches in use at once (their memory stays valid until written).
const inflight = 4

// GoroutineLabel is the pprof label key on the goroutines of a run
// (runtime/pprof): "router" on Run's goroutine while it routes (at one
// task it runs the task and the writer's part too), "task" on each task's,
// "writer" on the writer's. A CPU profile's samples carry it, so that a
// profile tells the serial goroutines' share from the tasks'
// (tidemark bench's CPU phases).
const GoroutineLabel = "tidemark"

// labelled runs f with the goroutine label GoroutineLabel=v.
func labelled(ctx context.Context, v string, f func()) {
	pprof.Do(ctx, pprof.Labels(GoroutineLabel, v), func(context.Context) { f() })
}

// roundMsg is the router's round for one task.
type roundMsg struct {
	round *task.Round
	pkts  []*task.Packet // per entry node (index in Graph.Entry)
	flags roundFlags
}

// roundFlags say what else a round asks for.
type roundFlags struct {
	snapshot bool // checkpoint after this round
	stats    bool // report state sizes after this round (Live)
	last     bool // the run ends after this round
	end      bool // and the input ended (not a stop)
}

// inMsg is a task's inbox element: a round.
type inMsg struct {
	rm *roundMsg
}

// taskOut is one task's result of a round, for the writer; the writer
// hands it back to the task once written.
type taskOut struct {
	round    uint64
	task     int
	logs     []*task.Log
	cnt      task.Counters
	sections []task.Section
	// snaps are the task's state stores' snapshots (the disk backend).
	snaps []stateSnap
	// pause is how long the disk backend's synchronous part of a
	// checkpoint held the task back — its changes flushed to its stores
	// and their snapshots taken — and its parts (DiskCheckpoint's Pause,
	// WriteBack, Flush, Checkpoint and List; ID and Sent unset; zero in
	// other rounds).
	pause    DiskCheckpoint
	globals  task.Globals
	stats    []task.StageStats
	dedupIDs int
	dedupMem int
	flags    roundFlags
}

// routerOut is the router's part of a round, for the writer.
type routerOut struct {
	round *task.Round
	log   *task.Log
	cnt   task.Counters
	batch *source.Batch
	// batches are the batches of a run with several inputs that this round
	// finished with (engine/inputs.go): released once it is written.
	batches []*source.Batch
	flags   roundFlags
	// state is the router's state after the round (snapshot rounds).
	state *routerState
	live  *routerLive
}

// pipeline holds the channels and pools of a run's goroutines.
type pipeline struct {
	inbox     []chan inMsg
	toWriter  chan *taskOut
	fromRoute chan *routerOut
	taskFree  []chan *taskOut
	batchFree chan *source.Batch
	roundFree chan *routerOut

	pmu   sync.Mutex
	pfree []*task.Packet

	// exchange is the bytes the packets between tasks hold now (sent, not
	// yet taken: task.Packet.Bytes), exchangePeak the most it held
	// (Summary.ExchangePeakBytes).
	exchange, exchangePeak atomic.Int64

	done    chan struct{}
	errOnce sync.Once
	err     error
	// panicked holds the value of a goroutine's panic, raised again on
	// Run's goroutine once every goroutine has stopped.
	panicked any
	pmuP     sync.Mutex
}

// guard runs f, turning an error into the pipeline's failure and a panic
// into one too (kept for run to raise again).
func (pl *pipeline) guard(f func() error) {
	defer func() {
		if v := recover(); v != nil {
			pl.pmuP.Lock()
			if pl.panicked == nil {
				pl.panicked = v
			}
			pl.pmuP.Unlock()
			pl.fail(fmt.Errorf("panic: %v", v))
		}
	}()
	if err := f(); err != nil {
		pl.fail(err)
	}
}

// recovered, deferred on a goroutine, turns its panic into the
// pipeline's failure (kept for run to raise again).
func (pl *pipeline) recovered() {
	if v := recover(); v != nil {
		pl.pmuP.Lock()
		if pl.panicked == nil {
			pl.panicked = v
		}
		pl.pmuP.Unlock()
		pl.fail(fmt.Errorf("panic: %v", v))
	}
}

// fail records the first error and stops every goroutine.
func (pl *pipeline) fail(err error) {
	pl.errOnce.Do(func() {
		pl.err = err
		close(pl.done)
	})
}

var errStopped = errors.New("pipeline stopped")

// exchanged counts n more bytes in the packets between tasks and raises
// the peak.
func (pl *pipeline) exchanged(n int64) {
	v := pl.exchange.Add(n)
	for {
		p := pl.exchangePeak.Load()
		if v <= p || pl.exchangePeak.CompareAndSwap(p, v) {
			return
		}
	}
}

func (pl *pipeline) packet() *task.Packet {
	pl.pmu.Lock()
	defer pl.pmu.Unlock()
	if n := len(pl.pfree); n > 0 {
		p := pl.pfree[n-1]
		pl.pfree = pl.pfree[:n-1]
		return p
	}
	return &task.Packet{}
}

func (pl *pipeline) release(ps ...*task.Packet) {
	pl.pmu.Lock()
	defer pl.pmu.Unlock()
	for _, p := range ps {
		p.Reset()
		pl.pfree = append(pl.pfree, p)
	}
}

// newPipeline sizes the channels so that no send between the runner's
// goroutines ever blocks for longer than a round takes: the router holds
// at most inflight rounds, and each round sends each task at most one
// message per (node, sender).
func (rt *runtime) newPipeline() *pipeline {
	n := rt.par
	nodes := len(rt.g.Nodes)
	pl := &pipeline{
		toWriter:  make(chan *taskOut, inflight*n+n),
		fromRoute: make(chan *routerOut, inflight+1),
		batchFree: make(chan *source.Batch, inflight),
		roundFree: make(chan *routerOut, inflight),
		done:      make(chan struct{}),
	}
	// A run with several inputs holds one current batch per input beside
	// the rounds in flight (engine/inputs.go).
	batches := inflight
	if len(rt.ins) > 0 {
		batches += 2*len(rt.ins) + 1
		pl.batchFree = make(chan *source.Batch, batches)
	}
	// A source decoded by decoder goroutines has up to decodeDepth
	// batches claimed ahead of the router (decoders.go).
	if rt.split = rt.splitter(); rt.split != nil {
		batches += rt.decodeDepth()
		pl.batchFree = make(chan *source.Batch, batches)
	}
	for range batches {
		pl.batchFree <- &source.Batch{}
	}
	for range inflight {
		pl.roundFree <- &routerOut{round: &task.Round{}, log: &task.Log{}, cnt: task.NewCounters(len(rt.plan.Stages))}
	}
	for i := range n {
		pl.inbox = append(pl.inbox, make(chan inMsg, inflight+1))
		free := make(chan *taskOut, inflight+1)
		for range inflight + 1 {
			out := &taskOut{task: i, cnt: task.NewCounters(len(rt.plan.Stages))}
			for range nodes {
				out.logs = append(out.logs, &task.Log{})
			}
			free <- out
		}
		pl.taskFree = append(pl.taskFree, free)
	}
	return pl
}

// run starts the tasks and the writer, routes the source on this
// goroutine until the input ends or ctx is cancelled, and waits for every
// goroutine to stop. stopped is true for a cancelled run that took a
// final checkpoint.
func (rt *runtime) run(ctx context.Context) (stopped bool, err error) {
	pl := rt.newPipeline()
	rt.entryIdx = make([]int, len(rt.g.Nodes))
	for k := range rt.entryIdx {
		rt.entryIdx[k] = -1
	}
	for k, e := range rt.g.Entry {
		rt.entryIdx[e] = k
	}
	if rt.par > 1 {
		rt.xc = newXchg(pl, rt.g, rt.par, rt.exchangeLimit())
		for i, t := range rt.tasks {
			for ni, tx := range rt.xc.tx[i] {
				if tx != nil {
					t.SetCheck(ni, func() error { return rt.xc.check(tx) })
				}
			}
		}
	}
	var wg sync.WaitGroup
	// The goroutines' context outlives a cancelled ctx: a stopped run
	// still writes its last round and takes its final checkpoint.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	rt.wctx = wctx
	rt.inline = rt.par == 1
	go func() {
		select {
		case <-pl.done:
			cancel()
		case <-wctx.Done():
		}
	}()
	// Every goroutine of the run starts here and has stopped when run
	// returns.
	for i := range rt.tasks {
		if rt.inline {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			labelled(wctx, "task", func() {
				pl.guard(func() error { return rt.taskLoop(i, pl) })
			})
		}()
	}
	if !rt.inline {
		wg.Add(1)
		go func() {
			defer wg.Done()
			labelled(wctx, "writer", func() {
				pl.guard(func() error { return rt.writerLoop(wctx, pl) })
			})
		}()
	}
	if ws := rt.waiters(); len(ws) > 0 {
		stopWatch := make(chan struct{})
		var watching sync.WaitGroup
		watching.Add(1)
		go func() {
			defer watching.Done()
			rt.watchWaits(ws, stopWatch)
		}()
		defer func() {
			close(stopWatch)
			watching.Wait()
		}()
	}
	var rerr error
	labelled(ctx, "router", func() {
		defer func() {
			if v := recover(); v != nil {
				pl.pmuP.Lock()
				if pl.panicked == nil {
					pl.panicked = v
				}
				pl.pmuP.Unlock()
				pl.fail(fmt.Errorf("panic: %v", v))
			}
		}()
		if len(rt.ins) > 0 {
			stopped, rerr = rt.routeInputs(ctx, pl)
		} else {
			stopped, rerr = rt.routeAll(ctx, pl)
		}
	})
	if rerr != nil && !errors.Is(rerr, errStopped) {
		pl.fail(rerr)
	}
	wg.Wait()
	cancel()
	rt.exchangePeak = max(rt.exchangePeak, pl.exchangePeak.Load())
	if pl.panicked != nil {
		panic(pl.panicked)
	}
	if pl.err != nil {
		return false, pl.err
	}
	if rerr != nil {
		return false, rerr
	}
	if stopped && rt.ck == nil {
		return false, ctx.Err()
	}
	return stopped, nil
}

// routeAll is the router: it reads the source batch by batch until the end
// of a bounded input or ctx's cancellation, and sends each round to the
// tasks and the writer.
func (rt *runtime) routeAll(ctx context.Context, pl *pipeline) (stopped bool, err error) {
	rt.nextProgress = rt.opts.ProgressEvery
	rt.progressStart = time.Now()
	var dec *decoders
	if rt.split != nil {
		if res, ok := rt.src.(source.Resumable); ok && rt.ck != nil {
			rt.srcPos = res.Position() // before the first batch (after a restore's Seek)
		}
		rt.srcKnown = len(rt.src.Partitions())
		dec = rt.newDecoders(rt.split, pl, rt.par, rt.decodeDepth())
		defer dec.stop()
	}
	for {
		var b *source.Batch
		var rerr error
		st := source.More
		if dec != nil && dec.reo == nil {
			c, err := dec.next(ctx, pl, rt.opts.BatchSize)
			if err != nil {
				return false, err
			}
			if c == nil {
				// Cancelled before the next claim: an empty last round.
				select {
				case b = <-pl.batchFree:
				case <-pl.done:
					return false, errStopped
				}
				b.Reset()
				rerr = ctx.Err()
				rt.pre = nil
			} else {
				b, st, rerr = c.b, c.st, c.err
				rt.pre = c.pre
				if c.pre != nil {
					preRouted.Add(1)
				}
				rt.srcKnown = c.known
				if c.pos != nil {
					rt.srcPos = c.pos
				}
				dec.release(c)
			}
		} else {
			select {
			case b = <-pl.batchFree:
			case <-pl.done:
				return false, errStopped
			}
		}
		if dec != nil && dec.reo == nil {
			// With decoders the router holds more batches than rounds: it
			// waits for a round's buffers here, not for a batch.
			select {
			case ro := <-pl.roundFree:
				pl.roundFree <- ro
			case <-pl.done:
				return false, errStopped
			}
		}
		ro := rt.beginRound(pl)
		ro.batch = b
		if dec == nil || dec.reo != nil {
			b.Reset()
			rt.midTxn = !rt.atBoundary()
			switch {
			case ctx.Err() != nil:
				rerr = ctx.Err()
			case dec != nil:
				// A replay fed by the decoders (decoders.deliver).
				if st, rerr = dec.deliver(ctx, pl, b, rt.opts.BatchSize); errors.Is(rerr, errStopped) {
					return false, rerr
				}
				rt.srcKnown = len(rt.src.Partitions())
			default:
				st, rerr = rt.src.Next(ctx, b, rt.opts.BatchSize)
			}
		}
		// Only the source's own End ends the input: an error, whatever it
		// wraps (a registry's closed connection wraps io.EOF), is a
		// failure, and its Status is not read.
		eof := rerr == nil && st == source.End
		if rerr != nil {
			if ctx.Err() != nil && errors.Is(rerr, ctx.Err()) {
				// A graceful stop (SIGINT, SIGTERM): the last round holds
				// what was read; with checkpoints it ends in a final one so
				// that the next run resumes here.
				b.Reset()
				ro.flags = roundFlags{last: true, snapshot: rt.ck != nil && rt.atBoundary(), stats: true}
				return true, rt.endRound(pl, ro)
			}
			return false, fmt.Errorf("source: %w", rerr)
		}
		if err := rt.routeBatch(b, !eof); err != nil {
			return false, err
		}
		if eof {
			// The end of a bounded input: every window fires and closes,
			// and a last checkpoint commits the rest.
			rt.advance(rt.tracker.End())
			ro.flags = roundFlags{last: true, end: true, snapshot: rt.ck != nil, stats: true}
		} else {
			ro.flags.snapshot = rt.ck != nil && rt.atBoundary() && rt.due()
			ro.flags.stats = rt.liveDue()
		}
		if err := rt.endRound(pl, ro); err != nil {
			return false, err
		}
		rt.progress()
		if eof {
			return false, nil
		}
	}
}

// splitter returns the source when its batches are to be decoded on
// decoder goroutines: a source.Splitter that splits, read by a run of
// several tasks with one input (one task runs on one goroutine: a
// decoder beside it would cost more hand-offs than it saves).
func (rt *runtime) splitter() source.Splitter {
	sp, ok := rt.src.(source.Splitter)
	if !ok || !sp.Splits() || rt.par < 2 || len(rt.ins) > 0 || rt.groupMarker != nil {
		return nil
	}
	return sp
}

// decodeDepth is the most batches claimed ahead of the router: two per
// decoder, so that each has the next batch while the router routes one.
func (rt *runtime) decodeDepth() int { return 2 * rt.par }

// atBoundary reports whether the source's records so far end at an
// upstream transaction boundary (source.Transactional; always for other
// sources): a checkpoint is taken only there, so that no sink commit holds
// part of an upstream transaction. A stop inside a transaction ends
// without a final checkpoint: the next run resumes from the one before.
func (rt *runtime) atBoundary() bool {
	t, ok := rt.src.(source.Transactional)
	return !ok || t.AtBoundary()
}

// beginRound takes a round's buffers and points the router's sender at
// fresh packets for every entry node of every task.
func (rt *runtime) beginRound(pl *pipeline) *routerOut {
	ro := <-pl.roundFree
	ro.log.Reset()
	ro.cnt.Reset()
	rt.rounds++
	ro.round.ID = rt.rounds
	ro.round.Markers = ro.round.Markers[:0]
	ro.flags = roundFlags{}
	ro.state, ro.live = nil, nil
	if rt.rsnd == nil {
		rt.rsnd = task.NewSender(rt.g, ro.log, &ro.cnt)
		rt.rsnd.Out = make([][]*task.Packet, len(rt.g.Nodes))
	}
	rt.rsnd.Retarget(ro.log, &ro.cnt)
	rt.cur = ro
	if rt.inline {
		// One task, in push mode: records and markers go straight to it.
		b := <-pl.taskFree[0]
		b.round, b.flags = ro.round.ID, roundFlags{}
		b.sections, b.stats, b.snaps, b.pause = b.sections[:0], nil, nil, DiskCheckpoint{}
		b.cnt.Reset()
		for _, l := range b.logs {
			l.Reset()
			l.W = rt // outputs straight to the sinks, in step order
		}
		ro.log.W = rt
		rt.tasks[0].SetOutput(b.logs, &b.cnt)
		rt.bundle = b
		if rt.rsnd.Direct() == nil {
			rt.rsnd.PushInto(rt.tasks[0])
		}
		rt.rsnd.SetWatermark(rt.wm)
		return ro
	}
	for _, n := range rt.g.Entry {
		ps := make([]*task.Packet, rt.par)
		for i := range ps {
			ps[i] = pl.packet()
		}
		rt.rsnd.Out[n] = ps
	}
	rt.cur = ro
	rt.rsnd.SetWatermark(rt.wm)
	return ro
}

// endRound sends the round to the tasks and the writer (or, with one
// task, runs it).
func (rt *runtime) endRound(pl *pipeline, ro *routerOut) error {
	if err := rt.checkQuarantineShare(ro); err != nil {
		return err
	}
	if ro.flags.snapshot {
		ro.state = rt.routerState()
	}
	if ro.flags.stats {
		ro.live = rt.routerLive()
	}
	if rt.inline {
		rt.cur = nil
		return rt.inlineRound(pl, ro)
	}
	for i := range rt.par {
		rm := &roundMsg{round: ro.round, flags: ro.flags}
		for _, n := range rt.g.Entry {
			rm.pkts = append(rm.pkts, rt.rsnd.Out[n][i])
		}
		pl.inbox[i] <- inMsg{rm: rm}
	}
	pl.fromRoute <- ro
	rt.cur = nil
	return nil
}

// inlineRound runs a round of a single task on the router's goroutine —
// the task's nodes, then the writer's part — and hands the buffers back:
// with one task there is nothing to run beside the router but the
// pipeline's hand-offs, which cost more than they give on one core.
func (rt *runtime) inlineRound(pl *pipeline, ro *routerOut) error {
	t := rt.tasks[0]
	bundle := rt.bundle
	rt.bundle = nil
	if err := t.Err(); err != nil {
		return err
	}
	bundle.flags = ro.flags
	if ro.flags.snapshot {
		if err := rt.snapshotTask(0, ro.round.ID, t, bundle); err != nil {
			return err
		}
	}
	if ro.flags.stats || ro.flags.snapshot {
		bundle.globals = t.Globals()
	}
	if ro.flags.stats {
		bundle.stats, bundle.dedupIDs, bundle.dedupMem = t.Stats(rt.opts.HotKeys)
	}
	if err := ro.log.Err(); err != nil {
		return err
	}
	err := rt.finishRound(rt.wctx, ro, []*taskOut{bundle})
	pl.taskFree[0] <- bundle
	releaseBatches(pl, ro)
	pl.roundFree <- ro
	return err
}

// releaseBatches hands a written round's batches back to the router.
func releaseBatches(pl *pipeline, ro *routerOut) {
	if ro.batch != nil {
		pl.batchFree <- ro.batch
		ro.batch = nil
	}
	for i, b := range ro.batches {
		pl.batchFree <- b
		ro.batches[i] = nil
	}
	ro.batches = ro.batches[:0]
}

// taskLoop runs task i: each round, its nodes, each on a goroutine of
// its own taking turns with the task's other nodes (engine/exchange.go),
// so that a node takes its inputs while the nodes feeding it still send.
func (rt *runtime) taskLoop(i int, pl *pipeline) error {
	for {
		var rm *roundMsg
		select {
		case m := <-pl.inbox[i]:
			rm = m.rm
		case <-pl.done:
			return nil
		}
		var bundle *taskOut
		select {
		case bundle = <-pl.taskFree[i]:
		case <-pl.done:
			return nil
		}
		if err := rt.taskRound(i, rm, bundle, pl); err != nil {
			if errors.Is(err, errStopped) {
				return nil
			}
			return err
		}
		pl.toWriter <- bundle
		if rm.flags.last {
			return nil
		}
	}
}

// taskRound runs task i's nodes over one round into bundle: node 0 on
// this goroutine, the others each on one started here, all holding the
// task's baton while they run (released while they wait). A node's
// failure stops the pipeline at once, so that the nodes waiting for its
// items return.
func (rt *runtime) taskRound(i int, rm *roundMsg, bundle *taskOut, pl *pipeline) error {
	t := rt.tasks[i]
	g := rt.g
	bundle.round, bundle.flags = rm.round.ID, rm.flags
	bundle.sections, bundle.stats, bundle.snaps, bundle.pause = bundle.sections[:0], nil, nil, DiskCheckpoint{}
	bundle.cnt.Reset()
	for _, l := range bundle.logs {
		l.Reset()
	}
	t.SetOutput(bundle.logs, &bundle.cnt)
	errs := make([]error, len(g.Nodes))
	baton := &rt.xc.baton[i]
	run := func(ni int) {
		baton.Lock()
		defer baton.Unlock()
		err := rt.runNode(i, ni, rm)
		if err != nil && !errors.Is(err, errStopped) {
			pl.fail(err)
		}
		errs[ni] = err
	}
	var wg sync.WaitGroup
	for ni := 1; ni < len(g.Nodes); ni++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer pl.recovered()
			run(ni)
		}()
	}
	if len(g.Nodes) > 0 {
		func() {
			defer pl.recovered()
			run(0)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, errStopped) {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	select {
	case <-pl.done:
		// A node's panic (pl.recovered) or another goroutine's failure.
		return errStopped
	default:
	}
	if rm.flags.snapshot {
		if err := rt.snapshotTask(i, rm.round.ID, t, bundle); err != nil {
			return err
		}
	}
	if rm.flags.stats || rm.flags.snapshot {
		bundle.globals = t.Globals()
	}
	if rm.flags.stats {
		bundle.stats, bundle.dedupIDs, bundle.dedupMem = t.Stats(rt.opts.HotKeys)
	}
	return nil
}

// snapshotTask takes task i's part of a checkpoint after the round: on
// the disk backend, its changes flushed to its stores and their
// snapshots; then its key groups' sections.
func (rt *runtime) snapshotTask(i int, round uint64, t *task.Task, bundle *taskOut) error {
	if rt.disk != nil {
		t0 := time.Now() // a measurement for the summary, not an input of the run
		if err := t.Flush(); err != nil {
			return fmt.Errorf("task %d: %w", i, err)
		}
		wb := time.Since(t0)
		// The checkpoint this round's snapshot is for: the k-th of the run
		// after the restored one (each snapshot round makes one).
		rt.disk.rounds[i]++
		var restored int64
		if rt.ck != nil {
			restored = rt.ck.restored
		}
		rt.fault("flushed", restored+rt.disk.rounds[i])
		snaps, waited, err := rt.snapshotStores(i, round)
		bundle.snaps = snaps
		if err != nil {
			return fmt.Errorf("task %d: %w", i, err)
		}
		bundle.pause = DiskCheckpoint{Pause: time.Since(t0), WriteBack: wb, Wait: waited}
	}
	bundle.sections = t.Snapshot(bundle.sections)
	return nil
}
