package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/state"
)

// The checkpoint protocol (docs/checkpoints.md): at a batch boundary — no
// record half processed, every operator drained — the runner prepares
// every exactly-once sink (their output since the last checkpoint becomes
// durable but unpublished), snapshots the source position and all state
// into one payload together with what the sinks prepared, writes the
// checkpoint file atomically, and only then commits the sinks. On start
// it restores the newest complete checkpoint and asks every sink to
// recover to it: publish the checkpoint's prepared output if that commit
// was lost, drop anything after it.

// payloadVersion is the engine payload's own version (inside
// checkpoint.FormatVersion).
const payloadVersion = 2

// committer is one sink taking part in checkpoints.
type committer struct {
	id string // stable name: "<stage>/sinks[i]", "<stage>/late", "quarantine", "conflicts"
	c  sink.Committer
}

// ckState is the runner's checkpoint bookkeeping.
type ckState struct {
	dir      string
	interval time.Duration
	retain   int
	spec     []byte // the pipeline spec, canonical JSON
	nextID   int64
	last     time.Time // when the previous checkpoint was taken (wall clock)
	restored int64     // the checkpoint restored at start, 0 for none

	committers []committer
	flushers   []func(context.Context) error // at-least-once sinks, flushed at each checkpoint

	// Buffers reused from one checkpoint to the next (a checkpoint of
	// megabytes would otherwise grow fresh buffers by doubling each time).
	enc, opEnc state.Encoder
	file       []byte

	taken    int
	failures int
	lastID   int64
	bytes    int // size of the last checkpoint file
	duration time.Duration
	total    time.Duration
}

// specJSON returns the pipeline spec as canonical JSON (encoding/json
// sorts map keys; struct fields keep their order).
func specJSON(v any) ([]byte, error) { return json.Marshal(v) }

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

// restore finds the newest usable checkpoint and brings the runner, the
// source and the sinks to it; without one it tells the sinks to start
// fresh. It runs after every sink and the source are open and before any
// record is read.
func (rt *runtime) restore(ctx context.Context) error {
	ck := rt.ck
	if err := checkpoint.Clean(ck.dir); err != nil {
		return fmt.Errorf("checkpoint.dir: %w", err)
	}
	c, err := checkpoint.Latest(ck.dir, rt.logf)
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
	if c.Pipeline != rt.plan.Spec.Name {
		return fmt.Errorf("checkpoint %d in %s belongs to pipeline %q, not %q", c.ID, ck.dir, c.Pipeline, rt.plan.Spec.Name)
	}
	if changed := specChanges(c.Spec, ck.spec); len(changed) > 0 {
		return fmt.Errorf("checkpoint %d in %s was taken under another pipeline spec: %s changed; restoring it would mix two computations (use a new checkpoint.dir to recompute from the start)", c.ID, ck.dir, strings.Join(changed, ", "))
	}
	prepared, err := rt.decodeState(ctx, c.Payload)
	if err != nil {
		return fmt.Errorf("checkpoint %d in %s: %w", c.ID, ck.dir, err)
	}
	for _, s := range ck.committers {
		p, ok := prepared[s.id]
		if !ok {
			return fmt.Errorf("checkpoint %d in %s holds no state for sink %s", c.ID, ck.dir, s.id)
		}
		if err := s.c.Recover(ctx, c.ID, p); err != nil {
			return fmt.Errorf("%s: recovering checkpoint %d: %w", s.id, c.ID, err)
		}
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
	rt.logf("restored checkpoint %d from %s (%d records in, watermark %s)", c.ID, ck.dir, rt.events, wm)
	return nil
}

// compatibleKeys are spec keys a restore may see changed.
var compatibleKeys = []string{"Checkpoint.Interval", "Checkpoint.Retain", "Parallelism"}

// specChanges lists the keys whose values differ between two spec JSON
// documents (flattened to dotted paths), except the compatible ones.
func specChanges(old, cur []byte) []string {
	var a, b any
	if json.Unmarshal(old, &a) != nil || json.Unmarshal(cur, &b) != nil {
		return []string{"(the spec does not parse)"}
	}
	fa, fb := map[string]string{}, map[string]string{}
	flatten("", a, fa)
	flatten("", b, fb)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(fa)) {
		if fb[k] != fa[k] && !slices.Contains(compatibleKeys, k) {
			out = append(out, change(k, fa, fb))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fb)) {
		if _, ok := fa[k]; !ok && !slices.Contains(compatibleKeys, k) {
			out = append(out, change(k, fa, fb))
		}
	}
	return out
}

// change describes the change of key k: `window.size ("1m0s" → "2m0s")`.
func change(k string, fa, fb map[string]string) string {
	key, t := yamlKey(k)
	show := func(m map[string]string) string {
		v, ok := m[k]
		if !ok {
			return "unset"
		}
		if t == reflect.TypeFor[spec.Duration]() {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return strconv.Quote(time.Duration(n).String())
			}
		}
		return v
	}
	return fmt.Sprintf("%s (%s → %s)", key, show(fa), show(fb))
}

// yamlKey turns a path of Go field names in spec.Pipeline
// ("Stages[0].Window.Size") into the pipeline file's key
// ("stages[0].window.size"), and returns the field's type (nil when a
// part cannot be mapped; that part stays as it is).
func yamlKey(path string) (string, reflect.Type) {
	t := reflect.TypeOf(spec.Pipeline{})
	var out []string
	for _, part := range strings.Split(path, ".") {
		name, idx, _ := strings.Cut(part, "[")
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice) {
			t = t.Elem()
		}
		key := name
		if t != nil && t.Kind() == reflect.Struct {
			if f, ok := t.FieldByName(name); ok {
				if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); tag != "" && tag != "-" {
					key = tag
				}
				t = f.Type
			} else {
				t = nil
			}
		} else {
			t = nil
		}
		if idx != "" {
			key += "[" + idx
		}
		out = append(out, key)
	}
	return strings.Join(out, "."), t
}

func flatten(prefix string, v any, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, x, out)
		}
	case []any:
		for i, x := range v {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), x, out)
		}
	case nil:
		// absent and null are the same
	default:
		b, _ := json.Marshal(v)
		if string(b) == `""` || string(b) == "0" || string(b) == "false" {
			return // zero values equal absent ones
		}
		out[prefix] = string(b)
	}
}

// fault calls Options.FaultHook, if set, at a named point of the protocol.
func (rt *runtime) fault(point string, id int64) {
	if rt.opts.FaultHook != nil {
		rt.opts.FaultHook(point, id)
	}
}

// logf writes a log line through Options.Logf, if set.
func (rt *runtime) logf(format string, args ...any) {
	if rt.opts.Logf != nil {
		rt.opts.Logf(format, args...)
	}
}

// due reports whether a periodic checkpoint is due.
func (rt *runtime) due() bool {
	ck := rt.ck
	if ck == nil {
		return false
	}
	select {
	case <-rt.opts.CheckpointNow:
		return true
	default:
	}
	return rt.opts.WallClock().Sub(ck.last) >= ck.interval
}

// takeCheckpoint runs the protocol at a batch boundary.
func (rt *runtime) takeCheckpoint(ctx context.Context) error {
	err := rt.checkpointOnce(ctx)
	if err != nil {
		rt.ck.failures++
		rt.publishLive(true, false)
	}
	return err
}

// checkpointOnce runs the protocol for the next checkpoint id.
func (rt *runtime) checkpointOnce(ctx context.Context) error {
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
	ck.enc.Reset()
	if err := rt.encodeState(&ck.enc, prepared); err != nil {
		return fmt.Errorf("checkpoint %d: %w", id, err)
	}
	c := &checkpoint.Checkpoint{ID: id, Created: rt.opts.WallClock().UnixMilli(), Pipeline: rt.plan.Spec.Name, Spec: ck.spec, Payload: ck.enc.Bytes()}
	ck.file = checkpoint.AppendEncode(ck.file[:0], c)
	_, n, err := checkpoint.WriteEncoded(ck.dir, id, ck.file)
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
	if err := checkpoint.Prune(ck.dir, ck.retain); err != nil {
		rt.logf("checkpoint %d: pruning old checkpoints: %v", id, err)
	}
	ck.nextID++
	ck.taken++
	ck.lastID, ck.bytes = id, n
	ck.duration = time.Since(start)
	ck.total += ck.duration
	ck.last = rt.opts.WallClock()
	rt.publishLive(true, false)
	return nil
}

// encodeState writes the runner's state and the sinks' prepared output.
func (rt *runtime) encodeState(e *state.Encoder, prepared [][]byte) error {
	e.Byte(payloadVersion)
	res, ok := rt.src.(source.Resumable)
	if !ok {
		return errors.New("the source cannot resume from a position (it does not implement source.Resumable)")
	}
	e.Bytes8(res.Position())
	for _, v := range []int64{rt.now, rt.wm, int64(rt.parts), rt.events, rt.redeliver, rt.quarantined, rt.dups, rt.conflicts, rt.stale, rt.superseded, rt.outside} {
		e.Int(v)
	}
	e.String(rt.firstQ)
	e.Uint(uint64(len(rt.byRule)))
	for _, k := range slices.Sorted(maps.Keys(rt.byRule)) {
		e.String(k)
		e.Int(rt.byRule[k])
	}
	e.Uint(uint64(len(rt.present)))
	for _, p := range rt.present {
		e.Bool(p)
	}
	rt.tracker.Snapshot(e)
	e.Bool(rt.dedup != nil)
	if d := rt.dedup; d != nil {
		d.table.Snapshot(e)
		d.payloads.snapshot(e)
	}
	e.Bool(rt.order != nil)
	if o := rt.order; o != nil {
		o.snapshot(e, rt.plan.SourceSchema)
	}
	e.Uint(uint64(len(rt.stages)))
	op := &rt.ck.opEnc
	for _, st := range rt.stages {
		e.String(st.p.Name)
		for _, p := range st.cnt.fields() {
			e.Int(*p)
		}
		e.String(st.firstQ)
		op.Reset()
		if st.op != nil {
			st.op.Snapshot(op)
		}
		e.Bytes8(op.Bytes())
	}
	e.Uint(uint64(len(rt.ck.committers)))
	for i, s := range rt.ck.committers {
		e.String(s.id)
		e.Bytes8(prepared[i])
	}
	return nil
}

// decodeState restores what encodeState wrote and returns the sinks'
// prepared output by sink id.
func (rt *runtime) decodeState(ctx context.Context, payload []byte) (map[string][]byte, error) {
	d := state.NewDecoder(payload)
	d.Section("engine", payloadVersion)
	pos := d.Bytes8()
	if err := d.Err(); err != nil {
		return nil, err
	}
	res, ok := rt.src.(source.Resumable)
	if !ok {
		return nil, errors.New("the source cannot resume from a position")
	}
	if err := res.Seek(ctx, pos); err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	for _, p := range []*int64{&rt.now, &rt.wm} {
		*p = d.Int()
	}
	parts := d.Int()
	for _, p := range []*int64{&rt.events, &rt.redeliver, &rt.quarantined, &rt.dups, &rt.conflicts, &rt.stale, &rt.superseded, &rt.outside} {
		*p = d.Int()
	}
	rt.firstQ = d.String()
	n := d.Len(1<<20, 2)
	rt.byRule = nil
	for range n {
		if rt.byRule == nil {
			rt.byRule = map[string]int64{}
		}
		k := d.String()
		rt.byRule[k] = d.Int()
	}
	if n := d.Len(1<<20, 1); d.Err() == nil {
		if n != len(rt.present) {
			d.Fail("%d source fields, the plan has %d", n, len(rt.present))
		}
		rt.absent = 0
		for i := 0; i < n && d.Err() == nil; i++ {
			rt.present[i] = d.Bool()
			if !rt.present[i] {
				rt.absent++
			}
		}
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	if parts < 0 || parts > MaxPartitions {
		return nil, fmt.Errorf("%d partitions", parts)
	}
	rt.parts = int(parts)
	if err := rt.tracker.RestoreState(d); err != nil {
		return nil, fmt.Errorf("watermarks: %w", err)
	}
	if has := d.Bool(); has != (rt.dedup != nil) && d.Err() == nil {
		return nil, errors.New("dedup state does not match the pipeline")
	}
	if dd := rt.dedup; dd != nil {
		if err := dd.table.Restore(d); err != nil {
			return nil, fmt.Errorf("dedup: %w", err)
		}
		dd.payloads.restore(d)
	}
	if has := d.Bool(); has != (rt.order != nil) && d.Err() == nil {
		return nil, errors.New("order_by state does not match the pipeline")
	}
	if o := rt.order; o != nil {
		o.restore(d, rt.plan.SourceSchema)
	}
	if n := d.Len(1<<16, 1); d.Err() == nil && n != len(rt.stages) {
		d.Fail("%d stages, the plan has %d", n, len(rt.stages))
	}
	for _, st := range rt.stages {
		if name := d.String(); d.Err() == nil && name != st.p.Name {
			d.Fail("stage %q, the plan has %q", name, st.p.Name)
		}
		for _, p := range st.cnt.fields() {
			*p = d.Int()
		}
		st.firstQ = d.String()
		opState := d.Bytes8()
		if err := d.Err(); err != nil {
			return nil, err
		}
		if st.op == nil {
			if len(opState) != 0 {
				return nil, fmt.Errorf("stage %s: operator state for a select stage", st.p.Name)
			}
			continue
		}
		if err := st.op.Restore(state.NewDecoder(opState)); err != nil {
			return nil, fmt.Errorf("stage %s: %w", st.p.Name, err)
		}
	}
	prepared := map[string][]byte{}
	n = d.Len(1<<16, 2)
	for range n {
		id := d.String()
		p := d.Bytes8()
		if len(p) == 0 {
			p = nil // what Prepare returned: nothing to publish
		}
		prepared[id] = p
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	if d.Remaining() != 0 {
		return nil, fmt.Errorf("%d bytes after the state", d.Remaining())
	}
	return prepared, nil
}

// fields lists the counters in a fixed order, for checkpoints.
func (c *Counters) fields() []*int64 {
	return []*int64{&c.In, &c.Quarantined, &c.Filtered, &c.OnTime, &c.LateAccepted, &c.TooLateDropped,
		&c.TooLateSideOutput, &c.Retractions, &c.RetractMissing, &c.RetractTooLate, &c.RowsEmitted, &c.FinalRows}
}

// snapshot writes the payload cache: its capacity, ring position and
// entries in ring order.
func (c *payloadCache) snapshot(e *state.Encoder) {
	e.Uint(uint64(len(c.ring)))
	e.Uint(uint64(c.next))
	for _, id := range c.ring {
		e.Fixed64(id)
		e.Bytes8(c.m[id])
	}
}

func (c *payloadCache) restore(d *state.Decoder) {
	n := d.Len(max(c.capacity, 0), 9)
	next := d.Len(max(n, 1), 0)
	c.ring, c.next, c.m = make([]uint64, 0, n), next, make(map[uint64][]byte, n)
	for range n {
		id := d.Fixed64()
		p := d.Bytes8()
		c.ring = append(c.ring, id)
		c.m[id] = append([]byte(nil), p...)
	}
}

// snapshot writes the version state, entities sorted by key.
func (o *orderStep) snapshot(e *state.Encoder, s *row.Schema) {
	e.Int(o.nextSweep)
	keys := slices.Collect(maps.Keys(o.state))
	sort.Strings(keys)
	e.Uint(uint64(len(keys)))
	for _, k := range keys {
		v := o.state[k]
		e.String(k)
		e.Int(v.v)
		e.Int(v.ts)
		for _, f := range s.Fields {
			e.Value(v.row.Get(f))
		}
		m := &v.meta
		e.Int(int64(m.Partition))
		e.Int(m.Arrival)
		e.String(m.Pos.Source)
		e.String(m.Pos.Partition)
		e.Int(m.Pos.Line)
		e.Int(m.Pos.Offset)
		e.Bytes8(m.Raw)
		e.Bool(m.Redelivery)
	}
}

func (o *orderStep) restore(d *state.Decoder, s *row.Schema) {
	o.nextSweep = d.Int()
	n := d.Len(1<<31-1, 4)
	o.state = make(map[string]*version, n)
	for range n {
		if d.Err() != nil {
			return
		}
		k := d.String()
		v := &version{v: d.Int(), ts: d.Int(), row: *s.NewRow()}
		for _, f := range s.Fields {
			val := d.Value()
			if d.Err() != nil {
				return
			}
			if err := v.row.Set(f, val); err != nil {
				d.Fail("entity %q field %s: %v", k, f.Name, err)
				return
			}
		}
		m := &v.meta
		m.Partition = int(d.Int())
		m.Arrival = d.Int()
		m.Pos.Source = d.String()
		m.Pos.Partition = d.String()
		m.Pos.Line = d.Int()
		m.Pos.Offset = d.Int()
		m.Raw = append([]byte(nil), d.Bytes8()...)
		m.Redelivery = d.Bool()
		o.state[k] = v
	}
}
