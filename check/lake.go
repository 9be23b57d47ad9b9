package check

import (
	"fmt"
	"strings"
	"time"
)

// Lakehouse sink rules: the files a parquet or iceberg sink makes, and
// what a reader of append-only files must do with update rows.

// smallFilesPerDay is TM405's bound: more files a day than this, per
// partition value, is a small-files problem (Iceberg's and Spark's
// guidance is files of 128 MB to 1 GB; a stream of 1 s checkpoints
// writes 86,400 a day per partition).
const smallFilesPerDay = 10_000

// smallFiles is TM405: every checkpoint closes every open file of a
// parquet or iceberg sink, so a sink writes at least one file per
// checkpoint and partition value that received rows: 86,400 / interval
// (seconds) files a day for each. A warning above smallFilesPerDay files
// a day per partition value, and whenever a group-key column partitions
// the files at an interval under a minute (one file per key value per
// checkpoint: a thousand stores make 86 million files a day at 1 s).
func (ck *checker) smallFiles() {
	cp := ck.p.Checkpoint
	for _, ns := range ck.allSinks() {
		s := ns.sink
		if s.Type != "parquet" && s.Type != "iceberg" {
			continue
		}
		if cp == nil {
			continue // files roll by size and at the end of the run
		}
		interval := cp.Interval.D()
		perDay := int64(24 * time.Hour / max(interval, time.Millisecond))
		var keys []string
		for _, b := range s.PartitionBy {
			if b != "day" && b != "hour" && b != "kind" {
				keys = append(keys, b)
			}
		}
		key := ns.key + ".partition_by"
		if len(s.PartitionBy) == 0 {
			key = "checkpoint.interval"
		}
		switch {
		case len(keys) > 0 && interval < time.Minute:
			ck.add(ruleSmallFiles, Warning, key,
				fmt.Sprintf("partitioned by %s at a checkpoint every %s: every checkpoint writes one file per value of %s that received rows, %d a day per value (a thousand values: %d files a day)",
					strings.Join(keys, ", "), sd(cp.Interval), strings.Join(keys, ", "), perDay, perDay*1000),
				"partition by day or hour (a key column is better a sort key than a partition), or raise checkpoint.interval to a minute or more, and compact the table (Iceberg's rewrite_data_files) on a schedule")
		case perDay > smallFilesPerDay:
			ck.add(ruleSmallFiles, Warning, key,
				fmt.Sprintf("a checkpoint every %s closes every open file: %d files a day per partition%s, each of the rows of one interval",
					sd(cp.Interval), perDay, map[bool]string{true: " value", false: ""}[len(s.PartitionBy) > 0]),
				"raise checkpoint.interval (at 1m: 1440 files a day), and compact the table on a schedule")
		}
	}
}

// updateIdentity is TM406: a parquet sink of a stage in emit mode update
// or retract writes every version of a window's row, with its op: a
// reader that sums or counts the files without taking the latest version
// per identity (window_start and the group keys) counts revisions twice.
func (ck *checker) updateIdentity() {
	for i, st := range ck.stages {
		if st.Emit.Mode != "update" && st.Emit.Mode != "retract" {
			continue
		}
		ident := append([]string{"window_start"}, st.Key...)
		for j, s := range st.Sinks {
			if s.Type != "parquet" {
				continue
			}
			ck.add(ruleUpdateIdentity, Warning, fmt.Sprintf("%ssinks[%d]", ck.prefix(i), j),
				fmt.Sprintf("emit mode %s writes each revision of a window's row as another row of the append-only files in %s (op update_after%s): a reader that aggregates them counts a window once per version", st.Emit.Mode, s.Path,
					map[bool]string{true: ", and update_before rows", false: ""}[st.Emit.Mode == "retract"]),
				fmt.Sprintf("read the latest version per (%s) among the rows whose op is not update_before, dropping deletes (docs/connectors/parquet.md); or write an iceberg table, which applies equality deletes on that identity; or use emit.mode final", strings.Join(ident, ", ")))
		}
	}
}
