// Package iceberg is tidemark's Apache Iceberg sink (spec type iceberg,
// docs/connectors/iceberg.md): a stage's result rows in an Iceberg table
// of format version 2, one snapshot per checkpoint at most, committed
// with the checkpoint and carrying the run's job id and the checkpoint id
// in its summary, so that a restore knows whether its commit happened.
// Final rows are appends; in update and retract modes each new version
// of a row is written beside an equality delete on its identity
// (window_start and the group keys).
//
// The package writes the table itself — metadata JSON (metadata.go),
// manifest lists and manifests in Avro with github.com/twmb/avro
// (avro.go), Parquet data and delete files with sink/parquet's writer —
// and keeps the table's pointer in a catalog (catalog.go): the file-system
// ("hadoop") layout, Iceberg's JDBC catalog table in SQLite or
// PostgreSQL, or an Iceberg REST catalog (rest.go). github.com/apache/iceberg-go is not used: it would add
// about 65 MB of cloud SDKs to a binary of about 64 MB
// (docs/connectors/iceberg.md, "Why a writer of our own").
package iceberg
