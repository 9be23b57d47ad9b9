package check

// The change data capture rules (TM113, TM114;
// docs/connectors/postgres-cdc.md).

var (
	ruleCDCNoCheckpoint = Rule{"TM113", "cdc-without-checkpoints", "source", "a postgres_cdc source without checkpoints: a temporary slot, a new snapshot every run"}
	ruleCDCDatabase     = Rule{"TM114", "cdc-database-not-ready", "source", "the database lacks what logical replication of the table needs"}
)

// cdcNoCheckpoint is TM113.
func (ck *checker) cdcNoCheckpoint() {
	if ck.p.Source.Type != "postgres_cdc" || ck.p.Checkpoint != nil {
		return
	}
	ck.add(ruleCDCNoCheckpoint, Warning, "checkpoint",
		"without checkpoints nothing confirms a position: the slot is temporary (it goes with the run), every run reads the table again in a new initial snapshot and replaces its outputs, and the sinks are not exactly once across restarts",
		"add checkpoint: {dir: <directory>}: the slot then stays, is confirmed after each checkpoint, and a restart resumes at the checkpoint's position")
}

// cdcDatabase is TM114: what `tidemark check --connect` found missing in
// the database (pgcdc.Check).
func (ck *checker) cdcDatabase() {
	if ck.p.Source.Type != "postgres_cdc" {
		return
	}
	if ck.facts == nil || !ck.facts.Asked {
		ck.add(ruleCDCDatabase, Info, "source.dsn",
			"not checked: only the database knows its wal_level, the publication and its tables, the role's REPLICATION attribute and the table's key and replica identity",
			"run tidemark check --connect, which asks the database (and changes nothing)")
		return
	}
	for _, p := range ck.facts.Database {
		ck.add(ruleCDCDatabase, Error, "source", p.What, p.Fix)
	}
}
