package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/results"
)

// newDiffCmd is `tidemark diff`: two versions of a result table compared
// row by row (docs/reprocessing.md).
func newDiffCmd(stdout io.Writer) *cobra.Command {
	var f diffFlags
	cmd := &cobra.Command{
		Use:   "diff --db DATABASE --table TABLE OLD NEW",
		Short: "Compare two versions of a result table: rows only in one, changed values, totals per key",
		Long: `Compare two versions of a result table: rows only in one, changed values, totals per key.

OLD and NEW are version labels: the tables TABLE__OLD and TABLE__NEW
(revenue_minute__live, revenue_minute__v2). DATABASE is a SQLite file (a
path or sqlite://PATH) or a PostgreSQL URL (postgres://...); TABLE may be
schema-qualified for PostgreSQL.

Rows are matched on window_start and the key columns (the tables' primary
key or unique key, or --key-columns). The values compared are the other
columns except the bookkeeping ones (version, is_final, watermark_at,
updated_at, replay_id, replayed_at), lineage columns (lineage_*) and
--ignore-columns. Numbers are compared exactly (PostgreSQL numeric, the
SQLite sink's decimal text): 20.00 equals 20, and a difference is
NEW - OLD without rounding. Timestamps are compared as instants.

The report lists the rows only in OLD, only in NEW, and the rows whose
values differ with both values and the difference; then, per value of
each key column (per store, per country ...), the row counts and the sums
of the numeric columns in both versions where they differ (all with
--all-totals), and the sums over all rows.

--tolerance D accepts a numeric difference of at most D (absolute, per
value): such rows are still listed, marked within the tolerance, but do not
make the versions differ. Rows only in one version, NULL against a value
and non-numeric changes always differ.

--format json prints one JSON object (docs/reprocessing.md gives its
shape); values are strings, exact, or null.

Exit status: 0 when the versions agree (within the tolerance), 1 when they
differ, 2 for a usage error or when they cannot be compared (no such
table, no database).`,
		Args: usage(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiff(cmd.Context(), stdout, f, args[0], args[1])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.db, "db", "", "the database: a SQLite file (PATH or sqlite://PATH) or a postgres:// URL; required")
	fl.StringVar(&f.table, "table", "", "the result table (its serving name), e.g. revenue_minute; required")
	fl.StringVar(&f.tolerance, "tolerance", "0", "largest absolute difference of a numeric value that still counts as equal")
	fl.StringVar(&f.format, "format", "text", "report format: text or json")
	fl.StringSliceVar(&f.keyColumns, "key-columns", nil, "key columns besides window_start (default: the tables' unique key)")
	fl.StringSliceVar(&f.ignore, "ignore-columns", nil, "more columns to leave out of the comparison")
	fl.StringVar(&f.from, "from", "", "compare only windows with window_start >= this instant (RFC 3339 with offset)")
	fl.StringVar(&f.to, "to", "", "compare only windows with window_start < this instant (RFC 3339 with offset)")
	fl.IntVar(&f.maxRows, "max-rows", 100, "most rows listed per section (counts stay complete); 0 lists all")
	fl.BoolVar(&f.allTotals, "all-totals", false, "list the totals of every key value, not only those that differ")
	fl.StringVar(&f.timezone, "timezone", "", "IANA zone for PostgreSQL timestamps in the report (default: the session's TimeZone)")
	return cmd
}

// diffFlags are the flags of diff.
type diffFlags struct {
	db, table, tolerance, format string
	keyColumns, ignore           []string
	from, to, timezone           string
	maxRows                      int
	allTotals                    bool
}

func runDiff(ctx context.Context, stdout io.Writer, f diffFlags, oldV, newV string) error {
	if f.db == "" || f.table == "" {
		return usageErr("diff: --db and --table are required")
	}
	if f.format != "text" && f.format != "json" {
		return usageErr("diff: --format %q: want text or json", f.format)
	}
	for _, v := range []string{oldV, newV} {
		if err := results.CheckVersion(v); err != nil {
			return usageErr("diff: %w", err)
		}
	}
	var o results.DiffOptions
	var err error
	if o.Tolerance, err = results.ParseDecimal(f.tolerance); err != nil || o.Tolerance.Sign() < 0 {
		return usageErr("diff: --tolerance %q: want a decimal number, 0 or more", f.tolerance)
	}
	if o.From, err = parseInstant("from", f.from); err != nil {
		return err
	}
	if o.To, err = parseInstant("to", f.to); err != nil {
		return err
	}
	if !o.From.IsZero() && !o.To.IsZero() && !o.From.Before(o.To) {
		return usageErr("diff: --from %s is not before --to %s", f.from, f.to)
	}
	if f.maxRows < 0 {
		return usageErr("diff: --max-rows %d: want 0 or more", f.maxRows)
	}
	if f.timezone != "" {
		if o.Location, err = time.LoadLocation(f.timezone); err != nil {
			return usageErr("diff: --timezone %q: %v", f.timezone, err)
		}
	}
	o.KeyColumns, o.IgnoreColumns, o.MaxRows, o.AllTotals = f.keyColumns, f.ignore, f.maxRows, f.allTotals
	db, err := results.Open(ctx, f.db)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("diff: %w", err)}
	}
	defer db.Close()
	r, err := db.Diff(ctx, f.table, oldV, newV, o)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("diff: %w", err)}
	}
	if f.format == "json" {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		stdout.Write(append(b, '\n'))
	} else {
		writeDiffText(stdout, r)
	}
	if r.Differs {
		return &exitError{code: 1, err: fmt.Errorf("diff: %s: %s and %s differ", f.table, oldV, newV)}
	}
	return nil
}

// diffVerdict summarizes the report in one sentence.
func diffVerdict(r *results.DiffReport) string {
	c := r.Counts
	if !r.Differs {
		s := fmt.Sprintf("%s and %s agree: %s the same", r.Old.Version, r.New.Version, plural(c.Same, "row"))
		if c.WithinTolerance > 0 {
			s += fmt.Sprintf(", %s within the tolerance %s", plural(c.WithinTolerance, "row"), r.Tolerance)
		}
		return s
	}
	s := fmt.Sprintf("%s and %s differ: %s only in %s, %d only in %s, %d changed beyond the tolerance %s, %d within it, %d the same",
		r.Old.Version, r.New.Version, plural(c.OnlyInOld, "row"), r.Old.Version, c.OnlyInNew, r.New.Version,
		c.Changed, r.Tolerance, c.WithinTolerance, c.Same)
	if n := len(r.ColumnsOnlyInOld) + len(r.ColumnsOnlyInNew); n > 0 {
		s += fmt.Sprintf("; %s in one version only", plural(int64(n), "column"))
	}
	return s
}

// nullText is *s, or NULL.
func nullText(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}

// diffFieldsText is "column=value column=value".
func diffFieldsText(fs results.Fields) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.Column + "=" + nullText(f.Value)
	}
	return strings.Join(parts, " ")
}

// writeDiffText prints the report for people.
func writeDiffText(w io.Writer, r *results.DiffReport) {
	fmt.Fprintf(w, "%s: %s (%s, %s) -> %s (%s, %s)\n", r.Table,
		r.Old.Version, r.Old.Table, plural(r.Old.Rows, "row"), r.New.Version, r.New.Table, plural(r.New.Rows, "row"))
	fmt.Fprintf(w, "key: %s; values: %s; tolerance %s\n", strings.Join(r.KeyColumns, ", "), strings.Join(r.ValueColumns, ", "), r.Tolerance)
	if r.From != "" || r.To != "" {
		lo, hi := "", ""
		if r.From != "" {
			lo = r.From + " <= "
		}
		if r.To != "" {
			hi = " < " + r.To
		}
		fmt.Fprintf(w, "windows: %swindow_start%s\n", lo, hi)
	}
	if len(r.ColumnsOnlyInOld) > 0 {
		fmt.Fprintf(w, "columns only in %s: %s\n", r.Old.Version, strings.Join(r.ColumnsOnlyInOld, ", "))
	}
	if len(r.ColumnsOnlyInNew) > 0 {
		fmt.Fprintf(w, "columns only in %s: %s\n", r.New.Version, strings.Join(r.ColumnsOnlyInNew, ", "))
	}
	more := func(listed int, n int64) {
		if int64(listed) < n {
			fmt.Fprintf(w, "  ... %d more (--max-rows)\n", n-int64(listed))
		}
	}
	for _, s := range []struct {
		version string
		rows    []results.DiffRow
		n       int64
	}{{r.Old.Version, r.OnlyInOld, r.Counts.OnlyInOld}, {r.New.Version, r.OnlyInNew, r.Counts.OnlyInNew}} {
		if s.n == 0 {
			continue
		}
		fmt.Fprintf(w, "\nonly in %s: %s\n", s.version, plural(s.n, "row"))
		for _, row := range s.rows {
			fmt.Fprintf(w, "  %s: %s\n", diffFieldsText(row.Key), diffFieldsText(row.Values))
		}
		more(len(s.rows), s.n)
	}
	for _, within := range []bool{false, true} {
		n, title := r.Counts.Changed, "changed"
		if within {
			n, title = r.Counts.WithinTolerance, "within the tolerance "+r.Tolerance.String()
		}
		if n == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: %s\n", title, plural(n, "row"))
		listed := 0
		for _, c := range r.Changed {
			if c.WithinTolerance != within {
				continue
			}
			listed++
			fmt.Fprintf(w, "  %s\n", diffFieldsText(c.Key))
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "    column\t%s\t%s\tdifference\n", r.Old.Version, r.New.Version)
			for _, col := range c.Columns {
				d := ""
				if col.Difference != nil {
					d = col.Difference.String()
				}
				fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", col.Column, nullText(col.Old), nullText(col.New), d)
			}
			tw.Flush()
		}
		more(listed, n)
	}
	if len(r.Totals) > 0 {
		fmt.Fprintf(w, "\ntotals per key value:\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  key\tcolumn\t%s\t%s\tdifference\n", r.Old.Version, r.New.Version)
		for _, t := range r.Totals {
			key := t.Column + "=" + nullText(t.Value)
			writeDiffTotals(tw, key, t.Totals)
		}
		tw.Flush()
	}
	if n := r.Counts.KeyTotals - int64(len(r.Totals)); n > 0 {
		if len(r.Totals) == 0 {
			fmt.Fprintf(w, "\ntotals per key value:\n")
		}
		fmt.Fprintf(w, "  ... %s not listed (--max-rows; 0 lists all)\n", plural(n, "more key value"))
	}
	fmt.Fprintf(w, "\ntotals over all rows compared:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  column\t%s\t%s\tdifference\n", r.Old.Version, r.New.Version)
	writeDiffTotals(tw, "", r.Overall)
	tw.Flush()
	fmt.Fprintf(w, "\n%s\n", diffVerdict(r))
}

// writeDiffTotals writes the row counts and sums of t, the first line
// labelled key (none when key is "").
func writeDiffTotals(tw io.Writer, key string, t results.Totals) {
	first := true
	label := func() string {
		if key == "" {
			return ""
		}
		if first {
			first = false
			return key + "\t"
		}
		return "\t"
	}
	fmt.Fprintf(tw, "  %srows\t%d\t%d\t%d\n", label(), t.OldRows, t.NewRows, t.NewRows-t.OldRows)
	for _, s := range t.Sums {
		fmt.Fprintf(tw, "  %s%s\t%s\t%s\t%s\n", label(), s.Column, s.Old, s.New, s.Difference)
	}
}
