// Package results manages versioned result tables: the naming convention
// that separates a result's versions from the name readers query, the
// comparison of two versions (Diff) and the switch of the serving name
// from one version to another (Promote, Rollback), for SQLite and
// PostgreSQL. docs/reprocessing.md walks through the workflow.
//
// # Convention
//
// A result table is a family of tables and one view:
//
//	revenue_minute__live  the live pipeline's sink table (LiveVersion)
//	revenue_minute__v2    a backfill's recomputation (tidemark backfill --result-version v2)
//	revenue_minute        the serving view; readers query only this name
//
// VersionTable builds a version's table name, SplitVersion and ServingView
// take one apart. A version label is letters, digits and underscores,
// starting with a letter or digit and without "__" (CheckVersion). The
// tables of all versions have the layout the sinks write (window_start,
// window_end, key columns, value columns, version, is_final, watermark_at,
// updated_at; unique key window_start + key columns); no pipeline writes
// the serving name itself.
//
// The serving view selects from one version, or from several versions
// split on window_start (the cutover of a Lambda architecture: a batch
// recomputation before an instant, the live table from it on). Every
// window_start falls in exactly one segment, so no window is served twice
// or missed. Promotions are recorded in the table tidemark_promotions (in
// the schema of the view, for PostgreSQL), from which Rollback restores the
// previous view.
package results
