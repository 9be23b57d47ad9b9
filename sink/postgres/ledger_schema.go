package postgres

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
)

// The fixed columns of a ledger table.
const (
	colEventID     = "event_id"
	colPayloadHash = "payload_hash"
	colEventTime   = "event_time"
	colInsertedAt  = "inserted_at"
)

// ledgerStage is the name of a ledger connection's temporary staging
// table.
const ledgerStage = "tidemark_ledger_stage"

// layout returns the ledger's tables and columns: the ledger table
// (event_id, payload_hash, event_time, window_start, window_end, keys,
// deltas, inserted_at) and the aggregate table (window_start, window_end,
// keys, aggregates).
func (c *LedgerConfig) layout() (ledger, agg tableName, cols []column, err error) {
	if ledger, err = parseTable(c.Table); err != nil {
		return ledger, agg, nil, fmt.Errorf("ledger table: %w", err)
	}
	if agg, err = parseTable(c.AggregateTable); err != nil {
		return ledger, agg, nil, fmt.Errorf("aggregate table: %w", err)
	}
	if ledger == agg {
		return ledger, agg, nil, fmt.Errorf("the ledger and aggregate tables are both %q", c.Table)
	}
	if len(c.Aggregates) == 0 {
		return ledger, agg, nil, errors.New("no aggregate columns")
	}
	keys, err := userColumns(c.Keys)
	if err != nil {
		return ledger, agg, nil, err
	}
	cols = []column{
		{name: colEventID, typ: typText, kind: row.KindString},
		{name: colPayloadHash, typ: typInt, kind: row.KindInt},
		{name: colEventTime, typ: typTime, kind: row.KindTime},
		{name: sink.ColWindowStart, typ: typTime, kind: row.KindTime},
		{name: sink.ColWindowEnd, typ: typTime, kind: row.KindTime},
	}
	cols = append(cols, keys...)
	for _, a := range c.Aggregates {
		if err := checkIdent("column", a.Name); err != nil {
			return ledger, agg, nil, err
		}
		k := a.Kind
		switch {
		case a.Func == LedgerCount:
			k = row.KindInt
		case a.Func != LedgerSum:
			return ledger, agg, nil, fmt.Errorf("column %q: unknown aggregate %s", a.Name, a.Func)
		case k != row.KindInt && k != row.KindDecimal:
			return ledger, agg, nil, fmt.Errorf("column %q: sum of %s: want int or decimal", a.Name, k)
		}
		cols = append(cols, column{name: a.Name, typ: sqlType(k), null: true, kind: k})
	}
	cols = append(cols, column{name: colInsertedAt, typ: typTime, kind: row.KindTime, def: "now()"})
	return ledger, agg, cols, uniqueNames(cols)
}

// ledgerStatements holds a ledger's SQL, built once from its columns.
type ledgerStatements struct {
	createStage string
	stageCols   []string // c0 … cN: the ledger columns but inserted_at
	apply       string   // insert new ids, add them to the aggregates; returns the ids inserted
	hashes      string   // the stored hashes of ids $1 (text[])
}

func newLedgerStatements(l *Ledger) ledgerStatements {
	var s ledgerStatements
	stored := l.cols[:len(l.cols)-1] // inserted_at takes its default
	var create strings.Builder
	create.WriteString("CREATE TEMPORARY TABLE IF NOT EXISTS " + ledgerStage + " (")
	exprs := make([]string, len(stored))
	for i, c := range stored {
		name := "c" + strconv.Itoa(i)
		s.stageCols = append(s.stageCols, name)
		typ := ddlType(c.typ)
		exprs[i] = "s." + name
		if c.typ == typNum {
			typ = typText
			exprs[i] += "::numeric"
		}
		if i > 0 {
			create.WriteString(", ")
		}
		create.WriteString(name + " " + typ)
	}
	create.WriteString(") ON COMMIT DELETE ROWS")
	s.createStage = create.String()

	group := quoteAll(l.aggKey())
	var sums, sets []string
	for _, c := range stored[5+l.nKey:] {
		sums = append(sums, "coalesce(sum(ins."+quote(c.name)+"), 0)")
		sets = append(sets, quote(c.name)+" = a."+quote(c.name)+" + excluded."+quote(c.name))
	}
	insGroup := make([]string, len(group))
	for i, g := range group {
		insGroup[i] = "ins." + g
	}
	s.apply = "WITH ins AS (\n  INSERT INTO " + l.table.sql() + " AS l (" + columnList(stored) + ")\n  SELECT " +
		strings.Join(exprs, ", ") + " FROM pg_temp." + ledgerStage + " s\n  ON CONFLICT (" + quote(colEventID) +
		") DO NOTHING\n  RETURNING " + columnList(stored[:1]) + ", " + columnList(stored[3:]) + "\n), agg AS (\n  INSERT INTO " + l.agg.sql() +
		" AS a (" + columnList(l.aggCols) + ")\n  SELECT " + strings.Join(insGroup, ", ") + ", " + strings.Join(sums, ", ") +
		" FROM ins GROUP BY " + strings.Join(insGroup, ", ") + "\n  ON CONFLICT (" + strings.Join(group, ", ") +
		") DO UPDATE SET " + strings.Join(sets, ", ") + "\n)\nSELECT " + quote(colEventID) + " FROM ins"
	s.hashes = "SELECT " + quote(colEventID) + ", " + quote(colPayloadHash) + " FROM " + l.table.sql() +
		" WHERE " + quote(colEventID) + " = ANY($1::text[])"
	return s
}
