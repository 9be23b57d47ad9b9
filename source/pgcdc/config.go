package pgcdc

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/record"
)

// Snapshot modes (Config.Snapshot).
const (
	// SnapshotInitial reads the table's rows first, in the snapshot the
	// slot exported when tidemark created it, then the changes after it.
	SnapshotInitial = "initial"
	// SnapshotNever reads only the changes after the slot's confirmed
	// position (an existing slot, or one created now).
	SnapshotNever = "never"
)

// The metadata fields of a change (package source): FieldOp, FieldLSN,
// FieldCommitLSN, FieldCommitTime, FieldXid, FieldTable, FieldKey and
// FieldUnchanged. A pipeline names them like columns; the source fills
// those in its schema.
var (
	IsMetaField = record.IsChangeField
	MetaFields  = record.ChangeFields
)

// Defaults of the Config durations, in ms.
const (
	DefaultPollTimeoutMs    = 500
	DefaultStatusIntervalMs = 10_000
	// DefaultLingerMs is how long Next waits for more changes once it has
	// some, before it returns them.
	DefaultLingerMs = 5
)

// Config configures a PostgreSQL change data capture source.
type Config struct {
	// DSN is the connection string (URL or key=value), for a role with
	// the REPLICATION attribute and SELECT on the table. Required.
	DSN string
	// Table is the table read, "schema.table" or "table" (schema public).
	// Required.
	Table string
	// Publication names the publication (CREATE PUBLICATION … FOR TABLE)
	// that holds the table; tidemark never creates or alters it. Required.
	Publication string
	// Slot names the logical replication slot. Required (the engine gives
	// "tidemark_<pipeline>").
	Slot string
	// SlotGiven says the slot was named by the user rather than derived
	// from the pipeline: tidemark then never drops it, also not when it
	// is left over from an initial snapshot that did not finish.
	SlotGiven bool
	// Temporary creates the slot TEMPORARY: it goes when the source's
	// replication connection closes (a run without checkpoints, which
	// would never confirm a position).
	Temporary bool
	// Snapshot is SnapshotInitial (default) or SnapshotNever.
	Snapshot string
	// Key lists the columns identifying a row. Default: the primary key.
	Key []string
	// Fields says what to decode: each field of Fields.Schema is a column
	// of the table or one of the metadata fields (record.ChangeFields),
	// filled when present.
	Fields format.Fields
	// Timezone reads timestamp and date columns into timestamp fields.
	// Default nil: such columns are refused for timestamp fields.
	Timezone *time.Location
	// Optional lists fields that may be null when a schema change drops
	// their column (the contract says they are not required); a dropped
	// column of any other field makes each later change a decode error
	// (Rule "schema_change").
	Optional map[string]bool
	// PollTimeoutMs bounds how long Next waits for a change. Default 500.
	PollTimeoutMs int64
	// LingerMs is how long Next waits for more changes after one arrived
	// at a transaction boundary. Default 5.
	LingerMs int64
	// StatusIntervalMs is how often a standby status update tells the
	// server the received and the confirmed positions. Default 10,000;
	// below PostgreSQL's wal_sender_timeout (60 s by default).
	StatusIntervalMs int64
	// HeartbeatIntervalMs, when > 0, makes the source write a heartbeat
	// that often (pg_logical_emit_message, or an upsert into
	// HeartbeatTable), so that the slot's position moves on even when the
	// database sees no other write. Default 0: none.
	HeartbeatIntervalMs int64
	// HeartbeatTable, with HeartbeatIntervalMs, is a table (slot text
	// primary key, at timestamptz) that receives the heartbeat instead of
	// pg_logical_emit_message. Optional.
	HeartbeatTable string
	// Clock returns the wall-clock time (status and heartbeat schedules).
	// Default time.Now.
	Clock func() time.Time
	// Logf receives log lines (a leftover slot dropped). Optional.
	Logf func(format string, args ...any)
}

var slotName = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)

// SlotName returns the default slot of a pipeline: "tidemark_" and the
// name lowercased, characters other than [a-z0-9_] replaced by '_',
// at most 63 bytes (PostgreSQL's NAMEDATALEN − 1).
func SlotName(pipeline string) string {
	var b strings.Builder
	b.WriteString("tidemark_")
	for _, c := range strings.ToLower(pipeline) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 63 {
		s = s[:63]
	}
	return s
}

// splitTable splits "schema.table" (default schema public). Quoted names
// are not supported: a name is used as PostgreSQL stores it.
func splitTable(t string) (schema, table string, err error) {
	s, n, ok := strings.Cut(t, ".")
	if !ok {
		s, n = "public", t
	}
	if s == "" || n == "" || strings.Contains(n, ".") {
		return "", "", fmt.Errorf("source.table: %q: want schema.table or table", t)
	}
	return s, n, nil
}

// check validates cfg and fills its defaults.
func (cfg *Config) check() error {
	var errs []error
	if cfg.DSN == "" {
		errs = append(errs, errors.New("source.dsn: required for a postgres_cdc source"))
	}
	if cfg.Table == "" {
		errs = append(errs, errors.New("source.table: required for a postgres_cdc source"))
	} else if _, _, err := splitTable(cfg.Table); err != nil {
		errs = append(errs, err)
	}
	if cfg.Publication == "" {
		errs = append(errs, errors.New("source.publication: required for a postgres_cdc source: create one with CREATE PUBLICATION <name> FOR TABLE <table> (tidemark never creates it)"))
	}
	if !slotName.MatchString(cfg.Slot) {
		errs = append(errs, fmt.Errorf("source.slot: %q: a slot name is 1 to 63 of a-z, 0-9 and _", cfg.Slot))
	}
	switch cfg.Snapshot {
	case "":
		cfg.Snapshot = SnapshotInitial
	case SnapshotInitial, SnapshotNever:
	default:
		errs = append(errs, fmt.Errorf("source.snapshot: %q: want initial or never", cfg.Snapshot))
	}
	if cfg.Fields.Schema == nil {
		errs = append(errs, errors.New("postgres_cdc source: Fields.Schema is nil"))
	}
	for _, d := range []struct {
		key string
		v   *int64
		def int64
	}{
		{"poll_timeout", &cfg.PollTimeoutMs, DefaultPollTimeoutMs},
		{"linger", &cfg.LingerMs, DefaultLingerMs},
		{"status_interval", &cfg.StatusIntervalMs, DefaultStatusIntervalMs},
		{"heartbeat_interval", &cfg.HeartbeatIntervalMs, 0},
	} {
		if *d.v < 0 {
			errs = append(errs, fmt.Errorf("source.%s: %d ms is negative", d.key, *d.v))
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if cfg.HeartbeatTable != "" {
		if _, _, err := splitTable(cfg.HeartbeatTable); err != nil {
			errs = append(errs, fmt.Errorf("source.heartbeat_table: %w", err))
		}
		if cfg.HeartbeatIntervalMs == 0 {
			errs = append(errs, errors.New("source.heartbeat_table: needs source.heartbeat_interval"))
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return errors.Join(errs...)
}

// quoteIdent quotes a PostgreSQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// quoteTable quotes "schema.table".
func quoteTable(schema, table string) string { return quoteIdent(schema) + "." + quoteIdent(table) }
