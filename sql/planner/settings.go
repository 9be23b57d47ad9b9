package planner

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/internal/suggest"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/sql/parser"
)

// FlinkSettings are the SET keys of Flink's that tidemark reads, with the
// pipeline key each sets (docs/sql.md). Stage keys apply to the INSERTs
// after the SET; pipeline keys take their last value in the script.
var FlinkSettings = map[string]string{
	"pipeline.name":                              "name",
	"parallelism.default":                        "parallelism",
	"pipeline.max-parallelism":                   "key_groups",
	"execution.checkpointing.interval":           "checkpoint.interval",
	"state.checkpoints.dir":                      "checkpoint.dir",
	"state.checkpoints.num-retained":             "checkpoint.retain",
	"table.local-time-zone":                      "event_time.timezone (TO_TIMESTAMP) and window.timezone",
	"table.exec.source.idle-timeout":             "event_time.idle_timeout (of every table without scan.watermark.idle-timeout)",
	"table.exec.state.ttl":                       "join.ttl of regular joins (stage)",
	"table.exec.emit.allow-lateness":             "allowed_lateness (stage)",
	"table.exec.emit.early-fire.enabled":         "with early-fire.delay: emit.early_every (stage)",
	"table.exec.emit.early-fire.delay":           "emit.early_every (stage)",
	"execution.runtime-mode":                     "streaming only",
	"execution.checkpointing.mode":               "EXACTLY_ONCE only",
	"table.exec.sink.upsert-materialize":         "accepted, no effect (sinks upsert by key and version)",
	"table.exec.sink.not-null-enforcer":          "accepted, no effect",
	"table.dynamic-table-options.enabled":        "accepted, no effect (OPTIONS hints are read)",
	"sql-client.execution.result-mode":           "accepted, no effect",
	"table.exec.mini-batch.enabled":              "accepted, no effect",
	"table.exec.mini-batch.allow-latency":        "accepted, no effect",
	"table.exec.mini-batch.size":                 "accepted, no effect",
	"table.optimizer.agg-phase-strategy":         "accepted, no effect",
	"table.optimizer.distinct-agg.split.enabled": "accepted, no effect",
}

// stageSettingKeys are the tidemark keys SET applies to the stages of the
// INSERTs after it (the others set the pipeline).
var stageSettingKeys = map[string]bool{
	"allowed_lateness": true, "emit": true, "late": true, "contributions": true,
	"join": true, // join.ttl, join.max_span: the joins' bounds
}

// pipelineSettingRoots are the pipeline keys 'tidemark.<key>' may set.
var pipelineSettingRoots = map[string]bool{
	"name": true, "contract": true, "dedup": true, "order_by": true, "conflicts": true,
	"quarantine": true, "reference": true, "parallelism": true, "key_groups": true,
	"checkpoint": true, "state": true, "slo": true,
}

// checkSetKey refuses an unknown key when it is SET (not when used).
func (pl *planner) checkSetKey(s *parser.Set) error {
	k := s.Key
	if _, ok := FlinkSettings[k]; ok {
		switch k {
		case "execution.runtime-mode":
			if !strings.EqualFold(s.Value, "streaming") {
				return pl.errAt(s.ValueAt, "'execution.runtime-mode' = '%s': tidemark runs streaming (a bounded input ends the run)", s.Value)
			}
		case "execution.checkpointing.mode":
			if !strings.EqualFold(s.Value, "exactly_once") {
				return pl.errAt(s.ValueAt, "'execution.checkpointing.mode' = '%s': tidemark's checkpoints are exactly once", s.Value)
			}
		}
		return nil
	}
	if rest, ok := strings.CutPrefix(k, "tidemark."); ok {
		root := strings.SplitN(rest, ".", 2)[0]
		if stageSettingKeys[root] || pipelineSettingRoots[root] {
			return nil
		}
		var known []string
		for r := range stageSettingKeys {
			known = append(known, "tidemark."+r)
		}
		for r := range pipelineSettingRoots {
			known = append(known, "tidemark."+r)
		}
		sort.Strings(known)
		return pl.errAt(s.KeyAt, "unknown key '%s'%s (tidemark's keys: %s; a source's keys go in its table's WITH)", k, suggest.Hint(k, known), strings.Join(known, ", "))
	}
	var known []string
	for f := range FlinkSettings {
		known = append(known, f)
	}
	sort.Strings(known)
	return pl.errAt(s.KeyAt, "unknown key '%s'%s (Flink's keys read: %s; tidemark's as 'tidemark.<key>')", k, suggest.Hint(k, known), strings.Join(known, ", "))
}

// localZone is 'table.local-time-zone', or UTC.
func (pl *planner) localZone() string {
	if o, ok := pl.finalSetting("table.local-time-zone"); ok {
		return o.Value
	}
	return "UTC"
}

// pipelineSettings applies the pipeline-level SET keys.
func (pl *planner) pipelineSettings(p *spec.Pipeline) error {
	intKey := func(key string, dst *int) error {
		if o, ok := pl.finalSetting(key); ok {
			n, err := strconv.Atoi(strings.TrimSpace(o.Value))
			if err != nil || n < 0 {
				return pl.errAt(o.ValueAt, "'%s' = '%s': want a whole number", key, o.Value)
			}
			*dst = n
		}
		return nil
	}
	if err := intKey("parallelism.default", &p.Parallelism); err != nil {
		return err
	}
	if err := intKey("pipeline.max-parallelism", &p.KeyGroups); err != nil {
		return err
	}
	dir, hasDir := pl.finalSetting("state.checkpoints.dir")
	iv, hasIv := pl.finalSetting("execution.checkpointing.interval")
	ret, hasRet := pl.finalSetting("state.checkpoints.num-retained")
	if hasDir || hasIv || hasRet {
		if !hasDir {
			at := iv
			if !hasIv {
				at = ret
			}
			return pl.errAt(at.KeyAt, "checkpoints need 'state.checkpoints.dir' (a directory: SET 'state.checkpoints.dir' = 'file:///var/lib/tidemark/job')")
		}
		ck := &spec.Checkpoint{Dir: stripScheme(dir.Value)}
		if hasIv {
			d, err := pl.durationOpt(iv)
			if err != nil {
				return err
			}
			ck.Interval = d
		}
		if hasRet {
			n, err := strconv.Atoi(ret.Value)
			if err != nil || n < 1 {
				return pl.errAt(ret.ValueAt, "'state.checkpoints.num-retained' = '%s': want a whole number, at least 1", ret.Value)
			}
			ck.Retain = n
		}
		p.Checkpoint = ck
	}
	if tz, ok := pl.finalSetting("table.local-time-zone"); ok {
		if _, err := time.LoadLocation(tz.Value); err != nil {
			return pl.errAt(tz.ValueAt, "'table.local-time-zone' = '%s': not an IANA zone (Europe/London, Asia/Seoul, UTC)", tz.Value)
		}
	}
	var opts []*parser.Option
	for _, k := range pl.setOrder {
		rest, ok := strings.CutPrefix(k, "tidemark.")
		if !ok || !pipelineSettingRoots[strings.SplitN(rest, ".", 2)[0]] {
			continue
		}
		if o, ok := pl.sets[k]; ok && !containsOpt(opts, o) {
			opts = append(opts, o)
		}
	}
	return pl.overlay(p, opts, "tidemark.")
}

func containsOpt(list []*parser.Option, o *parser.Option) bool {
	for _, x := range list {
		if x == o {
			return true
		}
	}
	return false
}

// stageSettings applies the stage keys in force at the INSERT to a
// stage: allowed lateness, early firings, the emit mode (defaultMode
// when nothing sets it) and tidemark's stage keys.
func (pl *planner) stageSettings(st *spec.Stage, defaultMode string) error {
	if o, ok := pl.setting("table.exec.emit.allow-lateness"); ok {
		d, err := pl.durationOpt(o)
		if err != nil {
			return err
		}
		st.AllowedLateness = d
		if d > 0 && defaultMode == "final" {
			// Flink re-emits a window for its late rows: updates.
			defaultMode = "update"
		}
	}
	if o, ok := pl.setting("table.exec.emit.early-fire.enabled"); ok && strings.EqualFold(o.Value, "true") {
		d, ok := pl.setting("table.exec.emit.early-fire.delay")
		if !ok {
			return pl.errAt(o.KeyAt, "'table.exec.emit.early-fire.enabled' needs 'table.exec.emit.early-fire.delay' (the processing time between early firings)")
		}
		v, err := pl.durationOpt(d)
		if err != nil {
			return err
		}
		st.Emit.EarlyEvery = v
		if defaultMode == "final" {
			defaultMode = "update"
		}
	}
	st.Emit.Mode = defaultMode
	var opts []*parser.Option
	sets := pl.sets
	if pl.ins != nil {
		sets = pl.ins.sets
	}
	for _, k := range pl.setOrder {
		rest, ok := strings.CutPrefix(k, "tidemark.")
		if !ok {
			continue
		}
		root := strings.SplitN(rest, ".", 2)[0]
		if !stageSettingKeys[root] || root == "join" {
			continue
		}
		if o, ok := sets[k]; ok && !containsOpt(opts, o) {
			opts = append(opts, o)
		}
	}
	return pl.overlay(st, opts, "tidemark.")
}

func sortStrings(s []string) { sort.Strings(s) }
