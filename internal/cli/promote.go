package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/results"
)

// newPromoteCmd is `tidemark promote`: switch a result's serving view to a
// version, with an optional cutover, or roll back (docs/reprocessing.md).
func newPromoteCmd(stdout io.Writer) *cobra.Command {
	var f promoteFlags
	cmd := &cobra.Command{
		Use:   "promote --db DATABASE TABLE VERSION [--cutover T] [--from T]",
		Short: "Switch the serving view of a result table to a version, atomically; --rollback undoes it",
		Long: `Switch the serving view of a result table to a version, atomically; --rollback undoes it.

TABLE is the serving name readers query (revenue_minute); VERSION is a
version label whose table is TABLE__VERSION (revenue_minute__v2). The view
TABLE is replaced in one transaction (SQLite: DROP VIEW and CREATE VIEW
inside BEGIN IMMEDIATE; PostgreSQL: CREATE OR REPLACE VIEW, which keeps its
grants and the views built on it), and the promotion is recorded in the
table tidemark_promotions beside it, with the view definition it replaced.

--cutover T (RFC 3339 with an offset) is the Lambda boundary: VERSION
serves the windows with window_start < T, and the windows with
window_start >= T come from the live version (the one that serves the
latest windows now). The boundary compares window_start only: a window
belongs wholly to the side of its start, so none is served twice or
missed. --from T1 bounds the range below as well: windows before T1 stay
as they are served now (a backfill of --from T1 --to T2 is promoted with
--from T1 --cutover T2). Both need a view made by an earlier promotion:
promote the live version first.

Guards (nothing changes): the table of a served version must exist and
have the columns the view serves now (names and types; the error names
each difference); TABLE itself must not be a table.

--rollback restores the view as it was before the promotion in effect and
marks that promotion rolled back; again, it goes one further back. With
VERSION, it refuses unless the promotion in effect is of VERSION.
--history lists the promotions.

Exit status: 0 done, 1 refused or failed (the reason is printed), 2 usage.`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case f.rollback && f.history:
				return usageErr("promote: --rollback and --history exclude each other")
			case f.history:
				return usage(cobra.ExactArgs(1))(cmd, args)
			case f.rollback:
				return usage(cobra.RangeArgs(1, 2))(cmd, args)
			}
			return usage(cobra.ExactArgs(2))(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPromote(cmd.Context(), stdout, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.db, "db", "", "the database: a SQLite file (PATH or sqlite://PATH) or a postgres:// URL; required")
	fl.StringVar(&f.cutover, "cutover", "", "serve VERSION only for windows with window_start < this instant (RFC 3339 with offset)")
	fl.StringVar(&f.from, "from", "", "serve VERSION only for windows with window_start >= this instant (RFC 3339 with offset)")
	fl.BoolVar(&f.rollback, "rollback", false, "restore the view as it was before the promotion in effect")
	fl.BoolVar(&f.history, "history", false, "list the promotions of TABLE")
	return cmd
}

// promoteFlags are the flags of promote.
type promoteFlags struct {
	db, cutover, from string
	rollback, history bool
}

func runPromote(ctx context.Context, stdout io.Writer, f promoteFlags, args []string) error {
	if f.db == "" {
		return usageErr("promote: --db is required")
	}
	if (f.rollback || f.history) && (f.cutover != "" || f.from != "") {
		return usageErr("promote: --cutover and --from apply to a promotion, not to --rollback or --history")
	}
	table, version := args[0], ""
	if len(args) > 1 {
		version = args[1]
		if err := results.CheckVersion(version); err != nil {
			return usageErr("promote: %w", err)
		}
	}
	var o results.PromoteOptions
	var err error
	if o.Cutover, err = parseInstant("cutover", f.cutover); err != nil {
		return err
	}
	if o.From, err = parseInstant("from", f.from); err != nil {
		return err
	}
	if !o.From.IsZero() && !o.Cutover.IsZero() && !o.From.Before(o.Cutover) {
		return usageErr("promote: --from %s is not before --cutover %s", f.from, f.cutover)
	}
	db, err := results.Open(ctx, f.db)
	if err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	defer db.Close()
	switch {
	case f.history:
		h, err := db.History(ctx, table)
		if err != nil {
			return fmt.Errorf("promote: %w", err)
		}
		writeHistory(stdout, table, h)
		return nil
	case f.rollback:
		res, err := db.Rollback(ctx, table, version)
		if err != nil {
			return err
		}
		u := res.Undone
		fmt.Fprintf(stdout, "%s: rolled back promotion %d (%s, %s)\n", table, u.ID, u.Version, u.PromotedAt.Format("2006-01-02T15:04:05Z07:00"))
		if res.Serving != nil {
			fmt.Fprintf(stdout, "  serving again (promotion %d): %s\n", res.Serving.ID, results.DescribeSegments(res.Serving.Segments))
		} else {
			fmt.Fprintf(stdout, "  serving again the view as it was before promotion %d\n", u.ID)
		}
		return nil
	}
	p, err := db.Promote(ctx, table, version, o)
	if err != nil {
		return err
	}
	if p.Unchanged {
		fmt.Fprintf(stdout, "%s already serves this (promotion %d): %s; nothing changed\n", table, p.ID, results.DescribeSegments(p.Segments))
		return nil
	}
	fmt.Fprintf(stdout, "%s: promoted %s (promotion %d)\n", table, version, p.ID)
	fmt.Fprintf(stdout, "  serving: %s\n", results.DescribeSegments(p.Segments))
	if p.PreviousDefinition != "" {
		where := f.db // a SQLite path; a PostgreSQL DSN may hold a password
		if strings.HasPrefix(where, "postgres://") || strings.HasPrefix(where, "postgresql://") {
			where = "DSN"
		}
		fmt.Fprintf(stdout, "  undo:    tidemark promote --db %s %s --rollback\n", where, table)
	}
	return nil
}

// writeHistory prints the promotions, oldest first.
func writeHistory(w io.Writer, table string, h []results.Promotion) {
	if len(h) == 0 {
		fmt.Fprintf(w, "%s: no promotions recorded\n", table)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "id\tpromoted_at\tversion\tserving\trolled_back_at\n")
	for _, p := range h {
		rb := "-"
		if p.RolledBackAt != nil {
			rb = p.RolledBackAt.Format("2006-01-02T15:04:05Z07:00")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", p.ID, p.PromotedAt.Format("2006-01-02T15:04:05Z07:00"), p.Version, results.DescribeSegments(p.Segments), rb)
	}
	tw.Flush()
}
