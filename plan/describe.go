package plan

import (
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/spec"
)

// Describe renders the plan as `tidemark explain PIPELINE` prints it: the
// source and its event time, the steps before the stages (contract,
// dedup, order_by, reference), and per stage what it reads, its filter,
// derived fields, key, window, aggregates or join, emission, the state it
// keeps and its sinks. The text is the same for a pipeline and its SQL
// form when they compile to the same plan (sql/planner), and it names no
// file of the machine it runs on beyond the pipeline's own paths.
func Describe(pl *Plan) string {
	p := pl.Spec
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("pipeline %s\n", p.Name)
	w("  source      %s\n", describeSource(&p.Source))
	w("  event time  %s\n", describeEventTime(&p.EventTime))
	for _, in := range p.Inputs {
		w("  input %s: %s; event time %s\n", in.Name, describeSource(&in.Source), describeEventTime(&in.EventTime))
	}
	if c := pl.Contract; c != nil {
		w("  contract    %s (%s)\n", c.Product, p.Contract)
	}
	if d := p.Dedup; d != nil {
		w("  dedup       by %s, ids kept %s of event time (state: ~34 bytes per id)\n", d.Key, d.TTL)
	}
	if o := p.OrderBy; o != nil {
		w("  order_by    newest %s per %s", o.Version, o.Key)
		if o.TTL > 0 {
			w(", kept %s", o.TTL)
		}
		w(" (state: one version per entity)\n")
	}
	if r := p.Reference; r != nil {
		w("  reference   %s by %s\n", orText(r.Path, "topic "+r.Topic), r.Key)
	}
	if s := p.Quarantine.Sink; s != nil {
		w("  quarantine  %s\n", describeSink(s))
	}
	if s := p.Conflicts.Sink; s != nil {
		w("  conflicts   %s\n", describeSink(s))
	}
	stages := p.StageList()
	for i, s := range pl.Stages {
		st := stages[i]
		kind := "aggregation"
		switch {
		case len(s.Union) > 0:
			kind = "union"
		case s.Join != nil:
			kind = st.Join.Type + " join"
		case s.Desc.Stateless:
			kind = "select"
		case st.TopN != nil:
			kind = "top-n"
		}
		reads := "source"
		if s.Input >= 0 {
			reads = pl.Stages[s.Input].Name
		}
		if s.Join != nil {
			reads = st.Join.Left.Input + ", " + st.Join.Right.Input
		}
		if len(s.Union) > 0 {
			reads = strings.Join(st.Union, ", ")
		}
		w("stage %s: %s, reads %s\n", s.Name, kind, reads)
		if st.EventTime != nil {
			w("  event time  %s\n", st.EventTime.Field)
		}
		if st.Filter != "" {
			w("  filter      %s\n", st.Filter)
		}
		for _, f := range st.Fields {
			w("  field       %s = %s\n", f.Name, f.Expr)
		}
		switch {
		case len(s.Union) > 0:
			var cols []string
			for _, c := range s.Desc.Key {
				cols = append(cols, c.Name)
			}
			for _, c := range s.Desc.Values {
				cols = append(cols, c.Name)
			}
			w("  columns     %s (every row of %s as it is emitted)\n", strings.Join(cols, ", "), strings.Join(st.Union, " and "))
			w("  state       none: its stages' rows go to its sinks\n")
		case s.Join != nil:
			describeJoin(&b, st.Join)
		case s.Desc.Stateless:
			w("  columns     %s\n", strings.Join(st.Select, ", "))
			w("  state       none: each kept row is emitted at once\n")
		default:
			if len(st.Key) > 0 {
				w("  key         %s\n", strings.Join(st.Key, ", "))
			} else {
				w("  key         none (one group)\n")
			}
			w("  window      %s\n", describeWindow(&st.Window))
			if t := st.TopN; t != nil {
				cols := "none"
				if len(t.Columns) > 0 {
					cols = strings.Join(t.Columns, ", ")
				}
				w("  top_n       the first %d rows by %s; columns %s; rank %s\n", t.N, strings.Join(t.Order, ", "), cols, t.Rank)
				if st.Emit.Mode == "final" {
					w("  state       per key: its %d first rows (top_n) in panes (one per window and key)\n", t.N)
				} else {
					w("  state       per key: its %d first rows (top_n) and each rank's version in panes (one per window and key); a record entering them emits the ranks it changed at once\n", t.N)
				}
				break
			}
			var aggs []string
			for _, a := range st.Aggregates {
				aggs = append(aggs, a.Name+" = "+a.Expr)
			}
			w("  aggregates  %s\n", strings.Join(aggs, "; "))
			layout := "panes (one accumulator per window and key)"
			switch {
			case st.Window.Type == "session":
				layout = "sessions per key (merged as they touch)"
			case s.Operator.Assigner != nil && s.Operator.Assigner.MaxWindows() > 1:
				layout = "slices (one partial aggregate per slice and key, merged when a window fires)"
			}
			w("  state       per key: %d aggregate(s) in %s\n", len(st.Aggregates), layout)
		}
		if (!s.Desc.Stateless || s.Join != nil) && len(s.Union) == 0 {
			w("  emit        %s", st.Emit.Mode)
			if st.AllowedLateness > 0 {
				w(", allowed lateness %s", st.AllowedLateness)
			}
			if st.Emit.EarlyEvery > 0 {
				w(", early firings every %s", st.Emit.EarlyEvery)
			}
			w("; too late: %s\n", describeLate(&st.Late))
		}
		if len(st.Sinks) == 0 {
			w("  sinks       none (rows counted)\n")
		}
		for _, sk := range st.Sinks {
			w("  sink        %s\n", describeSink(&sk))
		}
		if c := st.Contributions; c != nil && c.Sink != nil {
			w("  contributions %s (every accepted event with its deltas: tidemark explain)\n", describeSink(c.Sink))
		}
	}
	return b.String()
}

func orText(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func describeSource(s *spec.Source) string {
	switch s.Type {
	case "nexmark":
		return fmt.Sprintf("nexmark generator, %d events at %d events/s, seed %d", s.Events, s.Rate, s.Seed)
	case "kafka":
		return fmt.Sprintf("kafka topics %s (%s)", strings.Join(s.Topics, ", "), orText(s.Format, "jsonl"))
	case "postgres_cdc":
		// The connection string is left out: it may hold a password.
		out := fmt.Sprintf("postgres_cdc table %s, publication %s, slot %s, snapshot %s", s.Table, s.Publication,
			orText(s.Slot, "named after the pipeline"), orText(s.Snapshot, "initial"))
		if len(s.KeyColumns) > 0 {
			out += ", key " + strings.Join(s.KeyColumns, ", ")
		}
		return out
	}
	out := fmt.Sprintf("file %s (%s)", s.Path, s.Format)
	if r := s.Replay; r != nil {
		out += fmt.Sprintf(", replayed with seed %d into %d partition(s)", r.Seed, max(r.Partitions, 1))
	}
	if o := s.Ordinal; o != nil {
		out += fmt.Sprintf(", %s numbering lines per %s", o.Field, o.Per)
	}
	return out
}

func describeEventTime(e *spec.EventTime) string {
	out := e.Field
	switch {
	case e.Layout != "":
		out += fmt.Sprintf(" (%q in %s)", e.Layout, e.Timezone)
	case e.Format != "" && e.Format != "rfc3339":
		out += " (" + e.Format + ")"
	}
	out += fmt.Sprintf(", watermark %s behind", e.OutOfOrderness)
	if e.IdleTimeout > 0 {
		out += fmt.Sprintf(", a partition idle after %s", e.IdleTimeout)
	}
	return out
}

func describeWindow(w *spec.Window) string {
	zone := ""
	if w.Timezone != "" && w.Timezone != "UTC" {
		zone = " in " + w.Timezone
	}
	off := ""
	if w.Offset != 0 {
		off = fmt.Sprintf(", offset %s", w.Offset)
	}
	switch w.Type {
	case "tumbling":
		return fmt.Sprintf("tumbling %s%s%s", w.Size, off, zone)
	case "sliding":
		return fmt.Sprintf("sliding %s every %s%s%s", w.Size, w.Slide, off, zone)
	case "session":
		return fmt.Sprintf("session, gap %s", w.Gap)
	case "cumulate":
		return fmt.Sprintf("cumulate to %s by %s%s%s", w.Size, w.Step, off, zone)
	case "global":
		return "global (one window per key, fires when the input ends)"
	}
	return w.Type
}

func describeJoin(b *strings.Builder, j *spec.Join) {
	side := func(s spec.JoinSide) string {
		out := s.As + " = " + s.Input
		if s.Filter != "" {
			out += " where " + s.Filter
		}
		return out
	}
	fmt.Fprintf(b, "  join        %s: %s; %s\n", j.Kind, side(j.Left), side(j.Right))
	fmt.Fprintf(b, "  on          %s\n", strings.Join(j.On, " and "))
	switch j.Type {
	case "interval":
		if bt := j.Between; bt != nil {
			if bt.UpperField != "" {
				fmt.Fprintf(b, "  bounds      %s ≤ R − L, R ≤ %s (at most %s after L)\n", bt.Lower, bt.UpperField, bt.MaxSpan)
			} else if bt.Upper != nil {
				fmt.Fprintf(b, "  bounds      %s ≤ R − L ≤ %s\n", bt.Lower, *bt.Upper)
			}
		}
		fmt.Fprintf(b, "  state       rows of each side by key, until the other side's watermark passes their last match\n")
	case "regular":
		fmt.Fprintf(b, "  ttl         %s (rows at most that far apart pair up)\n", j.TTL)
		fmt.Fprintf(b, "  state       rows of each side by key, for the ttl\n")
	case "window":
		if j.Window != nil {
			fmt.Fprintf(b, "  window      %s\n", describeWindow(j.Window))
		}
		fmt.Fprintf(b, "  state       rows of each side by window and key, until the window closes\n")
	case "temporal":
		fmt.Fprintf(b, "  state       the right side's versions by key; left rows until the versions' watermark passes them\n")
	}
	var cols []string
	for _, c := range j.Select {
		cols = append(cols, c.Name+" = "+c.Expr)
	}
	fmt.Fprintf(b, "  columns     %s\n", strings.Join(cols, ", "))
}

func describeLate(l *spec.Late) string {
	if l.Policy == "side_output" && l.Sink != nil {
		return "side output " + describeSink(l.Sink)
	}
	return "dropped (counted)"
}

func describeSink(s *spec.Sink) string {
	switch s.Type {
	case "sqlite":
		return fmt.Sprintf("sqlite %s table %s", s.Path, s.Table)
	case "postgres":
		return fmt.Sprintf("postgres table %s (%s)", s.Table, orText(s.Mode, "results"))
	case "kafka":
		out := "kafka topic " + s.Topic
		if s.Upsert {
			out += " (upsert)"
		}
		return out
	case "stdout":
		return "stdout"
	}
	if s.Path != "" {
		return s.Type + " " + s.Path
	}
	return s.Type
}
