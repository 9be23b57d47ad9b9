package group

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/task"
)

// Checkpoints of a group task (docs/scale-out.md, "State"). Each task —
// an input partition or a partition of the repartition topic — keeps its
// checkpoints in the group's checkpoint.TaskStore under its own name, as
// immutable objects:
//
//	m-<id>-<generation>-<writer>  a manifest: the task's state outside
//	                              its key groups and the sections of its
//	                              key groups
//	s-<id>-<generation>-<writer>  a segment: the sections that changed
//	                              since the task's previous checkpoint
//	                              (and those compaction copied forward)
//
// with id the task's checkpoint number (one more than the one its state
// was restored from), generation the consumer group's generation when it
// was written and writer the name of the process and its attempt (a
// restart of its tasks after an aborted transaction): a former owner
// that has not yet noticed it lost the partition writes under an older
// generation, a restarted instance that kept its static membership (and
// the generation) or an attempt after an abort under another writer
// name, so two writers never name an object alike. Which manifest is current is not the store's to say:
// the manifest's name is the metadata of the partition's offset, which
// the Kafka transaction commits together with the records the task
// produced — one commit point for offsets, state and output.
//
// Manifest (package state): Byte(1) Int(id) Bytes8(payload: the task's
// appendState) Uint(#segments) String(name)… Uint(#sections) (Uint(node)
// Uint(key group) Uint(segment index) Uint(offset) Uint(length)
// Fixed64(xxHash64) Bool(delta))… Fixed64(xxHash64 of all before it).
// Segment: checkpoint.SegmentMagic, then sections back to back.

// secRef locates one section of a task's key group in a segment object
// (offset and length in bytes, xxHash64 of the bytes). The direct
// runner's checkpoint (engine/checkpoint.go) has a reference of the same
// shape into its segment files; the two formats are each runner's own, so
// they do not share the type.
type secRef struct {
	seg       string
	off, n    int64
	hash      uint64
	node, grp int
	delta     bool // applies on top of the key group's sections before it
}

// nodeGroup names a (node, key group) of a task's state.
type nodeGroup struct{ node, group int }

// taskCk is one group task's checkpoint bookkeeping.
type taskCk struct {
	store checkpoint.TaskStore
	name  string
	// cur is each key group's newest sections (full, then deltas);
	// segSize the size of each segment cur references.
	cur     map[nodeGroup][]secRef
	segSize map[string]int64
	// id and gen name the checkpoint the task's state is at (committed or
	// restored), manifest its object; 0 and "" before any.
	id       int64
	gen      int64
	manifest string
	// writer names this process in object names.
	writer string
	// loaded is the bytes load read.
	loaded int64
}

func newTaskCk(store checkpoint.TaskStore, name, writer string) *taskCk {
	return &taskCk{store: store, name: name, writer: writer, cur: map[nodeGroup][]secRef{}, segSize: map[string]int64{}}
}

// objName names a task object: kind "m" or "s".
func objName(kind string, id, gen int64, writer string) string {
	return fmt.Sprintf("%s-%020d-%010d-%s", kind, id, gen, writer)
}

// taskObj is a parsed object name.
type taskObj struct {
	kind    string
	id, gen int64
	writer  string
}

// parseObj reads an object name back.
func parseObj(name string) (taskObj, bool) {
	parts := strings.SplitN(name, "-", 4)
	if len(parts) != 4 || (parts[0] != "m" && parts[0] != "s") {
		return taskObj{}, false
	}
	id, err1 := strconv.ParseInt(parts[1], 10, 64)
	gen, err2 := strconv.ParseInt(parts[2], 10, 64)
	return taskObj{parts[0], id, gen, parts[3]}, err1 == nil && err2 == nil
}

// write stores checkpoint id of the task, written under generation gen:
// the changed sections secs (and, for compaction, the live sections of
// segments less than half referenced), then the manifest with payload. It
// returns the manifest's name.
func (c *taskCk) write(ctx context.Context, id, gen int64, secs []task.Section, payload []byte) (string, error) {
	segName := objName("s", id, gen, c.writer)
	seg := []byte(checkpoint.SegmentMagic)
	place := func(node, group int, data []byte, delta bool) secRef {
		r := secRef{seg: segName, off: int64(len(seg)), n: int64(len(data)), hash: xxhash.Sum64(data), node: node, grp: group, delta: delta}
		seg = append(seg, data...)
		return r
	}
	slices.SortStableFunc(secs, func(a, b task.Section) int {
		if a.Node != b.Node {
			return a.Node - b.Node
		}
		return a.Group - b.Group
	})
	for _, s := range secs {
		k := nodeGroup{s.Node, s.Group}
		r := place(s.Node, s.Group, s.Data, s.Delta)
		if !s.Delta {
			c.cur[k] = []secRef{r}
			continue
		}
		if len(c.cur[k]) == 0 {
			return "", fmt.Errorf("task %s: node %d, key group %d: a delta section without a full section before it", c.name, s.Node, s.Group)
		}
		c.cur[k] = append(c.cur[k], r)
	}
	keys := c.keys()
	live := map[string]int64{}
	for _, k := range keys {
		for _, r := range c.cur[k] {
			live[r.seg] += r.n
		}
	}
	for _, k := range keys {
		chain := c.cur[k]
		for i, r := range chain {
			if r.seg == segName || live[r.seg]*2 >= c.segSize[r.seg] {
				continue
			}
			b, err := c.store.Get(ctx, c.name, r.seg, r.off, r.n)
			if err != nil {
				return "", fmt.Errorf("task %s: compacting: %w", c.name, err)
			}
			if xxhash.Sum64(b) != r.hash {
				return "", fmt.Errorf("task %s: compacting: segment %s: the section of key group %d changed in the store", c.name, r.seg, r.grp)
			}
			chain[i] = place(r.node, r.grp, b, r.delta)
		}
	}
	if len(seg) > len(checkpoint.SegmentMagic) {
		if err := c.store.Put(ctx, c.name, segName, seg); err != nil {
			return "", fmt.Errorf("task %s: %w", c.name, err)
		}
		c.segSize[segName] = int64(len(seg))
	}
	e := state.NewEncoder(nil)
	e.Byte(1)
	e.Int(id)
	e.Bytes8(payload)
	var segs []string
	segIdx := map[string]int{}
	var refs []secRef
	for _, k := range keys {
		for _, r := range c.cur[k] {
			if _, ok := segIdx[r.seg]; !ok {
				segIdx[r.seg] = len(segs)
				segs = append(segs, r.seg)
			}
			refs = append(refs, r)
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
	e.Fixed64(xxhash.Sum64(e.Bytes()))
	name := objName("m", id, gen, c.writer)
	if err := c.store.Put(ctx, c.name, name, e.Bytes()); err != nil {
		return "", fmt.Errorf("task %s: %w", c.name, err)
	}
	return name, nil
}

// keys returns cur's keys in (node, key group) order.
func (c *taskCk) keys() []nodeGroup {
	keys := make([]nodeGroup, 0, len(c.cur))
	for k := range c.cur {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b nodeGroup) int {
		if a.node != b.node {
			return a.node - b.node
		}
		return a.group - b.group
	})
	return keys
}

// committed records that manifest name is the task's current state: the
// Kafka transaction naming it committed.
func (c *taskCk) committed(name string) {
	o, _ := parseObj(name)
	c.id, c.gen, c.manifest = o.id, o.gen, name
}

// load reads manifest name and every section it references, checking
// each against its hash, and makes it the task's current checkpoint. It
// returns the payload and the sections (per key group: the full one,
// then its deltas). Errors name the task, the object and what is wrong;
// a manifest that cannot be read is never skipped (its offsets are
// committed: there is no older state to fall back to).
func (c *taskCk) load(ctx context.Context, name string) ([]byte, []task.Section, error) {
	o, ok := parseObj(name)
	id := o.id
	if !ok || o.kind != "m" {
		return nil, nil, fmt.Errorf("task %s: the committed offset names %q, which is not a checkpoint manifest", c.name, name)
	}
	b, err := c.store.Get(ctx, c.name, name, 0, -1)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("task %s: the consumer group's committed offset names checkpoint %s, which the checkpoint store does not hold (%w): the store was emptied or another one configured; put the store back, or start the group anew (another source.group, or delete the group's offsets) — tidemark never starts a partition over on top of committed output", c.name, name, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("task %s: checkpoint %s, which the committed offset names: %w", c.name, name, err)
	}
	if len(b) < 8 || xxhash.Sum64(b[:len(b)-8]) != state.NewDecoder(b[len(b)-8:]).Fixed64() {
		return nil, nil, fmt.Errorf("task %s: checkpoint %s fails its checksum (damaged in the store)", c.name, name)
	}
	d := state.NewDecoder(b[:len(b)-8])
	d.Section("group task manifest", 1)
	if mid := d.Int(); d.Err() == nil && mid != id {
		d.Fail("manifest %s holds checkpoint %d", name, mid)
	}
	payload := d.Bytes8()
	var segs []string
	for range d.Len(1<<24, 1) {
		segs = append(segs, d.String())
	}
	cur := map[nodeGroup][]secRef{}
	segSize := map[string]int64{}
	var secs []task.Section
	n := d.Len(1<<31, 14)
	for i := 0; i < n && d.Err() == nil; i++ {
		r := secRef{node: int(d.Uint()), grp: int(d.Uint())}
		si := d.Uint()
		r.off, r.n, r.hash, r.delta = int64(d.Uint()), int64(d.Uint()), d.Fixed64(), d.Bool()
		if d.Err() != nil {
			break
		}
		if si >= uint64(len(segs)) {
			d.Fail("section %d: segment %d of %d", i, si, len(segs))
			break
		}
		r.seg = segs[si]
		data, err := c.store.Get(ctx, c.name, r.seg, r.off, r.n)
		if err != nil {
			return nil, nil, fmt.Errorf("task %s: checkpoint %s: key group %d: %w", c.name, name, r.grp, err)
		}
		if xxhash.Sum64(data) != r.hash {
			return nil, nil, fmt.Errorf("task %s: checkpoint %s: segment %s: the section of key group %d (bytes %d–%d) fails its checksum", c.name, name, r.seg, r.grp, r.off, r.off+r.n)
		}
		k := nodeGroup{r.node, r.grp}
		cur[k] = append(cur[k], r)
		segSize[r.seg] = max(segSize[r.seg], r.off+r.n)
		secs = append(secs, task.Section{Node: r.node, Group: r.grp, Data: data, Delta: r.delta})
	}
	if err := d.Err(); err != nil {
		return nil, nil, fmt.Errorf("task %s: checkpoint %s: %w", c.name, name, err)
	}
	if d.Remaining() != 0 {
		return nil, nil, fmt.Errorf("task %s: checkpoint %s: %d bytes after the manifest", c.name, name, d.Remaining())
	}
	c.cur, c.segSize, c.id, c.gen, c.manifest = cur, segSize, id, o.gen, name
	c.loaded = int64(len(b))
	for _, s := range secs {
		c.loaded += int64(len(s.Data))
	}
	return payload, secs, nil
}

// gc deletes the task's objects no longer needed: those the current
// checkpoint does not reference that a writer of an older generation
// wrote, or one of this generation gen — this writer (process and
// attempt), up to the current id, or another (an aborted attempt, or a
// restarted instance that kept its membership: the earlier process is
// gone). An object of a newer generation belongs to the partition's new
// owner, and one of this writer with a larger id is being written.
func (c *taskCk) gc(ctx context.Context, gen int64) error {
	names, err := c.store.List(ctx, c.name)
	if err != nil {
		return err
	}
	keep := map[string]bool{c.manifest: true}
	for _, chain := range c.cur {
		for _, r := range chain {
			keep[r.seg] = true
		}
	}
	var del []string
	for _, n := range names {
		o, ok := parseObj(n)
		if !ok || keep[n] || o.gen > gen || (o.gen == gen && o.writer == c.writer && o.id > c.id) {
			continue
		}
		del = append(del, n)
	}
	if len(del) == 0 {
		return nil
	}
	if err := c.store.Delete(ctx, c.name, del...); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
