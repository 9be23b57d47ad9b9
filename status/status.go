// Package status serves a running pipeline's status page: GET /status is a
// JSON document, GET / the same as HTML with an inline SVG chart of each
// source partition's watermark against processing time (no scripts, no
// CDN). It reads the runner's snapshots (engine.Live, fed to Update) and
// the SLO evaluator; the page states the pipeline's four contracts
// (source, time, state, sink) in words, from its spec.
package status

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/slo"
	"github.com/tidemark/tidemark/spec"
)

// HistoryLen is how many snapshots the chart keeps (about 10 minutes at
// one a second).
const HistoryLen = 600

// Page is a pipeline's status. It is safe for concurrent use.
type Page struct {
	mu      sync.Mutex
	p       *spec.Pipeline
	slo     *slo.Evaluator
	last    *engine.Live
	history []point // oldest first, at most HistoryLen
}

// point is one snapshot in the chart's history.
type point struct {
	processing int64   // ms
	watermark  int64   // ms, pipeline
	parts      []int64 // ms, per partition (index order)
}

// New returns the page of pipeline p; ev may be nil (no objectives).
func New(p *spec.Pipeline, ev *slo.Evaluator) *Page {
	return &Page{p: p, slo: ev}
}

// Update records a snapshot (an engine.Options.Live consumer).
func (pg *Page) Update(l *engine.Live) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	pg.last = l
	pt := point{processing: l.ProcessingTime, watermark: l.Watermark}
	for _, p := range l.Partitions {
		pt.parts = append(pt.parts, p.Watermark)
	}
	if len(pg.history) == HistoryLen {
		copy(pg.history, pg.history[1:])
		pg.history = pg.history[:HistoryLen-1]
	}
	pg.history = append(pg.history, pt)
}

// Doc is the /status document.
type Doc struct {
	Pipeline string `json:"pipeline"`
	// Contracts are the four contracts of DESIGN.md in words.
	Contracts Contracts `json:"contracts"`
	// Snapshot is when the numbers were taken (RFC 3339), "" before any.
	Snapshot string `json:"snapshot"`
	Ended    bool   `json:"ended"`
	// ProcessingTime and Watermark are RFC 3339 (UTC); Watermark is "none"
	// before any and "+inf" after a bounded input.
	ProcessingTime      string      `json:"processing_time"`
	Watermark           string      `json:"watermark"`
	EventTimeLagSeconds *float64    `json:"event_time_lag_seconds"` // null without a finite watermark
	Partitions          []Partition `json:"partitions"`
	// Waiting lists the services the source's records wait on (a schema
	// registry that cannot be reached); empty while records flow.
	Waiting []Waiting `json:"waiting"`
	Records Records   `json:"records"`
	// LateRatio is (late accepted + too late) / valid records at the
	// stages; null before any.
	LateRatio   *float64    `json:"late_ratio"`
	Checkpoints Checkpoints `json:"checkpoints"`
	// State is the disk backend's stores (docs/state.md); absent on the
	// memory backend.
	State *State `json:"state,omitempty"`
	SLO   []SLO  `json:"slo"`
	// Group is the instance of a group run (docs/scale-out.md): the tasks
	// it holds; absent otherwise.
	Group *Group `json:"group,omitempty"`
}

// Waiting is a service the source's records wait on (engine.Live.Waits).
type Waiting struct {
	Service string `json:"service"`
	// Since is when the wait began (RFC 3339), Seconds how long it has
	// lasted at the snapshot.
	Since   string  `json:"since"`
	Seconds float64 `json:"seconds"`
	// Attempts counts the failed requests, LastError the last failure.
	Attempts  int    `json:"failed_attempts"`
	LastError string `json:"last_error"`
	// Records says which records wait.
	Records string `json:"records"`
	// LimitSeconds is the wait after which the run fails
	// (source.schema_registry.max_wait).
	LimitSeconds float64 `json:"limit_seconds"`
}

// Group is an instance of a group run.
type Group struct {
	Group      string `json:"group"`
	Instance   string `json:"instance"`
	Topic      string `json:"repartition_topic"`
	Partitions int    `json:"repartition_partitions"`
	// Sources are the input partitions it holds, Keyed the repartition
	// partitions.
	Sources    []GroupSource `json:"sources"`
	Keyed      []GroupKeyed  `json:"keyed"`
	Commits    int           `json:"commits"`
	Aborts     int           `json:"aborts"`
	Rebalances int           `json:"rebalances"`
	Restores   int           `json:"restores"`
}

// GroupSource is a source task.
type GroupSource struct {
	Partition string `json:"partition"`
	Watermark string `json:"watermark"`
	Idle      bool   `json:"idle"`
	Records   int64  `json:"records"`
	Lag       *int64 `json:"lag"`
	Done      bool   `json:"done"`
}

// GroupKeyed is a keyed task; Nodes its nodes' watermarks ("dedup:
// 2026-…", a stage's name: …).
type GroupKeyed struct {
	Partition int      `json:"partition"`
	Lag       *int64   `json:"lag"`
	Nodes     []string `json:"nodes"`
	Done      bool     `json:"done"`
}

// Contracts states the four contracts.
type Contracts struct {
	Source string `json:"source"`
	Time   string `json:"time"`
	State  string `json:"state"`
	Sink   string `json:"sink"`
}

// Partition is one source partition.
type Partition struct {
	Name                string   `json:"name"`
	Watermark           string   `json:"watermark"`
	EventTimeLagSeconds *float64 `json:"event_time_lag_seconds"`
	Idle                bool     `json:"idle"`
	Records             int64    `json:"records"`
	ConsumerLag         *int64   `json:"consumer_lag"` // null when the source has none
}

// Records counts record fates over the run.
type Records struct {
	Read int64 `json:"read"`
	// Quarantined is every quarantined record: before the stages and in
	// each stage (QuarantinedByStage splits it).
	Quarantined int64 `json:"quarantined"`
	// QuarantinedByStage splits Quarantined as the metric
	// tidemark_records_quarantined_total does: first stage "source" (the
	// records invalid before the stages: decode, event time, contract
	// rules, dedup and order_by keys), then each stage in order (its
	// filter, derived fields or aggregates failed).
	QuarantinedByStage []StageCount `json:"quarantined_by_stage"`
	Duplicates         int64        `json:"duplicates"`
	Conflicts          int64        `json:"conflicts"`
	// Filtered counts the valid records the stages' filters dropped (the
	// sum of tidemark_records_filtered_total).
	Filtered     int64 `json:"filtered"`
	OnTime       int64 `json:"on_time"`
	LateAccepted int64 `json:"late_accepted"`
	TooLate      int64 `json:"too_late"`
	RowsEmitted  int64 `json:"rows_emitted"`
}

// SourceStage names what happens before the stages in QuarantinedByStage:
// "source", the stage label of metrics.SourceStage (no stage can be named
// so).
const SourceStage = "source"

// StageCount is a count of records at one stage, or at SourceStage (before
// the stages).
type StageCount struct {
	Stage   string `json:"stage"`
	Records int64  `json:"records"`
}

// State reports the disk backend's stores.
type State struct {
	DiskBytes     int64 `json:"disk_bytes"`
	MemTableBytes int64 `json:"memtable_bytes"`
	CacheBytes    int64 `json:"cache_bytes"`
	HotBudget     int64 `json:"hot_budget_bytes"`
	// CacheHitRate is hits / lookups of the block cache; null before any.
	CacheHitRate      *float64 `json:"cache_hit_rate"`
	FlushSeconds      float64  `json:"flush_seconds"`
	CompactionSeconds float64  `json:"compaction_seconds"`
	Files             int64    `json:"files"`
}

// Checkpoints reports the last checkpoint.
type Checkpoints struct {
	Enabled         bool    `json:"enabled"`
	Taken           int     `json:"taken"`
	Failures        int     `json:"failures"`
	LastID          int64   `json:"last_id"`
	LastAt          string  `json:"last_at"`
	LastDurationSec float64 `json:"last_duration_seconds"`
	LastBytes       int     `json:"last_bytes"`
}

// SLO is one objective's state.
type SLO struct {
	Name   string   `json:"name"`
	Unit   string   `json:"unit"`
	Target float64  `json:"target"`
	Value  *float64 `json:"value"`
	Met    bool     `json:"met"`
	Text   string   `json:"text"`
}

func timeText(ms int64) string {
	switch ms {
	case changelog.WatermarkNone:
		return "none"
	case changelog.WatermarkInfinity:
		return "+inf"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

func lag(now, wm int64) *float64 {
	if wm == changelog.WatermarkNone || wm == changelog.WatermarkInfinity {
		return nil
	}
	v := float64(now-wm) / 1000
	return &v
}

// contracts states p's four contracts in words.
func contracts(p *spec.Pipeline) Contracts {
	var c Contracts
	src := p.Source
	switch src.Type {
	case "kafka":
		c.Source = fmt.Sprintf("Kafka topics %s, one watermark per partition; positions (offsets) live in the checkpoints", strings.Join(src.Topics, ", "))
		if p.Checkpoint == nil {
			start := src.Start
			if start == "" {
				start = "earliest"
			}
			c.Source = fmt.Sprintf("Kafka topics %s, one watermark per partition; positions (offsets) are not kept (no checkpoint): a restart reads from source.start (%s) again", strings.Join(src.Topics, ", "), start)
		}
	case "nexmark":
		c.Source = fmt.Sprintf("the Nexmark generator, %d events", src.Events)
	default:
		c.Source = fmt.Sprintf("files %s", src.Path)
		if src.Replay != nil {
			c.Source += fmt.Sprintf(", replayed late and shuffled over %d partitions", src.Replay.Partitions)
		}
	}
	if d := p.Dedup; d != nil {
		c.Source += fmt.Sprintf("; duplicates removed by event id %s for %s of event time, conflicting redeliveries to the conflict output", d.Key, time.Duration(d.TTL))
	} else {
		c.Source += "; no deduplication (every delivery counts)"
	}
	et := p.EventTime
	c.Time = fmt.Sprintf("event time is %s; the watermark waits %s for out-of-order events", et.Field, time.Duration(et.OutOfOrderness))
	if et.IdleTimeout > 0 {
		c.Time += fmt.Sprintf(", a partition silent for %s stops holding it back", time.Duration(et.IdleTimeout))
	}
	var late []string
	for _, st := range p.StageList() {
		pol := "dropped and counted"
		if st.Late.Policy == "side_output" {
			pol = "kept in the late side output"
		}
		late = append(late, fmt.Sprintf("%s: windows accept updates for %s after they fire, later events are %s", st.Name, time.Duration(st.AllowedLateness), pol))
	}
	c.Time += "; " + strings.Join(late, "; ")
	if ck := p.Checkpoint; ck != nil {
		c.State = fmt.Sprintf("windows, watermarks, dedup ids and versions live in memory and are snapshotted every %s to %s (the newest %d kept); a restart restores the newest complete one", time.Duration(ck.Interval), ck.Dir, ck.Retain)
	} else {
		c.State = "windows, watermarks and dedup ids live in memory only; a restart recomputes from the start of the input"
	}
	var sinks []string
	for _, st := range p.StageList() {
		for _, s := range st.Sinks {
			mode := "at least once"
			if p.Checkpoint != nil && s.Delivery != "at_least_once" {
				mode = "exactly once, published with each checkpoint"
			}
			what := s.Type
			switch s.Type {
			case "sqlite", "postgres":
				what += " table " + s.Table + " (upsert guarded by version: a replay rewrites the same versions)"
				if s.Mode == "ledger" {
					what = "postgres event ledger " + s.LedgerTable + " → " + s.Table + " (each event id applied once)"
				}
			case "jsonl":
				what += " changelog " + s.Path
			case "kafka":
				what += " topic " + s.Topic
			}
			sinks = append(sinks, fmt.Sprintf("%s → %s, %s", st.Name, what, mode))
		}
	}
	if len(sinks) == 0 {
		sinks = []string{"no sinks (the run only counts)"}
	}
	c.Sink = strings.Join(sinks, "; ")
	return c
}

// Doc builds the current document.
func (pg *Page) Doc() Doc {
	pg.mu.Lock()
	l := pg.last
	pg.mu.Unlock()
	d := Doc{Pipeline: pg.p.Name, Contracts: contracts(pg.p), Watermark: "none", Partitions: []Partition{}, Waiting: []Waiting{}, SLO: []SLO{},
		Records: Records{QuarantinedByStage: []StageCount{}}}
	if l != nil {
		d.Snapshot = l.At.UTC().Format(time.RFC3339Nano)
		d.Ended = l.Ended
		d.ProcessingTime = timeText(l.ProcessingTime)
		d.Watermark = timeText(l.Watermark)
		d.EventTimeLagSeconds = lag(l.ProcessingTime, l.Watermark)
		for _, p := range l.Partitions {
			pp := Partition{Name: p.Name, Watermark: timeText(p.Watermark), EventTimeLagSeconds: lag(l.ProcessingTime, p.Watermark), Idle: p.Idle, Records: p.Records}
			if p.ConsumerLag >= 0 {
				v := p.ConsumerLag
				pp.ConsumerLag = &v
			}
			d.Partitions = append(d.Partitions, pp)
		}
		for _, w := range l.Waits {
			d.Waiting = append(d.Waiting, Waiting{Service: w.Service, Since: w.Since.UTC().Format(time.RFC3339Nano),
				Seconds: max(l.At.Sub(w.Since).Seconds(), 0), Attempts: w.Attempts, LastError: w.Err, Records: w.Records,
				LimitSeconds: w.Limit.Seconds()})
		}
		r := &d.Records
		r.Read, r.Quarantined, r.Duplicates, r.Conflicts = l.EventsRead, l.Quarantined, l.Duplicates, l.Conflicts
		r.QuarantinedByStage = []StageCount{{SourceStage, l.Quarantined}}
		var valid int64
		for _, st := range l.Stages {
			r.Quarantined += st.Quarantined
			r.QuarantinedByStage = append(r.QuarantinedByStage, StageCount{st.Name, st.Quarantined})
			r.Filtered += st.Filtered
			r.OnTime += st.OnTime
			r.LateAccepted += st.LateAccepted
			r.TooLate += st.TooLateDropped + st.TooLateSideOutput
			r.RowsEmitted += st.RowsEmitted
			valid += st.OnTime + st.LateAccepted + st.TooLateDropped + st.TooLateSideOutput
		}
		if valid > 0 {
			v := float64(r.LateAccepted+r.TooLate) / float64(valid)
			d.LateRatio = &v
		}
		if g := l.Group; g != nil {
			dg := &Group{Group: g.Group, Instance: g.Instance, Topic: g.Topic, Partitions: g.Partitions, Commits: g.Commits,
				Aborts: g.Aborts, Rebalances: g.Rebalances, Restores: g.Restores, Sources: []GroupSource{}, Keyed: []GroupKeyed{}}
			lagOf := func(n int64) *int64 {
				if n < 0 {
					return nil
				}
				return &n
			}
			for _, st := range g.Sources {
				dg.Sources = append(dg.Sources, GroupSource{Partition: st.Partition, Watermark: timeText(st.Watermark), Idle: st.Idle,
					Records: st.Records, Lag: lagOf(st.Lag), Done: st.Done})
			}
			for _, kt := range g.Keyed {
				k := GroupKeyed{Partition: kt.Partition, Lag: lagOf(kt.Lag), Done: kt.Done}
				for _, n := range kt.Nodes {
					k.Nodes = append(k.Nodes, n.Name+": "+timeText(n.Watermark))
				}
				dg.Keyed = append(dg.Keyed, k)
			}
			d.Group = dg
		}
		if ds := l.DiskState; ds != nil {
			st := &State{DiskBytes: ds.DiskBytes, MemTableBytes: ds.MemTableBytes, CacheBytes: ds.CacheBytes, HotBudget: ds.HotBudget,
				FlushSeconds: ds.FlushTime.Seconds(), CompactionSeconds: ds.CompactionTime.Seconds(), Files: ds.Files}
			if n := ds.CacheHits + ds.CacheMisses; n > 0 {
				r := float64(ds.CacheHits) / float64(n)
				st.CacheHitRate = &r
			}
			d.State = st
		}
		ck := l.Checkpoints
		d.Checkpoints = Checkpoints{Enabled: ck.Enabled, Taken: ck.Taken, Failures: ck.Failures, LastID: ck.LastID,
			LastDurationSec: ck.LastDuration.Seconds(), LastBytes: ck.LastBytes}
		if !ck.LastAt.IsZero() {
			d.Checkpoints.LastAt = ck.LastAt.UTC().Format(time.RFC3339Nano)
		}
	}
	if pg.slo != nil {
		for _, s := range pg.slo.States() {
			o := SLO{Name: s.Name, Unit: s.Unit, Target: s.Target, Met: s.Met, Text: s.String()}
			if !s.NoData && !math.IsNaN(s.Value) {
				v := s.Value
				o.Value = &v
			}
			d.SLO = append(d.SLO, o)
		}
	}
	return d
}

// Handler serves /status (JSON) and / (HTML).
func (pg *Page) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(pg.Doc())
	})
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		pg.writeHTML(w)
	})
	return mux
}
