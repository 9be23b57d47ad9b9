package spec

import (
	"regexp"
	"time"
)

// ChangeStream reports whether the source delivers a table's changes
// (postgres_cdc, docs/connectors/postgres-cdc.md; or a Debezium topic):
// records keyed by the row's key and versioned by their LSN, which the
// engine keeps the newest row of per key.
func (s *Source) ChangeStream() bool {
	return s.Type == "postgres_cdc" || s.Format == "debezium_json" || s.Format == "debezium_avro"
}

// cdcDefaults fills the defaults of a postgres_cdc source.
func cdcDefaults(s *Source) {
	if s.Snapshot == "" {
		s.Snapshot = "initial"
	}
	if s.PollTimeout == 0 {
		s.PollTimeout = Duration(500 * time.Millisecond)
	}
	if s.StatusInterval == 0 {
		s.StatusInterval = Duration(10 * time.Second)
	}
}

var (
	cdcTableRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_$]*\.)?[A-Za-z_][A-Za-z0-9_$]*$`)
	cdcSlotRE  = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)
)

func validateCDCSource(s *Source, add func(key, format string, args ...any)) {
	notFor("postgres_cdc", s, add, "file", "kafka", "nexmark")
	if s.DSN == "" {
		add("source.dsn", "required for a postgres_cdc source, e.g. postgres://user@localhost:5432/db or ${PGURL}")
	}
	switch {
	case s.Table == "":
		add("source.table", "required for a postgres_cdc source: the table whose changes are read (schema.table)")
	case !cdcTableRE.MatchString(s.Table):
		add("source.table", "%q is not a table name, optionally schema-qualified (letters, digits, '_', '$')", s.Table)
	}
	if s.Publication == "" {
		add("source.publication", "required for a postgres_cdc source: a publication holding the table (CREATE PUBLICATION … FOR TABLE …; tidemark never creates one)")
	}
	if s.Slot != "" && !cdcSlotRE.MatchString(s.Slot) {
		add("source.slot", "%q: a slot name is 1 to 63 of a-z, 0-9 and _", s.Slot)
	}
	switch s.Snapshot {
	case "initial", "never":
	default:
		add("source.snapshot", "%q: want initial or never", s.Snapshot)
	}
	for i, k := range s.KeyColumns {
		if k == "" {
			add("source.key_columns", "entry %d is empty", i)
		}
	}
	if s.Timezone != "" {
		if why := checkZone(s.Timezone); why != "" {
			add("source.timezone", "%s", why)
		}
	}
	if s.PollTimeout < Duration(time.Millisecond) {
		add("source.poll_timeout", "must be at least 1ms")
	}
	if s.StatusInterval < Duration(time.Millisecond) {
		add("source.status_interval", "must be at least 1ms")
	}
	if s.HeartbeatInterval < 0 {
		add("source.heartbeat_interval", "must not be negative")
	}
	if s.HeartbeatTable != "" {
		if s.HeartbeatInterval == 0 {
			add("source.heartbeat_table", "needs source.heartbeat_interval")
		}
		if !cdcTableRE.MatchString(s.HeartbeatTable) {
			add("source.heartbeat_table", "%q is not a table name, optionally schema-qualified", s.HeartbeatTable)
		}
	}
	for _, d := range []struct {
		key string
		v   Duration
	}{{"source.poll_timeout", s.PollTimeout}, {"source.status_interval", s.StatusInterval}, {"source.heartbeat_interval", s.HeartbeatInterval}} {
		wholeMs(d.key, d.v, add)
	}
	for _, f := range s.Schema {
		if _, err := parseTypeName(f.Type); err != nil {
			add("source.schema."+f.Name, "%v", err)
		}
	}
}

// validateChangeStream checks the pipeline keys a change stream decides
// itself.
func validateChangeStream(p *Pipeline, add func(key, format string, args ...any)) {
	if !p.Source.ChangeStream() {
		return
	}
	if p.OrderBy != nil {
		add("order_by", "a change stream orders each row's changes itself (by key, version = LSN): remove order_by")
	}
	if p.Dedup != nil {
		add("dedup", "a change stream drops a change seen again itself (by its LSN and key): remove dedup")
	}
	if p.Source.Assignment == "group" {
		add("source.assignment", "a change stream runs with assignment direct (one reader keeps each key's newest row)")
	}
	if p.Source.Type == "postgres_cdc" && p.EventTime.From != "" && p.EventTime.From != "payload" {
		add("event_time.from", "%q: a postgres_cdc source takes event time from a column, or from the commit time with field __commit_time", p.EventTime.From)
	}
}
