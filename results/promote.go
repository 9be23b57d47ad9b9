package results

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Segment is a part of what the serving view serves: the windows with
// From <= window_start < To come from Version. A nil bound is unbounded.
// A window belongs to the segment of its window_start, wholly, even when
// it ends after To.
type Segment struct {
	Version string     `json:"version"`
	From    *time.Time `json:"from,omitempty"`
	To      *time.Time `json:"to,omitempty"`
}

// String describes the segment: "v2 (window_start < 2026-10-01T00:00:00+09:00)".
func (s Segment) String() string {
	switch {
	case s.From == nil && s.To == nil:
		return s.Version + " (all windows)"
	case s.From == nil:
		return fmt.Sprintf("%s (window_start < %s)", s.Version, timeLiteral(*s.To))
	case s.To == nil:
		return fmt.Sprintf("%s (window_start >= %s)", s.Version, timeLiteral(*s.From))
	}
	return fmt.Sprintf("%s (%s <= window_start < %s)", s.Version, timeLiteral(*s.From), timeLiteral(*s.To))
}

// DescribeSegments describes what a view serves, segment by segment.
func DescribeSegments(segs []Segment) string {
	parts := make([]string, len(segs))
	for i, s := range segs {
		parts[i] = s.String()
	}
	return strings.Join(parts, ", ")
}

// Promotion is a row of the promotions table: one switch of a serving view.
type Promotion struct {
	ID      int64      `json:"id"`
	Table   string     `json:"table"`   // the serving view's name, without schema
	Version string     `json:"version"` // the version promoted
	From    *time.Time `json:"from,omitempty"`
	Cutover *time.Time `json:"cutover,omitempty"`
	// Segments is what the view served after this promotion.
	Segments []Segment `json:"segments"`
	// Definition is the statement that made the view.
	Definition string `json:"definition"`
	// PreviousID is the promotion in effect before this one (0: none, or a
	// view made by other means); PreviousDefinition is the statement that
	// recreates the view as it was ("" when there was no view).
	PreviousID         int64      `json:"previous_id,omitempty"`
	PreviousDefinition string     `json:"previous_definition,omitempty"`
	PromotedAt         time.Time  `json:"promoted_at"`
	RolledBackAt       *time.Time `json:"rolled_back_at,omitempty"`
	// Unchanged is set by Promote when the view already served exactly
	// this; nothing was changed or recorded, and the other fields are
	// those of the promotion in effect.
	Unchanged bool `json:"-"`
}

// PromoteOptions adjust Promote. The zero value serves the version for
// every window.
type PromoteOptions struct {
	// Cutover: the version serves the windows with window_start < Cutover,
	// and the windows from Cutover on come from the live version: the one
	// that serves the latest windows now (the view's open-ended segment).
	// Zero: no upper bound; the version becomes the live one.
	Cutover time.Time
	// From: the version serves only windows with window_start >= From;
	// before From, the view keeps serving what it serves now. A backfill
	// of a range (--from T1 --to T2) is promoted with From T1 and Cutover
	// T2. Zero: no lower bound.
	From time.Time
}

// ColumnsError is returned by Promote when a version's table has other
// columns than the view serves. Each field lists one kind of difference.
type ColumnsError struct {
	Table     string   // the version's table
	Reference string   // what it was compared with
	Missing   []string // columns of Reference the table lacks
	Extra     []string // columns of the table Reference lacks
	Types     []string // "name: table has X, reference has Y"
}

// Error implements error, naming every difference.
func (e *ColumnsError) Error() string {
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, "missing columns "+strings.Join(e.Missing, ", "))
	}
	if len(e.Extra) > 0 {
		parts = append(parts, "extra columns "+strings.Join(e.Extra, ", "))
	}
	if len(e.Types) > 0 {
		parts = append(parts, "column types differ ("+strings.Join(e.Types, "; ")+")")
	}
	return fmt.Sprintf("%s has other columns than %s: %s", e.Table, e.Reference, strings.Join(parts, "; "))
}

// ErrNoPromotion is returned (wrapped) by Rollback when there is no
// promotion to roll back, or none before it to restore.
var ErrNoPromotion = errors.New("nothing to roll back")

// createPromotionsSQL returns the statement creating the promotions table.
func (d *DB) createPromotionsSQL(t qname) string {
	if d.dialect == SQLite {
		return "CREATE TABLE IF NOT EXISTS " + t.sql() + ` (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  table_name TEXT NOT NULL,
  version TEXT NOT NULL,
  from_time TEXT,
  cutover TEXT,
  segments TEXT NOT NULL,
  definition TEXT NOT NULL,
  previous_id INTEGER,
  previous_definition TEXT,
  promoted_at TEXT NOT NULL,
  rolled_back_at TEXT)`
	}
	return "CREATE TABLE IF NOT EXISTS " + t.sql() + ` (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  table_name text NOT NULL,
  version text NOT NULL,
  from_time timestamptz,
  cutover timestamptz,
  segments text NOT NULL,
  definition text NOT NULL,
  previous_id bigint,
  previous_definition text,
  promoted_at timestamptz NOT NULL,
  rolled_back_at timestamptz)`
}

// timeArg returns t as a statement argument: RFC 3339 text for SQLite, the
// instant for PostgreSQL; nil for nil.
func (d *DB) timeArg(t *time.Time) any {
	if t == nil {
		return nil
	}
	if d.dialect == SQLite {
		return timeLiteral(*t)
	}
	return *t
}

// now is the time recorded in promotions, to the millisecond.
func now() time.Time { return time.Now().Truncate(time.Millisecond) }

// Promote makes the serving view table serve version, in one transaction:
// for SQLite DROP VIEW and CREATE VIEW inside BEGIN IMMEDIATE, for
// PostgreSQL CREATE OR REPLACE VIEW (which keeps the view's grants and the
// views built on it), and records the promotion in PromotionsTable.
//
// With o.Cutover and/or o.From, version serves only the windows with
// From <= window_start < Cutover; the windows before From are served as
// now, those from Cutover on by the live version (see PromoteOptions and
// Segment). This needs a view made by an earlier promotion.
//
// It refuses, changing nothing: when a version's table does not exist
// (*NoTableError); when a served table's columns differ from those the
// view serves now (*ColumnsError); when the serving name is a table
// rather than a view.
func (d *DB) Promote(ctx context.Context, table, version string, o PromoteOptions) (*Promotion, error) {
	if err := checkTableName(table); err != nil {
		return nil, err
	}
	if err := CheckVersion(version); err != nil {
		return nil, err
	}
	if !o.From.IsZero() && !o.Cutover.IsZero() && !o.From.Before(o.Cutover) {
		return nil, fmt.Errorf("--from %s is not before the cutover %s", timeLiteral(o.From), timeLiteral(o.Cutover))
	}
	n := d.name(table)
	var p *Promotion
	err := d.inTx(ctx, func(t *tx) error {
		var err error
		p, err = d.promote(ctx, t, n, version, o)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("promote %s %s: %w", table, version, err)
	}
	return p, nil
}

// PromoteIfAbsent makes the serving view table serve version for every
// window, as Promote does, only when nothing of that name exists yet; it
// returns nil, nil and changes nothing when a table, a view or anything
// else has the name. The live pipeline's first run calls it (through the
// SQL sinks' Serve option) so that readers can query the serving name from
// the start; the promotion is recorded as any other, so that a later
// promote with a cutover or a rollback works as documented.
func (d *DB) PromoteIfAbsent(ctx context.Context, table, version string) (*Promotion, error) {
	if err := checkTableName(table); err != nil {
		return nil, err
	}
	if err := CheckVersion(version); err != nil {
		return nil, err
	}
	n := d.name(table)
	var p *Promotion
	err := d.inTx(ctx, func(t *tx) error {
		kind, err := d.kindOf(ctx, t, n)
		if err != nil || kind != relNone {
			return err
		}
		p, err = d.promote(ctx, t, n, version, PromoteOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("promote %s %s: %w", table, version, err)
	}
	return p, nil
}

func (d *DB) promote(ctx context.Context, t *tx, n qname, version string, o PromoteOptions) (*Promotion, error) {
	promos := n.sibling(PromotionsTable)
	if err := t.exec(ctx, d.createPromotionsSQL(promos)); err != nil {
		return nil, err
	}
	if err := d.lockPromotions(ctx, t, promos); err != nil {
		return nil, err
	}
	kind, err := d.kindOf(ctx, t, n)
	if err != nil {
		return nil, err
	}
	switch kind {
	case relTable:
		return nil, fmt.Errorf("%s is a table, not a view: rename it to a version (%s), point the live pipeline's sink at that name, and promote that version first",
			n, n.version(LiveVersion))
	case relOther:
		return nil, fmt.Errorf("%s exists and is not a view", n)
	}
	active, err := d.active(ctx, t, n)
	if err != nil {
		return nil, err
	}
	var cur []Segment
	prevDef := ""
	var prevID int64
	if kind == relView {
		if prevDef, err = d.viewDefinition(ctx, t, n); err != nil {
			return nil, err
		}
		if active != nil {
			cur, prevID = active.Segments, active.ID
		}
	}
	var from, cutover *time.Time
	if !o.From.IsZero() {
		from = &o.From
	}
	if !o.Cutover.IsZero() {
		cutover = &o.Cutover
	}
	segs := []Segment{{Version: version}}
	if from != nil || cutover != nil {
		if cur == nil {
			if kind == relView {
				return nil, fmt.Errorf("the view %s was not made by tidemark promote, so what it serves outside the promoted range is unknown: promote a version for all windows first", n)
			}
			return nil, fmt.Errorf("%s serves nothing yet, so nothing would serve the windows outside the promoted range: promote the live version first (tidemark promote %s %s)", n, n, LiveVersion)
		}
		segs = promoteSegments(cur, version, from, cutover)
	}
	if cur != nil && sameSegments(cur, segs) {
		active.Unchanged = true
		return active, nil
	}
	// The guard: every version served exists, with the columns served now.
	var ref []column
	refName := ""
	if kind == relView {
		if ref, err = d.columns(ctx, t, n); err != nil {
			return nil, err
		}
		refName = "the serving view " + n.String()
	}
	tables := map[string]qname{}
	for _, s := range versionsOf(segs, version) {
		vt, err := d.versionTable(ctx, t, n, s)
		if err != nil {
			return nil, err
		}
		cols, err := d.columns(ctx, t, vt)
		if err != nil {
			return nil, err
		}
		if ref == nil {
			ref, refName = cols, vt.String()
		} else if err := d.compareColumns(vt, cols, refName, ref); err != nil {
			return nil, err
		}
		tables[s] = vt
	}
	def := d.viewSQL(n, ref, segs, tables)
	if d.dialect == SQLite {
		if err := t.exec(ctx, "DROP VIEW IF EXISTS "+n.sql()); err != nil {
			return nil, err
		}
	}
	if err := t.exec(ctx, def); err != nil {
		return nil, err
	}
	if err := t.exec(ctx, "SELECT * FROM "+n.sql()+" LIMIT 0"); err != nil {
		return nil, fmt.Errorf("the new view does not work: %w", err)
	}
	p := &Promotion{
		Table: n.name, Version: version, From: from, Cutover: cutover, Segments: segs,
		Definition: def, PreviousID: prevID, PreviousDefinition: prevDef, PromotedAt: now(),
	}
	segJSON, err := json.Marshal(segs)
	if err != nil {
		return nil, err
	}
	var prevIDArg, prevDefArg any
	if prevID != 0 {
		prevIDArg = prevID
	}
	if prevDef != "" {
		prevDefArg = prevDef
	}
	err = t.queryRow(ctx, fmt.Sprintf(`INSERT INTO %s (table_name, version, from_time, cutover, segments, definition, previous_id, previous_definition, promoted_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id`, promos.sql(),
		d.ph(1), d.ph(2), d.ph(3), d.ph(4), d.ph(5), d.ph(6), d.ph(7), d.ph(8), d.ph(9)),
		n.name, version, d.timeArg(from), d.timeArg(cutover), string(segJSON), def, prevIDArg, prevDefArg, d.timeArg(&p.PromotedAt)).Scan(&p.ID)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// lockPromotions makes a PostgreSQL transaction the only promoter of the
// schema (readers of the views are not held back) and empties its
// search_path, so that the view definitions it reads name every table
// with its schema and restore the same tables whatever the search_path of
// a later rollback. Every name the package writes is qualified. SQLite's
// BEGIN IMMEDIATE already excludes other writers.
func (d *DB) lockPromotions(ctx context.Context, t *tx, promos qname) error {
	if d.dialect != Postgres {
		return nil
	}
	if err := t.exec(ctx, "SELECT set_config('search_path', 'pg_catalog', true)"); err != nil {
		return err
	}
	return t.exec(ctx, "LOCK TABLE "+promos.sql()+" IN SHARE ROW EXCLUSIVE MODE")
}

// versionsOf returns the versions segs serve, first the promoted one.
func versionsOf(segs []Segment, first string) []string {
	out := []string{first}
	for _, s := range segs {
		if !slices.Contains(out, s.Version) {
			out = append(out, s.Version)
		}
	}
	return out
}

// compareColumns returns a *ColumnsError when cols (of table t) differ
// from ref in names or types. An empty type (a SQLite view's expression)
// matches any.
func (d *DB) compareColumns(t qname, cols []column, refName string, ref []column) error {
	e := &ColumnsError{Table: t.String(), Reference: refName}
	for _, r := range ref {
		i := slices.IndexFunc(cols, func(c column) bool { return d.sameName(c.name, r.name) })
		switch {
		case i < 0:
			e.Missing = append(e.Missing, r.name)
		case r.typ != "" && cols[i].typ != "" && !strings.EqualFold(r.typ, cols[i].typ):
			e.Types = append(e.Types, fmt.Sprintf("%s: table has %s, reference has %s", r.name, cols[i].typ, r.typ))
		}
	}
	for _, c := range cols {
		if !slices.ContainsFunc(ref, func(r column) bool { return d.sameName(c.name, r.name) }) {
			e.Extra = append(e.Extra, c.name)
		}
	}
	if e.Missing != nil || e.Extra != nil || e.Types != nil {
		return e
	}
	return nil
}

// viewSQL returns the statement making view n serve segs: one SELECT per
// segment, joined by UNION ALL, each keeping the windows whose
// window_start lies in its segment.
func (d *DB) viewSQL(n qname, cols []column, segs []Segment, tables map[string]qname) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = quote(c.name)
	}
	list := strings.Join(names, ", ")
	ws := quote(colWindowStart)
	var parts []string
	for _, s := range segs {
		q := "SELECT " + list + " FROM " + tables[s.Version].sql()
		var where []string
		if s.From != nil {
			where = append(where, d.windowStartCmp(ws, ">=", *s.From))
		}
		if s.To != nil {
			where = append(where, d.windowStartCmp(ws, "<", *s.To))
		}
		if len(where) > 0 {
			q += " WHERE " + strings.Join(where, " AND ")
		}
		parts = append(parts, q)
	}
	create := "CREATE VIEW "
	if d.dialect == Postgres {
		create = "CREATE OR REPLACE VIEW "
	}
	return create + n.sql() + " AS\n" + strings.Join(parts, "\nUNION ALL\n")
}

// viewDefinition returns a statement that recreates view n as it is.
func (d *DB) viewDefinition(ctx context.Context, q querier, n qname) (string, error) {
	var def string
	if d.dialect == SQLite {
		err := q.queryRow(ctx, "SELECT sql FROM sqlite_schema WHERE type = 'view' AND name = ? COLLATE NOCASE", n.name).Scan(&def)
		return def, err
	}
	if err := q.queryRow(ctx, "SELECT pg_get_viewdef($1::regclass, true)", n.sql()).Scan(&def); err != nil {
		return "", err
	}
	return "CREATE OR REPLACE VIEW " + n.sql() + " AS\n" + strings.TrimSuffix(strings.TrimSpace(def), ";"), nil
}

// promoteSegments returns what the view serves after promoting version
// over [from, to) while it serves cur: the parts of cur before from, then
// version, then from to on the live version, the one serving cur's
// latest (open-ended) segment. Adjacent segments of one version merge.
func promoteSegments(cur []Segment, version string, from, to *time.Time) []Segment {
	var out []Segment
	if from != nil {
		for _, s := range cur {
			if s.From != nil && !s.From.Before(*from) {
				break
			}
			hi := from
			if s.To != nil && s.To.Before(*from) {
				hi = s.To
			}
			out = append(out, Segment{Version: s.Version, From: s.From, To: hi})
		}
	}
	out = append(out, Segment{Version: version, From: from, To: to})
	if to != nil {
		out = append(out, Segment{Version: cur[len(cur)-1].Version, From: to})
	}
	merged := out[:1]
	for _, s := range out[1:] {
		last := &merged[len(merged)-1]
		if last.Version == s.Version {
			last.To = s.To
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

func sameSegments(a, b []Segment) bool {
	eq := func(x, y *time.Time) bool { return x == nil && y == nil || x != nil && y != nil && x.Equal(*y) }
	return slices.EqualFunc(a, b, func(x, y Segment) bool {
		return x.Version == y.Version && eq(x.From, y.From) && eq(x.To, y.To)
	})
}

// promotionCols are the columns read into a Promotion, in scan order.
const promotionCols = "id, table_name, version, from_time, cutover, segments, definition, previous_id, previous_definition, promoted_at, rolled_back_at"

// scanPromotion reads a row of promotionCols.
func scanPromotion(s scanner) (*Promotion, error) {
	var p Promotion
	var from, cutover, prevID, prevDef, promoted, rolled any
	var segs string
	if err := s.Scan(&p.ID, &p.Table, &p.Version, &from, &cutover, &segs, &p.Definition, &prevID, &prevDef, &promoted, &rolled); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(segs), &p.Segments); err != nil {
		return nil, fmt.Errorf("promotion %d: segments: %w", p.ID, err)
	}
	var err error
	if p.From, err = anyTime(from); err != nil {
		return nil, err
	}
	if p.Cutover, err = anyTime(cutover); err != nil {
		return nil, err
	}
	if p.RolledBackAt, err = anyTime(rolled); err != nil {
		return nil, err
	}
	at, err := anyTime(promoted)
	if err != nil || at == nil {
		return nil, fmt.Errorf("promotion %d: promoted_at: %v", p.ID, err)
	}
	p.PromotedAt = *at
	switch x := prevID.(type) {
	case int64:
		p.PreviousID = x
	case int32:
		p.PreviousID = int64(x)
	case string:
		p.PreviousID, _ = strconv.ParseInt(x, 10, 64)
	}
	if s, ok := prevDef.(string); ok {
		p.PreviousDefinition = s
	}
	return &p, nil
}

func anyTime(v any) (*time.Time, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case time.Time:
		return &x, nil
	case string:
		t, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return nil, err
		}
		return &t, nil
	}
	return nil, fmt.Errorf("unexpected time value %T", v)
}

// promotionsExist reports whether the promotions table beside n exists.
func (d *DB) promotionsExist(ctx context.Context, q querier, n qname) (bool, error) {
	k, err := d.kindOf(ctx, q, n.sibling(PromotionsTable))
	return k == relTable, err
}

// active returns the promotion of n in effect: the latest not rolled
// back; nil when there is none.
func (d *DB) active(ctx context.Context, q querier, n qname) (*Promotion, error) {
	p, err := scanPromotion(q.queryRow(ctx, "SELECT "+promotionCols+" FROM "+n.sibling(PromotionsTable).sql()+
		" WHERE table_name = "+d.ph(1)+" AND rolled_back_at IS NULL ORDER BY id DESC LIMIT 1", n.name))
	if isNoRows(err) {
		return nil, nil
	}
	return p, err
}

// Serving returns the promotion in effect for table's serving view, nil
// when none is recorded.
func (d *DB) Serving(ctx context.Context, table string) (*Promotion, error) {
	if err := checkTableName(table); err != nil {
		return nil, err
	}
	n := d.name(table)
	ok, err := d.promotionsExist(ctx, d.q(), n)
	if err != nil || !ok {
		return nil, err
	}
	return d.active(ctx, d.q(), n)
}

// History returns table's promotions, oldest first, rolled back ones
// included.
func (d *DB) History(ctx context.Context, table string) ([]Promotion, error) {
	if err := checkTableName(table); err != nil {
		return nil, err
	}
	n := d.name(table)
	ok, err := d.promotionsExist(ctx, d.q(), n)
	if err != nil || !ok {
		return nil, err
	}
	rs, err := d.q().query(ctx, "SELECT "+promotionCols+" FROM "+n.sibling(PromotionsTable).sql()+
		" WHERE table_name = "+d.ph(1)+" ORDER BY id", n.name)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []Promotion
	for rs.Next() {
		p, err := scanPromotion(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, rs.Err()
}

// RollbackResult is what Rollback did.
type RollbackResult struct {
	// Undone is the promotion rolled back (now marked RolledBackAt).
	Undone Promotion
	// Serving is the promotion in effect again; nil when the restored
	// view was not made by a promotion.
	Serving *Promotion
}

// Rollback restores table's serving view as it was before the promotion
// in effect, in one transaction, and marks that promotion rolled back;
// rolling back again goes one promotion further back. With version
// non-empty, it refuses unless the promotion in effect is of that
// version. It returns an error wrapping ErrNoPromotion when no promotion
// is in effect or the one in effect had no view before it.
func (d *DB) Rollback(ctx context.Context, table, version string) (*RollbackResult, error) {
	if err := checkTableName(table); err != nil {
		return nil, err
	}
	if version != "" {
		if err := CheckVersion(version); err != nil {
			return nil, err
		}
	}
	n := d.name(table)
	var res *RollbackResult
	err := d.inTx(ctx, func(t *tx) error {
		var err error
		res, err = d.rollback(ctx, t, n, version)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("rollback %s: %w", table, err)
	}
	return res, nil
}

func (d *DB) rollback(ctx context.Context, t *tx, n qname, version string) (*RollbackResult, error) {
	promos := n.sibling(PromotionsTable)
	ok, err := d.promotionsExist(ctx, t, n)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: no promotions recorded (no %s)", ErrNoPromotion, promos)
	}
	if err := d.lockPromotions(ctx, t, promos); err != nil {
		return nil, err
	}
	p, err := d.active(ctx, t, n)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, fmt.Errorf("%w: no promotion of %s is in effect", ErrNoPromotion, n)
	}
	if version != "" && p.Version != version {
		return nil, fmt.Errorf("the promotion in effect is of %s (promotion %d), not %s", p.Version, p.ID, version)
	}
	if p.PreviousDefinition == "" {
		return nil, fmt.Errorf("%w: promotion %d (%s) made the view; there is no earlier view to restore (drop the view to serve nothing)", ErrNoPromotion, p.ID, p.Version)
	}
	kind, err := d.kindOf(ctx, t, n)
	if err != nil {
		return nil, err
	}
	if kind != relView && kind != relNone {
		return nil, fmt.Errorf("%s is not a view", n)
	}
	if d.dialect == SQLite {
		if err := t.exec(ctx, "DROP VIEW IF EXISTS "+n.sql()); err != nil {
			return nil, err
		}
	}
	if err := t.exec(ctx, p.PreviousDefinition); err != nil {
		return nil, fmt.Errorf("restoring the view of promotion %d: %w", p.PreviousID, err)
	}
	if err := t.exec(ctx, "SELECT * FROM "+n.sql()+" LIMIT 0"); err != nil {
		return nil, fmt.Errorf("the restored view does not work: %w", err)
	}
	at := now()
	if err := t.exec(ctx, "UPDATE "+promos.sql()+" SET rolled_back_at = "+d.ph(1)+" WHERE id = "+d.ph(2), d.timeArg(&at), p.ID); err != nil {
		return nil, err
	}
	p.RolledBackAt = &at
	res := &RollbackResult{Undone: *p}
	if p.PreviousID != 0 {
		if res.Serving, err = d.active(ctx, t, n); err != nil {
			return nil, err
		}
	}
	return res, nil
}
