// Package metrics exports a running pipeline as Prometheus metrics
// (github.com/prometheus/client_golang). The engine hands an Exporter a
// snapshot (engine.Live) at most once a second, after each checkpoint and
// at the end of the run (engine.Options.Live = exporter.Update); a scrape
// reads the latest snapshot, so scraping costs the pipeline nothing.
//
// Every metric, with the question it answers, is listed in
// docs/metrics.md. Names follow the Prometheus conventions: base units
// (seconds, bytes), counters ending in _total, one metric name per
// quantity and labels for the rest (pipeline, partition, stage, sink).
package metrics

import (
	"math"
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/slo"
)

// SourceStage is the stage label of what happens before the stages: the
// records quarantined while they are decoded and checked (decode, event
// time, contract rules, dedup and order_by keys). No stage can be named
// "source" (the name is reserved for a stage's input), so the series never
// collides with a stage's own, also in a single-stage pipeline whose stage
// has the pipeline's name.
const SourceStage = "source"

// Exporter holds the latest snapshot of one pipeline and serves it. It is
// safe for concurrent use: Update on the runner's goroutine, scrapes on
// the HTTP server's.
type Exporter struct {
	mu   sync.Mutex
	last *engine.Live

	reg        *prometheus.Registry
	ckDuration prometheus.Histogram
	ckBytes    prometheus.Histogram
	commit     *prometheus.HistogramVec
	commits    *prometheus.CounterVec
	commitErrs *prometheus.CounterVec
	lastCkID   int64
	ckOn       bool // the checkpoint histograms are registered
	slo        func() []slo.State
}

// SetSLO makes the exporter report the objectives states returns
// (tidemark_slo_*), e.g. an slo.Evaluator's States.
func (x *Exporter) SetSLO(states func() []slo.State) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.slo = states
}

// New returns an exporter for the pipeline named pipeline (the constant
// label of every metric).
func New(pipeline string) *Exporter {
	labels := prometheus.Labels{"pipeline": pipeline}
	x := &Exporter{reg: prometheus.NewRegistry()}
	x.ckDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "tidemark_checkpoint_duration_seconds", ConstLabels: labels,
		Help:    "Time to take a checkpoint (prepare sinks, snapshot, write, commit sinks); processing pauses for all of it (aligned at a batch boundary).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})
	x.ckBytes = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "tidemark_checkpoint_size_bytes", ConstLabels: labels,
		Help:    "Size of each checkpoint file.",
		Buckets: prometheus.ExponentialBuckets(1024, 4, 12),
	})
	x.commit = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "tidemark_sink_commit_duration_seconds", ConstLabels: labels,
		Help:    "Time of one sink's commit of one checkpoint (its transaction with the commit marker).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"sink"})
	x.commits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidemark_sink_commits_total", ConstLabels: labels,
		Help: "Checkpoint commits per sink.",
	}, []string{"sink"})
	x.commitErrs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidemark_sink_commit_failures_total", ConstLabels: labels,
		Help: "Failed checkpoint commits per sink (the run stops; a restart recovers the checkpoint).",
	}, []string{"sink"})
	// The checkpoint histograms are registered by the first snapshot of a
	// run that takes checkpoints: without checkpoints they are absent, as
	// every metric of a feature the pipeline does not use (a histogram
	// would otherwise show with a zero count).
	x.reg.MustRegister(x.commit, x.commits, x.commitErrs, &collector{x: x, pipeline: pipeline})
	return x
}

// Update records a snapshot; it is engine.Options.Live.
func (x *Exporter) Update(l *engine.Live) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.last = l
	if l.Checkpoints.Enabled && !x.ckOn {
		x.ckOn = true
		x.reg.MustRegister(x.ckDuration, x.ckBytes)
	}
	if c := l.Checkpoints; c.LastID != 0 && c.LastID != x.lastCkID {
		x.lastCkID = c.LastID
		x.ckDuration.Observe(c.LastDuration.Seconds())
		x.ckBytes.Observe(float64(c.LastBytes))
	}
	for _, c := range l.SinkCommits {
		x.commit.WithLabelValues(c.Sink).Observe(c.Duration.Seconds())
		if c.Err {
			x.commitErrs.WithLabelValues(c.Sink).Inc()
		} else {
			x.commits.WithLabelValues(c.Sink).Inc()
		}
	}
}

// Last returns the latest snapshot, nil before the first.
func (x *Exporter) Last() *engine.Live {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.last
}

// Handler serves the metrics in the Prometheus text format.
func (x *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(x.reg, promhttp.HandlerOpts{})
}

// Registry returns the exporter's registry (for tests and for adding
// metrics of the embedding program).
func (x *Exporter) Registry() *prometheus.Registry { return x.reg }

// desc is one metric computed from the snapshot.
type desc struct {
	d    *prometheus.Desc
	kind prometheus.ValueType
}

func newDesc(name, help string, kind prometheus.ValueType, pipeline string, labels ...string) desc {
	return desc{prometheus.NewDesc(name, help, labels, prometheus.Labels{"pipeline": pipeline}), kind}
}

// collector turns the latest snapshot into metrics at each scrape.
type collector struct {
	x        *Exporter
	pipeline string
	once     sync.Once
	d        map[string]desc
}

func (c *collector) descs() map[string]desc {
	c.once.Do(func() {
		p := c.pipeline
		g, k := prometheus.GaugeValue, prometheus.CounterValue
		c.d = map[string]desc{
			"part_wm":    newDesc("tidemark_source_partition_watermark_seconds", "The partition's watermark (its largest event time minus out-of-orderness), Unix seconds.", g, p, "partition"),
			"part_lag":   newDesc("tidemark_source_partition_event_time_lag_seconds", "Processing time minus the partition's watermark: how far its event time is behind.", g, p, "partition"),
			"part_idle":  newDesc("tidemark_source_partition_idle", "1 when the partition has been silent for idle_timeout and no longer holds the pipeline watermark back.", g, p, "partition"),
			"part_cons":  newDesc("tidemark_source_partition_consumer_lag_records", "Records in the log after the next one to read (Kafka: end offset − position); absent for files.", g, p, "partition"),
			"part_recs":  newDesc("tidemark_source_partition_records_total", "Valid records observed on the partition.", k, p, "partition"),
			"wait":       newDesc("tidemark_source_waiting_seconds", "How long the source's records have waited, as of the snapshot, on a service they need and cannot reach (a schema registry): held, neither quarantined nor skipped, until it answers or source.schema_registry.max_wait passes; absent while records flow.", g, p, "service"),
			"waittries":  newDesc("tidemark_source_wait_failed_attempts", "Requests to the service that failed during the wait under way (0 while the first one is unanswered); absent while records flow.", g, p, "service"),
			"part_last":  newDesc("tidemark_source_partition_last_record_timestamp_seconds", "Processing time of the partition's last record, Unix seconds; absent before its first record.", g, p, "partition"),
			"wm":         newDesc("tidemark_watermark_seconds", "The pipeline watermark (minimum over non-idle partitions), Unix seconds; +Inf after a bounded input.", g, p),
			"lag":        newDesc("tidemark_event_time_lag_seconds", "Processing time minus the pipeline watermark. Consumer lag 0 with a growing event-time lag is a stuck watermark.", g, p),
			"ptime":      newDesc("tidemark_processing_time_seconds", "The runner's processing time (records' arrival times or the clock), Unix seconds.", g, p),
			"read":       newDesc("tidemark_records_read_total", "Records delivered by the source, redeliveries included.", k, p),
			"redeliv":    newDesc("tidemark_records_redelivered_total", "Records the source marked as redelivered copies.", k, p),
			"quar":       newDesc("tidemark_records_quarantined_total", "Invalid records sent to quarantine, by where: stage \"source\" before the stages (decode, event time, contract rules, dedup and order_by keys), else the stage (filter, derived field or aggregate errors).", k, p, "stage"),
			"dups":       newDesc("tidemark_duplicates_total", "Redeliveries of a known event id with the same payload (not applied).", k, p),
			"confl":      newDesc("tidemark_conflicts_total", "Deliveries of a known event id with another payload (to the conflict output).", k, p),
			"stale":      newDesc("tidemark_versions_out_of_order_total", "State events not newer than their entity's current version (ignored).", k, p),
			"supers":     newDesc("tidemark_versions_superseded_total", "Versions replaced by a newer one (retracted from the stages).", k, p),
			"deletes":    newDesc("tidemark_change_deletes_total", "A change stream's deletes (each retracts its key's row).", k, p),
			"in":         newDesc("tidemark_stage_records_total", "Records that reached the stage.", k, p, "stage"),
			"filtered":   newDesc("tidemark_records_filtered_total", "Valid records the stage's filter dropped.", k, p, "stage"),
			"ontime":     newDesc("tidemark_records_on_time_total", "Records that entered windows that had not fired.", k, p, "stage"),
			"lateacc":    newDesc("tidemark_records_late_accepted_total", "Records that updated a fired window within allowed lateness.", k, p, "stage"),
			"toolate":    newDesc("tidemark_records_too_late_total", "Records beyond allowed lateness, by what happened to them (dropped or side_output).", k, p, "stage", "outcome"),
			"rows":       newDesc("tidemark_rows_emitted_total", "Result rows emitted to the stage's sinks (all ops).", k, p, "stage"),
			"final":      newDesc("tidemark_rows_final_total", "Result rows emitted with is_final = true.", k, p, "stage"),
			"windows":    newDesc("tidemark_open_windows", "Windows (panes or sessions) holding state.", g, p, "stage"),
			"entries":    newDesc("tidemark_state_entries", "Live (window, key) instances.", g, p, "stage"),
			"keys":       newDesc("tidemark_state_keys", "Distinct live group keys (key cardinality).", g, p, "stage"),
			"sbytes":     newDesc("tidemark_state_bytes", "Estimated heap bytes of the stage's operator state.", g, p, "stage"),
			"hot":        newDesc("tidemark_hot_key_state_bytes", "Estimated state bytes of the keys holding the most state (rank 1 = most).", g, p, "stage", "rank", "key"),
			"hotent":     newDesc("tidemark_hot_key_state_entries", "(window, key) instances of the keys holding the most state.", g, p, "stage", "rank", "key"),
			"ck":         newDesc("tidemark_checkpoints_total", "Checkpoints taken by this run.", k, p),
			"ckfail":     newDesc("tidemark_checkpoint_failures_total", "Checkpoints that failed (the run stops at the first).", k, p),
			"cklast":     newDesc("tidemark_checkpoint_last_timestamp_seconds", "Wall-clock time of the last completed checkpoint, Unix seconds.", g, p),
			"ckid":       newDesc("tidemark_checkpoint_last_id", "Id of the newest checkpoint.", g, p),
			"ckpause":    newDesc("tidemark_checkpoint_last_pause_seconds", "How long the last checkpoint held up processing (aligned: its whole duration).", g, p),
			"ckbytes":    newDesc("tidemark_checkpoint_last_size_bytes", "Size of the last checkpoint file.", g, p),
			"ledger":     newDesc("tidemark_ledger_events_total", "Events given to a postgres ledger sink, by outcome: applied, duplicate (already in the ledger), conflict.", k, p, "sink", "outcome"),
			"slotarget":  newDesc("tidemark_slo_target", "An objective's target: seconds for the p95s, a share (0–1) for the ratios.", g, p, "slo"),
			"slovalue":   newDesc("tidemark_slo_value", "An objective's current value, in the target's unit; absent without data.", g, p, "slo"),
			"slomet":     newDesc("tidemark_slo_met", "1 when the objective is met (or has no data yet), 0 when missed.", g, p, "slo"),
			"grptasks":   newDesc("tidemark_group_tasks", "Tasks this instance of a group run holds, by kind: source (an input partition) or keyed (a partition of the repartition topic).", g, p, "kind"),
			"grptxn":     newDesc("tidemark_group_transactions_total", "The instance's transactions (one per checkpoint), by outcome: committed, or aborted by a rebalance.", k, p, "outcome"),
			"grprebal":   newDesc("tidemark_group_rebalances_total", "Assignment changes the instance went through.", k, p),
			"grprest":    newDesc("tidemark_group_task_restores_total", "Tasks the instance started from a checkpoint in the store.", k, p),
			"grprbytes":  newDesc("tidemark_group_restore_bytes_total", "Checkpoint bytes read to restore tasks.", k, p),
			"grprsecs":   newDesc("tidemark_group_restore_seconds_total", "Time spent restoring tasks (reading and applying their checkpoints).", k, p),
			"grplag":     newDesc("tidemark_group_repartition_lag_records", "Records of a repartition partition after the keyed task's position (the last fetch's last stable offset − position).", g, p, "partition"),
			"grpnodewm":  newDesc("tidemark_group_node_watermark_seconds", "A keyed task's node watermark (the minimum over the tasks feeding it), Unix seconds.", g, p, "partition", "node"),
			"grpupwm":    newDesc("tidemark_group_upstream_watermark_seconds", "The watermark an upstream task (an input partition, or a repartition partition) reported to a keyed task's node, Unix seconds; -Inf before it reported.", g, p, "partition", "node", "upstream"),
			"ended":      newDesc("tidemark_run_ended", "1 once the run has ended (a bounded input, or a stop).", g, p),
			"stdisk":     newDesc("tidemark_state_disk_bytes", "The disk backend's stores: bytes of their live files on local disk.", g, p),
			"stmem":      newDesc("tidemark_state_memory_bytes", "The disk backend's memory, by part: memtable (pebble's memtables), cache (the shared block cache in use), hot_budget (the operators' hot tiers' budget).", g, p, "part"),
			"stcache":    newDesc("tidemark_state_cache_lookups_total", "Block cache lookups of the disk backend's stores, by result: hit or miss.", k, p, "result"),
			"stwork":     newDesc("tidemark_state_background_seconds_total", "Time the disk backend's stores spent flushing memtables and compacting, by kind: flush or compaction.", k, p, "kind"),
			"stfiles":    newDesc("tidemark_state_files", "Tables (SST files) of the disk backend's stores.", g, p),
			"snapshotts": newDesc("tidemark_snapshot_timestamp_seconds", "Wall-clock time of the snapshot these metrics come from, Unix seconds.", g, p),
		}
	})
	return c.d
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs() {
		ch <- d.d
	}
}

// seconds converts a time in ms since the epoch to Unix seconds, the
// watermark sentinels to ∓Inf.
func seconds(ms int64) float64 {
	switch ms {
	case changelog.WatermarkNone:
		return negInf
	case changelog.WatermarkInfinity:
		return posInf
	}
	return float64(ms) / 1000
}

// lagSeconds is processing time minus a watermark, in seconds: +Inf before
// any watermark, 0 after the end of a bounded input.
func lagSeconds(now, wm int64) float64 {
	switch wm {
	case changelog.WatermarkNone:
		return posInf
	case changelog.WatermarkInfinity:
		return 0
	}
	return float64(now-wm) / 1000
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	l := c.x.Last()
	if l == nil {
		return
	}
	d := c.descs()
	m := func(key string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d[key].d, d[key].kind, v, labels...)
	}
	for _, p := range l.Partitions {
		m("part_wm", seconds(p.Watermark), p.Name)
		m("part_lag", lagSeconds(l.ProcessingTime, p.Watermark), p.Name)
		m("part_idle", b2f(p.Idle), p.Name)
		if p.ConsumerLag >= 0 {
			m("part_cons", float64(p.ConsumerLag), p.Name)
		}
		m("part_recs", float64(p.Records), p.Name)
		if p.Records > 0 { // before its first record LastArrival is when the partition was added
			m("part_last", seconds(p.LastArrival), p.Name)
		}
	}
	for _, w := range l.Waits {
		m("wait", max(l.At.Sub(w.Since).Seconds(), 0), w.Service)
		m("waittries", float64(w.Attempts), w.Service)
	}
	if ds := l.DiskState; ds != nil {
		m("stdisk", float64(ds.DiskBytes))
		m("stmem", float64(ds.MemTableBytes), "memtable")
		m("stmem", float64(ds.CacheBytes), "cache")
		m("stmem", float64(ds.HotBudget), "hot_budget")
		m("stcache", float64(ds.CacheHits), "hit")
		m("stcache", float64(ds.CacheMisses), "miss")
		m("stwork", ds.FlushTime.Seconds(), "flush")
		m("stwork", ds.CompactionTime.Seconds(), "compaction")
		m("stfiles", float64(ds.Files))
	}
	m("wm", seconds(l.Watermark))
	m("lag", lagSeconds(l.ProcessingTime, l.Watermark))
	m("ptime", seconds(l.ProcessingTime))
	m("read", float64(l.EventsRead))
	m("redeliv", float64(l.Redeliveries))
	m("quar", float64(l.Quarantined), SourceStage)
	m("dups", float64(l.Duplicates))
	m("confl", float64(l.Conflicts))
	m("stale", float64(l.StaleVersions))
	m("supers", float64(l.Superseded))
	m("deletes", float64(l.Deletes))
	for _, s := range l.Stages {
		m("quar", float64(s.Quarantined), s.Name)
		m("in", float64(s.In), s.Name)
		m("filtered", float64(s.Filtered), s.Name)
		m("ontime", float64(s.OnTime), s.Name)
		m("lateacc", float64(s.LateAccepted), s.Name)
		m("toolate", float64(s.TooLateDropped), s.Name, "dropped")
		m("toolate", float64(s.TooLateSideOutput), s.Name, "side_output")
		m("rows", float64(s.RowsEmitted), s.Name)
		m("final", float64(s.FinalRows), s.Name)
		m("windows", float64(s.OpenWindows), s.Name)
		m("entries", float64(s.Entries), s.Name)
		m("keys", float64(s.Keys), s.Name)
		m("sbytes", float64(s.StateBytes), s.Name)
		for i, h := range s.HotKeys {
			rank := strconv.Itoa(i + 1)
			m("hot", float64(h.Bytes), s.Name, rank, h.Key)
			m("hotent", float64(h.Entries), s.Name, rank, h.Key)
		}
	}
	if ck := l.Checkpoints; ck.Enabled {
		m("ck", float64(ck.Taken))
		m("ckfail", float64(ck.Failures))
		m("ckid", float64(ck.LastID))
		if !ck.LastAt.IsZero() {
			m("cklast", float64(ck.LastAt.UnixNano())/1e9)
			m("ckpause", ck.LastPause.Seconds())
			m("ckbytes", float64(ck.LastBytes))
		}
	}
	for _, lg := range l.Ledgers {
		m("ledger", float64(lg.Applied), lg.Sink, "applied")
		m("ledger", float64(lg.Duplicates), lg.Sink, "duplicate")
		m("ledger", float64(lg.Conflicts), lg.Sink, "conflict")
	}
	c.x.mu.Lock()
	states := c.x.slo
	c.x.mu.Unlock()
	if states != nil {
		for _, s := range states() {
			m("slotarget", s.Target, s.Name)
			if !s.NoData {
				m("slovalue", s.Value, s.Name)
			}
			m("slomet", b2f(s.Met), s.Name)
		}
	}
	if gr := l.Group; gr != nil {
		m("grptasks", float64(len(gr.Sources)), "source")
		m("grptasks", float64(len(gr.Keyed)), "keyed")
		m("grptxn", float64(gr.Commits), "committed")
		m("grptxn", float64(gr.Aborts), "aborted")
		m("grprebal", float64(gr.Rebalances))
		m("grprest", float64(gr.Restores))
		m("grprbytes", float64(gr.RestoreBytes))
		m("grprsecs", gr.RestoreTime.Seconds())
		for _, kt := range gr.Keyed {
			q := strconv.Itoa(kt.Partition)
			if kt.Lag >= 0 {
				m("grplag", float64(kt.Lag), q)
			}
			for _, n := range kt.Nodes {
				m("grpnodewm", seconds(n.Watermark), q, n.Name)
				for u, w := range n.Upstream {
					m("grpupwm", seconds(w), q, n.Name, strconv.Itoa(u))
				}
			}
		}
	}
	m("ended", b2f(l.Ended))
	m("snapshotts", float64(l.At.UnixNano())/1e9)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var (
	posInf = math.Inf(1)
	negInf = math.Inf(-1)
)
