package group

import (
	"github.com/tidemark/tidemark/engine"

	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/task"
)

// groupHost is what an instance of a group run writes through, inside the
// current transaction: records of the repartition topic, each task's
// outputs, and the checkpoint store (docs/scale-out.md). The Kafka runner
// is one; the tests have an in-memory one.
type groupHost interface {
	// Repartition produces value to partition q of the repartition topic.
	Repartition(q int, value []byte)
	// Writer returns the writer of task key's outputs.
	Writer(key taskKey) (groupWriter, error)
	// Store is where the tasks' checkpoints are kept.
	Store() checkpoint.TaskStore
}

// groupWriter takes one task's outputs (task.Writer) and takes part in
// its checkpoints: Prepare returns what the task's exactly-once sinks
// staged since the last checkpoint (kept in the task's manifest), Commit
// publishes it once the transaction naming that checkpoint committed,
// Recover brings the sinks to a restored checkpoint (publishing what it
// prepared if the crash came before Commit).
type groupWriter interface {
	task.Writer
	Prepare(ctx context.Context, id int64) ([]byte, error)
	Commit(ctx context.Context, id int64, prepared []byte) error
	Recover(ctx context.Context, id int64, prepared []byte) error
	Close(ctx context.Context) error
}

// done reports whether the task has nothing more to do: a source task
// read its bounded partition to the end, a keyed task's every node is at
// +inf.
func (e *groupEntry) done() bool {
	if e.kt != nil {
		return e.kt.done()
	}
	return e.src.ended
}

// taskKey names a task of a group run: a source task (an input
// partition's index) or a keyed task (a repartition partition).
type taskKey struct {
	keyed bool
	index int
}

func (k taskKey) String() string {
	if k.keyed {
		return fmt.Sprintf("keyed-%d", k.index)
	}
	return fmt.Sprintf("source-%d", k.index)
}

// groupEntry is one task an instance holds, with its checkpoints and
// writer.
type groupEntry struct {
	key      taskKey
	src      *srcTask
	kt       *keyTask
	ck       *taskCk
	w        groupWriter
	prepared []byte // the prepared sink state of the checkpoint being committed
	pending  string // the manifest of the checkpoint being committed
	// restored is the time reading and applying its checkpoint took (0
	// for a task that started empty).
	restored time.Duration
}

// instance is the tasks one process of a group run holds.
type instance struct {
	plan   *plan.Plan
	g      *task.Graph
	opts   engine.Options
	host   groupHost
	inputs []string // every input partition, "topic/N", in index order
	json   func([]byte, *source.Meta) []byte
	tasks  map[taskKey]*groupEntry
	// stops are the end offsets of a bounded run for partitions whose
	// source task starts fresh (nil: unbounded).
	stops func(index int) int64
	// lastDeltas counts the delta sections of the last checkpoint.
	lastDeltas int
	// writer names this process in the names of checkpoint objects, and
	// attempt counts the times its tasks restarted from their committed
	// checkpoints (an aborted transaction): the objects an aborted attempt
	// wrote are never named again.
	writer  string
	attempt int
}

// sortedTasks returns the tasks in key order (source tasks first).
func (in *instance) sortedTasks() []*groupEntry {
	out := make([]*groupEntry, 0, len(in.tasks))
	for _, e := range in.tasks {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *groupEntry) int {
		if a.key.keyed != b.key.keyed {
			if a.key.keyed {
				return 1
			}
			return -1
		}
		return a.key.index - b.key.index
	})
	return out
}

// add starts task key: from the checkpoint manifest names (the metadata
// committed with its partition's offset), or empty. Errors: a checkpoint
// that cannot be read (named), a sink that cannot open or recover.
func (in *instance) add(ctx context.Context, key taskKey, manifest string) error {
	if _, ok := in.tasks[key]; ok {
		return fmt.Errorf("internal: task %s added twice", key)
	}
	w, err := in.host.Writer(key)
	if err != nil {
		return err
	}
	added := false
	defer func() {
		if !added {
			w.Close(ctx) // the task did not start: its sinks go
		}
	}()
	e := &groupEntry{key: key, ck: newTaskCk(in.host.Store(), key.String(), fmt.Sprintf("%s.%d", in.writer, in.attempt)), w: w}
	if key.keyed {
		e.kt, err = newKeyTask(in.g, key.index, len(in.inputs), w, in.host.Repartition)
	} else {
		stop := int64(-1)
		if in.stops != nil {
			stop = in.stops(key.index)
		}
		e.src, err = newSrcTask(in.plan, in.g, in.opts, key.index, in.inputs[key.index], in.json, w, in.host.Repartition, stop)
	}
	if err != nil {
		return err
	}
	var prepared []byte
	if manifest != "" {
		t0 := time.Now()
		payload, secs, err := e.ck.load(ctx, manifest)
		if err != nil {
			return err
		}
		d := state.NewDecoder(payload)
		st := state.NewDecoder(d.Bytes8())
		prepared = d.Bytes8()
		if err := d.Err(); err != nil {
			return fmt.Errorf("task %s: checkpoint %s: %w", key, manifest, err)
		}
		if key.keyed {
			err = e.kt.restoreState(st, secs)
		} else {
			err = e.src.restoreState(st)
		}
		if err == nil && st.Remaining() != 0 {
			err = fmt.Errorf("%d bytes after the state", st.Remaining())
		}
		if err != nil {
			return fmt.Errorf("task %s: checkpoint %s: %w", key, manifest, err)
		}
		e.restored = time.Since(t0)
	}
	if err := w.Recover(ctx, e.ck.id, prepared); err != nil {
		return fmt.Errorf("task %s: recovering its sinks to checkpoint %d: %w", key, e.ck.id, err)
	}
	in.tasks[key] = e
	added = true
	return nil
}

// drop forgets task key (its partition was revoked, or the transaction
// aborted): its state since the last commit is lost, and the committed
// checkpoint stays in the store for its next owner.
func (in *instance) drop(ctx context.Context, key taskKey) {
	if e, ok := in.tasks[key]; ok {
		e.w.Close(ctx)
		delete(in.tasks, key)
	}
}

// dropAll forgets every task; the tasks added next write under a new
// attempt.
func (in *instance) dropAll(ctx context.Context) {
	in.attempt++
	for _, e := range in.sortedTasks() {
		in.drop(ctx, e.key)
	}
}

// checkpoint writes a checkpoint of every task (generation gen) and
// returns, per task, the manifest to commit with its partition's offset.
func (in *instance) checkpoint(ctx context.Context, gen int64) (map[taskKey]string, error) {
	out := map[taskKey]string{}
	in.lastDeltas = 0
	for _, e := range in.sortedTasks() {
		id := e.ck.id + 1
		prepared, err := e.w.Prepare(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("task %s: checkpoint %d: %w", e.key, id, err)
		}
		st := state.NewEncoder(nil)
		var secs []task.Section
		if e.kt != nil {
			e.kt.appendState(st)
			secs = e.kt.t.Snapshot(nil)
			for _, s := range secs {
				if s.Delta {
					in.lastDeltas++
				}
			}
		} else {
			e.src.appendState(st)
		}
		payload := state.NewEncoder(nil)
		payload.Bytes8(st.Bytes())
		payload.Bytes8(prepared)
		name, err := e.ck.write(ctx, id, gen, secs, payload.Bytes())
		if err != nil {
			return nil, err
		}
		e.prepared, e.pending = prepared, name
		out[e.key] = name
	}
	return out, nil
}

// committed finishes the checkpoint after the transaction naming it
// committed: the sinks publish what they prepared, and old checkpoint
// objects go.
func (in *instance) committed(ctx context.Context, gen int64) error {
	for _, e := range in.sortedTasks() {
		if e.pending == "" {
			continue
		}
		e.ck.committed(e.pending)
		id := e.ck.id
		if err := e.w.Commit(ctx, id, e.prepared); err != nil {
			return fmt.Errorf("task %s: checkpoint %d: %w", e.key, id, err)
		}
		e.pending, e.prepared = "", nil
		if err := e.ck.gc(ctx, gen); err != nil {
			return fmt.Errorf("task %s: removing old checkpoints: %w", e.key, err)
		}
	}
	return nil
}
