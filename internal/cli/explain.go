package cli

import (
	"bufio"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/backfill"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/suggest"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/results"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
)

func newExplainCmd(stdout io.Writer) *cobra.Command {
	var table, window, version string
	var keys []string
	cmd := &cobra.Command{
		Use:   "explain PIPELINE [--table TABLE --window START --key VALUE...]",
		Short: "Show a pipeline's plan and fingerprint, or a result row and the events that made it",
		Long: `Show a pipeline's plan and fingerprint, or a result row and the events that made it.

Without --table it prints the plan of PIPELINE (a .yaml file or a .sql
script): the source and its event time, the steps before the stages, and
per stage what it reads, filter, fields, key, window, aggregates or join,
emission, the state it keeps and its sinks; then the plan fingerprint, a
hash of everything a checkpoint's state depends on. The YAML and SQL forms
of a job print the same plan and fingerprint; an edit that keeps the
fingerprint restores from the job's checkpoints (tidemark check
--previous names the state any other edit discards).

With --table:

TABLE names the stage: its SQL sink's table, that table's serving name
(revenue_minute for revenue_minute__live), or the stage's name; START is
the window's start (RFC 3339 with an offset); --key gives the group-key
values in key order (repeat it for several key columns). --result-version
reads a backfill's version of the outputs.

It prints:
  - the row in the stage's SQLite or PostgreSQL table, with its lineage
    (pipeline, spec hash, build, contract schema_version, reference data);
  - its versions over time, from the stage's jsonl changelog sink;
  - the source events the stage accepted into that window and key, each
    with its deltas (every aggregate's argument), from the stage's
    contributions sink (pipeline key contributions), and their sums.

Exit status: 0 when the row was found, 1 when it was not, 2 for a usage or
configuration error.`,
		Args: usage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if table == "" && window == "" && len(keys) == 0 && version == "" {
				_, pl, err := compilePipeline(args[0], "", nil)
				if err != nil {
					return err
				}
				fp, err := engine.PlanFingerprint(pl.Spec)
				if err != nil {
					return err
				}
				fmt.Fprint(stdout, plan.Describe(pl))
				fmt.Fprintf(stdout, "fingerprint %s\n", fp)
				return nil
			}
			if table == "" || window == "" {
				return &exitError{code: 2, err: errors.New("--table and --window go together (without both, explain prints the plan)")}
			}
			start, err := time.Parse(time.RFC3339Nano, window)
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("--window %q: not an RFC 3339 time with an offset", window)}
			}
			var prepare func(*spec.Pipeline) error
			if version != "" {
				prepare = func(p *spec.Pipeline) error { return backfill.Apply(p, version) }
			}
			_, pl, err := compilePipeline(args[0], "", prepare)
			if err != nil {
				return err
			}
			var st *plan.Stage
			for _, s := range pl.Stages {
				if s.Name == table {
					st = s
				}
				for _, sk := range s.Sinks {
					if (sk.Type == "sqlite" || sk.Type == "postgres") && (sk.Table == table || results.ServingView(sk.Table) == table) {
						st = s
					}
				}
			}
			if st == nil {
				return &exitError{code: 2, err: fmt.Errorf("no stage of %s writes table %q", args[0], table)}
			}
			if len(keys) != len(st.Key) {
				names := make([]string, len(st.Key))
				for i, f := range st.Key {
					names[i] = f.Name
				}
				return &exitError{code: 2, err: fmt.Errorf("stage %s has %d key columns (%s): give --key %d times", st.Name, len(st.Key), strings.Join(names, ", "), len(st.Key))}
			}
			return explain(stdout, st, start.UnixMilli(), keys)
		},
	}
	cmd.Flags().StringVar(&table, "table", "", "the result table (or stage name)")
	cmd.Flags().StringVar(&window, "window", "", "the window's start, RFC 3339 with an offset")
	cmd.Flags().StringArrayVar(&keys, "key", nil, "a group-key value, in key order (repeat for several)")
	cmd.Flags().StringVar(&version, "result-version", "", "read a backfill's result version (its tables and files)")
	return cmd
}

// keyText is a key value as --key gives it.
func keyText(v row.Value, loc *time.Location) string {
	if v.Kind == row.KindTime {
		return row.FormatTime(v.I, loc)
	}
	return string(v.AppendText(nil, loc))
}

func explain(w io.Writer, st *plan.Stage, start int64, keys []string) error {
	loc := st.Loc
	startText := row.FormatTime(start, loc)
	fmt.Fprintf(w, "stage %s, window starting %s, key %s\n", st.Name, startText, strings.Join(keys, ", "))
	found := false

	// The row, from the stage's SQLite table.
	for _, sk := range st.Sinks {
		if sk.Type != "sqlite" {
			continue
		}
		db, err := sql.Open("sqlite", "file:"+sk.Path+"?mode=ro")
		if err != nil {
			return err
		}
		q := `SELECT * FROM "` + sk.Table + `" WHERE window_start = ?`
		qargs := []any{startText}
		for i, f := range st.Key {
			q += ` AND "` + f.Name + `" IS ?`
			qargs = append(qargs, keys[i])
		}
		rows, err := db.Query(q, qargs...)
		if err != nil {
			db.Close()
			return fmt.Errorf("%s table %s: %w", sk.Path, sk.Table, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				db.Close()
				return err
			}
			found = true
			fmt.Fprintf(w, "\nrow (%s, table %s):\n", sk.Path, sk.Table)
			for i, c := range cols {
				writeColumn(w, c, fmt.Sprint(vals[i]))
			}
		}
		rows.Close()
		db.Close()
	}

	// The row, from the stage's PostgreSQL result table.
	for _, sk := range st.Sinks {
		if sk.Type != "postgres" || sk.Mode == "ledger" {
			continue
		}
		ok, err := explainPostgres(w, sk.DSN, sk.Table, st, start, keys)
		if err != nil {
			return err
		}
		found = found || ok
	}

	// Its versions over time, from a jsonl changelog sink.
	var near nearMiss
	for _, sk := range st.Sinks {
		if sk.Type != "jsonl" {
			continue
		}
		f, err := os.Open(sk.Path)
		if err != nil {
			fmt.Fprintf(w, "\nversions: %v\n", err)
			continue
		}
		fmt.Fprintf(w, "\nversions over time (%s):\n", sk.Path)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		n := 0
		// Rows of `tidemark run` end with the lineage column.
		withLin := st.Desc
		withLin.Values = append(append([]changelog.Column(nil), st.Desc.Values...), changelog.Column{Name: engine.LineageColumn, Kind: row.KindString})
		for sc.Scan() {
			r, err := changelog.DecodeRowJSON(sc.Bytes(), &withLin)
			if err != nil {
				r, err = changelog.DecodeRowJSON(sc.Bytes(), &st.Desc)
			}
			if err != nil {
				continue
			}
			match := true
			for i := range st.Key {
				if keyText(r.Key[i], loc) != keys[i] {
					match = false
				}
			}
			if r.WindowStart != start {
				if match {
					near.window(r.WindowStart)
				}
				continue
			}
			if !match {
				near.key(r.Key, loc)
				continue
			}
			n++
			found = true
			var vals []string
			for i, c := range st.Desc.Values {
				vals = append(vals, c.Name+"="+string(r.Values[i].AppendText(nil, loc)))
			}
			fmt.Fprintf(w, "  %-13s v%d  %s  final=%v  at %s\n", r.Op, r.Version, strings.Join(vals, " "), r.IsFinal, row.FormatTime(r.UpdatedAt, loc))
		}
		f.Close()
		if n == 0 {
			fmt.Fprintln(w, "  none")
		}
	}

	// The contributing events.
	c := st.Contributions
	if c == nil || c.Sink == nil {
		fmt.Fprintf(w, "\ncontributing events: not recorded: stage %s has no contributions sink. To record the events behind each row from the next run on, add to the stage\n"+
			"  contributions: {sink: {type: jsonl, path: out/%s.events.jsonl}}\n", st.Name, st.Name)
	} else {
		f, err := os.Open(c.Sink.Path)
		if err != nil {
			return fmt.Errorf("contributions: %w", err)
		}
		defer f.Close()
		fmt.Fprintf(w, "\ncontributing events (%s):\n", c.Sink.Path)
		specs := map[string]aggregate.Spec{}
		for _, a := range st.Aggs {
			specs[a.Name] = a
		}
		folds := map[string]*fold{}
		var order []string
		n := 0
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			var rec struct {
				EventID   *string                    `json:"event_id"`
				EventTime string                     `json:"event_time"`
				Windows   [][2]string                `json:"windows"`
				Key       map[string]json.RawMessage `json:"key"`
				Deltas    json.RawMessage            `json:"deltas"`
				Source    string                     `json:"source"`
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				continue
			}
			in := false
			for _, win := range rec.Windows {
				if t, err := time.Parse(time.RFC3339Nano, win[0]); err == nil && t.UnixMilli() == start {
					in = true
				}
			}
			for i, k := range st.Key {
				var s string
				raw := rec.Key[k.Name]
				if json.Unmarshal(raw, &s) != nil {
					s = string(raw)
				}
				if s != keys[i] {
					in = false
				}
			}
			if !in {
				continue
			}
			n++
			found = true
			id := "-"
			if rec.EventID != nil {
				id = *rec.EventID
			}
			var parts []string
			for _, d := range orderedDeltas(rec.Deltas) {
				fd := folds[d.k]
				if fd == nil {
					fd = &fold{spec: specs[d.k], distinct: map[string]bool{}}
					folds[d.k] = fd
					order = append(order, d.k)
				}
				parts = append(parts, d.k+" "+fd.add(d.v))
			}
			fmt.Fprintf(w, "  %-12s %s  %s  (%s)\n", id, rec.EventTime, strings.Join(parts, ", "), rec.Source)
		}
		if n == 0 {
			fmt.Fprintln(w, "  none")
		} else {
			var parts []string
			for _, k := range order {
				parts = append(parts, k+" "+folds[k].String())
			}
			fmt.Fprintf(w, "  %d events; recomputed from them: %s\n", n, strings.Join(parts, ", "))
		}
	}
	if !found {
		return fmt.Errorf("no row, version or event for window %s and key %s%s", startText, strings.Join(keys, ", "), near.hint(keys, start, loc))
	}
	return nil
}

// nearMiss gathers, while explain reads a changelog, what would have
// matched had the window or the key been another: the keys with rows in
// the asked window and the window starts (Unix ms) of the asked key, so
// that a query that finds nothing says what is there.
type nearMiss struct {
	keys    map[string]bool
	windows map[int64]bool
}

// nearMissMax bounds what a nearMiss keeps (keys and windows each): a
// changelog may hold millions of rows; the hint needs a few.
const nearMissMax = 100_000

func (n *nearMiss) key(k []row.Value, loc *time.Location) {
	if n.keys == nil {
		n.keys = map[string]bool{}
	}
	if len(n.keys) >= nearMissMax {
		return
	}
	parts := make([]string, len(k))
	for i, v := range k {
		parts[i] = keyText(v, loc)
	}
	n.keys[strings.Join(parts, ", ")] = true
}

func (n *nearMiss) window(start int64) {
	if n.windows == nil {
		n.windows = map[int64]bool{}
	}
	if len(n.windows) < nearMissMax {
		n.windows[start] = true
	}
}

// hint returns the text explain adds to "no row …": the nearest key
// names in the window (internal/suggest), or the windows of the key
// nearest to start (at most three, before and after), or "".
func (n *nearMiss) hint(keys []string, start int64, loc *time.Location) string {
	if len(n.windows) > 0 {
		ws := make([]int64, 0, len(n.windows))
		for w := range n.windows {
			ws = append(ws, w)
		}
		slices.SortFunc(ws, func(a, b int64) int {
			return cmp.Or(cmp.Compare(absDiff(a, start), absDiff(b, start)), cmp.Compare(a, b))
		})
		ws = ws[:min(3, len(ws))]
		slices.Sort(ws)
		texts := make([]string, len(ws))
		for i, w := range ws {
			texts[i] = row.FormatTime(w, loc)
		}
		return fmt.Sprintf(" (the key has rows in the windows starting %s; a window is named by its start)", strings.Join(texts, ", "))
	}
	if len(n.keys) > 0 {
		cands := make([]string, 0, len(n.keys))
		for k := range n.keys {
			cands = append(cands, k)
		}
		slices.Sort(cands)
		return suggest.Hint(strings.Join(keys, ", "), cands)
	}
	return ""
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

type kv struct{ k, v string }

// orderedDeltas reads a JSON object keeping its key order.
func orderedDeltas(raw json.RawMessage) []kv {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var out []kv
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		out = append(out, kv{fmt.Sprint(t), string(v)})
	}
	return out
}

// fold recomputes one aggregate column from the contributions' deltas
// (each the aggregate's argument for the event, 1 for count()), so that
// explain shows how the row's value comes from the events listed: a sum's
// deltas add up, a distinct count counts distinct values, min and max keep
// the extreme, avg sums and counts. A null argument counts for nothing, as
// in SQL.
type fold struct {
	spec     aggregate.Spec
	n        int64 // non-null arguments
	sum      row.Decimal
	best     string // min/max/arg_*: the extreme's JSON text
	distinct map[string]bool
}

// add takes one delta (JSON text) and returns how to show it.
func (f *fold) add(v string) string {
	null := v == "null"
	if !null {
		f.n++
	}
	switch fn := f.spec.Func; {
	case fn == "count" && !f.spec.HasArg:
		return "+1"
	case fn == "count":
		if null {
			return "+0 (null)"
		}
		return "+1"
	case fn == "count_distinct":
		if null {
			return "null (not counted)"
		}
		f.distinct[canonical(v)] = true
		return v
	case fn == "sum" || fn == "avg" || fn == "":
		if null {
			return "null"
		}
		if d, err := row.ParseDecimal([]byte(v)); err == nil {
			if f.n == 1 {
				f.sum = d
			} else {
				f.sum = f.sum.Add(d)
			}
		}
		if fn == "avg" || strings.HasPrefix(v, "-") {
			return v
		}
		return "+" + v
	default: // min, max, arg_min, arg_max: the compared value
		if !null && f.better(v) {
			f.best = v
		}
		return v
	}
}

// better reports whether v beats the extreme kept so far: numbers by
// value, timestamps as instants, strings as text.
func (f *fold) better(v string) bool {
	if f.best == "" {
		return true
	}
	c := compareJSON(v, f.best)
	if strings.HasSuffix(f.spec.Func, "max") {
		return c > 0
	}
	return c < 0
}

// compareJSON orders two JSON scalars of one aggregate argument.
func compareJSON(a, b string) int {
	if x, err := row.ParseDecimal([]byte(a)); err == nil {
		if y, err := row.ParseDecimal([]byte(b)); err == nil {
			return x.Cmp(y)
		}
	}
	var sa, sb string
	if json.Unmarshal([]byte(a), &sa) == nil && json.Unmarshal([]byte(b), &sb) == nil {
		ta, ea := time.Parse(time.RFC3339Nano, sa)
		tb, eb := time.Parse(time.RFC3339Nano, sb)
		if ea == nil && eb == nil {
			return ta.Compare(tb)
		}
		return strings.Compare(sa, sb)
	}
	return strings.Compare(a, b)
}

// String is the aggregate recomputed over the deltas added.
func (f *fold) String() string {
	switch fn := f.spec.Func; {
	case fn == "count":
		return strconv.FormatInt(f.n, 10)
	case fn == "count_distinct":
		return fmt.Sprintf("%d distinct", len(f.distinct))
	case f.n == 0:
		return "null"
	case fn == "avg":
		return fmt.Sprintf("%s / %d", row.FormatDecimal(nil, f.sum), f.n) // the sum over the count of non-null values
	case fn == "sum" || fn == "":
		return string(row.FormatDecimal(nil, f.sum))
	case strings.HasPrefix(fn, "arg_"):
		return strings.TrimPrefix(fn, "arg_") + " " + f.best
	}
	return f.best
}

// canonical is a JSON value's text with numbers by value (2.0 and 2.00 are
// one distinct value, as the aggregate compares them).
func canonical(v string) string {
	if d, err := row.ParseDecimal([]byte(v)); err == nil {
		return "n:" + d.String()
	}
	return v
}

// explainPostgres prints the row of window start and keys from a
// PostgreSQL result table, reporting whether there was one.
func explainPostgres(w io.Writer, dsn, table string, st *plan.Stage, start int64, keys []string) (bool, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return false, fmt.Errorf("postgres %s: %w", table, err)
	}
	defer conn.Close(ctx)
	quoted := make([]string, 0, 2)
	for _, part := range strings.Split(table, ".") {
		quoted = append(quoted, `"`+strings.ReplaceAll(part, `"`, `""`)+`"`)
	}
	q := `SELECT * FROM ` + strings.Join(quoted, ".") + ` WHERE window_start = $1`
	qargs := []any{time.UnixMilli(start)}
	for i, f := range st.Key {
		q += fmt.Sprintf(` AND "%s"::text IS NOT DISTINCT FROM $%d`, strings.ReplaceAll(f.Name, `"`, `""`), i+2)
		qargs = append(qargs, keys[i])
	}
	rows, err := conn.Query(ctx, q, qargs...)
	if err != nil {
		return false, fmt.Errorf("postgres %s: %w", table, err)
	}
	defer rows.Close()
	found := false
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return false, err
		}
		found = true
		fmt.Fprintf(w, "\nrow (postgres, table %s):\n", table)
		for i, fd := range rows.FieldDescriptions() {
			v := vals[i]
			text := fmt.Sprint(v)
			switch x := v.(type) {
			case time.Time:
				text = row.FormatTime(x.UnixMilli(), st.Loc)
			case pgtype.Numeric:
				if b, err := x.MarshalJSON(); err == nil {
					text = string(b)
				}
			}
			writeColumn(w, fd.Name, text)
		}
	}
	return found, rows.Err()
}

// writeColumn prints one column of a result row, the lineage column
// spelled out.
func writeColumn(w io.Writer, name, text string) {
	if name == engine.LineageColumn {
		l := engine.ParseLineage(text)
		text = fmt.Sprintf("pipeline %s, spec %s, tidemark %s, contract %s, reference data %s", l.Pipeline, l.SpecHash, l.Tidemark, l.Contract, l.Reference)
		if l.Replay != "" {
			text += ", replay " + l.Replay
		}
	}
	fmt.Fprintf(w, "  %-14s %s\n", name, text)
}
