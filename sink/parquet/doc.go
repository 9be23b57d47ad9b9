// Package parquet is tidemark's Parquet file sink (spec type parquet,
// docs/connectors/parquet.md): result rows and side-output records in
// Parquet files (github.com/parquet-go/parquet-go) with typed columns,
// partitioned into Hive-style directories, published exactly once the
// way Flink's FileSink does it — files are written in a staging
// directory, closed at each checkpoint, and renamed into place (and named
// in the checkpoint's manifest) only when the checkpoint completes; a
// restore completes or discards them by the checkpoint's record.
//
// The column layout (Layout, Schema) and the file writer (FileWriter) are
// shared with the Iceberg sink (sink/iceberg), which writes its data and
// delete files with them.
package parquet
