package pgcdc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/suggest"
)

// Problem is one thing the database lacks for the source, with how to fix
// it.
type Problem struct {
	What string // what is wrong: "wal_level is replica"
	Fix  string // what to run or change
}

// SetupError lists what the database lacks for the source (Check's
// problems); opening the source fails with it.
type SetupError struct {
	Table    string
	Problems []Problem
}

// Error implements error: one line per problem, each with its fix.
func (e *SetupError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "postgres_cdc source %s: the database is not ready:", e.Table)
	for _, p := range e.Problems {
		fmt.Fprintf(&b, "\n  - %s; fix: %s", p.What, p.Fix)
	}
	return b.String()
}

// catColumn is a column as the catalog lists it.
type catColumn struct {
	name string
	oid  uint32 // the base type (a domain's underlying type)
}

// tableInfo is what the catalog says about the table.
type tableInfo struct {
	schema, name string
	oid          uint32
	identity     byte // relreplident
	columns      []catColumn
	pk           []string
	identityCols []string // the replica identity's columns ('d': the primary key; 'i': the index; 'f': all)
	key          []string // the key the source uses: Config.Key or the primary key
	snapshotTime int64
}

func (ti *tableInfo) column(name string) (catColumn, bool) {
	for _, c := range ti.columns {
		if c.name == name {
			return c, true
		}
	}
	return catColumn{}, false
}

// Check connects to the database of cfg and returns what it lacks for
// the source (nil when nothing): wal_level = logical, a role with
// REPLICATION, the table and SELECT on it, the publication holding the
// table and publishing inserts, updates and deletes (no row filter, every
// field's column in a column list), a key and a replica identity covering
// it, and each field's column with a type its kind can read. The error is
// for a database that cannot be reached or queried.
func Check(ctx context.Context, cfg Config) ([]Problem, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	conn, err := connect(ctx, cfg.DSN, false)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, probs, err := inspect(ctx, conn, &cfg)
	return probs, err
}

// inspect checks the database against cfg: Check's work, also done when
// the source opens.
func inspect(ctx context.Context, conn *pgx.Conn, cfg *Config) (*tableInfo, []Problem, error) {
	var probs []Problem
	add := func(what, fix string, args ...any) {
		probs = append(probs, Problem{What: what, Fix: fmt.Sprintf(fix, args...)})
	}
	schema, name, err := splitTable(cfg.Table)
	if err != nil {
		return nil, nil, err
	}
	ti := &tableInfo{schema: schema, name: name}
	qt := quoteTable(schema, name)

	var walLevel, user string
	var version int
	var replication bool
	if err := conn.QueryRow(ctx, `SELECT current_setting('wal_level'), current_user, current_setting('server_version_num')::int,
		(SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user)`).Scan(&walLevel, &user, &version, &replication); err != nil {
		return nil, nil, fmt.Errorf("postgres_cdc source: reading the server's settings: %w", err)
	}
	if walLevel != "logical" {
		add("wal_level is "+walLevel+"; logical replication needs logical",
			"ALTER SYSTEM SET wal_level = logical; then restart PostgreSQL (as a superuser)")
	}
	if !replication {
		add("role "+user+" has no REPLICATION attribute (a replication connection and a slot need it)",
			"ALTER ROLE %s REPLICATION (as a superuser); pg_hba.conf must also allow its replication connections", quoteIdent(user))
	}
	var canSelect bool
	var oid int64
	var ident string
	err = conn.QueryRow(ctx, `SELECT c.oid::int8, c.relreplident::text, has_table_privilege(c.oid, 'SELECT')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')`, schema, name).Scan(&oid, &ident, &canSelect)
	ti.oid = uint32(oid)
	if ident != "" {
		ti.identity = ident[0]
	}
	if errors.Is(err, pgx.ErrNoRows) {
		var names []string
		rows, qerr := conn.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')`, schema)
		if qerr == nil {
			names, _ = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		add(fmt.Sprintf("table %s does not exist%s", cfg.Table, suggest.Hint(name, names)), "set source.table to an existing table")
		return nil, probs, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("postgres_cdc source: reading table %s: %w", cfg.Table, err)
	}
	if !canSelect {
		add("role "+user+" may not SELECT from "+cfg.Table+" (the initial snapshot reads it)", "GRANT SELECT ON %s TO %s", qt, quoteIdent(user))
	}

	rows, err := conn.Query(ctx, `SELECT a.attname, (CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END)::int8
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, int64(ti.oid))
	if err != nil {
		return nil, nil, fmt.Errorf("postgres_cdc source: reading the columns of %s: %w", cfg.Table, err)
	}
	for rows.Next() {
		var c catColumn
		var oid int64
		if err := rows.Scan(&c.name, &oid); err != nil {
			return nil, nil, err
		}
		c.oid = uint32(oid)
		ti.columns = append(ti.columns, c)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	// The primary key and the replica identity's index.
	idx := func(cond string) ([]string, error) {
		rows, err := conn.Query(ctx, `SELECT a.attname FROM pg_index i
			JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) ON true
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
			WHERE i.indrelid = $1 AND `+cond+` ORDER BY k.n`, int64(ti.oid))
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if ti.pk, err = idx("i.indisprimary"); err != nil {
		return nil, nil, fmt.Errorf("postgres_cdc source: reading the primary key of %s: %w", cfg.Table, err)
	}
	switch ti.identity {
	case 'd':
		ti.identityCols = ti.pk
	case 'i':
		if ti.identityCols, err = idx("i.indisreplident"); err != nil {
			return nil, nil, fmt.Errorf("postgres_cdc source: reading the replica identity of %s: %w", cfg.Table, err)
		}
	case 'f':
		for _, c := range ti.columns {
			ti.identityCols = append(ti.identityCols, c.name)
		}
	}
	ti.key = cfg.Key
	if len(ti.key) == 0 {
		ti.key = ti.pk
	}
	colNames := make([]string, len(ti.columns))
	for i, c := range ti.columns {
		colNames[i] = c.name
	}
	switch {
	case len(ti.key) == 0:
		add("table "+cfg.Table+" has no primary key, so a change does not say which row it changes",
			"add a primary key (ALTER TABLE %s ADD PRIMARY KEY (…)), or set source.key to the columns that identify a row and ALTER TABLE %s REPLICA IDENTITY FULL", qt, qt)
	default:
		for _, k := range ti.key {
			if _, ok := ti.column(k); !ok {
				add(fmt.Sprintf("source.key: %s is not a column of %s%s", k, cfg.Table, suggest.Hint(k, colNames)), "name the columns that identify a row")
			}
		}
		if ti.identity == 'n' || len(ti.identityCols) == 0 {
			add("table "+cfg.Table+" has REPLICA IDENTITY NOTHING (or DEFAULT without a primary key): its updates and deletes carry no key",
				"ALTER TABLE %s REPLICA IDENTITY FULL, or DEFAULT with a primary key", qt)
		} else if missing := without(ti.key, ti.identityCols); len(missing) > 0 {
			add(fmt.Sprintf("the replica identity of %s (%s) lacks the key column(s) %s: a delete would not say which row it deletes", cfg.Table, strings.Join(ti.identityCols, ", "), strings.Join(missing, ", ")),
				"ALTER TABLE %s REPLICA IDENTITY FULL (or USING INDEX over the key)", qt)
		}
	}
	// The fields: each a column (or a metadata field) of a type its kind
	// can read.
	for _, f := range cfg.Fields.Schema.Fields {
		if IsMetaField(f.Name) {
			continue
		}
		c, ok := ti.column(f.Name)
		if !ok {
			add(fmt.Sprintf("the pipeline reads %s, which is not a column of %s%s", f.Name, cfg.Table, suggest.Hint(f.Name, colNames)),
				"use a column of the table, or one of the metadata fields %s", metaNames())
			continue
		}
		if _, err := convFor(c.name, c.oid, f.Kind, cfg.Timezone); err != nil {
			add(err.Error(), "see docs/connectors/postgres-cdc.md, \"Types\"")
		}
	}
	// The publication.
	var ins, upd, del, all bool
	err = conn.QueryRow(ctx, `SELECT pubinsert, pubupdate, pubdelete, puballtables FROM pg_publication WHERE pubname = $1`, cfg.Publication).Scan(&ins, &upd, &del, &all)
	if errors.Is(err, pgx.ErrNoRows) {
		add("publication "+cfg.Publication+" does not exist (tidemark never creates one)",
			"CREATE PUBLICATION %s FOR TABLE %s WITH (publish = 'insert, update, delete')", quoteIdent(cfg.Publication), qt)
		return ti, probs, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("postgres_cdc source: reading publication %s: %w", cfg.Publication, err)
	}
	var not []string
	for _, p := range []struct {
		on   bool
		what string
	}{{ins, "insert"}, {upd, "update"}, {del, "delete"}} {
		if !p.on {
			not = append(not, p.what)
		}
	}
	if len(not) > 0 {
		add("publication "+cfg.Publication+" does not publish "+strings.Join(not, ", ")+": those changes would never arrive",
			"ALTER PUBLICATION %s SET (publish = 'insert, update, delete')", quoteIdent(cfg.Publication))
	}
	var in bool
	var filter *string
	var attnames []string
	q := `SELECT true, NULL::text, NULL::text[] FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3`
	if version >= 150000 {
		q = `SELECT true, rowfilter, attnames FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3`
	}
	err = conn.QueryRow(ctx, q, cfg.Publication, schema, name).Scan(&in, &filter, &attnames)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		add("publication "+cfg.Publication+" does not hold table "+cfg.Table+": its changes would never arrive",
			"ALTER PUBLICATION %s ADD TABLE %s", quoteIdent(cfg.Publication), qt)
	case err != nil:
		return nil, nil, fmt.Errorf("postgres_cdc source: reading the tables of publication %s: %w", cfg.Publication, err)
	default:
		if filter != nil {
			add("publication "+cfg.Publication+" filters the rows of "+cfg.Table+" (WHERE "+*filter+"), but the initial snapshot reads every row",
				"publish the table without a row filter (filter in the pipeline instead)")
		}
		if attnames != nil && len(attnames) < len(ti.columns) {
			var missing []string
			for _, f := range cfg.Fields.Schema.Fields {
				if !IsMetaField(f.Name) && !slices.Contains(attnames, f.Name) {
					missing = append(missing, f.Name)
				}
			}
			for _, k := range ti.key {
				if !slices.Contains(attnames, k) && !slices.Contains(missing, k) {
					missing = append(missing, k)
				}
			}
			if len(missing) > 0 {
				add("publication "+cfg.Publication+" leaves the column(s) "+strings.Join(missing, ", ")+" of "+cfg.Table+" out of its column list",
					"ALTER PUBLICATION %s SET TABLE %s (with every column the pipeline reads)", quoteIdent(cfg.Publication), qt)
			}
		}
	}
	if cfg.HeartbeatTable != "" {
		hs, hn, _ := splitTable(cfg.HeartbeatTable)
		var ok bool
		err := conn.QueryRow(ctx, `SELECT has_table_privilege(c.oid, 'INSERT') AND has_table_privilege(c.oid, 'UPDATE')
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2`, hs, hn).Scan(&ok)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			add("heartbeat table "+cfg.HeartbeatTable+" does not exist",
				"CREATE TABLE %s (slot text PRIMARY KEY, at timestamptz NOT NULL)", quoteTable(hs, hn))
		case err != nil:
			return nil, nil, fmt.Errorf("postgres_cdc source: reading heartbeat table %s: %w", cfg.HeartbeatTable, err)
		case !ok:
			add("role "+user+" may not INSERT and UPDATE heartbeat table "+cfg.HeartbeatTable, "GRANT INSERT, UPDATE ON %s TO %s", quoteTable(hs, hn), quoteIdent(user))
		}
	}
	return ti, probs, nil
}

// without returns the elements of a not in b.
func without(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

func metaNames() string {
	var n []string
	for _, m := range MetaFields {
		n = append(n, m.Name)
	}
	return strings.Join(n, ", ")
}
