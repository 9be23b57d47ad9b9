package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/task"
	"github.com/tidemark/tidemark/watermark"
)

// PartRouter is the router of one source partition whose records its
// caller hands over instead of a source's Next: the direct runner's
// per-record path (router.go: processing time, quarantine, contract,
// watermark, routing) behind the few methods a group run's source task
// (package engine/group, task.go) drives, so that the group code reads
// none of the runtime's fields. Every item goes to another task (remote);
// the router's markers go to marker.
type PartRouter struct{ rt *runtime }

// NewPartRouter returns the router of the input partition name ("topic/N")
// of p over the graph g: json renders a record as JSON (the source's
// EventJSON), w takes the router's outputs (quarantine records, select
// stages' rows), remote takes each item for the task owning it, marker
// each watermark advance and early firing. Errors: the event-time field is
// not in the source schema; the reference data does not load (a
// *ConfigError).
func NewPartRouter(p *plan.Plan, g *task.Graph, opts Options, name string, json func([]byte, *source.Meta) []byte,
	w task.Writer, remote func(owner, node int, pk *task.Packet, it *task.Item), marker func(task.Marker)) (*PartRouter, error) {
	rt := &runtime{plan: p, opts: opts, src: &partSource{names: []string{name}, json: json}, g: g}
	rt.env = Env{Stdout: opts.Stdout, Pipeline: p.Spec.Name}
	rt.wm = watermark.None
	rt.initRouter()
	f, ok := p.SourceSchema.Lookup(p.EventTimeField)
	if !ok {
		return nil, fmt.Errorf("event-time field %q missing from the source schema", p.EventTimeField)
	}
	rt.etField = f
	rt.ptField = processingField(p)
	rt.present = make([]bool, p.SourceSchema.Len())
	rt.absent = len(rt.present)
	if r := p.Spec.Reference; r != nil {
		ref, err := rt.loadReference(r)
		if err != nil {
			return nil, &ConfigError{Err: err}
		}
		rt.ref = ref
	}
	rt.early = make([]*operator.EarlySchedule, len(p.Stages)) // keyed tasks fire early on their own clocks
	rt.rcnt = task.NewCounters(len(p.Stages))
	rt.rlog = &task.Log{W: w}
	rt.rsnd = task.NewSender(g, rt.rlog, &rt.rcnt)
	rt.rsnd.SetDirect(func(int, *task.Packet, *task.Item) error {
		return errors.New("internal: a source task pushed an item to itself")
	})
	rt.rsnd.SetRemote(-1, remote)
	rt.groupMarker = marker
	rt.rsnd.SetWatermark(rt.wm)
	return &PartRouter{rt: rt}, nil
}

// RouteBatch checks, times and routes every record of b (Meta.Partition
// 0; records without an arrival time take Options.Clock's).
func (r *PartRouter) RouteBatch(b *source.Batch) error { return r.rt.routeBatch(b, true) }

// Tick advances processing time to now (ms since the epoch) without
// records: idleness, early firings.
func (r *PartRouter) Tick(now int64) error {
	r.rt.tick(now)
	return r.rt.pushErr
}

// End advances the watermark to +∞: the partition ended.
func (r *PartRouter) End() { r.rt.advance(watermark.Infinity) }

// Watermark is the partition's watermark (ms; watermark.None before its
// first record).
func (r *PartRouter) Watermark() int64 { return r.rt.tracker.Current() }

// Partition returns the tracker's state of the partition (max event
// time, last arrival, idleness); false before the tracker knows it.
func (r *PartRouter) Partition() (watermark.Partition, bool) {
	if ps := r.rt.tracker.Partitions(); len(ps) > 0 {
		return ps[0], true
	}
	return watermark.Partition{}, false
}

// Counters are the router's record counters (quarantined, filtered, …).
func (r *PartRouter) Counters() *task.Counters { return &r.rt.rcnt }

// Read returns the records read and, of them, the redeliveries.
func (r *PartRouter) Read() (events, redeliveries int64) { return r.rt.events, r.rt.redeliver }

// AppendState writes the router's state (the counters apart, see
// counters): Bytes8(tracker) Int(now) Int(router watermark)
// Uint(partitions) Int(events) Int(redelivered) Uint(step).
func (r *PartRouter) AppendState(e *state.Encoder) {
	rt := r.rt
	var te state.Encoder
	rt.tracker.Snapshot(&te)
	e.Bytes8(te.Bytes())
	e.Int(rt.now)
	e.Int(rt.wm)
	e.Uint(uint64(rt.parts))
	e.Int(rt.events)
	e.Int(rt.redeliver)
	e.Uint(rt.step)
}

// RestoreState reads what appendState wrote; errors are d's (sticky) or
// the tracker's.
func (r *PartRouter) RestoreState(d *state.Decoder) error {
	rt := r.rt
	tb := d.Bytes8()
	if d.Err() == nil {
		if err := rt.tracker.RestoreState(state.NewDecoder(tb)); err != nil {
			return err
		}
	}
	rt.now, rt.wm = d.Int(), d.Int()
	rt.parts = d.Len(1, 0)
	rt.events, rt.redeliver = d.Int(), d.Int()
	rt.step = d.Uint()
	rt.rsnd.SetWatermark(rt.wm)
	return d.Err()
}

// partSource is the source.Source a source task's router sees: one
// partition, whose records the host hands over.
type partSource struct {
	names []string
	json  func(dst []byte, m *source.Meta) []byte
}

func (p *partSource) Next(context.Context, *source.Batch, int) (source.Status, error) {
	return source.More, errors.New("internal: a group task's source is fed, not read")
}

func (p *partSource) Partitions() []string { return p.names }

func (p *partSource) EventJSON(dst []byte, m *source.Meta) []byte { return p.json(dst, m) }

func (p *partSource) Close() error { return nil }
