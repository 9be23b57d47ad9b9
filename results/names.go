package results

import (
	"fmt"
	"strings"
)

// VersionSeparator separates a result table's name from its version label:
// revenue_minute__v2 is version "v2" of revenue_minute.
const VersionSeparator = "__"

// LiveVersion is the version label of the live pipeline's table by
// convention: the live pipeline's sink writes VersionTable(table,
// LiveVersion) (revenue_minute__live), which a backfill never writes.
// Any other label works for the live table too; nothing in this package
// treats "live" specially.
const LiveVersion = "live"

// PromotionsTable is the table recording promotions, created beside the
// serving view (in its schema for PostgreSQL) on the first promotion:
// one row per promotion, with the view definition it replaced.
const PromotionsTable = "tidemark_promotions"

// maxIdentifier is PostgreSQL's limit on a name's length in bytes; longer
// names would be truncated silently.
const maxIdentifier = 63

// VersionTable returns the name of version of table:
// VersionTable("revenue_minute", "v2") is "revenue_minute__v2", and
// VersionTable("analytics.revenue_minute", "v2") is
// "analytics.revenue_minute__v2". It does not check its arguments (see
// CheckVersion).
func VersionTable(table, version string) string {
	return table + VersionSeparator + version
}

// SplitVersion splits a version table's name into the result table's name
// and the version label: "revenue_minute__v2" gives ("revenue_minute",
// "v2", true). A schema prefix stays with the table ("analytics.x__v1"
// gives "analytics.x", "v1"). ok is false when name has no valid version
// suffix; then table is name.
func SplitVersion(name string) (table, version string, ok bool) {
	schema, base := splitSchema(name)
	i := strings.LastIndex(base, VersionSeparator)
	if i <= 0 {
		return name, "", false
	}
	version = base[i+len(VersionSeparator):]
	if CheckVersion(version) != nil {
		return name, "", false
	}
	return joinSchema(schema, base[:i]), version, true
}

// ServingView returns the serving view's name for a table name, which may
// name a version: ServingView("revenue_minute__v1") and
// ServingView("revenue_minute") are both "revenue_minute". A backfill that
// reads a pipeline whose sink writes revenue_minute__v1 writes version v2
// into VersionTable(ServingView("revenue_minute__v1"), "v2").
func ServingView(name string) string {
	table, _, _ := SplitVersion(name)
	return table
}

// CheckVersion returns an error unless version is a valid label: letters
// (ASCII), digits and underscores, starting with a letter or digit, not
// containing "__" (which would make table names ambiguous).
func CheckVersion(version string) error {
	if version == "" {
		return fmt.Errorf("empty version")
	}
	for i := 0; i < len(version); i++ {
		c := version[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' && i > 0
		if !ok {
			return fmt.Errorf("version %q: want letters, digits and _, starting with a letter or digit", version)
		}
	}
	if strings.Contains(version, VersionSeparator) {
		return fmt.Errorf("version %q: must not contain %q", version, VersionSeparator)
	}
	return nil
}

// checkTableName returns an error unless table can be a serving name: a
// name, optionally schema-qualified, that does not itself end in a version
// suffix, whose versions' names stay within PostgreSQL's limit.
func checkTableName(table string) error {
	schema, base := splitSchema(table)
	if base == "" || strings.ContainsAny(base, "\x00") || strings.ContainsAny(schema, "\x00") || strings.Contains(table, `"`) {
		return fmt.Errorf("table %q: want a name such as revenue_minute or analytics.revenue_minute", table)
	}
	if t, v, ok := SplitVersion(table); ok {
		return fmt.Errorf("table %q names version %q: give the result table's name, %q", table, v, t)
	}
	return nil
}

// checkLength returns an error when a version's table name would exceed
// PostgreSQL's identifier limit.
func checkLength(table, version string) error {
	_, base := splitSchema(VersionTable(table, version))
	if len(base) > maxIdentifier {
		return fmt.Errorf("table name %q is longer than %d bytes", base, maxIdentifier)
	}
	return nil
}

// splitSchema splits "schema.table" at the first dot; "table" has no
// schema.
func splitSchema(name string) (schema, table string) {
	if i := strings.IndexByte(name, '.'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return "", name
}

func joinSchema(schema, table string) string {
	if schema == "" {
		return table
	}
	return schema + "." + table
}

// The bookkeeping columns of a result table: they say how, when and from
// what a row was produced, not what it says, so Diff leaves them out.
// "lineage" is the column in which run and backfill record the pipeline,
// its spec hash, the build, the contract and reference versions and the
// replay id.
var bookkeeping = map[string]bool{
	"version":      true,
	"is_final":     true,
	"watermark_at": true,
	"updated_at":   true,
	"lineage":      true,
	"replay_id":    true,
	"replayed_at":  true,
}

// LineagePrefix starts the names of further lineage columns, which Diff
// leaves out like the bookkeeping columns.
const LineagePrefix = "lineage_"

// IsBookkeeping reports whether Diff leaves a column out of the
// comparison: version, is_final, watermark_at, updated_at, lineage,
// replay_id, replayed_at, and columns whose names start with
// LineagePrefix. Names compare without regard to case.
func IsBookkeeping(column string) bool {
	c := strings.ToLower(column)
	return bookkeeping[c] || strings.HasPrefix(c, LineagePrefix)
}
