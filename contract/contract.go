// Package contract defines a data contract: what a data product promises
// about its events (schema, identity, time, ordering, duplicates, delay,
// retention, change policy) and the quality rules its records must pass.
//
// A pipeline that names a contract (`contract:` in the spec, or
// `--contract`) takes its field types, event id, event time, ordering and
// delivery-metadata fields from it, and quarantines every record that breaks
// one of its rules, with the rule's name: such a record never reaches a
// window and never moves the watermark. `tidemark validate` measures a data
// set against a contract and reports in the articles' terms (null rates,
// duplicate id rate, conflicts, arrival within 24 h, rule violations).
//
// docs/contracts.md is the user-facing reference.
package contract

import (
	"github.com/tidemark/tidemark/spec"
)

// Contract is a data product's contract. YAML keys in the field docs.
type Contract struct {
	// Product names the data product ("order_item_event"). YAML `product`.
	// Required.
	Product string `yaml:"product"`
	// Owner is the responsible domain or team. YAML `owner`. Required.
	Owner string `yaml:"owner"`
	// Contact is where to ask (a team channel, an address). YAML `contact`.
	Contact string `yaml:"contact"`
	// SchemaVersion of the events this contract describes ("3", "2026-09").
	// Result rows record it (lineage). YAML `schema_version`. Required.
	SchemaVersion string `yaml:"schema_version"`
	// Description of the product. YAML `description`.
	Description string `yaml:"description"`

	// Fields declares each field: its type, whether it is required (never
	// null), and whether it is delivery metadata (ignored when comparing
	// two deliveries of one event). YAML `fields`. Required.
	Fields Fields `yaml:"fields"`

	// EventID identifies a business event: the same business event always
	// has the same id, whatever the delivery. It is a field name (which
	// must be declared in Fields), or an expr-lang expression over fields
	// for a composite id (`InvoiceNo + "-" + string(line_no)`), whose
	// fields may also come from the pipeline (source.ordinal). YAML
	// `event_id`. Required.
	EventID string `yaml:"event_id"`
	// EventIDMeaning says in words what one id stands for ("one order-item
	// event; a retry keeps its id"). YAML `event_id_meaning`.
	EventIDMeaning string `yaml:"event_id_meaning"`
	// EventTime is the field holding when the business event happened, and
	// how it is written. YAML `event_time` (field, format, layout,
	// timezone, as in a pipeline's event_time). Required.
	EventTime TimeField `yaml:"event_time"`
	// IngestTime names the field holding when the event was ingested or
	// produced (delivery metadata). YAML `ingest_time`. Optional.
	IngestTime string `yaml:"ingest_time"`
	// Ordering says which events of one key are ordered by a version
	// (state events): a newer version supersedes older ones. YAML
	// `ordering`. Optional.
	Ordering *Ordering `yaml:"ordering"`
	// DuplicatesPossible: the same event may be delivered more than once.
	// YAML `duplicates_possible`. Default false.
	DuplicatesPossible bool `yaml:"duplicates_possible"`
	// MaxNormalDelay is how late an event normally arrives (the tail the
	// pipeline should wait for). YAML `max_normal_delay`. Optional.
	MaxNormalDelay spec.Duration `yaml:"max_normal_delay"`
	// Retention is how long the source keeps events (what a replay can
	// reach). YAML `retention`. Optional.
	Retention spec.Duration `yaml:"retention"`
	// Rate is the rate of events the product produces at its sustained
	// peak, in events per second of event time (the distinct event ids a
	// dedup remembers per second). `tidemark check` estimates keyed state
	// from it (TM304: dedup ids per TTL, window entries). YAML `rate`.
	// Optional; default 0, unknown.
	Rate int64 `yaml:"rate"`
	// Realtime: the events come from a realtime source (a topic), where an
	// event older than MaxAge is suspicious. YAML `realtime`. Default false.
	Realtime bool `yaml:"realtime"`
	// ChangePolicy says how the schema changes (compatibility period,
	// deprecation). YAML `change_policy`.
	ChangePolicy string `yaml:"change_policy"`
	// CorrectionPolicy says how mistakes are corrected (a new event with
	// corrected_event_id, …). YAML `correction_policy`.
	CorrectionPolicy string `yaml:"correction_policy"`
	// SchemaVersions lists the registry schema versions the contract
	// accepts (Avro and Protobuf sources), how each one's fields map onto
	// the contract's, the compatibility mode the contract promises and
	// deprecation dates. YAML `schema_versions`. Optional: without it
	// every schema is accepted, fields read by name.
	SchemaVersions *SchemaVersions `yaml:"schema_versions"`

	// Rules are the quality rules every record must pass. YAML `rules`.
	Rules []Rule `yaml:"rules"`
	// Quality holds the thresholds `tidemark validate` checks. YAML
	// `quality`.
	Quality Quality `yaml:"quality"`
}

// SchemaVersions says which versions of a registry subject the contract
// accepts and how each reaches the contract's fields.
type SchemaVersions struct {
	// Subject is the Schema Registry subject whose versions are listed.
	// YAML `subject`. Default "<topic>-value" for each topic the pipeline
	// reads (TopicNameStrategy).
	Subject string `yaml:"subject"`
	// Compatibility is the compatibility mode the contract promises:
	// BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL,
	// FULL_TRANSITIVE or NONE (CompatCovers compares a registry level
	// with it). YAML `compatibility`. Default BACKWARD (the registry's
	// own default).
	Compatibility string `yaml:"compatibility"`
	// Versions are the accepted versions. YAML `versions`. Required (at
	// least one).
	Versions []SchemaVersion `yaml:"versions"`
}

// SchemaVersion is one accepted version of the subject.
type SchemaVersion struct {
	// Version is the subject version (1, 2, …). YAML `version`. Required.
	Version int `yaml:"version"`
	// Fields maps a contract field to the field of this version's schema
	// that holds it, a dotted path into nested records or messages
	// ({amount: gross_amount}). A contract field not listed reads the
	// field of its own name. YAML `fields`. Default: none.
	Fields map[string]string `yaml:"fields"`
	// Defaults gives the value of a contract field this version lacks
	// ({currency: GBP}), as text of the field's type. YAML `defaults`.
	// Default: none (such a field is null).
	Defaults map[string]string `yaml:"defaults"`
	// DeprecatedAfter is the date (YYYY-MM-DD, UTC) after which
	// producers must no longer write this version; its records are still
	// accepted (Contract.Deprecated lists the versions past their date).
	// YAML `deprecated_after`. Default: not deprecated.
	DeprecatedAfter string `yaml:"deprecated_after"`
	// Description of the version ("v2: gross_amount and currency replace
	// amount"). YAML `description`.
	Description string `yaml:"description"`
}

// Field is one declared field.
type Field struct {
	Name string
	// Type: bool, int, decimal, string or timestamp. YAML `type`. Required.
	Type string `yaml:"type"`
	// Required: never null or missing. YAML `required`. Default false.
	Required bool `yaml:"required"`
	// Metadata: describes the delivery, not the event (ingested_at, a
	// partition, a retry counter); ignored when comparing the payloads of
	// two deliveries with the same event id. YAML `metadata`. Default false.
	Metadata bool `yaml:"metadata"`
	// Cardinality is how many distinct values the field takes at most
	// (stores, currencies, auctions open at once): `tidemark check` bounds
	// the keys of a window grouped by it (TM304). YAML `cardinality`.
	// Optional; default 0, unknown.
	Cardinality int64 `yaml:"cardinality"`
	// Description of the field. YAML `description`.
	Description string `yaml:"description"`
}

// Fields is an ordered map from field names to declarations.
type Fields []Field

// TimeField names a timestamp field and how it is written.
type TimeField struct {
	Field    string `yaml:"field"`
	Format   string `yaml:"format"`   // rfc3339 (default), epoch_ms, epoch_s, layout
	Layout   string `yaml:"layout"`   // Go layout, for timestamps without offset
	Timezone string `yaml:"timezone"` // IANA zone, with Layout
}

// Ordering names a per-key version.
type Ordering struct {
	// Key is the field whose value identifies the entity (order_id). YAML
	// `key`. Required.
	Key string `yaml:"key"`
	// Version is an int field that increases with each state change of
	// the entity. YAML `version`. Required.
	Version string `yaml:"version"`
}

// Rule is one quality rule. Exactly one of Check, MaxFuture or MaxAge is
// set.
type Rule struct {
	// Name identifies the rule in quarantine records and reports. YAML
	// `name`. Required.
	Name string `yaml:"name"`
	// Check is an expr-lang expression over the fields that must be true
	// ("amount >= 0 or event_type == \"REFUND\""); null counts as false.
	// YAML `check`.
	Check string `yaml:"check"`
	// MaxFuture: the event time is at most this far after the record's
	// arrival (its ingest time when the contract names one, else the
	// processing time). YAML `max_future`.
	MaxFuture spec.Duration `yaml:"max_future"`
	// MaxAge: the event time is at most this far before the record's
	// arrival. YAML `max_age`.
	MaxAge spec.Duration `yaml:"max_age"`
	// Description says why the rule exists. YAML `description`.
	Description string `yaml:"description"`
	// MaxViolationRate is the share of records (0..1) that may break the
	// rule before `tidemark validate` fails. YAML `max_violation_rate`.
	// Default 0.
	MaxViolationRate float64 `yaml:"max_violation_rate"`
}

// Quality holds data-set thresholds for `tidemark validate`, as shares
// (0..1). An unset threshold is not checked.
type Quality struct {
	// MaxNullRate bounds the share of records with a null value, per field
	// name. YAML `max_null_rate`.
	MaxNullRate map[string]float64 `yaml:"max_null_rate"`
	// MaxDuplicateIDRate bounds the share of records whose event id was
	// seen before. YAML `max_duplicate_id_rate`.
	MaxDuplicateIDRate *float64 `yaml:"max_duplicate_id_rate"`
	// MaxConflicts bounds the number of event ids seen with different
	// payloads. YAML `max_conflicts`.
	MaxConflicts *int64 `yaml:"max_conflicts"`
	// MinArrivalWithin24h is the least share of records that arrive (ingest
	// time) within 24 h of their event time. YAML `min_arrival_within_24h`.
	MinArrivalWithin24h *float64 `yaml:"min_arrival_within_24h"`
}
