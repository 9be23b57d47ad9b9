package check

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/sink/iceberg"
)

// Sink-contract rules (TM4xx): how results reach the outside, and why a
// restart or a re-run does not double them.

// appendSink is TM401: an append-only result sink (jsonl, stdout, kafka
// without upsert: its reader sees a sequence of rows, not a table keyed by
// window and key) that writes rows again after a restart or a re-run.
func (ck *checker) appendSink() {
	cp := ck.p.Checkpoint != nil
	for i, st := range ck.stages {
		for j, s := range st.Sinks {
			key := fmt.Sprintf("%ssinks[%d]", ck.prefix(i), j)
			switch s.Type {
			case "kafka":
				if s.Upsert {
					continue
				}
				if !cp {
					ck.add(ruleAppendSink, Error, key,
						fmt.Sprintf("without checkpoints the Kafka sink writes at least once, and every run or restart produces all rows again into topic %s on top of those already there: a reader that applies the changelog counts them twice", s.Topic),
						"add a checkpoint section (exactly once through transactions), or set upsert: true on a compacted topic so that the newest row per key wins")
					continue
				}
				if s.Delivery == "at_least_once" {
					ck.add(ruleAppendSink, Warning, key+".delivery",
						fmt.Sprintf("at_least_once kafka sink: after a restore the rows since the last checkpoint are produced again into topic %s", s.Topic),
						"use delivery: exactly_once, or upsert: true, or read it keeping the highest version per (window_start, key)")
				}
			case "jsonl", "stdout":
				if cp && s.Delivery == "at_least_once" {
					what := "the lines written since the last checkpoint appear twice in " + s.Path
					if s.Type == "stdout" {
						what = "the rows printed since the last checkpoint are printed again"
					}
					fix := "use delivery: exactly_once, or read it keeping the highest version per (window_start, key)"
					if s.Type == "stdout" {
						fix = "write results to a table (sqlite, postgres) or a jsonl file with exactly_once, or read it keeping the highest version per (window_start, key)"
					}
					ck.add(ruleAppendSink, Warning, key+".delivery", "at_least_once "+s.Type+" sink: after a restore "+what, fix)
				}
			}
		}
	}
}

// upsertSink reports whether a result sink is a table keyed by
// (window_start, key): sqlite, postgres results, kafka with upsert.
func upsertSink(typ, mode string, upsert bool) bool {
	switch typ {
	case "sqlite":
		return true
	case "postgres":
		return mode == "" || mode == "results"
	case "kafka":
		return upsert
	}
	return false
}

// provisionalRows is TM402: an upsert table that holds provisional rows,
// which a dashboard must show as such and settlement must not read.
func (ck *checker) provisionalRows() {
	for i, st := range ck.stages {
		if st.Emit.Mode != "update" && st.Emit.Mode != "retract" {
			continue
		}
		if st.AllowedLateness == 0 && st.Emit.EarlyEvery == 0 {
			continue // every row is emitted when the window closes: final
		}
		for j, s := range st.Sinks {
			if !upsertSink(s.Type, s.Mode, s.Upsert) {
				continue
			}
			name := s.Table
			if s.Type == "kafka" {
				name = s.Topic
			}
			until := fmt.Sprintf("until allowed_lateness %s after each window's end", sd(st.AllowedLateness))
			if st.AllowedLateness == 0 {
				until = fmt.Sprintf("from its early firings (every %s) until each window's end", sd(st.Emit.EarlyEvery))
			}
			ck.add(ruleProvisionalRows, Info, fmt.Sprintf("%ssinks[%d]", ck.prefix(i), j),
				fmt.Sprintf("%s holds provisional rows (is_final = false) %s; each revision raises version", name, until),
				"show rows with is_final = false as provisional; settlement and exports read WHERE is_final (or use emit.mode final)")
		}
	}
}

// sharedOutput is TM403: two outputs write the same file, the same
// Parquet directory, the same table of the same database, or the same
// Iceberg table (by its directory, and in a sql or rest catalog by the
// catalog and its name, whatever the warehouse).
func (ck *checker) sharedOutput() {
	type file struct {
		key, typ string
	}
	files := map[string]file{}    // cleaned path → first writer
	tables := map[string]string{} // database + table → first writer's key
	for _, ns := range ck.allSinks() {
		s := ns.sink
		switch s.Type {
		case "jsonl", "sqlite":
			if s.Path == "" {
				continue
			}
			p := filepath.Clean(s.Path)
			prev, seen := files[p]
			switch {
			case seen && (s.Type == "jsonl" || prev.typ == "jsonl"):
				ck.add(ruleSharedOutput, Error, ns.key+".path",
					fmt.Sprintf("%s is also written by %s: the jsonl sink truncates the file when the run opens it, so one output destroys the other", s.Path, prev.key),
					"give every jsonl output its own path")
				continue
			case !seen:
				files[p] = file{ns.key, s.Type}
			}
			if s.Type == "sqlite" {
				ck.table(tables, "sqlite "+p, s.Table, ns.key)
			}
		case "parquet":
			if s.Path == "" {
				continue
			}
			p := filepath.Clean(s.Path)
			if prev, seen := files[p]; seen {
				ck.add(ruleSharedOutput, Error, ns.key+".path",
					fmt.Sprintf("%s is also written by %s: two writers of one Parquet directory overwrite and delete each other's files and manifests (the second run is refused by the directory's lock)", s.Path, prev.key),
					"give every parquet output its own directory")
				continue
			}
			files[p] = file{ns.key, s.Type}
		case "iceberg":
			nsName, table, ok := strings.Cut(s.Table, ".")
			if !ok {
				nsName, table = "default", s.Table
			}
			name := nsName + "." + table
			// A sql or rest catalog names the table whatever the
			// warehouse; a hadoop table is its directory.
			where := "iceberg directory " + filepath.Clean(iceberg.TableDir(s.Path, nsName, table))
			if c := s.Catalog; c != nil && (c.Type == "sql" || c.Type == "rest") && c.URI != "" {
				catalogName := c.Name
				if catalogName == "" {
					catalogName = "tidemark"
				}
				where = "iceberg " + c.Type + " catalog " + c.URI + " " + catalogName
			}
			ck.table(tables, where, name, ns.key)
		case "postgres":
			db := "postgres " + s.DSN
			if s.Mode == "ledger" {
				ck.table(tables, db, s.LedgerTable, ns.key+".ledger_table")
			}
			ck.table(tables, db, s.Table, ns.key)
		}
	}
}

// outputOverlap is TM404: an output that the run would refuse because it
// is, or would become, one of the pipeline's inputs (the source's file,
// directory or glob, the contract, the reference file) or another output
// (the checkpoint directory included), compared by file identity after
// resolving symbolic links (engine.OutputOverlap: a hard link, a symlink,
// a path through a linked directory, a file inside the checkpoint
// directory, a Parquet directory or an Iceberg table's directory). The run refuses such a pipeline when it starts (exit 2);
// this says so before. Not reported when TM403 found two outputs on one
// path already.
func (ck *checker) outputOverlap() {
	for _, f := range ck.out {
		if f.ID == ruleSharedOutput.ID {
			return
		}
	}
	err := engine.OutputOverlap(ck.p)
	if err == nil {
		return
	}
	msg := err.Error()
	key, why, ok := strings.Cut(msg, ": ")
	if !ok || strings.ContainsAny(key, " /") {
		key, why = "sinks", msg
	}
	ck.add(ruleOutputOverlap, Error, key, why,
		"give every output its own file outside the inputs and the checkpoint directory (tidemark run refuses this pipeline when it starts)")
}

// table records that the sink at key writes table of database db, and
// reports a table written twice.
func (ck *checker) table(tables map[string]string, db, table, key string) {
	if table == "" {
		return
	}
	id := db + "\x00" + strings.ToLower(table)
	k := key
	if !strings.HasSuffix(k, ".ledger_table") {
		k += ".table"
	}
	if prev, ok := tables[id]; ok {
		ck.add(ruleSharedOutput, Error, k,
			fmt.Sprintf("table %s is also written by %s: rows of two outputs with the same (window_start, key) overwrite each other under one version sequence", table, prev),
			"give each stage (and each ledger) its own table")
		return
	}
	tables[id] = key
}
