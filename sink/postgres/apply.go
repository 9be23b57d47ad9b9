package postgres

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
)

// The ways of applying a batch to the result table.
const (
	// applyCopy: COPY the batch into a temporary staging table, then one
	// INSERT … SELECT … ON CONFLICT DO UPDATE … WHERE and one DELETE …
	// USING per round.
	applyCopy = iota
	// applyValues: multi-row INSERT … VALUES … ON CONFLICT statements of
	// perStmt rows and one DELETE per delete, pipelined in one pgx batch.
	applyValues
)

// defaultMethod is the way a Results applies its rows. Measured with
// BenchmarkResults (100k upserts of a text key, a numeric and a bigint in
// one transaction, local PostgreSQL 15, 2-core development VM, rows/s):
// copy 130–170k into an empty table and 110–128k over existing rows;
// values of 100 rows 137–142k and 100–108k; 500 rows 110–136k and
// 83–106k; 1000 rows 97–109k and 70–74k. Figures and how to reproduce
// them: docs/connectors/postgres.md, "Performance".
const defaultMethod = applyCopy

// defaultPerStatement is the most rows of one multi-row upsert
// (applyValues), and maxParams PostgreSQL's limit on parameters per
// statement.
const (
	defaultPerStatement = 500
	maxParams           = 65535
)

// stageTable is the name of a connection's temporary staging table.
const stageTable = "tidemark_results_stage"

// statements holds a result table's SQL, built once from its columns.
type statements struct {
	table       tableName
	cols        []column
	nKey        int
	createStage string
	stageCols   []string // the staging table's columns: rnd, del, c0 … cN
	upsertAll   string   // every staged row is an upsert
	upsertLive  string   // the staged upserts (not deletes)
	upsertRound string   // the staged upserts of round $1
	deleteAll   string   // the staged deletes
	deleteRound string   // the staged deletes of round $1
	deleteOne   string   // one delete: key columns, then version
	tail        string   // ON CONFLICT … of an upsert
	values      map[int]string
}

func newStatements(t tableName, cols []column, nKey int) statements {
	s := statements{table: t, cols: cols, nKey: nKey, values: map[int]string{}}
	var create strings.Builder
	create.WriteString("CREATE TEMPORARY TABLE IF NOT EXISTS " + stageTable + " (rnd integer NOT NULL, del boolean NOT NULL")
	s.stageCols = []string{"rnd", "del"}
	for i, c := range cols {
		name := "c" + strconv.Itoa(i)
		s.stageCols = append(s.stageCols, name)
		typ := ddlType(c.typ)
		if c.typ == typNum {
			typ = typText // exact literal, cast on insert
		}
		create.WriteString(", " + name + " " + typ)
	}
	create.WriteString(") ON COMMIT DELETE ROWS")
	s.createStage = create.String()

	// ON CONFLICT … DO UPDATE … WHERE: the version guard (sink/sqlite's
	// upsertSQL writes the same clause in SQLite's dialect and quoting).
	var tail strings.Builder
	tail.WriteString(" ON CONFLICT (")
	tail.WriteString(strings.Join(quoteAll(resultKey(cols, nKey)), ", "))
	tail.WriteString(") DO UPDATE SET ")
	for i, c := range updatable(cols, nKey) {
		if i > 0 {
			tail.WriteString(", ")
		}
		tail.WriteString(quote(c.name) + " = excluded." + quote(c.name))
	}
	tail.WriteString(" WHERE cur." + quote(sink.ColVersion) + " <= excluded." + quote(sink.ColVersion))
	s.tail = tail.String()

	exprs := make([]string, len(cols))
	for i, c := range cols {
		exprs[i] = s.stageExpr(i, c)
	}
	head := "INSERT INTO " + t.sql() + " AS cur (" + columnList(cols) + ") SELECT " +
		strings.Join(exprs, ", ") + " FROM pg_temp." + stageTable + " s"
	s.upsertAll = head + s.tail
	s.upsertLive = head + " WHERE NOT s.del" + s.tail
	s.upsertRound = head + " WHERE s.rnd = $1 AND NOT s.del" + s.tail

	match := []string{"cur." + quote(cols[0].name) + " = s.c0"}
	for i := 2; i < 2+nKey; i++ {
		match = append(match, "cur."+quote(cols[i].name)+" IS NOT DISTINCT FROM "+s.stageExpr(i, cols[i]))
	}
	match = append(match, "cur."+quote(sink.ColVersion)+" < s.c"+strconv.Itoa(len(cols)-4))
	del := "DELETE FROM " + t.sql() + " AS cur USING pg_temp." + stageTable + " s WHERE s.del AND "
	s.deleteAll = del + strings.Join(match, " AND ")
	s.deleteRound = del + "s.rnd = $1 AND " + strings.Join(match, " AND ")

	one := []string{quote(cols[0].name) + " = $1"}
	for i := 2; i < 2+nKey; i++ {
		one = append(one, quote(cols[i].name)+" IS NOT DISTINCT FROM $"+strconv.Itoa(i))
	}
	one = append(one, quote(sink.ColVersion)+" < $"+strconv.Itoa(nKey+2))
	s.deleteOne = "DELETE FROM " + t.sql() + " WHERE " + strings.Join(one, " AND ")
	return s
}

// stageExpr reads column i of the staging table as the result table's
// type.
func (s *statements) stageExpr(i int, c column) string {
	e := "s.c" + strconv.Itoa(i)
	if c.typ == typNum {
		e += "::numeric"
	}
	return e
}

// valuesSQL returns the multi-row upsert of n rows.
func (s *statements) valuesSQL(n int) string {
	if q, ok := s.values[n]; ok {
		return q
	}
	var b strings.Builder
	b.WriteString("INSERT INTO " + s.table.sql() + " AS cur (" + columnList(s.cols) + ") VALUES ")
	p := 1
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for j := range s.cols {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(p))
			p++
		}
		b.WriteByte(')')
	}
	b.WriteString(s.tail)
	q := b.String()
	s.values[n] = q
	return q
}

// updatable returns the columns outside the unique key.
func updatable(cols []column, nKey int) []column {
	out := []column{cols[1]}
	return append(out, cols[2+nKey:]...)
}

// apply writes b to the table inside tx.
func (r *Results) apply(ctx context.Context, tx pgx.Tx, b *batch) error {
	if len(b.entries) == 0 {
		return nil
	}
	if r.method == applyValues {
		return r.applyValues(ctx, tx, b)
	}
	return r.applyCopy(ctx, tx, b)
}

func (r *Results) applyCopy(ctx context.Context, tx pgx.Tx, b *batch) error {
	if err := r.copyStage(ctx, tx, b); err != nil {
		return err
	}
	exec := func(q string, args ...any) error {
		_, err := tx.Exec(ctx, q, args...)
		return err
	}
	if b.rounds == 1 {
		if len(b.entries) > b.deletes {
			q := r.st.upsertAll
			if b.deletes > 0 {
				q = r.st.upsertLive
			}
			if err := exec(q); err != nil {
				return err
			}
		}
		if b.deletes > 0 {
			return exec(r.st.deleteAll)
		}
		return nil
	}
	ups := make([]int, b.rounds)
	dels := make([]int, b.rounds)
	for _, e := range b.entries {
		if e.op == changelog.Delete {
			dels[e.round]++
		} else {
			ups[e.round]++
		}
	}
	for rnd := range b.rounds {
		if ups[rnd] > 0 {
			if err := exec(r.st.upsertRound, rnd); err != nil {
				return err
			}
		}
		if dels[rnd] > 0 {
			if err := exec(r.st.deleteRound, rnd); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *Results) applyValues(ctx context.Context, tx pgx.Tx, b *batch) error {
	// Entries by round, each round's upserts then its deletes.
	order := make([]int, 0, len(b.entries))
	for rnd := range b.rounds {
		for i := range b.entries {
			if e := &b.entries[i]; e.round == rnd && e.op != changelog.Delete {
				order = append(order, i)
			}
		}
		for i := range b.entries {
			if e := &b.entries[i]; e.round == rnd && e.op == changelog.Delete {
				order = append(order, i)
			}
		}
	}
	var q pgx.Batch
	for k := 0; k < len(order); {
		e := &b.entries[order[k]]
		if e.op == changelog.Delete {
			args := appendArgs(nil, b, order[k])
			one := append([]any{args[0]}, args[2:2+r.nKey]...)
			one = append(one, args[len(args)-4])
			q.Queue(r.st.deleteOne, one...)
			k++
			continue
		}
		j := k + 1
		for j < len(order) && j-k < r.perStmt {
			f := &b.entries[order[j]]
			if f.op == changelog.Delete || f.round != e.round {
				break
			}
			j++
		}
		args := make([]any, 0, (j-k)*len(r.cols))
		for _, i := range order[k:j] {
			args = appendArgs(args, b, i)
		}
		q.Queue(r.st.valuesSQL(j-k), args...)
		k = j
	}
	return tx.SendBatch(ctx, &q).Close()
}

// infinity is watermark_at at the end of a bounded input.
var infinity = pgtype.Timestamptz{Valid: true, InfinityModifier: pgtype.Infinity}

// appendArgs appends entry i's column values in table order, as pgx
// encodes them: time.Time (UTC) for timestamptz, int64, bool, string, a
// decimal's exact text (parsed by numeric), nil for NULL.
func appendArgs(dst []any, b *batch, i int) []any {
	e := &b.entries[i]
	dst = append(dst, utc(e.ws), utc(e.we))
	for j, v := range b.values(i) {
		dst = append(dst, valueArg(v, b.kinds[j]))
	}
	var wm any
	switch e.wm {
	case changelog.WatermarkInfinity:
		wm = infinity
	case changelog.WatermarkNone:
		wm = nil
	default:
		wm = utc(e.wm)
	}
	return append(dst, int64(e.version), e.final, wm, utc(e.upd))
}

// valueArg converts v for a column of kind k.
func valueArg(v row.Value, k row.Kind) any {
	switch v.Kind {
	case row.KindNull:
		return nil
	case row.KindBool:
		return v.I != 0
	case row.KindInt:
		if k == row.KindDecimal {
			return strconv.FormatInt(v.I, 10)
		}
		return v.I
	case row.KindDecimal:
		return string(row.FormatDecimal(nil, v.D))
	case row.KindString:
		return v.S
	}
	return utc(v.I)
}

func utc(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
