package group

import (
	"github.com/tidemark/tidemark/engine"

	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/task"
)

// An in-memory model of a group run (docs/scale-out.md) for the tests of
// the group's tasks without Kafka: partitions as logs whose records a
// transaction makes visible when it commits, the consumer group's
// committed offsets with their metadata, instances that hold partitions,
// process their records in a seeded random order, commit, lose and gain
// partitions (a rebalance aborts the transaction of every instance that
// loses one, as franz-go's GroupTransactSession does) and crash.

// memStore is a checkpoint.TaskStore in memory.
type memStore struct {
	mu   sync.Mutex
	objs map[string]map[string][]byte
}

func newMemStore() *memStore { return &memStore{objs: map[string]map[string][]byte{}} }

func (s *memStore) Put(_ context.Context, t, name string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.objs[t] == nil {
		s.objs[t] = map[string][]byte{}
	}
	if _, ok := s.objs[t][name]; ok {
		return fmt.Errorf("%s/%s: %w", t, name, os.ErrExist)
	}
	s.objs[t][name] = slices.Clone(data)
	return nil
}

func (s *memStore) Get(_ context.Context, t, name string, off, n int64) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.objs[t][name]
	if !ok {
		return nil, fmt.Errorf("%s/%s: %w", t, name, os.ErrNotExist)
	}
	if n < 0 {
		n = int64(len(b)) - off
	}
	if off+n > int64(len(b)) {
		return nil, io.ErrUnexpectedEOF
	}
	return slices.Clone(b[off : off+n]), nil
}

func (s *memStore) List(_ context.Context, t string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.objs[t] {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

func (s *memStore) Delete(_ context.Context, t string, names ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		delete(s.objs[t], n)
	}
	return nil
}

func (s *memStore) Close() error { return nil }

var _ checkpoint.TaskStore = (*memStore)(nil)

// memLog is a partition: its committed records, and the group's
// committed offset and metadata.
type memLog struct {
	recs      [][]byte
	committed int
	meta      string
}

// memGroup is the broker, the group and the sinks' committed output.
type memGroup struct {
	inputs []*memLog // JSON lines
	repart []*memLog
	store  *memStore
	// out is the committed output of every sink, in commit order: "stage|op|window|key|values|version|final" and side records.
	out []string
	gen int64
	// deltas counts the delta sections written.
	deltas int
}

// memInst is one instance of the model.
type memInst struct {
	grp *memGroup
	in  *instance
	pos map[taskKey]int // fetch positions
	txn struct {
		repart map[int][][]byte
		out    []string
	}
	name string
	dec  *format.JSON
	// restores counts tasks started from a checkpoint; aborts aborted
	// transactions.
	restores, aborts int
}

func (m *memInst) Repartition(q int, value []byte) {
	m.txn.repart[q] = append(m.txn.repart[q], slices.Clone(value))
}

func (m *memInst) Store() checkpoint.TaskStore { return m.grp.store }

func (m *memInst) Writer(key taskKey) (groupWriter, error) { return &memWriter{m: m, g: m.in.g}, nil }

// memWriter renders outputs into the instance's transaction.
type memWriter struct {
	m *memInst
	g *task.Graph
}

func (w *memWriter) WriteRows(out task.Output, rows []changelog.Row) error {
	si := out.Stage()
	st := w.g.Plan.Stages[si]
	for i := range rows {
		r := &rows[i]
		w.m.txn.out = append(w.m.txn.out, fmt.Sprintf("%s|%d|%s|%v|%v|%d|%v", st.Name, r.WindowStart, r.Op, r.Key, r.Values, r.Version, r.IsFinal))
	}
	return nil
}

func (w *memWriter) WriteRecord(out task.Output, rec []byte) error {
	w.m.txn.out = append(w.m.txn.out, fmt.Sprintf("record %d %s", out, rec))
	return nil
}

func (w *memWriter) WriteLedger(*task.LedgerEvent)                  {}
func (w *memWriter) Prepare(context.Context, int64) ([]byte, error) { return nil, nil }
func (w *memWriter) Commit(context.Context, int64, []byte) error    { return nil }
func (w *memWriter) Recover(context.Context, int64, []byte) error   { return nil }
func (w *memWriter) Close(context.Context) error                    { return nil }

func (m *memInst) resetTxn() {
	m.txn.repart = map[int][][]byte{}
	m.txn.out = nil
}

// abort drops the transaction and every task's state since its last
// commit: the instance restarts its tasks from the committed offsets.
func (m *memInst) abort(t testing.TB, keys []taskKey) {
	ctx := context.Background()
	m.aborts++
	m.resetTxn()
	m.in.dropAll(ctx)
	m.pos = map[taskKey]int{}
	for _, k := range keys {
		m.own(t, k)
	}
}

// own starts task k from its partition's committed offset and metadata.
func (m *memInst) own(t testing.TB, k taskKey) {
	l := m.grp.log(k)
	if l.meta != "" {
		m.restores++
	}
	if err := m.in.add(context.Background(), k, l.meta); err != nil {
		t.Fatalf("%s: starting %s: %v", m.name, k, err)
	}
	m.pos[k] = l.committed
}

func (g *memGroup) log(k taskKey) *memLog {
	if k.keyed {
		return g.repart[k.index]
	}
	return g.inputs[k.index]
}

// step processes up to n records of task k.
func (m *memInst) step(t testing.TB, k taskKey, n int) {
	l := m.grp.log(k)
	e := m.in.tasks[k]
	p := m.pos[k]
	end := min(p+n, len(l.recs))
	if k.keyed {
		for ; p < end; p++ {
			if err := e.kt.record(l.recs[p]); err != nil {
				t.Fatalf("%s: %s record %d: %v", m.name, k, p, err)
			}
		}
		m.pos[k] = p
		return
	}
	var b source.Batch
	for i := p; i < end; i++ {
		r, meta := b.Next(m.in.plan.SourceSchema)
		meta.Pos = changelog.Position{Source: "in", Partition: fmt.Sprint(k.index), Offset: int64(i)}
		meta.Raw = l.recs[i]
		meta.Arrival = source.NoArrival
		meta.Err = m.dec.Decode(l.recs[i], r, b.Arena())
	}
	if err := e.src.records(&b, int64(end)); err != nil {
		t.Fatalf("%s: %s: %v", m.name, k, err)
	}
	m.pos[k] = end
	if end == len(l.recs) && e.src.stop >= 0 {
		if err := e.src.end(); err != nil {
			t.Fatal(err)
		}
	}
}

// commit commits the instance's transaction: checkpoints, records,
// outputs and offsets together.
func (m *memInst) commit(t testing.TB) {
	ctx := context.Background()
	m.grp.gen++
	gen := m.grp.gen
	metas, err := m.in.checkpoint(ctx, gen)
	if err != nil {
		t.Fatalf("%s: checkpoint: %v", m.name, err)
	}
	m.grp.deltas += m.in.lastDeltas
	for q, recs := range m.txn.repart {
		m.grp.repart[q].recs = append(m.grp.repart[q].recs, recs...)
	}
	m.grp.out = append(m.grp.out, m.txn.out...)
	for k, name := range metas {
		l := m.grp.log(k)
		l.committed, l.meta = m.pos[k], name
	}
	m.resetTxn()
	if err := m.in.committed(ctx, gen); err != nil {
		t.Fatal(err)
	}
}

// groupPipeline: dedup, a tumbling window per store (allowed lateness
// lateness) and a second stage of totals per window reading it.
func groupPipeline(lateness time.Duration) *spec.Pipeline {
	p := &spec.Pipeline{
		Name:      "grp",
		KeyGroups: 16,
		Source: spec.Source{Type: "file", Path: "unused.jsonl", Format: "jsonl",
			Schema: spec.FieldTypes{{Name: "amount", Type: "int"}}},
		EventTime:  spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(5 * time.Second)},
		Dedup:      &spec.Dedup{Key: "id", TTL: spec.Duration(time.Hour)},
		Quarantine: spec.Quarantine{Sink: &spec.Sink{Type: "jsonl", Path: "q.jsonl"}},
		Conflicts:  spec.Quarantine{Sink: &spec.Sink{Type: "jsonl", Path: "c.jsonl"}},
		Stages: []spec.Stage{{
			Name: "per_store", Key: []string{"store"}, Window: spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
			AllowedLateness: spec.Duration(lateness),
			Aggregates:      spec.NamedExprs{{Name: "n", Expr: "count()"}, {Name: "total", Expr: "sum(amount)"}},
			Emit:            spec.Emit{Mode: "retract"},
			Late:            spec.Late{Policy: "side_output", Sink: &spec.Sink{Type: "jsonl", Path: "late.jsonl"}},
			Sinks:           []spec.Sink{{Type: "jsonl", Path: "a.jsonl"}},
		}, {
			Name: "per_minute", Input: "per_store", Fields: spec.NamedExprs{{Name: "w", Expr: "window_start"}}, Key: []string{"w"},
			Window:          spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
			AllowedLateness: spec.Duration(lateness),
			Aggregates:      spec.NamedExprs{{Name: "stores", Expr: "count()"}, {Name: "total", Expr: "sum(total)"}},
			Emit:            spec.Emit{Mode: "update"},
			Sinks:           []spec.Sink{{Type: "jsonl", Path: "b.jsonl"}},
		}},
	}
	return p
}

// groupInput makes n events over parts partitions: stores s0..s9, event
// times out of order by up to 20 s (one in ten by 30 s to 2 min), a redelivery (same id and payload) of
// every 13th event on another partition.
func groupInput(rng *rand.Rand, n, parts int, inOrder bool) [][][]byte {
	out := make([][][]byte, parts)
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	for i := range n {
		delay := rng.IntN(20_000)
		if rng.IntN(10) == 0 {
			delay = 30_000 + rng.IntN(90_000) // a straggler
		}
		if inOrder {
			delay = 0
		}
		ts := base.Add(time.Duration(i)*500*time.Millisecond - time.Duration(delay)*time.Millisecond)
		line := fmt.Sprintf(`{"id":"e%d","ts":"%s","store":"s%d","amount":%d}`, i, ts.Format(time.RFC3339Nano), rng.IntN(10), 1+rng.IntN(100))
		p := rng.IntN(parts)
		out[p] = append(out[p], []byte(line))
		if i%13 == 0 {
			q := (p + 1 + rng.IntN(parts-1)) % parts
			out[q] = append(out[q], []byte(line))
		}
	}
	return out
}

// groupFinal returns the last row of every (stage, window, key) in an
// output stream, without the version, and checks that versions only grow.
func groupFinal(t testing.TB, out []string) (map[string]string, []string) {
	last := map[string]string{}
	ver := map[string]int{}
	var records []string
	for _, l := range out {
		if strings.HasPrefix(l, "record ") {
			records = append(records, l)
			continue
		}
		f := strings.Split(l, "|")
		k := strings.Join(f[:2], "|") + "|" + f[3]
		var v int
		fmt.Sscan(f[5], &v)
		if f[2] == "update_before" || f[2] == "delete" {
			continue
		}
		if v <= ver[k] {
			t.Fatalf("version %d of %s after version %d", v, k, ver[k])
		}
		ver[k] = v
		last[k] = f[4] + " final=" + f[6]
	}
	sort.Strings(records)
	return last, records
}

// TestGroupModelMatchesOneProcess: the model of a group run — 3 input
// partitions, 4 repartition partitions, instances that process their
// partitions in a seeded random order, commit at random points, lose and
// gain partitions and crash — gives, with an allowed lateness that covers
// every delay, the final rows of a single-process run over the same
// events, with versions that only grow, the same quarantine records and
// every duplicate caught across partitions.
func TestGroupModelMatchesOneProcess(t *testing.T) {
	var st modelStats
	for seed := range uint64(12) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { groupModel(t, seed, time.Hour, &st) })
	}
	if st.restores < 20 || st.aborts < 10 || st.deltas == 0 {
		t.Fatalf("the model restored %d tasks from checkpoints, aborted %d transactions and wrote %d delta sections: too few to test handover", st.restores, st.aborts, st.deltas)
	}
	t.Logf("%d restores, %d aborted transactions, %d delta sections", st.restores, st.aborts, st.deltas)
}

// TestGroupModelCountsEveryEventOnce: with no allowed lateness the
// outputs depend on the order the tasks run in, but every distinct event
// is counted exactly once: the money in the final rows of the first stage
// plus the money in its late records is the money of the distinct events.
func TestGroupModelCountsEveryEventOnce(t *testing.T) {
	var st modelStats
	for seed := range uint64(12) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { groupModel(t, seed, 0, &st) })
	}
	if st.late == 0 {
		t.Fatal("no event was late: the test does not test lateness")
	}
}

// TestGroupModelInOrderNothingLate: when every partition's events are in
// order, no event is late at any stage, however the tasks interleave —
// the watermark is the minimum over every partition, and none before each
// has reported — and the final rows are one process's, with no allowed
// lateness at all.
func TestGroupModelInOrderNothingLate(t *testing.T) {
	var st modelStats
	st.inOrder = true
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { groupModel(t, seed, 0, &st) })
	}
	if st.late != 0 {
		t.Fatalf("%d events were late", st.late)
	}
}

type modelStats struct {
	restores, aborts, deltas, late int
	inOrder                        bool
}

func groupModel(t *testing.T, seed uint64, lateness time.Duration, stats *modelStats) {
	rng := rand.New(rand.NewPCG(seed, 99))
	const parts, P = 3, 4
	input := groupInput(rng, 600, parts, stats.inOrder)

	// The single-process reference over the partitions' lines, with the
	// partition as partition_field.
	dir := t.TempDir()
	wantRows := groupReference(t, dir, input, lateness)

	pl := compilePipeline(t, groupPipeline(lateness))
	g, err := task.NewGraph(pl, P)
	if err != nil {
		t.Fatal(err)
	}
	g.Incremental = true
	g.HasQuarantine, g.HasConflicts = true, true
	for si := range pl.Stages {
		g.HasSinks[si] = true
	}
	g.HasLate[0] = true
	jsonDec := func(dst []byte, m *source.Meta) []byte { return append(dst, m.Raw...) }
	g.EventJSON = jsonDec
	grp := &memGroup{store: newMemStore()}
	for _, lines := range input {
		grp.inputs = append(grp.inputs, &memLog{recs: lines})
	}
	for range P {
		grp.repart = append(grp.repart, &memLog{})
	}
	names := []string{"in/0", "in/1", "in/2"}
	var clock int64 = time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	opts := engine.Options{Clock: func() int64 { return clock }}
	newInst := func(name string) *memInst {
		m := &memInst{grp: grp, name: name, pos: map[taskKey]int{},
			dec: format.NewJSON(format.Fields{Schema: pl.SourceSchema, Time: pl.TimeParsers})}
		m.in = &instance{plan: pl, g: g, opts: opts, host: m, inputs: names, json: jsonDec, tasks: map[taskKey]*groupEntry{}, writer: name,
			stops: func(i int) int64 { return int64(len(grp.inputs[i].recs)) }}
		m.resetTxn()
		return m
	}
	var keys []taskKey
	for i := range parts {
		keys = append(keys, taskKey{index: i})
	}
	for q := range P {
		keys = append(keys, taskKey{keyed: true, index: q})
	}
	insts := []*memInst{newInst("a"), newInst("b"), newInst("c")}
	owner := map[taskKey]*memInst{}
	assign := func() {
		// A rebalance: every instance losing a partition aborts its
		// transaction (its other tasks restart from their commits).
		next := map[taskKey]*memInst{}
		for _, k := range keys {
			next[k] = insts[rng.IntN(len(insts))]
		}
		for _, m := range insts {
			var kept []taskKey
			lost := false
			for _, k := range keys {
				if owner[k] == m {
					if next[k] == m {
						kept = append(kept, k)
					} else {
						lost = true
					}
				}
			}
			if lost {
				m.abort(t, kept)
			}
		}
		for _, k := range keys {
			if owner[k] != next[k] {
				owner[k] = next[k]
				next[k].own(t, k)
			}
		}
	}
	assign()
	pending := func(k taskKey) bool { return owner[k].pos[k] < len(grp.log(k).recs) }
	for round := 0; ; round++ {
		if round > 200_000 {
			t.Fatal("the model does not finish")
		}
		clock += 50
		var busy []taskKey
		for _, k := range keys {
			if pending(k) {
				busy = append(busy, k)
			}
		}
		if len(busy) == 0 {
			// Nothing to read: commit everything; done when nothing new
			// became visible.
			before := 0
			for _, l := range grp.repart {
				before += len(l.recs)
			}
			for _, m := range insts {
				m.commit(t)
			}
			after, idle := 0, true
			for _, l := range grp.repart {
				after += len(l.recs)
			}
			for _, k := range keys {
				idle = idle && !pending(k)
			}
			if after == before && idle {
				break
			}
			continue
		}
		k := busy[rng.IntN(len(busy))]
		owner[k].step(t, k, 1+rng.IntN(40))
		switch r := rng.IntN(100); {
		case r < 10:
			owner[k].commit(t)
		case r < 12:
			assign()
		case r < 13:
			// A crash: the instance's transaction and state are lost; it
			// comes back with the same partitions.
			m := insts[rng.IntN(len(insts))]
			var mine []taskKey
			for _, kk := range keys {
				if owner[kk] == m {
					mine = append(mine, kk)
				}
			}
			m.abort(t, mine)
		}
		for _, m := range insts {
			for _, e := range m.in.sortedTasks() {
				if e.kt != nil {
					if err := e.kt.tick(clock); err != nil {
						t.Fatal(err)
					}
				} else if err := e.src.tick(clock); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	gotRows, records := groupFinal(t, grp.out)
	for _, m := range insts {
		stats.restores += m.restores
		stats.aborts += m.aborts
	}
	stats.deltas += grp.deltas
	if lateness == 0 {
		// Conservation: final per_store totals + late amounts = the
		// distinct events' amounts.
		want := 0
		seen := map[string]bool{}
		for _, lines := range input {
			for _, l := range lines {
				var id string
				var amount int
				fmt.Sscanf(strings.SplitN(string(l), `"id":"`, 2)[1], "%s", &id)
				id = strings.SplitN(id, `"`, 2)[0]
				fmt.Sscanf(strings.SplitN(string(l), `"amount":`, 2)[1], "%d", &amount)
				if !seen[id] {
					seen[id] = true
					want += amount
				}
			}
		}
		got := 0
		for k, v := range gotRows {
			if strings.HasPrefix(k, "per_store|") {
				var n, total int
				fmt.Sscanf(v, "[%d %d]", &n, &total)
				got += total
			}
		}
		late := 0
		for _, r := range records {
			if strings.HasPrefix(r, fmt.Sprintf("record %d ", task.LateOf(0))) {
				var amount int
				fmt.Sscanf(strings.SplitN(r, `"amount":`, 2)[1], "%d", &amount)
				late += amount
				stats.late++
			}
		}
		if got+late != want {
			t.Fatalf("final rows hold %d and late records %d: %d, want %d", got, late, got+late, want)
		}
		if !stats.inOrder {
			return
		}
	}
	keysWant := sortedKeys(wantRows)
	slices.Reverse(keysWant) // per_store before per_minute
	for _, k := range keysWant {
		v := wantRows[k]
		if gotRows[k] != v {
			t.Fatalf("%s: %s in the group, %s in one process", k, gotRows[k], v)
		}
	}
	for k := range gotRows {
		if _, ok := wantRows[k]; !ok {
			t.Fatalf("%s: %s only in the group", k, gotRows[k])
		}
	}
	for _, m := range insts {
		for _, e := range m.in.tasks {
			if e.kt != nil && !e.kt.done() {
				t.Fatalf("keyed task %d did not reach the end: %v", e.key.index, e.kt.wm)
			}
		}
	}
}

// runCapture runs p in one process and returns its result rows in the
// model's format.
func runCapture(t *testing.T, p *spec.Pipeline) []string {
	t.Helper()
	var lines []string
	var mu sync.Mutex
	// The sinks are captured, but their paths are still locked: keep them
	// out of the package directory.
	dir := t.TempDir()
	move := func(s *spec.Sink) {
		if s != nil && s.Path != "" {
			s.Path = filepath.Join(dir, filepath.Base(s.Path))
		}
	}
	move(p.Quarantine.Sink)
	move(p.Conflicts.Sink)
	for i := range p.Stages {
		for j := range p.Stages[i].Sinks {
			move(&p.Stages[i].Sinks[j])
		}
		move(p.Stages[i].Late.Sink)
	}
	pl := compilePipeline(t, p)
	reg := engine.DefaultRegistry()
	reg.Results["jsonl"] = func(_ context.Context, _ spec.Sink, d changelog.Desc, _ *engine.Env) (sink.Results, error) {
		return &captureRows{d: d, lines: &lines, mu: &mu}, nil
	}
	reg.Records["jsonl"] = func(context.Context, spec.Sink, *engine.Env) (sink.Records, error) { return discardRecords{}, nil }
	start := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	if _, err := engine.Run(context.Background(), pl, engine.Options{Registry: reg, Parallelism: 1, Clock: func() int64 { return start }}); err != nil {
		t.Fatal(err)
	}
	return lines
}

// captureRows renders result rows as the model's memWriter does.
type captureRows struct {
	d     changelog.Desc
	lines *[]string
	mu    *sync.Mutex
}

func (c *captureRows) Write(_ context.Context, rows []changelog.Row) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range rows {
		r := &rows[i]
		*c.lines = append(*c.lines, fmt.Sprintf("%s|%d|%s|%v|%v|%d|%v", c.d.Stage, r.WindowStart, r.Op, r.Key, r.Values, r.Version, r.IsFinal))
	}
	return nil
}
func (c *captureRows) Flush(context.Context) error { return nil }
func (c *captureRows) Close(context.Context) error { return nil }

type discardRecords struct{}

func (discardRecords) WriteRecord(context.Context, []byte) error { return nil }
func (discardRecords) Flush(context.Context) error               { return nil }
func (discardRecords) Close(context.Context) error               { return nil }
